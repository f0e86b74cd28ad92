"""A probe of the message shapes real chat-model providers return, which the scripted fakes of
the other probes never produce: list content with thinking, redacted thinking, `tool_use`,
server-tool and cited text blocks (Anthropic), reasoning items and annotated text from
OpenAI's Responses API (the real `ChatOpenAI` against an `httpx.MockTransport`, in its
`responses/v1` and `v1` output versions), LangChain's v1 standard blocks (scripted, and
translated by LangChain from Anthropic's shapes with `output_version="v1"`),
`reasoning_content` (DeepSeek), a `<think>` prefix in string content (Qwen), Gemini's text parts
with thought signatures and generated call ids, empty and whitespace content beside calls,
usage with cache and reasoning details or none at all, streams of indexed blocks whose call
arguments arrive in pieces (sync `stream` and async `astream`), the text protocol over inner
models that reply in those shapes, and call and message ids as some OpenAI-compatible servers
write them. Each shape runs through `build_graph` and, with the same script, through
`create_agent` (natively; `create_agent(TextReAct(model))` for the text protocol), and the test
reads what a user sees: `answer`, the last message, the tool's runs, the `steps` trace, the
next model request (each earlier AIMessage sent back as the provider returned it), `usage`, a
second turn on the thread, and the CLI's step lines and history rows (in-process).

Held: every shape's tool ran once with the right arguments; a thinking step's blocks,
signatures, `tool_use` input, `additional_kwargs` and reasoning items are sent back unchanged
and as `create_agent` sends them (byte for byte on the Responses API's wire, both turns); the
answer is the text blocks' text, never a block or the thinking; streamed indexed blocks and
split argument chunks are stored whole; usage details stay on each message and the totals add
up (three keys, as documented); the text protocol reads the text, not the reasoning; a second
turn answers; a reply that reuses the message id of an earlier one, or has calls without ids
(`""` or None), keeps every step (`create_agent` fails on a reused reply id and on None ids).

Found (each first a strict xfail, checked to fail on its own assertion with --runxfail), and
fixed:

- a native answer whose text has surrounding whitespace (Gemini's trailing newline, any
  provider's) is stored as a bare string: its thinking blocks, signatures, citations and, on
  the Responses API, its reasoning item and message id are dropped from the thread and from
  the next request, where `create_agent` keeps them;
- a native answer with a `<think>` prefix (Qwen behind an OpenAI-compatible server) is
  returned as `answer` with the reasoning in it;
- a model that reports `usage_metadata` but names no `model_name` is counted as zero tokens
  in `usage`, while the trace shows each call's tokens;
- a server that repeats one tool-call id across replies (some OpenAI-compatible servers do)
  gets a later result paired with the earlier call: the trace shows the wrong observation,
  and the next request answers the first call with the second result and leaves the second
  unanswered;
- a server that gives two calls of one reply the same id (xorbitsai/inference#4237): both
  tools run, then the run stops with no status and no answer.

The fixes: a native answer is stored as returned unless a text-protocol label was taken off it
(`graph/loop/request.py:read_reply`); the answer leaves out reasoning that opens the reply
(`graph/protocols/native.py:answer_text`, the text reader's rule in
`graph/protocols/reasoning.py:without_reasoning`); usage is counted whether or not the reply
names its model (`graph/usage.py`); a call whose id the thread already has gets one of its own
(`graph/loop/request.py:_own_ids`).

Pinned by design: a native step's `thought` is the reply's text, never its reasoning; an empty
or whitespace-only reply is corrected and asked again where `create_agent` ends on it; `usage`
totals carry the three counts only (the details stay on each message).
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from graph import build_graph
from graph.cli.render import Lines, StepPrinter
from graph.persistence.timeline import aiter_history
from graph.protocols.text.chat_model import TextReAct
from tests.support.provider_shapes import (
    THINK,
    ResponsesServer,
    ShapedChatModel,
    anthropic_answer,
    anthropic_server_search,
    anthropic_step,
    anthropic_stream,
    call,
    deepseek,
    gemini,
    qwen,
    responses_answer,
    responses_call,
    text_stream,
    usage,
    v1_answer,
    v1_step,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore::UserWarning", "ignore::DeprecationWarning", "ignore:Pydantic serializer warnings"
)

Q1, Q2 = "What is the capital of France?", "And of Italy?"
SYSTEM = "base"
THREAD = {"configurable": {"thread_id": "t"}}
# what a reply must never show a user: a block, a signature, reasoning tags
LEAKS = ("{'type'", '"type"', "signature", "<think>", "</think>", "thinking")

RAN: list[dict[str, Any]] = []


@tool
def lookup(q: str) -> str:
    """Look q up."""
    RAN.append({"q": q})
    return f"found {q}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


# -- running one script through both agents ------------------------------------------------------


@dataclass
class Ran:
    source: Any  # the ShapedChatModel or ResponsesServer that recorded the requests
    agent: Any
    outs: list[dict[str, Any]] = field(default_factory=list)
    tools_ran: list[dict[str, Any]] = field(default_factory=list)

    @property
    def requests(self) -> list[Any]:
        return self.source.requests

    def answer(self, turn: int = -1) -> str:
        out = self.outs[turn]
        return out["answer"] if "answer" in out else out["messages"][-1].text


def agent_for(name: str, model: Any, protocol: str) -> Any:
    if name == "create_agent":
        chat = TextReAct(model) if protocol == "text" else model
        return create_agent(
            chat, tools=[lookup], system_prompt=SYSTEM, checkpointer=InMemorySaver()
        )
    return build_graph(
        model=model,
        tools=[lookup],
        system_prompt=SYSTEM,
        checkpointer=InMemorySaver(),
        protocol=protocol,
    )


def both(
    new: Callable[[], tuple[Any, Any]], questions: tuple[str, ...] = (Q1,), protocol: str = "native"
) -> dict[str, Ran]:
    """`new()` gives (what records the requests, the chat model); each agent gets its own."""
    got = {}
    for name in ("create_agent", "ours"):
        source, model = new()
        ran = Ran(source, agent_for(name, model, protocol))
        for question in questions:
            ran.outs.append(ran.agent.invoke({"messages": [("user", question)]}, THREAD))
        ran.tools_ran = list(RAN)
        RAN.clear()
        got[name] = ran
    return got


def shaped(*script: Any, **kwargs: Any) -> Callable[[], tuple[Any, Any]]:
    def new() -> tuple[Any, Any]:
        model = ShapedChatModel(list(script), **kwargs)
        return model, model

    return new


def served(*bodies: dict[str, Any], **kwargs: Any) -> Callable[[], tuple[Any, Any]]:
    def new() -> tuple[Any, Any]:
        server = ResponsesServer(bodies)
        return server, server.model(**kwargs)

    return new


def wire(message: BaseMessage) -> tuple[Any, ...]:
    """What a provider's serializer reads from a message (not our metadata, not local ids)."""
    calls = [(c["name"], c["args"], c["id"]) for c in getattr(message, "tool_calls", None) or []]
    return (
        type(message).__name__,
        message.content,
        message.additional_kwargs,
        calls,
        getattr(message, "tool_call_id", None),
    )


