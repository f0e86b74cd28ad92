"""LangChain's built-in middleware run through `build_graph`, under both protocols, each checked
by its effect on what the model was sent or on the run's outcome (not only "it ran").

The model-side middleware are here; the tool-side ones and the refusal check are in
`test_middleware_builtin_tools.py`, which reuses the helpers below.

Left out, with the reason (the only one):

| middleware | reason |
|---|---|
| ProviderToolSearchMiddleware | a provider feature: it defers tools to the provider's |
| | server-side tool search (Anthropic, OpenAI); with no deferred tool it passes the |
| | request through unchanged, so there is no effect to check offline |
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from langchain.agents.middleware import (
    ClearToolUsesEdit,
    ContextEditingMiddleware,
    LLMToolSelectorMiddleware,
    ModelCallLimitMiddleware,
    ModelChoice,
    ModelFallbackMiddleware,
    ModelRequest,
    ModelRetryMiddleware,
    ModelRouterMiddleware,
    PIIDetectionError,
    PIIMiddleware,
    SummarizationMiddleware,
    dynamic_prompt,
    wrap_model_call,
)
from langchain_core.decisions import BaseDecisionModel, ClassifierResponse
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from graph import build_graph
from tests.support.scripted_model import ScriptedChatModel, action, answer, calls, tool_call

PROTOCOLS = ["native", "text"]
EMAIL = "ada.lovelace@example.com"


def run(agent: Any, payload: Any, mode: str = "sync", config: dict | None = None) -> dict:
    if isinstance(payload, str):
        payload = {"messages": [("user", payload)]}
    if mode == "async":
        return asyncio.run(agent.ainvoke(payload, config))
    return agent.invoke(payload, config)


def sent_text(request: Any) -> str:
    """Everything one recorded request carried: message contents, tool calls and tools."""
    parts = [[m.content, getattr(m, "tool_calls", [])] for m in request.messages]
    return json.dumps([parts, request.tools], default=str, ensure_ascii=False)


def offered(protocol: str, request: Any) -> str:
    """What a request says about its tools: bound schemas (native), system prompt (text)."""
    if protocol == "native":
        return " ".join(spec["function"]["name"] for spec in request.tools)
    return request.messages[0].content


def observations(out: dict) -> list[str]:
    return [s["observation"] for s in out["steps"] if s["kind"] == "action"]


@tool
def echo(text: str) -> str:
    """Repeat the text back."""
    return f"echo: {text}"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


TOOLS = [echo, add]


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


# --- ModelCallLimitMiddleware ---------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_model_call_run_limit_ends_the_run(protocol: str, mode: str) -> None:
    model = ScriptedChatModel([action(protocol, "echo", {"text": f"again {i}"}) for i in (1, 2, 3)])
    limit = ModelCallLimitMiddleware(run_limit=2, exit_behavior="end")
    agent = build_graph(model=model, tools=TOOLS, protocol=protocol, middleware=[limit])
    out = run(agent, "loop", mode)
    assert out["status"] == "max_steps"
    assert len(model.requests) == 2  # the third call was never made
    assert observations(out) == ["echo: again 1", "echo: again 2"]
    assert "run limit (2/2)" in out["answer"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_model_call_thread_limit_spans_runs(protocol: str) -> None:
    model = ScriptedChatModel(
        [
            action(protocol, "echo", {"text": "one"}),
            answer(protocol, "first done"),
            action(protocol, "echo", {"text": "two"}),
            answer(protocol, "never asked for"),
        ]
    )
    limit = ModelCallLimitMiddleware(thread_limit=3, exit_behavior="end")
    agent = build_graph(
        model=model,
        tools=TOOLS,
        protocol=protocol,
        middleware=[limit],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": f"thread-limit-{protocol}"}}
    first = run(agent, "first", config=config)
    assert first["status"] == "answered" and first["answer"] == "first done"
    second = run(agent, "second", config=config)
    assert second["status"] == "max_steps"
    assert len(model.requests) == 3 and model.remaining == 1
    assert "thread limit (3/3)" in second["answer"]


# --- PIIMiddleware --------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("strategy", ["redact", "mask", "hash"])
def test_pii_never_reaches_the_model(protocol: str, strategy: str, mode: str) -> None:
    @tool
    def lookup(name: str) -> str:
        """Look up a person's contact."""
        return f"{name} writes from {EMAIL}"

    model = ScriptedChatModel(
        [action(protocol, "lookup", {"name": "Ada"}), answer(protocol, "found her")]
    )
    pii = PIIMiddleware("email", strategy=strategy, apply_to_tool_results=True)
    agent = build_graph(model=model, tools=[lookup], protocol=protocol, middleware=[pii])
    out = run(agent, f"Mail {EMAIL} about Ada", mode)
    assert out["status"] == "answered"
    assert len(model.requests) == 2
    for request in model.requests:
        assert EMAIL not in sent_text(request)
    question = model.requests[0].messages[-1].content
    marker = {"redact": "[REDACTED_EMAIL]", "mask": "@****.com", "hash": "<email_hash:"}
    assert marker[strategy] in question
    assert "Mail " in question and "about Ada" in question  # only the address was replaced
    stored = json.dumps([m.content for m in out["messages"]])
    assert EMAIL not in stored  # replaced in the stored conversation too, as LangChain does


