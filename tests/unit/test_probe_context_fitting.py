"""A probe of how the agent fits its context window (issue 41): "when the window fills, clear
old tool *results* first (keeping the calls) and summarize earlier turns; never drop a call of
the current run from the request", with no request over the window.

The model is scripted, honest and recording: turn `t` asks for items 0..N-1 of `fetch`
(`calls_per_step` at a time under native), and at every request it reads everything the
request shows (messages, tool calls, notes) for the calls `fetch({"turn": t, "index": i})` it
already made; it asks for the smallest indexes it cannot see, and answers once it sees all N.
So a call left out of a request comes back as a repeat, which the tool counts. Each
observation is `[BEGIN t.i] ...filler... [END t.i]`, so a request shows whether the newest
one is there in full, cut (and marked) or gone.

Every request the model receives is checked (`problems`):

- its size, tools included, against the whole window: by the project's own counter
  (`estimated_tokens`, UTF-8 bytes / 3 plus 6 a message) and by characters / 4;
- every call of the current run still visible, and under native still an `AIMessage` call;
- native: every `ToolMessage` answers a call of the `AIMessage` right before it, and every call
  has its result (chat APIs refuse orphans and unanswered calls);
- the newest step's observations visible, in full or marked as cut;
- the user's current question present.

Where the behaviour is right the test passes. The seven defects this probe found (results of
the newest step cleared unread, a large newest result or a small budget hiding the run's calls,
calls condensed while they fit, an observation larger than the window sent whole, tool specs
counted by their arguments only, no end when even the run cannot fit) were strict xfails, each
checked to fail on its assertion, and are ordinary tests since the fix.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
from langchain.agents.middleware import (
    ClearToolUsesEdit,
    ContextEditingMiddleware,
    SummarizationMiddleware,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import PrivateAttr

from graph.agent import build_graph
from graph.policies.context_fit import CONDENSED
from graph.policies.token_estimates import estimated_tokens

PROTOCOLS = ["native", "text"]
USAGE = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
TURN = re.compile(r"Turn (\d+):")
CJK = "漢字仮名交じり文の観測結果です。"
CUT_MARKS = ("cut", "truncat", "omit", "left out", "shortened", "…", "...")


def marker(turn: int, index: int) -> str:
    return f'"turn": {turn}, "index": {index}'


def content_text(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else message.text


def texts(messages: list[BaseMessage], tools: list[dict[str, Any]] = ()) -> list[str]:
    """Everything a request carries as text: each message, its tool calls, the tool specs."""
    out = []
    for message in messages:
        text = content_text(message)
        if isinstance(message, AIMessage) and message.tool_calls:
            text += json.dumps(message.tool_calls, ensure_ascii=False)
        out.append(text)
    return out + [json.dumps(tool, ensure_ascii=False) for tool in tools]


@dataclass
class Request:
    messages: list[BaseMessage]
    tools: list[dict[str, Any]]
    turn: int
    issued: list[dict[str, int]]  # this turn's calls made before this request
    latest: list[dict[str, int]]  # the calls of the step just before it


class Honest(BaseChatModel):
    """The recording, honest model of the module docstring."""

    _steps: int = PrivateAttr()
    _protocol: str = PrivateAttr()
    _per_step: int = PrivateAttr()
    _requests: list[Request] = PrivateAttr(default_factory=list)
    _issued: dict[int, list[dict[str, int]]] = PrivateAttr(default_factory=dict)
    _latest: dict[int, list[dict[str, int]]] = PrivateAttr(default_factory=dict)

    def __init__(self, steps: int, protocol: str, per_step: int = 1) -> None:
        super().__init__()
        self._steps, self._protocol, self._per_step = steps, protocol, per_step

    @property
    def _llm_type(self) -> str:
        return "honest-recorder"

    @property
    def requests(self) -> list[Request]:
        return self._requests

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _reply(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        asked = [
            int(n)
            for x in messages
            if x.type == "human" and not x.text.startswith("Observation:")
            for n in TURN.findall(x.text)
        ]
        turn = max(asked) if asked else max(self._issued, default=1)
        issued = self._issued.setdefault(turn, [])
        tools = list(kwargs.get("tools") or [])
        latest = list(self._latest.get(turn, []))
        self._requests.append(Request(list(messages), tools, turn, list(issued), latest))
        shown = "\n".join(texts(messages))
        missing = [i for i in range(self._steps) if marker(turn, i) not in shown]
        if not missing:
            self._latest[turn] = []
            text = (
                "Thought: I have all.\nFinal Answer: done" if self._protocol == "text" else "done"
            )
            return AIMessage(content=text, usage_metadata=USAGE)
        args = [{"turn": turn, "index": i} for i in missing[: self._per_step]]
        if self._protocol == "text":
            args = args[:1]
        issued.extend(args)
        self._latest[turn] = args
        if self._protocol == "text":
            content = f"Thought: next.\nAction: fetch\nAction Input: {json.dumps(args[0])}"
            return AIMessage(content=content, usage_metadata=USAGE)
        calls = [
            {"name": "fetch", "args": a, "id": f"c{a['turn']}_{a['index']}_{time.time_ns()}"}
            for a in args
        ]
        return AIMessage(content="", tool_calls=calls, usage_metadata=USAGE)

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any):  # type: ignore[no-untyped-def]
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages, kw))])

    async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any):  # type: ignore[no-untyped-def]
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages, kw))])


CALL_IN_TEXT = re.compile(r"""["']turn["']: (\d+), ["']index["']: (\d+)""")
QUESTION_IN_TEXT = re.compile(r"Turn \d+: [^\n'\"]*")