def sent(request: list[BaseMessage]) -> list[tuple[Any, ...]]:
    return [wire(x) for x in request]


def assert_clean(answer: Any, expected: str, *secrets: str) -> None:
    assert answer == expected
    for leak in (*LEAKS, *secrets):
        assert leak not in answer


def totals(steps: list[dict[str, Any]]) -> dict[str, int]:
    """The tokens of the trace: each model call's usage once (a step's first entry)."""
    keys = ("input_tokens", "output_tokens", "total_tokens")
    return {k: sum((s["usage"] or {}).get(k, 0) for s in steps) for k in keys}


def run_usage(messages: list[BaseMessage]) -> dict[str, int]:
    keys = ("input_tokens", "output_tokens", "total_tokens")
    ais = [x for x in messages if isinstance(x, AIMessage) and x.usage_metadata]
    return {k: sum(x.usage_metadata[k] for x in ais) for k in keys}


def answered_in_place(request: list[BaseMessage]) -> list[tuple[list[Any], list[str]]]:
    """Per step of a request: its calls' arguments, and the results right after it that
    answer one of its call ids."""
    out = []
    for at, message in enumerate(request):
        if isinstance(message, AIMessage) and message.tool_calls:
            ids = {c["id"] for c in message.tool_calls}
            results = []
            for later in request[at + 1 :]:
                if not isinstance(later, ToolMessage):
                    break
                if later.tool_call_id in ids:
                    results.append(later.text)
            out.append(([c["args"] for c in message.tool_calls], results))
    return out


def actions(out: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (s["tool"], s["tool_input"], s["observation"])
        for s in out["steps"]
        if s["kind"] == "action"
    ]


# -- Anthropic -----------------------------------------------------------------------------------

THOUGHT_1 = "The user wants the capital; a lookup settles it."


def anthropic_turns(redacted: bool, text: str | None) -> list[AIMessage]:
    return [
        anthropic_step(
            THOUGHT_1,
            text,
            [call("lookup", {"q": "france"}, "toolu_01")],
            id="msg_01",
            redacted=redacted,
        ),
        anthropic_answer("The tool said so.", "Paris is the capital.", id="msg_02"),
        anthropic_step(
            "Now Italy.", None, [call("lookup", {"q": "italy"}, "toolu_03")], id="msg_03"
        ),
        anthropic_answer("Done.", "Rome.", id="msg_04"),
    ]


