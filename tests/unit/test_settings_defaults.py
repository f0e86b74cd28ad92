"""Each default is declared once: the configuration table shows the values the tools really use
(it once said 4000 characters, 2 retries and 0.5 s while the tools used 8000, 3 attempts and
0.2 s), and importing the settings still loads no tool module."""

from __future__ import annotations

import subprocess
import sys

import pytest

from graph.environment import ENVIRONMENT
from tools import http_client, web_fetch

DECLARED = {var.name: var.default for var in ENVIRONMENT}


def test_http_defaults_are_what_the_client_uses(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in DECLARED:
        monkeypatch.delenv(name, raising=False)
    used = http_client.settings()
    assert DECLARED["REACT_AGENT_HTTP_RETRIES"] == str(used.attempts) == "3"
    assert float(DECLARED["REACT_AGENT_HTTP_BACKOFF"]) == used.backoff == 0.2
    assert float(DECLARED["REACT_AGENT_HTTP_TIMEOUT"]) == used.timeout
    assert int(DECLARED["REACT_AGENT_HTTP_MAX_BYTES"]) == used.max_bytes


def test_the_fetch_limit_is_the_tools_own() -> None:
    assert DECLARED["REACT_AGENT_FETCH_MAX_CHARS"] == str(web_fetch.DEFAULT_MAX_CHARS) == "8000"


def test_retries_are_described_as_attempts() -> None:
    retries = next(var for var in ENVIRONMENT if var.name == "REACT_AGENT_HTTP_RETRIES")
    assert retries.help.startswith("Attempts in all")


def test_importing_the_settings_loads_no_tool_module() -> None:
    code = (
        "import sys, graph.settings\n"
        "loaded = [m for m in ('tools.web_fetch', 'tools.http_client', 'httpx', 'langchain_core')"
        " if m in sys.modules]\n"
        "print(loaded)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
