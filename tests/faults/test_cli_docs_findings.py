"""The docs findings of the third round (issue 40), as a new user walking the README and the
docs site meets them: a variable the code does not read, a promise a page does not keep, a
page the nav has and the index lacks, an example that prints warnings, a sample run without
`uv run`, and a claim about where the CLI runs a tool that the code contradicts.
"""

from __future__ import annotations

import json
import re
import threading
import warnings
from pathlib import Path

import pytest
import yaml
from langchain_core.tools import tool

from tests.docs.markdown_blocks import blocks
from tests.docs.plugin import scripted_model
from tests.support.cli import REPO, cli_env, run_cli
from tests.support.openai_server import Reply, ScriptedOpenAIServer, ToolCall

DOCS = REPO / "docs"
VARIABLE = re.compile(r"\bREACT_AGENT_[A-Z0-9_]+\b")
TEST_ONLY = {"REACT_AGENT_TEST_POSTGRES", "REACT_AGENT_TEST_REDIS", "REACT_AGENT_CHAT_UI_DIR"}


def source_text() -> str:
    files = [*(REPO / "graph").rglob("*.py"), *(REPO / "tools").rglob("*.py")]
    return "\n".join(path.read_text(encoding="utf-8") for path in files)


def test_every_variable_the_docs_name_is_read_by_the_code() -> None:
    code = source_text()
    pages = [*DOCS.glob("*.md"), REPO / "README.md"]
    named = {
        (path.name, name)
        for path in pages
        for name in VARIABLE.findall(path.read_text(encoding="utf-8"))
    }
    unread = sorted((page, n) for page, n in named if n not in TEST_ONLY and n not in code)
    assert unread == []  # docs/security.md named REACT_AGENT_KNOWLEDGE_DIR (KB_DIR is read)


def test_security_page_promises_no_note_the_configuration_table_lacks() -> None:
    text = " ".join((DOCS / "security.md").read_text(encoding="utf-8").split())
    assert "configuration table say so" not in text
    # the configuration table is generated from the settings and `ENVIRONMENT` (docs/hooks)
    from graph.settings import ENVIRONMENT

    listed = "REACT_AGENT_KB_DIR" in {variable.name for variable in ENVIRONMENT}
    assert ("is not in the configuration table" in text) is not listed


def nav_pages() -> list[str]:
    config = yaml.load((REPO / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)
    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, str) and node.endswith(".md"):
            found.append(node)
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            for value in node.values():
                walk(value)

    walk(config["nav"])
    return [page for page in found if page not in ("index.md", "changelog.md")]


@pytest.mark.parametrize("page", nav_pages())
def test_every_nav_page_is_in_the_index_and_the_readme(page: str) -> None:
    assert f"]({page})" in (DOCS / "index.md").read_text(encoding="utf-8")
    assert f"](docs/{page})" in (REPO / "README.md").read_text(encoding="utf-8")


def test_the_state_and_context_example_runs_without_warnings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    runnable = [b for b in blocks(DOCS / "state-and-context.md") if b.replies]
    assert runnable
    for block in runnable:
        with scripted_model(block, monkeypatch, tmp_path), warnings.catch_warnings():
            warnings.simplefilter("error")  # pydantic's serializer warnings among them
            exec(compile(block.code, block.where, "exec"), {"__name__": "docs_example"})


@pytest.mark.parametrize("name", ["from_code", "sdk_client"])
def test_the_examples_say_to_run_them_through_uv(name: str) -> None:
    docstring = (REPO / "examples" / f"{name}.py").read_text(encoding="utf-8").split('"""')[1]
    commands = [line.strip() for line in docstring.splitlines() if "python -m" in line]
    assert commands and all("uv run python -m examples." in line for line in commands)


@tool
def which_thread() -> str:
    """Say which thread this call runs on."""
    return "main" if threading.current_thread() is threading.main_thread() else "worker"


@pytest.mark.integration
def test_the_cli_runs_a_sync_tool_on_a_worker_as_the_docs_say(
    openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    openai_server.add(Reply(tool_calls=[ToolCall("which_thread", {})]), Reply(content="ok"))
    env = cli_env(openai_server.base_url, tmp_path / "state")
    spec = f"{__name__}:which_thread"
    done = run_cli("ask", "where?", "--json", "--tools", spec, "--checkpointer", "memory", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["steps"][0]["observation"] == "worker"
    page = " ".join((DOCS / "tools-and-mcp.md").read_text(encoding="utf-8").split())
    assert "the `react-agent` command and the served API) runs on a daemon worker" in page
    assert "(the CLI, a script) runs in place" not in page