@pytest.mark.parametrize(
    ("redacted", "text"),
    [(False, "Let me check."), (True, "Let me check."), (False, None)],
    ids=["thinking-and-text", "redacted-thinking", "thinking-only"],
)
def test_anthropic_thinking_step_runs_once_and_goes_back_unchanged(
    redacted: bool, text: str | None
) -> None:
    script = anthropic_turns(redacted, text)
    got = both(shaped(*script), (Q1, Q2))
    ours, theirs = got["ours"], got["create_agent"]
    out = ours.outs[0]
    assert_clean(out["answer"], "Paris is the capital.", THOUGHT_1, "The tool said so.")
    assert ours.answer(1) == theirs.answer(1) == "Rome."
    assert ours.tools_ran == theirs.tools_ran == [{"q": "france"}, {"q": "italy"}]
    assert actions(out) == [("lookup", {"q": "france"}, "found france")]
    assert out["steps"][0]["thought"] == (text or "")
    # the step as the provider returned it, blocks and signature untouched, in both turns
    assert wire(ours.requests[1][2]) == wire(script[0])
    assert [sent(r) for r in ours.requests] == [sent(r) for r in theirs.requests]
    assert wire(out["messages"][-1]) == wire(theirs.outs[0]["messages"][-1])
    # usage: details stay on each message; totals add up over the run's calls
    assert out["messages"][1].usage_metadata == script[0].usage_metadata
    assert out["messages"][1].response_metadata["stop_reason"] == "tool_use"
    assert (
        out["usage"]
        == totals(out["steps"])
        == run_usage(out["messages"])
        == {
            "input_tokens": 300,
            "output_tokens": 70,
            "total_tokens": 370,
        }
    )
    assert ours.outs[1]["status"] == "answered"


def test_anthropic_server_tool_blocks_answer_without_a_client_call() -> None:
    script = [
        anthropic_server_search("Paris is the capital.", id="msg_s1"),
        *anthropic_turns(False, "x")[3:],
    ]
    got = both(shaped(*script), (Q1, Q2))
    ours, theirs = got["ours"], got["create_agent"]
    assert_clean(ours.outs[0]["answer"], "According to the search, Paris is the capital.")
    assert ours.tools_ran == theirs.tools_ran == []
    assert [s["kind"] for s in ours.outs[0]["steps"]] == ["answer"]
    assert wire(ours.outs[0]["messages"][-1]) == wire(script[0])
    assert [sent(r) for r in ours.requests] == [sent(r) for r in theirs.requests]
    assert ours.outs[1]["answer"] == "Rome."


# -- OpenAI Responses API (the real ChatOpenAI) --------------------------------------------------


RESPONSES = (
    responses_call(1, "lookup", {"q": "france"}),
    responses_answer(2, "Paris is the capital."),
    responses_call(3, "lookup", {"q": "italy"}),
    responses_answer(4, "Rome is."),
)


@pytest.mark.parametrize("version", [None, "v1"], ids=["responses-v1", "v1"])
def test_openai_responses_reasoning_items_go_back_as_create_agent_sends_them(
    version: str | None,
) -> None:
    kwargs = {"output_version": version} if version else {}
    got = both(served(*RESPONSES, **kwargs), (Q1, Q2))
    ours, theirs = got["ours"], got["create_agent"]
    out = ours.outs[0]
    assert_clean(out["answer"], "Paris is the capital.", "Summary 1")
    assert ours.tools_ran == theirs.tools_ran == [{"q": "france"}, {"q": "italy"}]
    assert actions(out) == [("lookup", {"q": "france"}, "found france")]
    # the wire: every request's input items (reasoning, function calls, annotated messages)
    assert [r["input"] for r in ours.requests] == [r["input"] for r in theirs.requests]
    second = ours.requests[1]["input"]
    assert [i.get("id") for i in second if i.get("type") in ("reasoning", "function_call")] == [
        "rs_1",
        "fc_1",
    ]
    assert ours.outs[1]["answer"] == "Rome is."
    step = out["messages"][1]
    assert step.usage_metadata["input_token_details"] == {"cache_read": 64}
    assert step.usage_metadata["output_token_details"] == {"reasoning": 30}
    assert (
        out["usage"]
        == totals(out["steps"])
        == {
            "input_tokens": 200,
            "output_tokens": 100,
            "total_tokens": 300,
        }
    )


def test_openai_responses_model_under_the_text_protocol_reads_the_text() -> None:
    step = 'Thought: I should look it up.\nAction: lookup\nAction Input: {"q": "france"}'
    final = "Thought: I know it now.\nFinal Answer: Paris is the capital."
    got = both(served(responses_answer(1, step), responses_answer(2, final)), protocol="text")
    ours, theirs = got["ours"], got["create_agent"]
    assert ours.answer() == theirs.answer() == "Paris is the capital."
    assert ours.tools_ran == theirs.tools_ran == [{"q": "france"}]
    assert ours.outs[0]["steps"][0]["thought"] == "I should look it up."