def agent_answer(agent: Any, mode: str) -> str:
    """The answer a caller reads, on a fresh run of the same agent."""
    return run(agent, "Whom do I write to?", mode)["answer"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_pii_in_the_models_answer_is_redacted_wherever_the_answer_is_read(
    protocol: str, mode: str
) -> None:
    """`apply_to_output` redacts the reply in an after_model hook: the `answer` a caller
    reads and the `answer` event a client streams (what the CLI prints) carry the redacted
    text (they once carried the model's own). The model node's own update carries the reply
    as the model wrote it, in `create_agent` too: the hook runs after it."""
    model = ScriptedChatModel([answer(protocol, f"Write to {EMAIL}.")] * 2)
    pii = PIIMiddleware("email", strategy="redact", apply_to_output=True)
    agent = build_graph(model=model, tools=TOOLS, protocol=protocol, middleware=[pii])
    payload = {"messages": [("user", "Whom do I write to?")]}
    if mode == "async":

        async def parts() -> list[Any]:
            return [p async for p in agent.astream(payload, stream_mode=["custom", "updates"])]

        streamed = asyncio.run(parts())
    else:
        streamed = list(agent.stream(payload, stream_mode=["custom", "updates"]))
    events = [part for kind, part in streamed if kind == "custom"]
    assert {"event": "answer", "text": "Write to [REDACTED_EMAIL]."} in events
    assert EMAIL not in json.dumps(events)
    answers = [u["answer"] for kind, p in streamed if kind == "updates"
               for u in p.values() if isinstance(u, dict) and u.get("answer")]  # fmt: skip
    assert answers[-1] == "Write to [REDACTED_EMAIL]."
    assert agent_answer(agent, mode) == "Write to [REDACTED_EMAIL]."


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_pii_block_stops_before_the_model(protocol: str, mode: str) -> None:
    model = ScriptedChatModel([answer(protocol, "never")])
    pii = PIIMiddleware("email", strategy="block")
    agent = build_graph(model=model, tools=TOOLS, protocol=protocol, middleware=[pii])
    with pytest.raises(PIIDetectionError):
        run(agent, f"Write to {EMAIL}", mode)
    assert model.requests == []


# --- SummarizationMiddleware ----------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_summary_replaces_old_turns(protocol: str) -> None:
    summarizer = ScriptedChatModel(["SUMMARY: echoed one and two"], cycle=True)
    model = ScriptedChatModel(
        [
            action(protocol, "echo", {"text": "one"}),
            action(protocol, "echo", {"text": "two"}),
            action(protocol, "echo", {"text": "three"}),
            answer(protocol, "done"),
        ]
    )
    summary = SummarizationMiddleware(
        model=summarizer, trigger=("messages", 6), keep=("messages", 2)
    )
    agent = build_graph(model=model, tools=TOOLS, protocol=protocol, middleware=[summary])
    out = run(agent, "echo three times")
    assert out["status"] == "answered" and out["answer"] == "done"
    assert len(summarizer.requests) == 1  # triggered once, when the history reached 6
    # what the model saw after the summary: the summary, then the kept turns only
    last = sent_text(model.requests[-1])
    assert "SUMMARY: echoed one and two" in last
    assert "echo: one" not in last and "echo three times" not in last
    assert "echo: three" in last
    # what the summarizer was given: the turns it replaced
    assert "echo: one" in sent_text(summarizer.requests[0])
    # the stored conversation is the summary and the kept turns, as in `create_agent`
    stored = out["messages"]
    assert isinstance(stored[0], HumanMessage) and "SUMMARY: echoed one" in stored[0].text
    assert [m.type for m in stored] == ["human", "ai", "tool", "ai"]
    assert observations(out) == ["echo: three"]  # the trace is derived from what is kept


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_step_limit_holds_when_a_summary_drops_old_steps(protocol: str) -> None:
    """The step count is the number on the last step, not a count of the steps still in the
    messages: a summary that replaces the early steps does not give the run more of them."""
    summarizer = ScriptedChatModel(["SUMMARY: echoed"], cycle=True)
    model = ScriptedChatModel(
        [action(protocol, "echo", {"text": str(i)}) for i in range(12)], cycle=True
    )
    summary = SummarizationMiddleware(
        model=summarizer, trigger=("messages", 5), keep=("messages", 2)
    )
    agent = build_graph(
        model=model,
        tools=TOOLS,
        protocol=protocol,
        middleware=[summary],
        max_steps=4,
        answer_on_limit=False,
    )
    out = run(agent, "echo forever")
    assert len(summarizer.requests) >= 1  # old steps were dropped along the way
    assert out["status"] == "max_steps" and "after 4 steps" in out["answer"]
    assert len(model.requests) == 4


# --- ModelFallbackMiddleware and ModelRetryMiddleware ---------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_fallback_model_answers(protocol: str, mode: str) -> None:
    primary = ScriptedChatModel([ConnectionError("primary is down")])
    fallback = ScriptedChatModel([answer(protocol, "from the fallback")])
    agent = build_graph(
        model=primary,
        tools=TOOLS,
        protocol=protocol,
        middleware=[ModelFallbackMiddleware(fallback)],
    )
    out = run(agent, "hello", mode)
    assert out["status"] == "answered" and out["answer"] == "from the fallback"
    assert len(primary.requests) == 1 and len(fallback.requests) == 1
    if protocol == "native":
        assert fallback.requests[0].tools  # the same tools, bound to the fallback
    else:
        assert fallback.requests[0].stop == ["Observation:"]
        assert "echo" in fallback.requests[0].messages[0].content


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_model_retry_after_a_transient_error(protocol: str, mode: str) -> None:
    model = ScriptedChatModel([TimeoutError("blip"), answer(protocol, "second try")])
    retry = ModelRetryMiddleware(max_retries=2, initial_delay=0, backoff_factor=0, jitter=False)
    agent = build_graph(model=model, tools=TOOLS, protocol=protocol, middleware=[retry])
    out = run(agent, "hello", mode)
    assert out["status"] == "answered" and out["answer"] == "second try"
    assert len(model.requests) == 2
    assert sent_text(model.requests[0]) == sent_text(model.requests[1])  # the same request


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_model_retry_gives_up_after_max_retries(protocol: str) -> None:
    model = ScriptedChatModel([ConnectionError("down")], cycle=True)
    retry = ModelRetryMiddleware(max_retries=1, initial_delay=0, backoff_factor=0, jitter=False)
    agent = build_graph(model=model, tools=TOOLS, protocol=protocol, middleware=[retry])
    out = run(agent, "hello")
    assert len(model.requests) == 2  # the first try and one retry
    # on_failure="continue": LangChain returns the failure as the model's reply, an answer
    assert out["status"] == "answered"
    assert out["answer"] == "Model call failed after 2 attempts with ConnectionError: down"


# --- ContextEditingMiddleware ---------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_context_editing_clears_old_tool_results(protocol: str) -> None:
    model = ScriptedChatModel(
        [
            action(protocol, "echo", {"text": "first"}),
            action(protocol, "echo", {"text": "second"}),
            action(protocol, "echo", {"text": "third"}),
            answer(protocol, "done"),
        ]
    )
    edits = ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=1, keep=1)])
    agent = build_graph(model=model, tools=TOOLS, protocol=protocol, middleware=[edits])
    out = run(agent, "echo thrice")
    assert out["status"] == "answered"
    last = sent_text(model.requests[-1])
    assert "echo: first" not in last and "echo: second" not in last
    assert "echo: third" in last  # the newest result is kept
    assert last.count("[cleared]") == 2
    assert observations(out) == ["echo: first", "echo: second", "echo: third"]  # state intact


