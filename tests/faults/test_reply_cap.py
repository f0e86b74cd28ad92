"""A reply's tool-call arguments count toward the reply cap, and a long streamed argument is
merged once, not re-parsed with every chunk (which took minutes for 200 KB)."""

from __future__ import annotations

import pytest
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from graph import build_graph
from tests.support.openai_server import Reply, ScriptedOpenAIServer, ToolCall

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


@tool
def store(text: str) -> str:
    """Store a text."""
    return f"stored {len(text)} characters"


def run(size: int, cap: int) -> dict:
    script = [Reply(tool_calls=[ToolCall("store", {"text": "x" * size})]), Reply(content="done")]
    with ScriptedOpenAIServer(script) as server:
        model = ChatOpenAI(model="m", base_url=server.base_url, api_key="sk", max_retries=0)
        agent = build_graph(model=model, tools=[store], max_reply_chars=cap)
        return agent.invoke({"messages": [("user", "store it")]})


def test_a_tool_call_argument_past_the_cap_is_refused() -> None:
    out = run(200_000, 100_000)
    assert out["status"] == "error" and "passed 100,000 characters" in out["error"]


def test_a_long_tool_call_argument_under_the_cap_arrives_whole() -> None:
    out = run(200_000, 1_000_000)
    assert out["steps"][0]["observation"] == "stored 200000 characters"
