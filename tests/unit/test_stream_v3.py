"""`stream_events(version="v3")`, LangGraph's typed streaming, gives a client the same
projections from this graph as from `create_agent`: the stream transformers `create_agent`
registers when it compiles (`run.tool_calls`, `run.subagents`, each middleware's own, the
caller's `transformers=`) are registered here too (`graph.middleware.streaming`).

Each test runs `create_agent` beside the graph on the same script and compares, so a projection
that LangChain changes changes for both. Without the transformers a middleware's stream
scrubbing was skipped: `PIIMiddleware(apply_to_output=True)` left the e-mail address in the
streamed text of this graph while `create_agent` redacted it.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, PIIMiddleware
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.stream._types import StreamTransformer
from langgraph.stream.stream_channel import StreamChannel

from graph import build_graph
from tests.support.scripted_model import ScriptedChatModel, action, answer, calls, tool_call

EMAIL = "ada.lovelace@example.com"
QUESTION = {"messages": [("user", "What is 2 + 3?")]}

pytestmark = pytest.mark.filterwarnings("ignore:The v3 streaming protocol")


@tool
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


def agents(
    protocol: str, final: str, middleware: Callable[[], list[AgentMiddleware]] = list, **kw: Any
) -> dict[str, Any]:
    """`create_agent` (native: it has no text protocol) and this graph, on the same script."""

    def script(p: str) -> ScriptedChatModel:
        return ScriptedChatModel([action(p, "add", {"a": 2, "b": 3}), answer(p, final)])

    return {
        "create_agent": create_agent(script("native"), tools=[add], middleware=middleware(), **kw),
        "ours": build_graph(
            script(protocol), tools=[add], protocol=protocol, middleware=middleware(), **kw
        ),
    }


def streamed_text(run: Any) -> list[str]:
    return [str(message.text) for message in run.messages]


@pytest.mark.parametrize("protocol", ["native", "text"])
def test_each_tool_call_is_a_handle_with_its_input_and_output(protocol: str) -> None:
    seen = {}
    for name, agent in agents(protocol, "5").items():
        run = agent.stream_events(QUESTION, version="v3")
        handles = list(run.tool_calls)
        assert run.output is not None  # drives the run to its end
        seen[name] = [(h.tool_name, h.input, h.output, h.completed) for h in handles]
    assert seen["ours"] == seen["create_agent"] == [("add", {"a": 2, "b": 3}, "5", True)]


def test_the_async_form_gives_the_same_handles() -> None:
    async def handles(agent: Any) -> list[tuple[str, Any]]:
        run = await agent.astream_events(QUESTION, version="v3")
        found = [h async for h in run.tool_calls]
        await run.output()  # a handle comes when its call starts: its output, at the end
        return [(h.tool_name, h.output) for h in found]

    seen = {name: asyncio.run(handles(a)) for name, a in agents("native", "5").items()}
    assert seen["ours"] == seen["create_agent"] == [("add", "5")]


@pytest.mark.parametrize("protocol", ["native", "text"])
def test_a_middlewares_stream_scrubbing_applies_to_the_streamed_text(protocol: str) -> None:
    """`PIIMiddleware` redacts the answer in the state and, with its own transformer, in the
    text a client streams."""

    def pii() -> list[AgentMiddleware]:
        return [PIIMiddleware("email", strategy="redact", apply_to_output=True)]

    for name, agent in agents(protocol, f"5; write to {EMAIL}", pii).items():
        texts = streamed_text(agent.stream_events(QUESTION, version="v3"))
        assert any("[REDACTED_EMAIL]" in text for text in texts), (name, texts)
        assert not any(EMAIL in text for text in texts), (name, texts)


class Counting(StreamTransformer):
    """A caller's own projection: how many protocol events the run produced."""

    _native = True
    required_stream_modes = ("values",)

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self.events: StreamChannel[str] = StreamChannel()

    def init(self) -> dict[str, Any]:
        return {"counted": self.events}

    def process(self, event: Any) -> bool:
        self.events.push(event["method"])
        return True


def test_a_callers_transformers_are_registered_as_create_agent_registers_them() -> None:
    for name, agent in agents("native", "5", transformers=[Counting]).items():
        run = agent.stream_events(QUESTION, version="v3")
        assert "values" in list(run.counted), name


def test_the_agent_is_a_named_subagent_inside_another_agents_tool() -> None:
    """`build_graph(name=...)` names its runs as `create_agent(name=...)` does, so a parent
    agent that calls it from a tool shows it on `run.subagents`."""
    inner = build_graph(
        ScriptedChatModel([AIMessage("the helper's answer")]), tools=[add], name="helper"
    )

    @tool
    def ask_helper(question: str) -> str:
        """Ask the helper agent."""
        return inner.invoke({"messages": [("user", question)]})["answer"]

    parent = create_agent(
        ScriptedChatModel([calls(tool_call("ask_helper", {"question": "hi"})), AIMessage("done")]),
        tools=[ask_helper],
        name="parent",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = parent.stream_events(QUESTION, version="v3")
        names = [getattr(handle, "name", None) or getattr(handle, "graph_name", None)
                 for handle in run.subagents]  # fmt: skip
        assert run.output["messages"][-1].text == "done"
    assert names == ["helper"], names
