"""The configuration table of the docs is generated from the settings declaration, and the
defaults it shows are the ones the code uses.

A hand-written table once gave `REACT_AGENT_FETCH_MAX_CHARS` 4000, `REACT_AGENT_HTTP_RETRIES`
2 and `REACT_AGENT_HTTP_BACKOFF` 0.5 while the tools used 8000, 3 attempts and 0.2 s. These tests
read the table the site shows and compare it with the declaration and with the tools
themselves, unconfigured.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from types import ModuleType

import pytest

from graph.settings import ENV_VARS, ENVIRONMENT, AgentContext
from tests.docs.markdown_blocks import REPO
from tools import http_client, web_fetch

HOOK = REPO / "docs" / "hooks" / "settings_table.py"


def load_hook() -> ModuleType:
    """The mkdocs hook module, loaded from its file as mkdocs loads it."""
    spec = importlib.util.spec_from_file_location("settings_table_hook", HOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def table_rows() -> dict[str, list[str]]:
    """The generated table's rows by environment variable: [setting, default, scope, help]."""
    rows: dict[str, list[str]] = {}
    for line in load_hook().settings_table().splitlines()[2:]:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        env = cells[1].strip("`")
        assert env not in rows, f"{env} has two rows"
        rows[env] = [cells[0], cells[2].strip("`"), cells[3], cells[4]]
    return rows


def test_the_configuration_page_holds_the_marker_the_hook_fills() -> None:
    page = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    hook = load_hook()
    assert page.count(hook.MARKER) == 1
    filled = hook.on_page_markdown(page, None, None, None)
    assert hook.MARKER not in filled and "| `REACT_AGENT_MODEL` |" in filled


def test_one_row_per_declared_setting() -> None:
    declared = set(ENV_VARS.values()) | {v.name for v in ENVIRONMENT}
    assert set(table_rows()) == declared


def test_defaults_and_scopes_are_the_declarations() -> None:
    rows = table_rows()
    for name, info in AgentContext.model_fields.items():
        field, default, scope, help_text = rows[ENV_VARS[name]]
        assert field == f"`{name}`"
        value = info.get_default(call_default_factory=True)
        if isinstance(value, bool):
            assert default == str(value).lower()
        elif value in (None, []):
            assert default == ""
        else:
            assert default == str(value), name
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        assert scope == ("run or operator" if extra["scope"] == "run" else "operator")
        assert help_text.split()[:3] == (info.description or "").split()[:3]


# What each tool uses when its variable is unset (the tests' environment is clean).
USED: dict[str, Callable[[], float]] = {
    "REACT_AGENT_FETCH_MAX_CHARS": lambda: web_fetch.DEFAULT_MAX_CHARS,
    "REACT_AGENT_HTTP_RETRIES": lambda: http_client.settings().attempts,
    "REACT_AGENT_HTTP_BACKOFF": lambda: http_client.settings().backoff,
    "REACT_AGENT_HTTP_TIMEOUT": lambda: http_client.settings().timeout,
    "REACT_AGENT_HTTP_MAX_BYTES": lambda: http_client.settings().max_bytes,
}


@pytest.mark.parametrize("variable", sorted(USED))
def test_the_tools_defaults_are_what_the_table_shows(variable: str) -> None:
    shown, actual = table_rows()[variable][1], USED[variable]()
    assert float(shown) == float(actual), (
        f"{variable}: the table shows {shown}, the code uses {actual}"
    )
