"""A probe of a thread's NEXT turn after every way a turn can end: turn 1 ends one way, then a
second question on the same thread_id, and the test reads what turn 2's model request holds
(the messages the scripted model receives), what the state holds, and whether turn 2 answers.

Every turn 2 request is checked the same way (`assert_sound_request`): the system prompt once
and first; natively every call of every step (`tool_calls` and `invalid_tool_calls`, which
langchain-openai sends as `tool_calls` too) answered right after its step and no result without
its call; under the text protocol every `Action Input` followed by an `Observation`; the first
question once, the prior answer present, the new question last; no message sent twice; turn 1's
run error not sent. The turn-2 output must be `answered` with its own answer, no stale `error`
or `structured_response`, and the thread idle.

Endings, under both protocols, on InMemorySaver and on a SQLite file (`SqliteSaver`): an
answer, the step limit (`max_steps`, with and without `answer_on_limit`), the run deadline
(`run_timeout`, on a fake clock a tool moves), a model error, a tool error, a rejected approval,
an approval left pending (batched, and per_call with a parallel call that ran), structured
output ended and failed, a `return_direct` tool, a user middleware's jump to the end (before and
after the model), the correction loop (unusable replies until `max_invalid`), and the context
window filling (old results cleared). Also: the protocol switched between turns (two graphs on
one saver, and by the run context), the model switched, a thread written by `create_agent`
continued by `build_graph` and the reverse, and a client's `RemoveMessage` between turns. Two
cases go through the `react-agent` command against the scripted OpenAI server (strict about
unanswered calls, as the OpenAI API is). `create_agent` on the same scripted model is compared
where it has the same ending.

Not repeated: the conversation order of results written late (test_conversation_order.py),
`run_messages` itself (test_run_messages.py), long threads' history rows (test_long_threads.py),
many-turn context fitting (test_probe_context_fitting.py).

Found when it was written (strict xfails, each checked to fail on its assertion with
--runxfail), all fixed and ordinary tests now:

- native correction loop: the last unusable reply's broken call (`invalid_tool_calls`) is never
  answered, so every later request carries a call with no result; an OpenAI-style endpoint
  refuses it (HTTP 400) and every later question on the thread ends in error (through the CLI
  too);
- `structured_response` of turn 1 is still in turn 2's output when turn 2 ends in error (a
  structured-output failure, a model error), where the docs say it is unset;
- a thread moved over from `create_agent` whose turn ended by a model error after a tool ran:
  that tool's real result is replaced by "was not run ... Do not assume it happened";
- per_call approvals: a parallel call that ran before the pause loses its result when a new
  question comes instead of a decision, and the model is told it was not run;
- after a client's `RemoveMessage`, the next question's id changes when the thread is loaded
  again (it is derived from its position in the replayed writes), so `run.question_id` no longer
  finds it: a run that pauses and resumes returns a trace holding every earlier turn's steps.

Fixed in graph/loop/turn.py (a broken call the run ended on is answered; `structured_response`
is the last run's; a result the agent did not write counts unless the call waited for a
decision) and graph/message_reducer.py (an id-less message's id from the conversation's length
as it lands, removals counted); the per_call result held only in the interrupted step's
pending writes, which LangGraph drops when a new question starts a step, is stored first
(graph/checked.py with graph/loop/turn.py `paused_input`).

Everything else held: no orphan, duplicate or lost message, the system prompt once, no stale
status/answer/error, and a normal second answer after every other ending, on both savers.

Pinned by design: the agent's corrections of an earlier turn are sent again (stored as
observations are); the step limit's and deadline's notices are sent back as the prior answer;
a pending call is answered "not run" where `create_agent` sends it unanswered.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware, after_model, before_model
from langchain.agents.structured_output import ToolStrategy
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.types import Command
from pydantic import BaseModel

import graph.loop.closing as closing_module
import graph.loop.plan as plan_module
import graph.policies.run_deadline as deadline_module
from graph import build_graph
from tests.support.cli import cli_env, run_cli
from tests.support.openai_server import HTTPError, Reply, ScriptedOpenAIServer, ToolCall
from tests.support.scripted_model import ScriptedChatModel, action, answer, calls, tool_call

PROTOCOLS = ["native", "text"]
Q1, Q2 = "first question", "second question"
SYSTEM = "base"

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")


# -- tools ---------------------------------------------------------------------------------------

RAN: list[str] = []  # what `note` did (a side effect a later turn must not deny)


@tool
def lookup(q: str) -> str:
    """Look q up."""
    return f"found {q}"


@tool
def boom(q: str) -> str:
    """Always fails."""
    raise ValueError("boom inside")


@tool(return_direct=True)
def verdict(q: str) -> str:
    """The final word, returned directly."""
    return f"verdict {q}"


@tool
def note(q: str) -> str:
    """Write a note down."""
    RAN.append(q)
    return f"noted {q}"


TOOLS = [lookup, boom, verdict, note]


class Capital(BaseModel):
    city: str
    country: str


# -- middleware ----------------------------------------------------------------------------------


def _this_turn(messages: list[BaseMessage]) -> list[BaseMessage]:
    start = max(i for i, x in enumerate(messages) if isinstance(x, HumanMessage))
    return messages[start:]


@before_model(can_jump_to=["end"])
def enough(state: Any, runtime: Any) -> dict[str, Any] | None:
    """Ends the turn with its own reply once the turn has a tool result."""
    if any(isinstance(x, ToolMessage) for x in _this_turn(state["messages"])):
        return {"messages": [AIMessage("Enough for today.")], "jump_to": "end"}
    return None


@after_model(can_jump_to=["end"])
def stop_on_tools(state: Any, runtime: Any) -> dict[str, Any] | None:
    """Ends the first turn as soon as the model asks for a tool (its calls never run)."""
    turn = _this_turn(state["messages"])
    if turn[0].text == Q1 and state["messages"][-1].tool_calls:
        return {"jump_to": "end"}
    return None


# -- savers and runs -----------------------------------------------------------------------------


@pytest.fixture(params=["memory", "sqlite"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        yield InMemorySaver()
        return
    with SqliteSaver.from_conn_string(str(tmp_path / "threads.sqlite")) as sqlite:
        yield sqlite


def config(thread: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def ours(model: Any, saver: Any, protocol: str, **settings: Any) -> Any:
    settings.setdefault("tools", TOOLS)
    return build_graph(
        model=model, checkpointer=saver, protocol=protocol, system_prompt=SYSTEM, **settings
    )


@dataclass
class Turns:
    model: ScriptedChatModel
    agent: Any
    first: dict[str, Any]
    second: dict[str, Any]
    start: int  # index of turn 2's first request among the model's requests

    @property
    def request(self) -> list[BaseMessage]:
        return self.model.requests[self.start].messages

    @property
    def values(self) -> dict[str, Any]:
        return self.agent.get_state(config()).values


def two_turns(
    protocol: str,
    first: list[Any],
    saver: Any,
    *,
    second: list[Any] | None = None,
    decision: dict[str, Any] | None = None,
    **settings: Any,
) -> Turns:
    """Turn 1 on `first` (resumed once with `decision` if given), then Q2 on the same thread."""
    model = ScriptedChatModel([*first, *(second or [answer(protocol, "A2")])])
    agent = ours(model, saver, protocol, **settings)
    out1 = agent.invoke({"messages": [("user", Q1)]}, config())
    if decision is not None:
        assert "__interrupt__" in out1
        out1 = agent.invoke(Command(resume={"decisions": [decision]}), config())
    start = len(model.requests)
    out2 = agent.invoke({"messages": [("user", Q2)]}, config())
    return Turns(model, agent, out1, out2, start)


# -- what every turn-2 request and state must be ------------------------------------------------


def call_ids(message: BaseMessage) -> list[str]:
    if not isinstance(message, AIMessage):
        return []
    return [c.get("id") or "" for c in [*message.tool_calls, *message.invalid_tool_calls]]


def unanswered_calls(messages: list[BaseMessage]) -> list[str]:
    """Chat APIs' rule: a step's calls are answered by the ToolMessages right after it, and a
    ToolMessage answers a call of the step right before it."""
    problems = []
    for at, message in enumerate(messages):
        ids = call_ids(message)
        if ids:
            following = []
            for later in messages[at + 1 :]:
                if not isinstance(later, ToolMessage):
                    break
                following.append(later.tool_call_id)
            if sorted(following) != sorted(ids):
                problems.append(f"step {at} calls {ids}, answered by {following}")
        if isinstance(message, ToolMessage):
            before = at - 1
            while before >= 0 and isinstance(messages[before], ToolMessage):
                before -= 1
            if before < 0 or message.tool_call_id not in call_ids(messages[before]):
                problems.append(f"result {at} for {message.tool_call_id} answers no step before it")
    return problems


def assert_sound_request(
    messages: list[BaseMessage], protocol: str, *, prior: str | None = None
) -> None:
    systems = [x for x in messages if isinstance(x, SystemMessage)]
    assert len(systems) == 1 and messages[0] is systems[0], "the system prompt once, first"
    assert messages[0].text.startswith(SYSTEM)
    texts = [x.text for x in messages]
    assert texts.count(Q1) == 1 and texts[-1] == Q2 and texts.count(Q2) == 1
    ids = [x.id for x in messages if x.id]
    assert len(ids) == len(set(ids)), "a message sent twice"
    if prior is not None:
        assert any(prior in x.text for x in messages if isinstance(x, AIMessage)), prior
    if protocol == "native":
        assert unanswered_calls(messages) == []
        return
    assert not any(isinstance(x, ToolMessage) for x in messages)
    assert not any(isinstance(x, AIMessage) and x.tool_calls for x in messages)
    for at, message in enumerate(messages):
        if isinstance(message, AIMessage) and "Action Input:" in message.text:
            after = messages[at + 1]
            assert isinstance(after, HumanMessage) and after.text.startswith("Observation:")


def assert_answered_normally(turns: Turns) -> None:
    out = turns.second
    assert (out["status"], out["answer"], out.get("error")) == ("answered", "A2", None)
    assert out.get("structured_response") is None
    assert "__interrupt__" not in out
    assert turns.agent.get_state(config()).next == ()
    stored = turns.values["messages"]
    assert unanswered_calls_in_thread(stored) == []
    ids = [x.id for x in stored]
    assert len(ids) == len(set(ids))
    assert stored[-1].text == "A2"


def unanswered_calls_in_thread(messages: list[BaseMessage]) -> list[str]:
    """Every tool call the thread holds has exactly one result (anywhere after it)."""
    results = Counter(x.tool_call_id for x in messages if isinstance(x, ToolMessage))
    return [
        i
        for x in messages
        if isinstance(x, AIMessage)
        for i in (c["id"] for c in x.tool_calls)
        if results[i] != 1
    ]


# -- the endings ---------------------------------------------------------------------------------


@dataclass
class Ending:
    first: Callable[[str], list[Any]]
    status: str | None  # turn 1's status (None: paused)
    prior: str | None = None  # what of turn 1 the model must read again in turn 2
    told: str | None = None  # a text turn 2's request must hold (the fate of a call)
    decision: dict[str, Any] | None = None
    settings: dict[str, Any] | None = None


def _step(p: str, tool_name: str = "lookup", q: str = "a") -> Any:
    return action(p, tool_name, {"q": q})


ENDINGS: dict[str, Ending] = {
    "answer": Ending(lambda p: [_step(p), answer(p, "A1")], "answered", "A1", "found a"),
    "step_limit": Ending(
        lambda p: [_step(p), _step(p, q="b")],
        "max_steps",
        "I stopped after 2 steps",
        "found b",
        settings={"max_steps": 2},
    ),
    "step_limit_answer_on_limit": Ending(
        lambda p: [_step(p), answer(p, "best so far")],
        "max_steps",
        "best so far",
        "found a",
        settings={"max_steps": 1, "answer_on_limit": True},
    ),
    "model_error": Ending(
        lambda p: [_step(p), RuntimeError("provider down")], "error", None, "found a"
    ),
    "tool_error": Ending(
        lambda p: [_step(p, "boom"), answer(p, "A1")], "answered", "A1", "Tool 'boom' failed"
    ),
    "return_direct": Ending(lambda p: [_step(p, "verdict")], "answered", None, "verdict a"),
    "approval_rejected": Ending(
        lambda p: [_step(p), answer(p, "A1")],
        "answered",
        "A1",
        "no thanks",
        decision={"type": "reject", "message": "no thanks"},
        settings={"approve": ["lookup"]},
    ),
    "approval_pending": Ending(
        lambda p: [_step(p)], None, None, "was not run", settings={"approve": ["lookup"]}
    ),
    "middleware_jump_before_model": Ending(
        lambda p: [_step(p)],
        "stopped",
        "Enough for today.",
        "found a",
        settings={"middleware": [enough]},
    ),
    "middleware_jump_after_model": Ending(
        lambda p: [_step(p)],
        "stopped",
        None,
        "was not run",
        settings={"middleware": [stop_on_tools]},
    ),
    "correction_loop": Ending(
        lambda p: ["Action:"] * 3 if p == "text" else [AIMessage(content="")] * 3,
        "error",
        None,
        "could not be used",
    ),
}


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("ending", ENDINGS)
def test_the_next_turn_after(ending: str, protocol: str, saver: Any) -> None:
    case = ENDINGS[ending]
    turns = two_turns(
        protocol, case.first(protocol), saver, decision=case.decision, **(case.settings or {})
    )
    assert turns.first.get("status") == case.status
    assert_sound_request(turns.request, protocol, prior=case.prior)
    if case.told:
        assert any(case.told in x.text for x in turns.request), case.told
    if turns.first.get("error"):  # the run's error is the user's, not the model's to read
        assert not any(turns.first["error"] in x.text for x in turns.request)
    assert_answered_normally(turns)


# -- compared with create_agent where it ends the same way ---------------------------------------


def gist(messages: list[BaseMessage]) -> list[tuple[Any, ...]]:
    """What a request says, without ids or the system message."""
    return [
        (x.type, x.text, [(c["name"], c["args"]) for c in getattr(x, "tool_calls", [])])
        for x in messages
        if not isinstance(x, SystemMessage)
    ]


def create_agent_turns(
    first: list[Any], *, decision: dict[str, Any] | None = None, **kw: Any
) -> tuple[ScriptedChatModel, int, dict[str, Any]]:
    model = ScriptedChatModel([*first, "A2"])
    agent = create_agent(
        model, tools=TOOLS, checkpointer=InMemorySaver(), system_prompt=SYSTEM, **kw
    )
    out = agent.invoke({"messages": [("user", Q1)]}, config())
    if decision is not None:
        agent.invoke(Command(resume={"decisions": [decision]}), config())
    start = len(model.requests)
    out = agent.invoke({"messages": [("user", Q2)]}, config())
    return model, start, out


COMPARED = {
    "answer": {},
    "return_direct": {},
    "approval_rejected": {"middleware": [HumanInTheLoopMiddleware({"lookup": True})]},
    "middleware_jump_before_model": {"middleware": [enough]},
}


@pytest.mark.parametrize("ending", COMPARED)
def test_the_next_turns_request_is_create_agents(ending: str) -> None:
    case = ENDINGS[ending]
    turns = two_turns(
        "native", case.first("native"), InMemorySaver(), decision=case.decision,
        **(case.settings or {}),
    )  # fmt: skip
    model, start, out = create_agent_turns(
        case.first("native"), decision=case.decision, **COMPARED[ending]
    )
    assert gist(turns.request) == gist(model.requests[start].messages)
    assert out["messages"][-1].text == turns.second["answer"] == "A2"


def test_by_design_a_pending_call_is_answered_not_run_where_create_agent_sends_it_unanswered() -> (
    None
):
    """A new question while a call waits for a decision: ours answers the call as not run
    (docs/approvals-and-clients.md), so the request is valid; create_agent sends the call with no
    result, which a chat API refuses."""
    turns = two_turns("native", [_step("native")], InMemorySaver(), approve=["lookup"])
    assert unanswered_calls(turns.request) == []
    hitl = HumanInTheLoopMiddleware({"lookup": True})
    model, start, _ = create_agent_turns([_step("native")], middleware=[hitl])
    assert len(unanswered_calls(model.requests[start].messages)) == 1


def test_by_design_the_limit_notice_is_the_prior_answer_the_model_reads() -> None:
    """A turn ended by the step limit or the deadline has no answer of the model's: the notice
    the user read stands in for it (sent as the model's message, `Final Answer:` under text),
    so the model knows the last question went unanswered. A run error is not sent."""
    case = ENDINGS["step_limit"]
    turns = two_turns("text", case.first("text"), InMemorySaver(), max_steps=2)
    assert turns.request[-2].text.startswith("Final Answer: I stopped after 2 steps")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_by_design_an_earlier_turns_corrections_are_sent_again(protocol: str) -> None:
    """The agent's corrections stay in the thread as observations do (docs/architecture.md) and
    are part of the history the model reads in later turns: the unusable replies and what it
    was told about them, not hidden after the turn."""
    turns = two_turns(protocol, ENDINGS["correction_loop"].first(protocol), InMemorySaver())
    told = [x for x in turns.request if "Your last reply could not be used" in x.text
            or "Your reply could not be used" in x.text]  # fmt: skip
    assert len(told) == 2


# -- the run deadline, on a clock a tool moves ---------------------------------------------------


class Clock:
    """`time` as the deadline reads it, `offset` seconds ahead of the real one."""

    def __init__(self) -> None:
        self.offset = 0.0

    def time(self) -> float:
        return time.time() + self.offset

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_next_turn_after_the_run_deadline(
    protocol: str, saver: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    for module in (deadline_module, plan_module, closing_module):
        monkeypatch.setattr(module, "time", clock)

    @tool
    def slow(q: str) -> str:
        """Takes an hour."""
        clock.offset += 3600
        return f"slow {q}"

    model = ScriptedChatModel([action(protocol, "slow", {"q": "a"}), answer(protocol, "A2")])
    agent = ours(model, saver, protocol, tools=[slow], run_timeout=60)
    first = agent.invoke({"messages": [("user", Q1)]}, config())
    assert first["status"] == "timeout" and "run_timeout=60 s" in first["answer"]
    clock.offset = 0.0  # a new turn is a new run: its own time
    start = len(model.requests)
    second = agent.invoke({"messages": [("user", Q2)]}, config())
    turns = Turns(model, agent, first, second, start)
    assert_sound_request(turns.request, protocol, prior="I stopped after")
    assert any("slow a" in x.text for x in turns.request)
    assert_answered_normally(turns)


# -- the context window filled -------------------------------------------------------------------


@tool
def fetch(i: int) -> str:
    """Fetch item i."""
    return f"[BEGIN {i}] " + "lorem ipsum " * 120 + f"[END {i}]"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_next_turn_after_old_results_were_cleared_to_fit(protocol: str, saver: Any) -> None:
    steps = [action(protocol, "fetch", {"i": i}) for i in range(3)]
    turns = two_turns(
        protocol, [*steps, answer(protocol, "A1")], saver, tools=[fetch], context_window=2500
    )
    assert turns.first["status"] == "answered"
    assert_sound_request(turns.request, protocol, prior="A1")
    shown = "\n".join(x.text for x in turns.request)
    assert "[result cleared to fit the context window]" in shown and "[BEGIN 0]" not in shown
    assert "[END 2]" in shown  # the newest results stay
    assert '"i": 0' in shown or any(  # the cleared result's call stays
        c["args"] == {"i": 0} for x in turns.request for c in getattr(x, "tool_calls", [])
    )
    kept = [x.text for x in turns.values["messages"] if isinstance(x, ToolMessage)]
    assert [t.startswith(f"[BEGIN {i}]") for i, t in enumerate(kept)] == [True] * 3
    assert_answered_normally(turns)


# -- the correction loop under native calling ----------------------------------------------------


def broken(i: int) -> AIMessage:
    bad = {"name": "lookup", "args": '{"q": ', "id": f"bad{i}", "error": "bad json"}
    return AIMessage(content="", invalid_tool_calls=[{**bad, "type": "invalid_tool_call"}])


def test_after_a_native_correction_loop_no_broken_call_is_left_unanswered(saver: Any) -> None:
    turns = two_turns("native", [broken(i) for i in range(3)], saver)
    assert turns.first["status"] == "error"
    assert_answered_normally(turns)
    assert unanswered_calls(turns.request) == []


def test_after_a_native_correction_loop_the_earlier_broken_calls_are_answered() -> None:
    turns = two_turns("native", [broken(0), answer("native", "A1")], InMemorySaver())
    assert_sound_request(turns.request, "native", prior="A1")
    assert_answered_normally(turns)


# -- structured output ---------------------------------------------------------------------------

GOOD_TEXT = 'Thought: ok\nFinal Answer: {"city": "Paris", "country": "France"}'
BAD_TEXT = 'Thought: ok\nFinal Answer: {"town": "x"}'


def structured(protocol: str, ok: bool, i: int) -> Any:
    if protocol == "text":
        return GOOD_TEXT if ok else BAD_TEXT
    args = {"city": "Paris", "country": "France"} if ok else {"town": "x"}
    return calls(tool_call("Capital", args, id=f"s{i}{ok}"))


def structured_turns(protocol: str, saver: Any, first: list[Any], second: list[Any]) -> Turns:
    rf = ToolStrategy(Capital) if protocol == "native" else Capital
    return two_turns(protocol, first, saver, second=second, response_format=rf)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_next_structured_turn_after_a_structured_answer(protocol: str, saver: Any) -> None:
    turns = structured_turns(
        protocol, saver, [structured(protocol, True, 1)], [structured(protocol, True, 2)]
    )
    assert turns.first["structured_response"] == Capital(city="Paris", country="France")
    assert turns.second["status"] == "answered"
    assert turns.second["structured_response"] == Capital(city="Paris", country="France")
    request = turns.request
    assert [x.text for x in request].count(Q1) == 1 and request[-1].text == Q2
    if protocol == "native":
        assert unanswered_calls(request) == []


def test_the_next_structured_turn_is_create_agents() -> None:
    first, second = [structured("native", True, 1)], [structured("native", True, 2)]
    turns = structured_turns("native", InMemorySaver(), first, second)
    model = ScriptedChatModel([*first, *second])
    agent = create_agent(
        model, tools=TOOLS, checkpointer=InMemorySaver(), system_prompt=SYSTEM,
        response_format=ToolStrategy(Capital),
    )  # fmt: skip
    agent.invoke({"messages": [("user", Q1)]}, config())
    out = agent.invoke({"messages": [("user", Q2)]}, config())
    assert gist(turns.request) == gist(model.requests[1].messages)
    assert out["structured_response"] == turns.second["structured_response"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_next_structured_turn_after_a_structured_failure(protocol: str, saver: Any) -> None:
    bad = [structured(protocol, False, i) for i in range(3)]
    turns = structured_turns(protocol, saver, bad, [structured(protocol, True, 9)])
    assert turns.first["status"] == "error" and turns.first.get("structured_response") is None
    assert turns.second["status"] == "answered"
    assert turns.second["structured_response"] == Capital(city="Paris", country="France")
    assert [x.text for x in turns.request][-1] == Q2


@pytest.mark.parametrize("failure", ["structured failure", "model error"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_failed_turn_returns_no_structured_response_of_the_turn_before(
    protocol: str, failure: str
) -> None:
    if failure == "model error":
        second: list[Any] = [RuntimeError("provider down")]
    else:
        second = [structured(protocol, False, i) for i in range(3)]
    turns = structured_turns(protocol, InMemorySaver(), [structured(protocol, True, 1)], second)
    assert turns.first["structured_response"] == Capital(city="Paris", country="France")
    assert turns.second["status"] == "error"
    # docs/structured-output.md: "with status `error`, `structured_response` unset"
    assert turns.second.get("structured_response") is None


# -- approvals left pending ----------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_batched_a_pending_approval_with_a_parallel_call_then_a_new_question(
    protocol: str,
) -> None:
    """Batched: nothing of the step runs before the decision, so both calls are not run."""
    RAN.clear()
    if protocol == "native":
        step: Any = calls(
            tool_call("lookup", {"q": "a"}, id="c1"), tool_call("note", {"q": "b"}, id="c2")
        )
    else:  # the text protocol runs one action per reply: the pending one
        step = _step("text")
    turns = two_turns(protocol, [step], InMemorySaver(), approve=["lookup", "note"])
    assert RAN == []
    assert_sound_request(turns.request, protocol)
    told = [x.text for x in turns.request if "was not run" in x.text]
    assert len(told) == (2 if protocol == "native" else 1)
    assert_answered_normally(turns)


def test_per_call_a_call_that_ran_before_the_pause_keeps_its_result() -> None:
    RAN.clear()
    step = calls(tool_call("lookup", {"q": "a"}, id="c1"), tool_call("note", {"q": "b"}, id="c2"))
    turns = two_turns(
        "native", [step], InMemorySaver(), approve=["lookup"], approval_mode="per_call"
    )
    assert RAN == ["b"]  # the note was written
    assert_sound_request(turns.request, "native")
    told = {x.tool_call_id: x.text for x in turns.request if isinstance(x, ToolMessage)}
    assert "was not run" in told["c1"]
    assert told["c2"] == "noted b"


def test_per_call_a_call_that_ran_before_the_pause_keeps_its_result_async() -> None:
    """The same through `ainvoke` (the CLI and a served run), and on SQLite."""
    RAN.clear()
    step = calls(tool_call("lookup", {"q": "a"}, id="c1"), tool_call("note", {"q": "b"}, id="c2"))
    model = ScriptedChatModel([step, answer("native", "A2")])

    async def both_turns(path: str) -> None:
        async with AsyncSqliteSaver.from_conn_string(path) as saver:
            agent = ours(model, saver, "native", approve=["lookup"], approval_mode="per_call")
            first = await agent.ainvoke({"messages": [("user", Q1)]}, config())
            assert "__interrupt__" in first
            await agent.ainvoke({"messages": [("user", Q2)]}, config())

    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(both_turns(f"{folder}/threads.sqlite"))
    assert RAN == ["b"]
    told = {
        x.tool_call_id: x.text for x in model.requests[-1].messages if isinstance(x, ToolMessage)
    }
    assert "was not run" in told["c1"] and told["c2"] == "noted b"


# -- switching protocol or model between turns ---------------------------------------------------


@pytest.mark.parametrize(("before", "after"), [("native", "text"), ("text", "native")])
def test_switching_protocol_between_turns(before: str, after: str, saver: Any) -> None:
    first = ScriptedChatModel([_step(before), answer(before, "A1")])
    second = ScriptedChatModel([answer(after, "A2")])
    ours(first, saver, before).invoke({"messages": [("user", Q1)]}, config())
    agent = ours(second, saver, after)
    out = agent.invoke({"messages": [("user", Q2)]}, config())
    turns = Turns(second, agent, {}, out, 0)
    assert_sound_request(turns.request, after, prior="A1")
    assert any("found a" in x.text for x in turns.request)
    assert_answered_normally(turns)


def test_switching_protocol_by_the_run_context_between_turns(saver: Any) -> None:
    model = ScriptedChatModel([_step("native"), answer("native", "A1"), answer("text", "A2")])
    agent = ours(model, saver, "native")
    first = agent.invoke({"messages": [("user", Q1)]}, config())
    start = len(model.requests)
    second = agent.invoke({"messages": [("user", Q2)]}, config(), context={"protocol": "text"})
    turns = Turns(model, agent, first, second, start)
    assert_sound_request(turns.request, "text", prior="A1")
    assert turns.request[2].text == 'Action: lookup\nAction Input: {"q": "a"}'
    assert_answered_normally(turns)
    assert turns.values["run"]["protocol"] == "text"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_switching_the_model_between_turns(protocol: str, saver: Any) -> None:
    first = ScriptedChatModel([_step(protocol), answer(protocol, "A1")])
    ours(first, saver, protocol).invoke({"messages": [("user", Q1)]}, config())
    other = ScriptedChatModel([answer(protocol, "A2")])
    agent = ours(other, saver, protocol)
    out = agent.invoke({"messages": [("user", Q2)]}, config())
    turns = Turns(other, agent, {}, out, 0)
    assert_sound_request(turns.request, protocol, prior="A1")
    # the earlier step is sent as the first model wrote it
    assert turns.request[2].text == (
        ""
        if protocol == "native"
        else 'Thought: I need a tool.\nAction: lookup\nAction Input: {"q": "a"}'
    )
    assert_answered_normally(turns)


# -- threads shared with create_agent ------------------------------------------------------------


def create_agent_then_ours(
    protocol: str, saver: Any, script: list[Any], **kw: Any
) -> tuple[Turns, str | None]:
    model = ScriptedChatModel(script)
    theirs = create_agent(model, tools=TOOLS, checkpointer=saver, system_prompt=SYSTEM, **kw)
    raised = None
    try:
        theirs.invoke({"messages": [("user", Q1)]}, config())
    except Exception as exc:
        raised = repr(exc)
    second = ScriptedChatModel([answer(protocol, "A2")])
    agent = ours(second, saver, protocol)
    out = agent.invoke({"messages": [("user", Q2)]}, config())
    return Turns(second, agent, {}, out, 0), raised


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_create_agent_thread_continued_by_ours(protocol: str, saver: Any) -> None:
    turns, raised = create_agent_then_ours(protocol, saver, [_step("native"), "A1"])
    assert raised is None
    assert_sound_request(turns.request, protocol, prior="A1")
    assert any("found a" in x.text for x in turns.request)
    assert_answered_normally(turns)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_create_agent_thread_paused_for_approval_continued_by_ours(
    protocol: str, saver: Any
) -> None:
    hitl = HumanInTheLoopMiddleware({"lookup": True})
    turns, _ = create_agent_then_ours(protocol, saver, [_step("native")], middleware=[hitl])
    assert_sound_request(turns.request, protocol)
    assert any("was not run" in x.text for x in turns.request)
    assert_answered_normally(turns)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_create_agent_thread_ended_by_a_model_error_keeps_its_tool_result(
    protocol: str,
) -> None:
    script = [_step("native"), RuntimeError("provider down")]
    turns, raised = create_agent_then_ours(protocol, InMemorySaver(), script)
    assert raised is not None and "provider down" in raised
    assert_answered_normally(turns)
    shown = [x.text for x in turns.request]
    assert not any("was not run" in text for text in shown)  # it ran: create_agent ran it
    assert any("found a" in text for text in shown)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_our_thread_continued_by_create_agent(protocol: str, saver: Any) -> None:
    case = ENDINGS["step_limit"]
    first = ScriptedChatModel(case.first(protocol))
    ours(first, saver, protocol, max_steps=2).invoke({"messages": [("user", Q1)]}, config())
    model = ScriptedChatModel(["A2"])
    theirs = create_agent(model, tools=TOOLS, checkpointer=saver, system_prompt=SYSTEM)
    out = theirs.invoke({"messages": [("user", Q2)]}, config())
    assert out["messages"][-1].text == "A2"
    request = model.requests[0].messages
    assert unanswered_calls(request) == []
    assert [x.text for x in request].count(Q1) == 1 and request[-1].text == Q2
    assert len([x for x in request if isinstance(x, SystemMessage)]) == 1
    # and back: ours takes the thread again
    again = ScriptedChatModel([answer(protocol, "A3")])
    agent = ours(again, saver, protocol)
    third = agent.invoke({"messages": [("user", "third question")]}, config())
    assert (third["status"], third["answer"]) == ("answered", "A3")
    assert [x.text for x in again.requests[0].messages][-2:] == [
        "A2" if protocol == "native" else "Final Answer: A2",
        "third question",
    ]


# -- a client's RemoveMessage between turns ------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_next_turn_after_a_client_removed_the_first_turn(protocol: str, saver: Any) -> None:
    model = ScriptedChatModel([_step(protocol), answer(protocol, "A1"), answer(protocol, "A2")])
    agent = ours(model, saver, protocol)
    agent.invoke({"messages": [("user", "old question")]}, config())
    stored = agent.get_state(config()).values["messages"]
    agent.update_state(config(), {"messages": [RemoveMessage(id=x.id) for x in stored]})
    out = agent.invoke({"messages": [("user", Q2)]}, config())
    request = model.requests[-1].messages
    assert [type(x) for x in request] == [SystemMessage, HumanMessage]
    assert request[-1].text == Q2 and (out["status"], out["answer"]) == ("answered", "A2")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_next_turn_after_a_client_removed_a_result(protocol: str, saver: Any) -> None:
    """A result removed from a finished step: the call is answered (not run), never sent bare."""
    model = ScriptedChatModel([_step(protocol), answer(protocol, "A1"), answer(protocol, "A2")])
    agent = ours(model, saver, protocol)
    first = agent.invoke({"messages": [("user", Q1)]}, config())
    result = next(x for x in first["messages"] if isinstance(x, ToolMessage))
    agent.update_state(config(), {"messages": [RemoveMessage(id=result.id)]})
    start = len(model.requests)
    second = agent.invoke({"messages": [("user", Q2)]}, config())
    turns = Turns(model, agent, first, second, start)
    assert_sound_request(turns.request, protocol, prior="A1")
    assert not any("found a" in x.text for x in turns.request)
    assert_answered_normally(turns)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_after_a_removal_a_resumed_runs_trace_is_its_own(protocol: str, saver: Any) -> None:
    script = [answer(protocol, "A1"), answer(protocol, "A2"), _step(protocol, q="c"),
              answer(protocol, "A3")]  # fmt: skip
    model = ScriptedChatModel(script)
    agent = ours(model, saver, protocol, approve=["lookup"])
    agent.invoke({"messages": [("user", "q1")]}, config())
    agent.invoke({"messages": [("user", "q2")]}, config())
    stored = agent.get_state(config()).values["messages"]
    agent.update_state(config(), {"messages": [RemoveMessage(id=stored[0].id)]})
    paused = agent.invoke({"messages": [("user", "q3")]}, config())
    assert "__interrupt__" in paused
    out = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config())
    assert (out["status"], out["answer"]) == ("answered", "A3")
    assert [(s["kind"], s.get("observation")) for s in out["steps"]] == [
        ("action", "found c"),
        ("answer", None),
    ]
    question = next(x for x in reversed(out["messages"]) if x.text == "q3")
    assert agent.get_state(config()).values["run"]["question_id"] == question.id


# -- through the react-agent command --------------------------------------------------------------


def strict(reply: Reply) -> Callable[[dict[str, Any]], Reply | HTTPError]:
    """The reply, or the 400 the OpenAI API gives a request with a call left unanswered."""

    def respond(body: dict[str, Any]) -> Reply | HTTPError:
        sent = body["messages"]
        for at, message in enumerate(sent):
            ids = {c["id"] for c in message.get("tool_calls") or []}
            following = set()
            for later in sent[at + 1 :]:
                if later.get("role") != "tool":
                    break
                following.add(later["tool_call_id"])
            if ids and following != ids:
                return HTTPError(
                    400,
                    "An assistant message with 'tool_calls' must be followed by tool messages "
                    "responding to each 'tool_call_id'.",
                )
        return reply

    return respond


def cli_turn(question: str, env: dict[str, str], *extra: str) -> Any:
    return run_cli(
        "ask", question, "--thread", "t1", "--protocol", "native", "--tools", "calculator",
        "--json", *extra, env=env,
    )  # fmt: skip


def test_cli_a_pending_approval_then_a_new_question(tmp_path: Path) -> None:
    step = Reply(tool_calls=[ToolCall("calculator", {"expression": "2+2"}, id="p1")])
    with ScriptedOpenAIServer([step, strict(Reply(content="A2"))]) as server:
        env = cli_env(server.base_url, tmp_path / "state")
        first = cli_turn(Q1, env, "--approve", "calculator")
        assert first.returncode == 4, first.stderr  # paused, no answer on stdin
        second = cli_turn(Q2, env)
        assert second.returncode == 0, second.stderr
        assert json.loads(second.stdout)["answer"] == "A2"
        sent = server.chat_requests[-1].messages
        assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "user"]
        assert "was not run" in sent[3]["content"]


def test_cli_the_next_question_after_a_native_correction_loop(tmp_path: Path) -> None:
    bad = [
        Reply(tool_calls=[ToolCall("calculator", '{"expression": ', id=f"x{i}")]) for i in range(3)
    ]
    with ScriptedOpenAIServer([*bad], default=strict(Reply(content="A2"))) as server:
        env = cli_env(server.base_url, tmp_path / "state")
        first = cli_turn(Q1, env)
        assert first.returncode != 0 and json.loads(first.stdout)["status"] == "error"
        second = cli_turn(Q2, env)
        assert second.returncode == 0, second.stdout[-400:]
        assert json.loads(second.stdout)["answer"] == "A2"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_stand_in_sent_during_a_users_own_hitl_pause_is_answered_as_not_run(
    protocol: str,
) -> None:
    """Agent Chat UI's stand-in for a call a user's own `HumanInTheLoopMiddleware` paused,
    sent with a new message: the call never ran, and the model is told so (as with the
    agent's own approvals), not that it succeeded."""
    RAN.clear()
    model = ScriptedChatModel([_step(protocol, "note"), answer(protocol, "A2")])
    hitl = HumanInTheLoopMiddleware({"note": True})
    agent = ours(model, InMemorySaver(), protocol, middleware=[hitl])
    first = agent.invoke({"messages": [("user", Q1)]}, config())
    assert "__interrupt__" in first
    call = first["messages"][-1].tool_calls[0]
    stand_in = {"type": "tool", "tool_call_id": call["id"], "id": "do-not-render-1"}
    stand_in["content"] = "Successfully handled tool call."
    out = agent.invoke({"messages": [stand_in, {"role": "user", "content": Q2}]}, config())
    assert RAN == [] and out["status"] == "answered"
    told = [x.text for x in model.requests[-1].messages]
    assert not any("Successfully handled" in text for text in told)
    assert any("was not run" in text for text in told)
    assert "do-not-render-1" not in [x.id for x in out["messages"]]
