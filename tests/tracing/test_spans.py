"""The spans of real runs (scripted model, real graph) through the in-memory exporter: the tree,
names and attributes under both protocols, a tool error, an approval pause and resume, a
middleware hook."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain.agents.middleware import AgentMiddleware
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from graph import build_graph
from tests.support.plain_tools import echo, explode, publish
from tests.support.scripted_model import ScriptedChatModel, action, answer, calls, tool_call
from tests.tracing.conftest import Spans


def config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def one_call_run(protocol: str, tools: list[Any], name: str, **settings: Any) -> Any:
    model = ScriptedChatModel([action(protocol, name, {"text": "hi"}), answer(protocol, "done")])
    return build_graph(model=model, tools=tools, protocol=protocol, **settings)


@pytest.mark.parametrize("protocol", ["native", "text"])
def test_a_run_is_a_tree_of_nodes_model_calls_and_tool_calls(traced: Any, protocol: str) -> None:
    spans: Spans = traced()
    agent = one_call_run(protocol, [echo], "echo")
    out = agent.invoke({"messages": [("user", "say hi")]}, config("t-tree"))
    assert out["status"] == "answered"

    model_spans = ["    TextReAct (LLM)"]  # one run: the inner model is called inside it
    if protocol == "native":
        model_spans = ["    ScriptedChatModel (LLM)"]
    assert spans.tree() == [
        "react-agent (AGENT)",
        "  think (CHAIN)",
        *model_spans,
        "  act (CHAIN)",
        "    echo (TOOL)",
        "  think (CHAIN)",
        *model_spans,
        "  finish (CHAIN)",
    ]
    (root,) = spans.named("react-agent")
    assert root.attributes["react_agent.thread_id"] == "t-tree"
    assert root.attributes["react_agent.status"] == "answered"
    assert root.attributes["react_agent.protocol"] == protocol
    assert root.attributes["session.id"] == "t-tree"

    tool_span = spans.named("echo")[0]
    assert tool_span.attributes["tool.name"] == "echo"
    assert "hi" in tool_span.attributes["input.value"]
    assert "echo: hi" in tool_span.attributes["output.value"]
    assert tool_span.end_time > tool_span.start_time

    # the model call: the request's messages and the reply as OpenInference attributes
    first_call = next(s for s in spans.all if s.attributes["openinference.span.kind"] == "LLM")
    attrs = first_call.attributes
    assert attrs["llm.input_messages.1.message.role"] == "user"
    assert attrs["llm.input_messages.1.message.content"] == "say hi"
    if protocol == "native":
        assert attrs["llm.output_messages.0.message.tool_calls.0.tool_call.function.name"] == "echo"
    else:
        # the parsed step, its raw text kept in the reply's metadata
        assert "Action: echo" in attrs["output.value"]
        assert attrs["llm.output_messages.0.message.tool_calls.0.tool_call.function.name"] == "echo"
        assert json.loads(
            attrs["llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments"]
        ) == {"text": "hi"}


def test_token_counts_are_on_the_model_span(traced: Any) -> None:
    from langchain_core.messages import AIMessage

    spans: Spans = traced()
    reply = AIMessage(
        content="done", usage_metadata={"input_tokens": 11, "output_tokens": 3, "total_tokens": 14}
    )
    agent = build_graph(model=ScriptedChatModel([reply]), tools=[echo], protocol="native")
    agent.invoke({"messages": [("user", "hello")]}, config("t-tokens"))
    (llm,) = [s for s in spans.all if s.attributes["openinference.span.kind"] == "LLM"]
    assert llm.attributes["llm.token_count.prompt"] == 11
    assert llm.attributes["llm.token_count.completion"] == 3
    assert llm.attributes["llm.token_count.total"] == 14


@pytest.mark.parametrize("protocol", ["native", "text"])
def test_a_failing_tool_is_an_error_span_and_the_run_goes_on(traced: Any, protocol: str) -> None:
    spans: Spans = traced()
    agent = one_call_run(protocol, [explode], "explode")
    out = agent.invoke({"messages": [("user", "try it")]}, config("t-error"))
    assert out["status"] == "answered"
    (tool_span,) = spans.named("explode")
    assert tool_span.status.status_code.name == "ERROR"
    assert "disk on fire" in spans.text()
    # the act node itself finished: the failure became the observation
    assert all(s.status.status_code.name != "ERROR" for s in spans.named("act"))


def test_an_approval_pause_and_its_resume_are_two_traces_of_one_thread(traced: Any) -> None:
    spans: Spans = traced()
    model = ScriptedChatModel([calls(tool_call("publish", {"text": "hi"})), "ok"])
    agent = build_graph(
        model=model, tools=[publish], approve=["publish"], checkpointer=InMemorySaver()
    )
    paused = agent.invoke({"messages": [("user", "publish hi")]}, config("t-hitl"))
    assert "__interrupt__" in paused
    first = spans.tree()
    assert "  review (CHAIN)" in first
    assert not spans.named("publish")  # nothing ran while waiting
    (review,) = spans.named("review")
    assert review.status.status_code.name != "ERROR"  # a pause is not a failure

    agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config("t-hitl"))
    roots = spans.named("react-agent")
    assert len(roots) == 2
    assert {r.attributes["react_agent.thread_id"] for r in roots} == {"t-hitl"}
    assert roots[1].attributes["react_agent.status"] == "answered"
    (tool_span,) = spans.named("publish")
    assert "published hi" in tool_span.attributes["output.value"]
    assert tool_span.context.trace_id == roots[1].context.trace_id


class Counting(AgentMiddleware):
    """A user's middleware with a node hook: its span is the hook's node."""

    def before_model(self, state: Any, runtime: Any) -> None:
        return None


def test_a_middleware_hook_is_a_span_where_it_runs(traced: Any) -> None:
    spans: Spans = traced()
    model = ScriptedChatModel([action("native", "echo", {"text": "hi"}), "done"])
    agent = build_graph(model=model, tools=[echo], middleware=[Counting()])
    agent.invoke({"messages": [("user", "say hi")]}, config("t-mw"))
    names = [line.strip() for line in spans.tree() if line.startswith("  ") and line[2] != " "]
    assert names == [
        "Counting.before_model (CHAIN)",
        "think (CHAIN)",
        "act (CHAIN)",
        "Counting.before_model (CHAIN)",
        "think (CHAIN)",
        "finish (CHAIN)",
    ]
