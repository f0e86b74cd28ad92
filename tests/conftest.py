"""Shared fixtures: a clean environment for every test and the scripted OpenAI server."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from graph.settings import ENV_VARS
from tests.support.openai_server import ScriptedOpenAIServer

_ISOLATED = {
    *ENV_VARS.values(),
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "LANGSMITH_API_KEY",
    "LANGCHAIN_API_KEY",
}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A developer's own keys, endpoints and agent settings never leak into a test."""
    for name in list(os.environ):
        if name in _ISOLATED or name.startswith("REACT_AGENT_"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANGSMITH_TRACING", "false")
    monkeypatch.setenv("REACT_AGENT_LOCAL", "off")  # the embedded model only where a test asks
    monkeypatch.setenv("REACT_AGENT_STATE_DIR", str(tmp_path_factory.mktemp("state")))


@pytest.fixture
def openai_server() -> Iterator[ScriptedOpenAIServer]:
    """A started scripted server with an empty script; tests `add(...)` their replies."""
    with ScriptedOpenAIServer() as server:
        yield server
