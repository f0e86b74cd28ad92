"""The run's token usage, summed over every model call it made (the steps, a middleware's own
calls, the wrap-up), in LangChain's usage_metadata form, with the real ChatOpenAI against the
scripted OpenAI-compatible server, under both protocols."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents.middleware import AgentMiddleware, ModelFallbackMiddleware
from langchain_core.messages import RemoveMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from graph import build_graph
from tests.support.openai_server import HTTPError, Reply, ScriptedOpenAIServer, ToolCall

pytestmark = pytest.mark.integration


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: sunny"


def step(protocol: str) -> Reply:
    if protocol == "native":
        return Reply(tool_calls=[ToolCall("lookup", {"city": "Oslo"})], usage=(100, 10))
    text = 'Thought: look\nAction: lookup\nAction Input: {"city": "Oslo"}'
    return Reply(content=text, usage=(100, 10))


def final(protocol: str, usage: tuple[int, int]) -> Reply:
    text = "Sunny." if protocol == "native" else "Thought: ok\nFinal Answer: Sunny."
    return Reply(content=text, usage=usage)


def model(server: ScriptedOpenAIServer, name: str = "m") -> ChatOpenAI:
    return ChatOpenAI(
        model=name, base_url=server.base_url, api_key="sk-test", stream_usage=True, max_retries=0
    )


@pytest.mark.parametrize("protocol", ["native", "text"])
def test_usage_sums_every_model_call_of_the_run(protocol: str) -> None:
    with ScriptedOpenAIServer([step(protocol), final(protocol, (150, 5))]) as server:
        agent = build_graph(model=model(server), tools=[lookup], protocol=protocol)
        out = agent.invoke({"messages": [("user", "weather in Oslo?")]})
    assert out["usage"] == {"input_tokens": 250, "output_tokens": 15, "total_tokens": 265}
    assert sum(s["usage"]["total_tokens"] for s in out["steps"] if s.get("usage")) == 265


@pytest.mark.parametrize("protocol", ["native", "text"])
def test_a_fallback_models_calls_count_too(protocol: str) -> None:
    """The primary fails (its failed call reports no usage); the fallback's calls count."""
    script = [
        HTTPError(503, "down"),
        step(protocol),
        HTTPError(503, "down"),
        final(protocol, (7, 3)),
    ]
    with ScriptedOpenAIServer(script) as server:
        fallback = ModelFallbackMiddleware(model(server, "backup"))
        agent = build_graph(
            model=model(server), tools=[lookup], protocol=protocol, middleware=[fallback]
        )
        out = agent.invoke({"messages": [("user", "weather in Oslo?")]})
    assert out["answer"] == "Sunny."
    assert out["usage"] == {"input_tokens": 107, "output_tokens": 13, "total_tokens": 120}


def test_a_new_run_counts_from_zero() -> None:
    script = [final("native", (10, 1)), final("native", (20, 2))]
    with ScriptedOpenAIServer(script) as server:
        from langgraph.checkpoint.memory import InMemorySaver

        agent = build_graph(model=model(server), tools=[lookup], checkpointer=InMemorySaver())
        config = {"configurable": {"thread_id": "u"}}
        agent.invoke({"messages": [("user", "one")]}, config)
        second = agent.invoke({"messages": [("user", "two")]}, config)
    assert second["usage"] == {"input_tokens": 20, "output_tokens": 2, "total_tokens": 22}


