"""Shared fixtures: a clean environment for every test and the scripted OpenAI server."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
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


# The `langgraph dev` modules (server tests, faults, security) share these two; each module
# provides its own module-scoped `model_server` and `dev`.
@pytest.fixture
def script(model_server: ScriptedOpenAIServer) -> Iterator[ScriptedOpenAIServer]:
    """The module's scripted endpoint, emptied of what an earlier failed test left behind."""
    while model_server.remaining:  # each request consumes one item (public HTTP API only)
        httpx.post(f"{model_server.base_url}/chat/completions", json={"messages": []}, timeout=10)
    yield model_server


@pytest.fixture
async def client(dev: Any) -> AsyncIterator[Any]:
    """A LangGraph SDK client of the module's `langgraph dev` server, as Agent Chat UI uses."""
    from langgraph_sdk import get_client

    sdk = get_client(url=dev.url, timeout=30)
    try:
        yield sdk
    finally:
        await sdk.aclose()