class EchoSummarizer(BaseChatModel):
    """A summarizer that keeps what matters: the questions and every call it was shown."""

    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "echo-summarizer"

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any):  # type: ignore[no-untyped-def]
        self.calls += 1
        text = "\n".join(x.text for x in messages)
        questions = " ".join(dict.fromkeys(QUESTION_IN_TEXT.findall(text)))
        found = sorted(set(CALL_IN_TEXT.findall(text)))
        listed = "; ".join(f"fetch({marker(int(t), int(i))})" for t, i in found)
        summary = AIMessage(f"SUMMARY. {questions} Calls made: {listed}")
        return ChatResult(generations=[ChatGeneration(message=summary)])


def observation(turn: int, index: int, size: int, cjk: bool) -> str:
    """About `size` UTF-8 bytes, tagged at both ends."""
    head, tail = f"[BEGIN {turn}.{index}] ", f" [END {turn}.{index}]"
    n = max(size - len(head) - len(tail), 0)
    if cjk:
        n //= 3
        body = (CJK * (n // len(CJK) + 1))[:n]
    else:
        body = ("lorem ipsum dolor sit amet " * (n // 27 + 1))[:n]
    return head + body + tail


def fetch_tool(calls: list[tuple[int, int]], size: int, cjk: bool) -> BaseTool:
    def fetch(turn: int, index: int) -> str:
        calls.append((turn, index))
        return observation(turn, index, size, cjk)

    async def afetch(turn: int, index: int) -> str:
        return fetch(turn, index)

    return StructuredTool.from_function(
        func=fetch, coroutine=afetch, name="fetch", description="Fetch item `index` of `turn`."
    )


def other_tools(count: int, description_chars: int) -> list[BaseTool]:
    def search(query: str, limit: int = 5) -> str:
        return "unused"

    text = "Searches one source of documents and returns its best hits. "
    text = (text * (description_chars // len(text) + 1))[:description_chars]
    return [
        StructuredTool.from_function(search, name=f"search_{k}", description=text)
        for k in range(count)
    ]


@dataclass
class Outcome:
    model: Honest
    calls: list[tuple[int, int]]
    outputs: list[dict[str, Any]]
    window: int
    protocol: str
    problems: Counter = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)

    @property
    def statuses(self) -> list[str]:
        return [o.get("status") for o in self.outputs]

    @property
    def repeated(self) -> int:
        return len(self.calls) - len(set(self.calls))


def run_agent(
    protocol: str,
    *,
    window: int,
    size: int,
    steps: int,
    per_step: int = 1,
    turns: int = 1,
    mode: str = "sync",
    cjk: bool = False,
    tools: int = 0,
    description: int = 0,
    middleware: list[Any] | None = None,
    question: str = "",
    max_steps: int | None = None,
    **settings: Any,
) -> Outcome:
    calls: list[tuple[int, int]] = []
    model = Honest(steps, protocol, per_step)
    agent = build_graph(
        model=model,
        tools=[fetch_tool(calls, size, cjk), *other_tools(tools, description)],
        protocol=protocol,
        checkpointer=InMemorySaver(),
        context_window=window,
        max_steps=max_steps or steps + 5,
        max_steps_cap=1000,
        middleware=middleware or [],
        **settings,
    )
    config = {"configurable": {"thread_id": "probe"}}
    outputs = []
    for turn in range(1, turns + 1):
        asked = f"Turn {turn}: fetch items 0 to {steps - 1}, then say done.{question}"
        given = {"messages": [("user", asked)]}
        if mode == "sync":
            outputs.append(agent.invoke(given, config))
        else:
            outputs.append(asyncio.run(agent.ainvoke(given, config)))
    outcome = Outcome(model, calls, outputs, window, protocol)
    for request in model.requests:
        for kind, example in problems(request, window, protocol):
            outcome.problems[kind] += 1
            outcome.examples.setdefault(kind, example)
    return outcome


def chars_over_4(request: Request) -> int:
    return sum(len(t) for t in texts(request.messages, request.tools)) // 4 + 1


def problems(request: Request, window: int, protocol: str) -> list[tuple[str, str]]:
    """What is wrong with one request, as (kind, example)."""
    found: list[tuple[str, str]] = []
    counted = estimated_tokens(request.messages) + estimated_tokens(request.tools)
    if counted > window:
        found.append(("over_window_project", f"{counted} > {window}"))
    if chars_over_4(request) > window:
        found.append(("over_window_chars4", f"{chars_over_4(request)} > {window}"))
    shown = "\n".join(texts(request.messages))
    for args in request.issued:
        if marker(args["turn"], args["index"]) not in shown:
            found.append(("call_hidden", str(args)))
    if protocol == "native":
        as_calls = {
            json.dumps(c["args"])
            for x in request.messages
            if isinstance(x, AIMessage)
            for c in x.tool_calls
        }
        for args in request.issued:
            if json.dumps(args) not in as_calls:
                found.append(("call_not_as_call", str(args)))
        found += [("unpaired", why) for why in unpaired(request.messages)]
    for args in request.latest:
        tag, end = (
            f"[BEGIN {args['turn']}.{args['index']}]",
            f"[END {args['turn']}.{args['index']}]",
        )
        holders = [x for x in request.messages if tag in content_text(x)]
        if not holders:
            found.append(("latest_hidden", str(args)))
        elif end not in holders[-1].text and not any(m in holders[-1].text for m in CUT_MARKS):
            found.append(("latest_cut_unmarked", str(args)))
    if not any(x.type == "human" and f"Turn {request.turn}:" in x.text for x in request.messages):
        found.append(("question_missing", f"turn {request.turn}"))
    return found


def unpaired(messages: list[BaseMessage]) -> list[str]:
    """Native: each result right after the step that asked for it, each call answered."""
    out: list[str] = []
    waiting: set[str] = set()
    for message in messages:
        if isinstance(message, ToolMessage):
            if message.tool_call_id not in waiting:
                out.append(f"orphan result {message.tool_call_id}")
            waiting.discard(message.tool_call_id)
            continue
        if waiting:
            out.append(f"unanswered calls {sorted(waiting)} before a {message.type} message")
        waiting = {c["id"] for c in message.tool_calls} if isinstance(message, AIMessage) else set()
    if waiting:
        out.append(f"unanswered calls {sorted(waiting)} at the end")
    return out


def report(outcome: Outcome) -> str:
    return (
        f"statuses={outcome.statuses} repeated={outcome.repeated} "
        f"problems={dict(outcome.problems)} examples={outcome.examples}"
    )


# --- where the policy keeps its promise ---------------------------------------------------

FITTING = {
    # issue 41's own target, on a thread of two turns
    "target-30x2KB-8k-2turns": dict(window=8192, size=2000, steps=30, turns=2),
    "20x2KB-4k-async": dict(window=4096, size=2000, steps=20, mode="async"),
    "15x20KB-32k-cut-at-limit": dict(window=32768, size=20000, steps=15),
    "12x12KB-32k-uncut": dict(window=32768, size=12000, steps=12, observation_limit=20000),
    "40x100B-8k": dict(window=8192, size=100, steps=40),
    "60x2KB-8k": dict(window=8192, size=2000, steps=60),
    "5x20KB-4k-cut-at-limit": dict(window=4096, size=20000, steps=5),
    "6x500B-2k-3turns": dict(window=2048, size=500, steps=6, turns=3),
    "20x5KB-cjk-16k": dict(window=16384, size=5000, steps=20, cjk=True, observation_limit=10000),
    "30x2KB-cjk-8k-async": dict(window=8192, size=2000, steps=30, cjk=True, mode="async"),
    "8x2KB-8k-4turns": dict(window=8192, size=2000, steps=8, turns=4),
    "15x1KB-8k-8tools": dict(window=8192, size=1000, steps=15, tools=8, description=200),
    "15x2KB-8k-long-system": dict(
        window=8192, size=2000, steps=15, system_prompt="Answer precisely. " * 250
    ),
}


@pytest.mark.parametrize("case", list(FITTING), ids=list(FITTING))
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_request_fits_and_keeps_the_run_in_sight(protocol: str, case: str) -> None:
    outcome = run_agent(protocol, **FITTING[case])
    assert outcome.statuses == ["answered"] * len(outcome.outputs), report(outcome)
    assert outcome.repeated == 0, report(outcome)
    assert not outcome.problems, report(outcome)


ROOMY_PARALLEL = {
    "24x2KB-16k-3par-2turns-sync": dict(window=16384, size=2000, steps=24, per_step=3, turns=2),
    "24x2KB-16k-3par-async": dict(window=16384, size=2000, steps=24, per_step=3, mode="async"),
    "24x20KB-16k-3par": dict(window=16384, size=20000, steps=24, per_step=3),
    "40x1KB-32k-5par": dict(window=32768, size=1000, steps=40, per_step=5),
}


@pytest.mark.parametrize("case", list(ROOMY_PARALLEL), ids=list(ROOMY_PARALLEL))
def test_parallel_calls_in_a_roomy_window_stay_calls_with_their_results(case: str) -> None:
    outcome = run_agent("native", **ROOMY_PARALLEL[case])
    assert set(outcome.statuses) == {"answered"}, report(outcome)
    assert outcome.repeated == 0 and not outcome.problems, report(outcome)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_calls_that_outgrow_the_window_stay_listed_in_the_note(protocol: str) -> None:
    """60 steps in 2,048 tokens: the calls alone do not fit, so the oldest are listed in one
    note (the documented last resort); each stays visible, none is repeated."""
    outcome = run_agent(protocol, window=2048, size=100, steps=60)
    texts_sent = ["\n".join(texts(r.messages)) for r in outcome.model.requests]
    assert any(CONDENSED in t for t in texts_sent)
    assert outcome.statuses == ["answered"] and outcome.repeated == 0, report(outcome)
    kinds = set(outcome.problems) - {"call_not_as_call"}
    assert not kinds, report(outcome)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_earlier_turns_leave_before_the_current_runs_calls_are_touched(protocol: str) -> None:
    outcome = run_agent(protocol, window=4096, size=2000, steps=12, turns=3)
    assert outcome.statuses == ["answered"] * 3 and not outcome.problems, report(outcome)
    for request in outcome.model.requests:
        shown = "\n".join(texts(request.messages))
        earlier = any(
            f'"turn": {t},' in shown or f"Turn {t}:" in shown for t in range(1, request.turn)
        )
        assert not (earlier and CONDENSED in shown)


def summarization() -> SummarizationMiddleware:
    return SummarizationMiddleware(
        model=EchoSummarizer(), trigger=("tokens", 2500), keep=("messages", 8)
    )


def context_editing() -> ContextEditingMiddleware:
    return ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=1500, keep=1)])


USER_MIDDLEWARE = {
    "summarization": lambda: [summarization()],
    "context-editing": lambda: [context_editing()],
    "both": lambda: [summarization(), context_editing()],
}


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("kind", list(USER_MIDDLEWARE))
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_users_own_summary_or_context_editing_still_sends_valid_requests(
    protocol: str, kind: str, mode: str
) -> None:
    wares = USER_MIDDLEWARE[kind]()
    outcome = run_agent(
        protocol, window=4096, size=2000, steps=15, turns=2, mode=mode, middleware=wares
    )
    summarizers = [w.model for w in wares if isinstance(w, SummarizationMiddleware)]
    assert all(s.calls >= 1 for s in summarizers)  # the user's summary did run
    assert outcome.statuses == ["answered", "answered"] and outcome.repeated == 0, report(outcome)
    # a user's summary may replace the run's own calls and question by its text: their choice
    allowed = {"call_not_as_call", "question_missing"} if summarizers else set()
    assert not set(outcome.problems) - allowed, report(outcome)


# --- found by this probe, fixed in graph/policies/context_fit.py -----------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_newest_parallel_steps_results_are_never_cleared_unseen(mode: str) -> None:
    outcome = run_agent("native", window=4096, size=2000, steps=12, per_step=3, mode=mode)
    assert outcome.statuses == ["answered"]
    assert outcome.problems["latest_hidden"] == 0, report(outcome)


LARGE_NEWEST = {
    "4KB-ascii": dict(size=4000),
    "4KB-cjk": dict(size=4000, cjk=True),
}


@pytest.mark.parametrize("case", list(LARGE_NEWEST))
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_large_newest_result_never_hides_the_runs_calls(protocol: str, case: str) -> None:
    """The default observation_limit (4,000 characters) in a 2,048-token window: 3 steps."""
    outcome = run_agent(protocol, window=2048, steps=3, **LARGE_NEWEST[case])
    assert outcome.model.requests
    assert (outcome.problems["call_hidden"], outcome.repeated) == (0, 0), report(outcome)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_calls_stay_calls_while_they_alone_fit(protocol: str) -> None:
    """10 steps of 2 KB in 2,048 tokens: the calls with cleared results take about 550 of
    the ~1,200-token budget, so none needs condensing."""
    outcome = run_agent(protocol, window=2048, size=2000, steps=10)
    assert outcome.statuses == ["answered"]
    condensed = sum(CONDENSED in "\n".join(texts(r.messages)) for r in outcome.model.requests)
    assert (condensed, outcome.problems["call_not_as_call"]) == (0, 0), report(outcome)


HUGE = {
    "20KB-in-2k": dict(window=2048, size=20000),
    "40KB-in-8k": dict(window=8192, size=40000),
}


@pytest.mark.parametrize("case", list(HUGE))
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_observation_larger_than_the_window_is_cut_to_fit(protocol: str, case: str) -> None:
    outcome = run_agent(protocol, steps=2, observation_limit=100_000, **HUGE[case])
    assert outcome.model.requests
    over = outcome.problems["over_window_project"] + outcome.problems["over_window_chars4"]
    assert (over, outcome.problems["latest_hidden"]) == (0, 0), report(outcome)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_tool_schemas_are_counted_whole(protocol: str) -> None:
    """21 tools (about 5,500 tokens of specs by the project's own count) in 8,192 tokens."""
    outcome = run_agent(protocol, window=8192, size=2000, steps=15, tools=20, description=600)
    assert outcome.model.requests
    assert outcome.problems["over_window_project"] == 0, report(outcome)


NO_BUDGET = {
    # an 18,000-character system prompt: ~6,000 tokens by the project's count, 4,500 by chars/4
    "long-system-prompt": dict(system_prompt="Be precise. " * 1500),
    # the operator's reply room larger than the window's share
    "max-tokens-6000": dict(max_tokens=6000),
}


@pytest.mark.parametrize("case", list(NO_BUDGET))
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_no_budget_left_never_hides_the_runs_calls(protocol: str, case: str) -> None:
    """In 8,192 tokens the requests themselves are small (under 7,000 tokens): either the
    calls stay or the run ends, never a repeated call."""
    outcome = run_agent(protocol, window=8192, size=2000, steps=6, **NO_BUDGET[case])
    assert outcome.model.requests
    assert (outcome.problems["call_hidden"], outcome.repeated) == (0, 0), report(outcome)


CANNOT_FIT = {
    "question-over-window": dict(window=2048, size=100, steps=2, question=" Read this." * 800),
    "tools-over-window": dict(window=2048, size=100, steps=3, tools=12, description=600),
    "45-steps-in-1k": dict(window=1024, size=100, steps=45),
}


@pytest.mark.parametrize("case", list(CANNOT_FIT))
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_run_that_cannot_fit_ends_with_a_clear_message(protocol: str, case: str) -> None:
    outcome = run_agent(protocol, **CANNOT_FIT[case])
    last = outcome.outputs[-1]
    answer = str(last.get("answer") or last.get("error") or "").lower()
    wrong = (
        outcome.problems["over_window_project"],
        outcome.problems["call_hidden"],
        outcome.repeated,
        outcome.statuses != ["answered"] and not ("context" in answer or "window" in answer),
    )
    assert wrong == (0, 0, 0, False), report(outcome) + f" answer={answer[:160]!r}"


def test_the_probe_sees_a_hidden_call() -> None:
    """The checker itself: a request that lost an earlier call, and an unanswered call."""
    first = {"name": "fetch", "args": {"turn": 1, "index": 0}, "id": "a"}
    messages = [AIMessage("", tool_calls=[first]), AIMessage("")]
    request = Request(messages, [], 1, [{"turn": 1, "index": 1}], [{"turn": 1, "index": 1}])
    kinds = {kind for kind, _ in problems(request, 10_000, "native")}
    assert kinds == {
        "call_hidden",
        "call_not_as_call",
        "unpaired",
        "latest_hidden",
        "question_missing",
    }
    assert list(itertools.islice(unpaired(messages), 1)) == [
        "unanswered calls ['a'] before a ai message"
    ]