def test_openai_responses_answer_with_a_trailing_newline_goes_back_whole() -> None:
    got = both(
        served(responses_answer(1, "Paris is the capital.\n"), responses_answer(2, "Rome.")),
        (Q1, Q2),
    )
    ours, theirs = got["ours"], got["create_agent"]
    assert ours.outs[0]["answer"] == "Paris is the capital."
    assert ours.requests[1]["input"] == theirs.requests[1]["input"]


# -- LangChain v1 standard blocks ----------------------------------------------------------------


def test_v1_standard_blocks_run_and_go_back_unchanged() -> None:
    script = [
        v1_step(
            "I need the lookup.", "Checking.", [call("lookup", {"q": "france"}, "call_v1")], id="a1"
        ),
        v1_answer("It said Paris.", "Paris is the capital.", id="a2"),
        v1_answer("Rome it is.", "Rome.", id="a3"),
    ]
    got = both(shaped(*script), (Q1, Q2))
    ours, theirs = got["ours"], got["create_agent"]
    assert_clean(ours.outs[0]["answer"], "Paris is the capital.", "It said Paris")
    assert ours.tools_ran == theirs.tools_ran == [{"q": "france"}]
    assert wire(ours.requests[1][2]) == wire(script[0])
    assert [sent(r) for r in ours.requests] == [sent(r) for r in theirs.requests]
    assert wire(ours.outs[0]["messages"][-1]) == wire(theirs.outs[0]["messages"][-1])
    assert ours.outs[1]["answer"] == "Rome."


def test_anthropic_shapes_translated_to_v1_by_langchain() -> None:
    """`output_version="v1"` on the model: LangChain itself rewrites the provider's blocks
    (reasoning with the signature in `extras`, `tool_call` blocks)."""
    script = anthropic_turns(False, "Let me check.")
    got = both(shaped(*script, output_version="v1"), (Q1, Q2))
    ours, theirs = got["ours"], got["create_agent"]
    step = ours.outs[0]["messages"][1]
    assert [b["type"] for b in step.content] == ["reasoning", "text", "tool_call"]
    assert_clean(ours.outs[0]["answer"], "Paris is the capital.", THOUGHT_1)
    assert ours.tools_ran == theirs.tools_ran == [{"q": "france"}, {"q": "italy"}]
    assert [sent(r) for r in ours.requests] == [sent(r) for r in theirs.requests]
    assert wire(ours.outs[1]["messages"][-1]) == wire(theirs.outs[1]["messages"][-1])


# -- DeepSeek's reasoning_content, Qwen's <think> -------------------------------------------------


def test_deepseek_reasoning_content_is_kept_and_sent_back_as_create_agent_sends_it() -> None:
    script = [
        deepseek("", [call("lookup", {"q": "france"}, "call_ds1")], id="ds1"),
        deepseek("Paris is the capital.", id="ds2"),
        deepseek("Rome.", id="ds3"),
    ]
    got = both(shaped(*script), (Q1, Q2))
    ours, theirs = got["ours"], got["create_agent"]
    assert_clean(ours.outs[0]["answer"], "Paris is the capital.", "Reasoning of")
    assert ours.tools_ran == theirs.tools_ran == [{"q": "france"}]
    assert ours.requests[1][2].additional_kwargs == script[0].additional_kwargs
    assert [sent(r) for r in ours.requests] == [sent(r) for r in theirs.requests]
    assert ours.outs[0]["usage"] == totals(ours.outs[0]["steps"])
    assert ours.outs[1]["answer"] == "Rome."


def qwen_script() -> list[AIMessage]:
    return [
        qwen("", [call("lookup", {"q": "france"}, "call_q1")], id="q1"),
        qwen("Paris is the capital.", id="q2"),
    ]


def test_qwen_think_prefix_in_a_native_step_runs_the_call_once() -> None:
    got = both(shaped(*qwen_script()))
    ours, theirs = got["ours"], got["create_agent"]
    assert ours.tools_ran == theirs.tools_ran == [{"q": "france"}]
    assert [sent(r) for r in ours.requests] == [sent(r) for r in theirs.requests]
    assert wire(ours.outs[0]["messages"][-1]) == wire(theirs.outs[0]["messages"][-1])


def test_qwen_think_prefix_is_not_part_of_a_native_answer() -> None:
    ours = both(shaped(*qwen_script()))["ours"]
    assert ours.outs[0]["status"] == "answered"
    assert_clean(ours.outs[0]["answer"], "Paris is the capital.", "a lookup will tell")


# -- Gemini --------------------------------------------------------------------------------------


