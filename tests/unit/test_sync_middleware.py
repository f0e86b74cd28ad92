"""Sync-only `@wrap_model_call` / `@wrap_tool_call` middleware, written as docs/middleware.md
shows, works in every entry point: a sync run calls it, and an async run (the CLI's `astream`,
the served graph, `ainvoke`) runs its sync form on a worker thread whose handler hands the
inner layers back to the run's loop (`graph.middleware.chain.async_form`).

Before, the async run called LangChain's default `awrap_*`, which raises: the model hook failed
the run, and the tool hook made every tool call an error while the CLI still said "answered".
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from langchain.agents.middleware import wrap_model_call, wrap_tool_call
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from graph import build_graph
from tests.support.cli import cli_env, run_cli
from tests.support.openai_server import Reply, ScriptedOpenAIServer, ToolCall

SEEN: list[str] = []


@wrap_model_call
def shouting(request: Any, handler: Any) -> Any:
    """Sync only: tags the model's answer, so a test sees the hook ran around the call."""
    response = handler(request)
    reply = response.result[0]
    if not reply.tool_calls:
        reply = reply.model_copy(update={"content": f"{reply.text} (checked)"})
    SEEN.append(f"model:{threading.current_thread() is threading.main_thread()}")
    return response.__class__(result=[reply], structured_response=response.structured_response)


@wrap_tool_call
def audited(request: Any, handler: Any) -> Any:
    """Sync only: tags each tool result."""
    result = handler(request)
    SEEN.append(f"tool:{request.tool_call['name']}")
    if isinstance(result, ToolMessage):
        return result.model_copy(update={"content": f"{result.text} [audited]"})
    return result


@tool
def double(number: int) -> int:
    """Double a number."""
    return number * 2


def _script() -> list[Reply]:
    return [Reply(tool_calls=[ToolCall("double", {"number": 21})]), Reply(content="42")]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_sync_only_wrap_hooks_run_in_code(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    SEEN.clear()
    with ScriptedOpenAIServer(_script()) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-sync-middleware-123456")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        agent = build_graph(
            protocol="native",
            tools=[double],
            middleware=[shouting, audited],
            checkpointer=InMemorySaver(),
        )
        inputs = {"messages": [("user", "double 21")]}
        config = {"configurable": {"thread_id": f"sync-mw-{mode}"}}
        if mode == "sync":
            out = agent.invoke(inputs, config)
        else:
            out = asyncio.run(agent.ainvoke(inputs, config))
    assert out["status"] == "answered", out
    assert out["answer"] == "42 (checked)"
    observation = next(x for x in out["messages"] if isinstance(x, ToolMessage))
    assert observation.status != "error", observation.text
    assert observation.text.startswith("42 [audited]")
    assert "tool:double" in SEEN and SEEN.count("model:True") + SEEN.count("model:False") == 2
    if mode == "async":  # the sync form ran off the loop's thread
        assert "model:True" not in SEEN


@pytest.mark.integration
def test_sync_only_wrap_hooks_loaded_by_path_work_in_the_cli(tmp_path: Path) -> None:
    paths = f"{__name__}:shouting,{__name__}:audited"
    with ScriptedOpenAIServer(_script()) as server:
        env = cli_env(server.base_url, tmp_path / "state", REACT_AGENT_MIDDLEWARE=paths)
        tools = f"{__name__}:double"
        done = run_cli(
            "ask", "double 21", "--json", "--tools", tools, "--checkpointer", "memory", env=env
        )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "answered" and out["answer"] == "42 (checked)", out
    assert out["steps"][0]["observation"].startswith("42 [audited]"), out["steps"]