# --- LLMToolSelectorMiddleware --------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_tool_selector_offers_only_the_chosen_tool(protocol: str) -> None:
    choice = calls(tool_call("ToolSelectionResponse", {"tools": ["add", "echo"]}))
    selector = ScriptedChatModel([choice], cycle=True)
    model = ScriptedChatModel([action(protocol, "add", {"a": 2, "b": 3}), answer(protocol, "5")])
    middleware = LLMToolSelectorMiddleware(model=selector, max_tools=1)
    agent = build_graph(model=model, tools=TOOLS, protocol=protocol, middleware=[middleware])
    out = run(agent, "What is 2 + 3?")
    assert out["status"] == "answered" and observations(out) == ["5"]
    assert len(selector.requests) == 2  # before each model call that offers tools
    assert "What is 2 + 3?" in sent_text(selector.requests[0])  # it chose from the question
    for request in model.requests:
        listed = offered(protocol, request)
        assert "add" in listed and "echo" not in listed
        if protocol == "text":
            assert "Repeat the text back" not in listed


# --- ModelRouterMiddleware ----------------------------------------------------------------


class ScriptedDecisions(BaseDecisionModel):
    """A decision model giving the same answer to every question (a test double: no provider)
    and keeping the states it was asked about."""

    model: str = "scripted-decisions"
    answer: dict[str, Any]
    seen: list[Any] = Field(default_factory=list)

    @property
    def _provider(self) -> str:
        return "scripted"

    def _classify(self, state: Any, questions: dict[str, Any]) -> ClassifierResponse:
        self.seen.append(state)
        answers = dict.fromkeys(questions, self.answer)
        return ClassifierResponse.model_validate({"model": self.model, "answers": answers})