def test_gemini_parallel_calls_with_generated_ids_and_signatures() -> None:
    ids = ("5e0d1f5a-3c6b-4b8e-9d57-1a2b3c4d5e6f", "8f1e2d3c-4b5a-4968-8776-655443322110")
    script = [
        gemini(
            "I'll look both up.",
            [call("lookup", {"q": "france"}, ids[0]), call("lookup", {"q": "italy"}, ids[1])],
            id="g1",
        ),
        gemini("Paris and Rome.", id="g2"),
    ]
    got = both(shaped(*script))
    ours, theirs = got["ours"], got["create_agent"]
    assert_clean(ours.outs[0]["answer"], "Paris and Rome.")
    assert sorted(ours.tools_ran, key=str) == sorted(theirs.tools_ran, key=str)
    assert len(ours.tools_ran) == 2
    assert actions(ours.outs[0]) == [
        ("lookup", {"q": "france"}, "found france"),
        ("lookup", {"q": "italy"}, "found italy"),
    ]
    # the step with its signatures, then each result in call order
    assert wire(ours.requests[1][2]) == wire(script[0])
    assert [sent(r) for r in ours.requests] == [sent(r) for r in theirs.requests]
    assert ours.outs[0]["usage"] == totals(ours.outs[0]["steps"])


@pytest.mark.parametrize(
    "reply",
    [
        anthropic_answer("Known already.", "Paris is the capital.\n", id="ws1"),
        gemini("Paris is the capital.\n", id="ws2"),
        v1_answer("Known already.", "\n\nParis is the capital.", id="ws3"),
    ],
    ids=["anthropic", "gemini", "v1"],
)
def test_an_answer_with_surrounding_whitespace_is_stored_as_returned(reply: AIMessage) -> None:
    got = both(shaped(reply, anthropic_answer("Fine.", "Rome.", id="ws9")), (Q1, Q2))
    ours, theirs = got["ours"], got["create_agent"]
    assert ours.outs[0]["answer"] == "Paris is the capital."
    assert wire(ours.outs[0]["messages"][-1]) == wire(theirs.outs[0]["messages"][-1])


# -- empty and whitespace content ----------------------------------------------------------------


@pytest.mark.parametrize("content", ["", [], "  \n", "\nChecking.\n"], ids=repr)
def test_a_call_beside_empty_or_blank_content(content: Any) -> None:
    step = AIMessage(
        content=content,
        tool_calls=[call("lookup", {"q": "france"}, "call_e1")],
        response_metadata={"model_name": "m"},
        id="e1",
    )
    script = [step, AIMessage("Paris.", response_metadata={"model_name": "m"}, id="e2")]
    got = both(shaped(*script))
    ours, theirs = got["ours"], got["create_agent"]
    assert ours.tools_ran == theirs.tools_ran == [{"q": "france"}]
    assert ours.outs[0]["steps"][0]["thought"] == (content.strip() if content else "")
    assert wire(ours.requests[1][2]) == wire(step)
    assert [sent(r) for r in ours.requests] == [sent(r) for r in theirs.requests]
    assert ours.outs[0]["answer"] == "Paris."


@pytest.mark.parametrize("content", ["  \n", []], ids=repr)
def test_by_design_an_empty_answer_is_corrected_and_asked_again(content: Any) -> None:
    """docs/architecture.md (`Corrections`): an unusable reply is answered and the model is
    asked again; `create_agent` ends the run on it."""
    meta = {"model_name": "m"}
    script = [
        AIMessage(content=content, response_metadata=meta),
        AIMessage("Paris.", response_metadata=meta),
    ]
    got = both(shaped(*script))
    assert got["create_agent"].outs[0]["messages"][-1].content == content
    out = got["ours"].outs[0]
    assert (out["status"], out["answer"]) == ("answered", "Paris.")
    assert [s["kind"] for s in out["steps"]] == ["invalid", "answer"]


def test_by_design_a_native_thought_is_the_reply_text_not_its_reasoning() -> None:
    """docs/architecture.md: the trace's `thought` of a native step is the reply's text
    (`graph/steps.py`); no page promises the provider's reasoning there."""
    script = [
        deepseek("Checking.", [call("lookup", {"q": "france"}, "c1")], id="d1"),
        deepseek("Paris.", id="d2"),
    ]
    out = both(shaped(*script))["ours"].outs[0]
    assert [s["thought"] for s in out["steps"]] == ["Checking.", ""]


# -- usage ---------------------------------------------------------------------------------------


def test_a_model_that_reports_no_usage() -> None:
    meta = {"model_name": "plain"}
    script = [
        AIMessage("", tool_calls=[call("lookup", {"q": "france"}, "u1")], response_metadata=meta),
        AIMessage("Paris.", response_metadata=meta),
    ]
    out = both(shaped(*script))["ours"].outs[0]
    assert out["answer"] == "Paris."
    assert [s["usage"] for s in out["steps"]] == [None, None]
    assert out["usage"] == {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}


def test_by_design_usage_totals_carry_the_three_counts() -> None:
    """docs/models-and-usage.md: `usage` is input, output and total tokens; the cache and
    reasoning details stay on each message's `usage_metadata`."""
    script = anthropic_turns(False, "Let me check.")[:2]
    out = both(shaped(*script))["ours"].outs[0]
    assert set(out["usage"]) == {"input_tokens", "output_tokens", "total_tokens"}
    assert out["messages"][1].usage_metadata["input_token_details"] == {
        "cache_read": 100,
        "cache_creation": 20,
    }