def test_the_cli_prints_the_total_and_json_carries_it(tmp_path) -> None:
    import json

    from tests.support.cli import cli_env, run_cli

    script = [step("text"), final("text", (150, 5))]
    with ScriptedOpenAIServer(script * 2) as server:
        env = cli_env(server.base_url, tmp_path / "state")
        args = ["ask", "weather in Oslo?", "--protocol", "text", "--tools", "calculator"]
        shown = run_cli(*args, "--checkpointer", "memory", env=env)
        data = run_cli(*args, "--checkpointer", "memory", "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    assert "tokens: 250 in, 15 out, 265 in all" in shown.stderr
    assert json.loads(data.stdout)["usage"] == {
        "input_tokens": 250,
        "output_tokens": 15,
        "total_tokens": 265,
    }


class _RewritesReplies(AgentMiddleware):
    """An after_model hook that rewrites each reply under its own id, its usage replaced (as
    a redaction or a cache may leave it): the run's total is still what the calls used."""

    def __init__(self, usage: dict[str, int] | None) -> None:
        super().__init__()
        self.usage = usage

    def after_model(self, state: Any, runtime: Any) -> dict[str, Any]:
        reply = state["messages"][-1]
        return {"messages": [reply.model_copy(update={"usage_metadata": self.usage})]}


class _DropsTheRunsFirstStep(AgentMiddleware):
    """A before_model hook that drops the run's first step once a second one is there, by
    writing the conversation anew (as `SummarizationMiddleware` does) or by removing its two
    messages by id: the replies it drops were calls all the same."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.how = how

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        messages = state["messages"]
        question = max(i for i, x in enumerate(messages) if x.type == "human")
        run = messages[question + 1 :]
        if len(run) < 4:
            return None
        if self.how == "by_id":
            return {"messages": [RemoveMessage(id=x.id) for x in run[:2]]}
        kept = [*messages[: question + 1], *run[2:]]
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *kept]}


SUMMED = {"input_tokens": 250, "output_tokens": 15, "total_tokens": 265}


@pytest.mark.parametrize(
    "usage", [None, {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}]
)
def test_a_reply_a_hook_rewrote_counts_as_its_call(usage: dict[str, int] | None) -> None:
    with ScriptedOpenAIServer([step("native"), final("native", (150, 5))]) as server:
        agent = build_graph(
            model=model(server), tools=[lookup], middleware=[_RewritesReplies(usage)]
        )
        out = agent.invoke({"messages": [("user", "weather in Oslo?")]})
    assert out["answer"] == "Sunny."
    assert out["usage"] == SUMMED


@pytest.mark.parametrize(
    ("protocol", "how"), [("native", "rewrite"), ("text", "rewrite"), ("native", "by_id")]
)
def test_replies_a_hook_dropped_from_the_run_still_count(protocol: str, how: str) -> None:
    """Two runs on one thread: the second's hook drops its first step and keeps the first
    run's messages, which count for the first run only."""
    from langgraph.checkpoint.memory import InMemorySaver

    script = [final(protocol, (10, 1)), step(protocol), step(protocol), final(protocol, (150, 5))]
    with ScriptedOpenAIServer(script) as server:
        agent = build_graph(
            model=model(server),
            tools=[lookup],
            protocol=protocol,
            middleware=[_DropsTheRunsFirstStep(how)],
            checkpointer=InMemorySaver(),
        )
        config = {"configurable": {"thread_id": "dropped"}}
        first = agent.invoke({"messages": [("user", "hello")]}, config)
        second = agent.invoke({"messages": [("user", "weather in Oslo?")]}, config)
    assert first["usage"] == {"input_tokens": 10, "output_tokens": 1, "total_tokens": 11}
    assert second["answer"] == "Sunny."
    assert len([x for x in second["messages"] if x.type == "tool"]) == 1  # one step dropped
    assert second["usage"] == {"input_tokens": 350, "output_tokens": 25, "total_tokens": 375}


def test_a_run_an_earlier_release_started_counts_on_in_its_whole_count() -> None:
    """Until this round every step added its calls to `run.tokens`, the run's whole count. A
    run paused under that release and finished under this one goes on counting there, and
    is not also summed from its replies (which would count its earlier steps twice)."""
    from langchain_core.messages import AIMessage, HumanMessage

    from graph.usage import run_usage, with_tokens

    question = HumanMessage("weather?", id="q")
    earlier = AIMessage("", id="a1", usage_metadata={**USED, "total_tokens": 110})
    state = {"messages": [question, earlier], "run": {"question_id": "q", "tokens": USED_110}}
    reply = AIMessage("Sunny.", id="a2", usage_metadata=USED_20)
    update = with_tokens(state, {"messages": [reply]}, dict(USED_20))
    assert update["run"] == {
        "tokens": {"input_tokens": 115, "output_tokens": 15, "total_tokens": 130}
    }
    run = {**state["run"], **update["run"]}
    assert run_usage(run, [earlier, reply]) == update["run"]["tokens"]
    # a run this release started: the replies carry it, nothing is written for them
    fresh = {"messages": [question, earlier], "run": {"question_id": "q"}}
    assert with_tokens(fresh, {"messages": [reply]}, dict(USED_20)) == {"messages": [reply]}
    assert run_usage(fresh["run"], [earlier, reply]) == {
        "input_tokens": 115,
        "output_tokens": 15,
        "total_tokens": 130,
    }


USED = {"input_tokens": 100, "output_tokens": 10}
USED_110 = {**USED, "total_tokens": 110}
USED_20 = {"input_tokens": 15, "output_tokens": 5, "total_tokens": 20}