@pytest.mark.filterwarnings("ignore:The middleware `ModelRouterMiddleware` is in beta")
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_model_router_sends_the_run_to_the_chosen_model(protocol: str, mode: str) -> None:
    default = ScriptedChatModel([answer(protocol, "from the default")])
    small = ScriptedChatModel([answer(protocol, "from small")])
    large = ScriptedChatModel([answer(protocol, "from large")])
    choice = {"choice": "large", "probabilities": {"large": 1.0}, "confidence": 1.0}
    chooser = ScriptedDecisions(answer={"type": "choice", **choice})
    router = ModelRouterMiddleware(
        choices={
            "small": ModelChoice(model=small, criteria="easy questions"),
            "large": ModelChoice(model=large, criteria="hard questions"),
        },
        instructions="Pick the cheapest model that can answer.",
        classifier=chooser,
    )
    agent = build_graph(model=default, tools=TOOLS, protocol=protocol, middleware=[router])
    out = run(agent, "a hard question", mode)
    assert out["answer"] == "from large"
    assert not default.requests and not small.requests and len(large.requests) == 1
    assert isinstance(chooser.seen[0], HumanMessage) and chooser.seen[0].text == "a hard question"
    assert out["model_route"].choice == "large"  # the router's state key is in the output


# --- decorators: @dynamic_prompt and @wrap_model_call ---------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_dynamic_prompt_replaces_the_system_prompt(protocol: str, mode: str) -> None:
    @dynamic_prompt
    def pirate(request: ModelRequest) -> str:
        return f"Speak like a pirate. Turn {len(request.messages)}."

    model = ScriptedChatModel([answer(protocol, "Arr")])
    agent = build_graph(model=model, tools=TOOLS, protocol=protocol, middleware=[pirate])
    out = run(agent, "hello", mode)
    assert out["answer"] == "Arr"
    system = model.requests[0].messages[0]
    assert system.type == "system" and "Speak like a pirate. Turn 1." in system.content
    if protocol == "text":  # the protocol's own instructions and tools are still there
        assert "Action:" in system.content and "echo" in system.content


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_wrap_model_call_changes_the_tools_sent(protocol: str, mode: str) -> None:
    def narrowed(request: ModelRequest) -> ModelRequest:
        return request.override(tools=[t for t in request.tools if t.name == "add"])

    @wrap_model_call
    def only_add(request: ModelRequest, handler: Any) -> Any:
        return handler(narrowed(request))

    @wrap_model_call
    async def aonly_add(request: ModelRequest, handler: Any) -> Any:
        return await handler(narrowed(request))

    model = ScriptedChatModel([action(protocol, "add", {"a": 1, "b": 1}), answer(protocol, "2")])
    layer = aonly_add if mode == "async" else only_add
    agent = build_graph(model=model, tools=TOOLS, protocol=protocol, middleware=[layer])
    out = run(agent, "1+1", mode)
    assert out["status"] == "answered" and observations(out) == ["2"]
    for request in model.requests:
        listed = offered(protocol, request)
        assert "add" in listed and "echo" not in listed