def test_usage_of_a_model_that_names_no_model_is_counted() -> None:
    script = [
        AIMessage(
            "", tool_calls=[call("lookup", {"q": "france"}, "n1")], usage_metadata=usage(10, 5)
        ),
        AIMessage("Paris.", usage_metadata=usage(20, 7)),
    ]
    out = both(shaped(*script))["ours"].outs[0]
    assert totals(out["steps"]) == {"input_tokens": 30, "output_tokens": 12, "total_tokens": 42}
    assert out["usage"] == totals(out["steps"])


# -- streaming -----------------------------------------------------------------------------------


def stream_script() -> list[Any]:
    return [
        anthropic_stream(
            ["The user wants ", "the capital."],
            "Let me check.",
            call("lookup", {"q": "france"}, "toolu_s1"),
        ),
        text_stream(["Paris is ", "the capital."], id="msg_s2"),
        text_stream(["Ro", "me."], id="msg_s3"),
    ]


def streamed(agent: Any, question: str, mode: str) -> tuple[list[tuple[Any, ...]], dict[str, Any]]:
    """The `messages` stream (chunk content, call chunks, node) and the last `values`."""
    rows: list[tuple[Any, ...]] = []
    values: dict[str, Any] = {}
    node = {"model": "think", "tools": "act"}

    def take(kind: str, data: Any) -> None:
        nonlocal values
        if kind == "values":
            values = data
            return
        msg, meta = data
        calls = [(c["name"], c["args"], c["index"]) for c in getattr(msg, "tool_call_chunks", [])]
        where = node.get(meta["langgraph_node"], meta["langgraph_node"])
        rows.append((type(msg).__name__, msg.content, calls, where))

    payload = {"messages": [("user", question)]}
    if mode == "sync":
        for kind, data in agent.stream(payload, THREAD, stream_mode=["messages", "values"]):
            take(kind, data)
    else:

        async def go() -> None:
            async for kind, data in agent.astream(
                payload, THREAD, stream_mode=["messages", "values"]
            ):
                take(kind, data)

        asyncio.run(go())
    return rows, values


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_stream_of_indexed_blocks_and_split_arguments_is_stored_whole(mode: str) -> None:
    got = {}
    for name in ("create_agent", "ours"):
        model = ShapedChatModel(stream_script())
        agent = agent_for(name, model, "native")
        first = streamed(agent, Q1, mode)
        second = streamed(agent, Q2, mode)
        got[name] = (model, first, second, list(RAN))
        RAN.clear()
    model, (rows, values), (_, values2), ran = got["ours"]
    theirs = got["create_agent"]
    assert model.streamed == theirs[0].streamed == [True, True, True]
    assert rows == theirs[1][0]  # the same chunks, on think where create_agent's are on model
    assert ran == theirs[3] == [{"q": "france"}]
    step = values["messages"][1]
    assert step.tool_calls == [call("lookup", {"q": "france"}, "toolu_s1")]
    assert step.content[0]["thinking"] == "The user wants the capital."
    assert step.content[0]["signature"] == "sig-s=="
    assert wire(step) == wire(theirs[1][1]["messages"][1])
    assert [sent(r) for r in model.requests] == [sent(r) for r in theirs[0].requests]
    assert_clean(values["answer"], "Paris is the capital.", "The user wants")
    assert values["usage"] == {"input_tokens": 320, "output_tokens": 50, "total_tokens": 370}
    assert values2["answer"] == "Rome."


def test_parallel_calls_streamed_interleaved_by_index() -> None:
    """OpenAI Chat Completions' shape: each call's id and name once, its arguments in pieces
    under its index, the two calls' pieces interleaved."""

    def chunk(index: int, args: str, name: str | None = None, id: str | None = None) -> Any:
        piece = {"name": name, "args": args, "id": id, "index": index}
        return AIMessageChunk(content="", tool_call_chunks=[piece])

    parallel = [
        AIMessageChunk(content="", id="chatcmpl-9", response_metadata={"model_name": "gpt-4o"}),
        chunk(0, "", "lookup", "call_A"),
        chunk(0, '{"q": "fr'),
        chunk(1, "", "lookup", "call_B"),
        chunk(1, '{"q": '),
        chunk(0, 'ance"}'),
        chunk(1, '"italy"}'),
        AIMessageChunk(content="", usage_metadata=usage(30, 20), chunk_position="last"),
    ]
    got = {}
    for name in ("create_agent", "ours"):
        model = ShapedChatModel([parallel, text_stream(["Paris and Rome."], id="m2")])
        _, values = streamed(agent_for(name, model, "native"), Q1, "async")
        got[name] = (values["messages"][1], sorted(RAN, key=str), model)
        RAN.clear()
    ours, theirs = got["ours"], got["create_agent"]
    assert ours[0].tool_calls == [
        call("lookup", {"q": "france"}, "call_A"),
        call("lookup", {"q": "italy"}, "call_B"),
    ]
    assert ours[1] == theirs[1] == [{"q": "france"}, {"q": "italy"}]
    assert [sent(r) for r in ours[2].requests] == [sent(r) for r in theirs[2].requests]


# -- the text protocol over inner models of every shape ------------------------------------------

STEP = 'Thought: I should look it up.\nAction: lookup\nAction Input: {"q": "france"}'
FINAL = "Thought: I know it now.\nFinal Answer: Paris is the capital."
TRAP = 'Final Answer: Lyon\nAction: lookup\nAction Input: {"q": "nowhere"}'  # in reasoning
META = {"model_name": "claude-sonnet-4-5", "model_provider": "anthropic"}


def thinking_blocks(text: str) -> AIMessage:
    blocks = [
        {"type": "thinking", "thinking": TRAP, "signature": "s=="},
        {"type": "text", "text": text},
    ]
    return AIMessage(blocks, response_metadata=META, usage_metadata=usage(10, 5))


def split_blocks(text: str) -> AIMessage:
    cut = text.index("\n") + 1
    blocks = [{"type": "text", "text": text[:cut]}, {"type": "text", "text": text[cut:]}]
    return AIMessage(blocks, response_metadata=META, usage_metadata=usage(10, 5))


def reasoning_content(text: str) -> AIMessage:
    extra = {"reasoning_content": TRAP}
    return AIMessage(
        text, additional_kwargs=extra, response_metadata=META, usage_metadata=usage(10, 5)
    )


def think_prefix(text: str) -> AIMessage:
    return AIMessage(THINK + text, response_metadata=META, usage_metadata=usage(10, 5))


def v1_reasoning(text: str) -> AIMessage:
    blocks = [{"type": "reasoning", "reasoning": TRAP}, {"type": "text", "text": text}]
    return AIMessage(blocks, response_metadata=META, usage_metadata=usage(10, 5))


INNER_SHAPES = {
    "thinking-blocks": thinking_blocks,
    "split-text-blocks": split_blocks,
    "reasoning_content": reasoning_content,
    "think-prefix": think_prefix,
    "v1-reasoning": v1_reasoning,
}


@pytest.mark.parametrize("shape", [*INNER_SHAPES, "streamed-blocks"])
def test_the_text_protocol_reads_the_text_not_the_reasoning(shape: str) -> None:
    if shape == "streamed-blocks":  # an inner model set to stream: TextReAct reads `_stream`
        script = [text_stream([STEP[:25], STEP[25:]], id="s1"), text_stream([FINAL], id="s2")]
        script.append(text_stream(["Thought: ok\nFinal Answer: Rome."], id="s3"))
        new = shaped(*script, streaming=True)
    else:
        make = INNER_SHAPES[shape]
        new = shaped(make(STEP), make(FINAL), make("Thought: ok\nFinal Answer: Rome."))
    got = both(new, (Q1, Q2), protocol="text")
    ours, theirs = got["ours"], got["create_agent"]
    out = ours.outs[0]
    assert_clean(out["answer"], "Paris is the capital.", "Lyon")
    assert theirs.answer(0) == "Paris is the capital."
    assert ours.tools_ran == theirs.tools_ran == [{"q": "france"}]
    assert [(s["kind"], s["thought"]) for s in out["steps"]] == [
        ("action", "I should look it up."),
        ("answer", "I know it now."),
    ]
    assert out["usage"] == totals(out["steps"])
    assert ours.outs[1]["answer"] == "Rome."
    # the step goes back as the text the reader read, the reasoning not with it
    assert ours.requests[1][2].content == STEP
    assert [sent(r) for r in ours.requests] == [sent(r) for r in theirs.requests]


# -- ids as some OpenAI-compatible servers write them --------------------------------------------


def test_a_reply_id_reused_for_every_reply_keeps_every_step() -> None:
    """Some servers give every reply one id; `create_agent`'s reducer replaces the earlier step
    with the later one (its run then fails)."""
    meta = {"model_name": "m"}
    script = [
        AIMessage(
            "",
            tool_calls=[call("lookup", {"q": "france"}, "r1")],
            response_metadata=meta,
            id="chatcmpl-1",
        ),
        AIMessage(
            "",
            tool_calls=[call("lookup", {"q": "italy"}, "r2")],
            response_metadata=meta,
            id="chatcmpl-1",
        ),
        AIMessage("Both.", response_metadata=meta, id="chatcmpl-1"),
    ]
    model = ShapedChatModel(script)
    out = agent_for("ours", model, "native").invoke({"messages": [("user", Q1)]}, THREAD)
    assert out["answer"] == "Both."
    assert RAN == [{"q": "france"}, {"q": "italy"}]
    assert [x["observation"] for x in out["steps"][:2]] == ["found france", "found italy"]
    assert sum(isinstance(x, ToolMessage) for x in model.requests[2]) == 2


@pytest.mark.parametrize("missing", ["", None], ids=["empty-string", "none"])
def test_calls_without_ids_get_ids_of_their_own(missing: str | None) -> None:
    meta = {"model_name": "m"}
    calls = [
        {"name": "lookup", "args": {"q": "france"}, "id": missing, "type": "tool_call"},
        {"name": "lookup", "args": {"q": "italy"}, "id": missing, "type": "tool_call"},
    ]
    model = ShapedChatModel(
        [
            AIMessage("", tool_calls=calls, response_metadata=meta),
            AIMessage("Both.", response_metadata=meta),
        ]
    )
    out = agent_for("ours", model, "native").invoke({"messages": [("user", Q1)]}, THREAD)
    assert out["answer"] == "Both."
    assert sorted(RAN, key=str) == [{"q": "france"}, {"q": "italy"}]
    step, *results = model.requests[1][2:]
    ids = [c["id"] for c in step.tool_calls]
    assert all(ids) and len(set(ids)) == 2
    assert sorted(r.tool_call_id for r in results) == sorted(ids)


def test_a_call_id_reused_across_steps_keeps_each_result_with_its_call() -> None:
    meta = {"model_name": "xinference"}
    script = [
        AIMessage("", tool_calls=[call("lookup", {"q": "france"}, "0")], response_metadata=meta),
        AIMessage("", tool_calls=[call("lookup", {"q": "italy"}, "0")], response_metadata=meta),
        AIMessage("Both.", response_metadata=meta),
    ]
    got = both(shaped(*script))
    ours, theirs = got["ours"], got["create_agent"]
    assert ours.tools_ran == theirs.tools_ran == [{"q": "france"}, {"q": "italy"}]
    assert actions(ours.outs[0]) == [
        ("lookup", {"q": "france"}, "found france"),
        ("lookup", {"q": "italy"}, "found italy"),
    ]
    # each step answered right after it, with its own call's result (whatever ids they carry)
    assert (
        answered_in_place(ours.requests[2])
        == answered_in_place(theirs.requests[2])
        == [
            ([{"q": "france"}], ["found france"]),
            ([{"q": "italy"}], ["found italy"]),
        ]
    )


def test_two_calls_of_one_step_under_one_id_still_answer() -> None:
    meta = {"model_name": "xinference"}
    calls = [call("lookup", {"q": "france"}, "call_x"), call("lookup", {"q": "italy"}, "call_x")]
    script = [
        AIMessage("", tool_calls=calls, response_metadata=meta),
        AIMessage("Both.", response_metadata=meta),
    ]
    got = both(shaped(*script))
    ours, theirs = got["ours"], got["create_agent"]
    assert theirs.answer() == "Both."
    assert sorted(ours.tools_ran, key=str) == [{"q": "france"}, {"q": "italy"}]
    assert (ours.outs[0].get("status"), ours.outs[0].get("answer")) == ("answered", "Both.")


# -- what the command line shows (in-process) -----------------------------------------------------


@pytest.mark.parametrize("shape", ["anthropic", "v1", "responses"])
def test_cli_step_lines_and_history_rows_show_text_not_blocks(shape: str) -> None:
    if shape == "responses":
        _, model = served(RESPONSES[0], RESPONSES[1])()
        thought = ""
    elif shape == "v1":
        script = [
            v1_step(
                "Hidden reasoning.",
                "Let me check.",
                [call("lookup", {"q": "france"}, "v")],
                id="c1",
            ),
            v1_answer("Hidden reasoning.", "Paris is the capital.", id="c2"),
        ]
        model, thought = ShapedChatModel(script), "Let me check."
    else:
        model = ShapedChatModel(anthropic_turns(False, "Let me check.")[:2])
        thought = "Let me check."
    agent = agent_for("ours", model, "native")
    stream = io.StringIO()
    printer = StepPrinter(Lines(stream))
    for event in agent.stream({"messages": [("user", Q1)]}, THREAD, stream_mode="custom"):
        printer.event(event)
    expected = [
        *([f"Thought: {thought}"] if thought else []),
        'Action: lookup {"q": "france"}',
        "Observation: found france",
        "Final Answer: Paris is the capital.",
    ]
    assert stream.getvalue().splitlines() == expected

    async def rows() -> list[str]:
        return [row.summary async for row in aiter_history(agent, "t")]

    summaries = " | ".join(asyncio.run(rows()))
    assert "Final Answer: Paris is the capital." in summaries
    assert 'lookup({"q": "france"})' in summaries
    for leak in (*LEAKS, "Hidden reasoning", THOUGHT_1, "Summary 1"):
        assert leak not in summaries
    assert RAN == [{"q": "france"}]
