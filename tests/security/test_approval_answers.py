"""An answer runs a call only when it answers a question about that call that a person saw.

When a call's decision is spent (it ran, or a crash cut it short), act asks again. That question
is one more interrupt of act's task, and LangGraph hands it answers meant for other questions:
- a resume replayed to the checkpoint where the tool asked a question of its own (the re-ask is
  then the task's first interrupt, under the id the tool's question had);
- a resume keyed to the task's first question, sent again after the re-ask paused (LangGraph
  gives a task's later interrupts the value keyed by its first: "older versions gave all of a
  task's interrupts the first id").
Both ran the approved call a second time on one approval; such an answer now runs nothing and
the model is told why in one sentence (`graph.middleware.approvals.answers_it`). An outside
audit found them, with the async per_call re-ask that failed with a TypeError when a person
did approve it (now it runs).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents.middleware import ToolRetryMiddleware
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command, interrupt

from graph import build_graph
from tests.support.scripted_model import ScriptedChatModel, calls, tool_call

APPROVE = {"decisions": [{"type": "approve"}]}
ran: list[str] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


def cfg() -> dict[str, Any]:
    return {"configurable": {"thread_id": "t"}}


def runner(agent: Any, form: str) -> Any:
    if form == "sync":
        return lambda x, c=None: agent.invoke(x, c or cfg())
    return lambda x, c=None: asyncio.run(agent.ainvoke(x, c or cfg()))


def refusals(agent: Any) -> list[str]:
    held = agent.get_state(cfg()).values["messages"]
    return [x.text for x in held if isinstance(x, ToolMessage) and "was not run" in x.text]


@tool
def pay(to: str) -> str:
    """Pay someone (needs approval); asks its own second-factor question first, in the shape
    of an approval so a client shows it as one."""
    request = {"name": "pay", "args": {"to": to}, "description": "Second factor: really pay?"}
    answer = interrupt({"action_requests": [request], "review_configs": []})
    if answer != APPROVE:
        return "cancelled"
    ran.append(to)
    return f"paid {to}"


@pytest.mark.parametrize("form", ["sync", "async"])
@pytest.mark.parametrize("protocol", ["native", "text"])
def test_the_tools_answer_replayed_where_it_asked_runs_nothing_again(
    protocol: str, form: str
) -> None:
    step = (
        calls(tool_call("pay", {"to": "alice"}, id="p1"))
        if protocol == "native"
        else 'Thought: pay\nAction: pay\nAction Input: {"to": "alice"}'
    )
    answer = "done" if protocol == "native" else "Thought: ok\nFinal Answer: done"
    agent = build_graph(
        model=ScriptedChatModel([step, answer], cycle=True),
        tools=[pay],
        protocol=protocol,
        checkpointer=InMemorySaver(),
        store=InMemoryStore(),
        approve=["pay"],
    )
    run = runner(agent, form)
    [review] = run({"messages": [("user", "pay alice")]})["__interrupt__"]
    [asked] = run(Command(resume={review.id: APPROVE}))["__interrupt__"]
    where = agent.get_state(cfg()).config
    run(Command(resume={asked.id: APPROVE}))
    assert ran == ["alice"]
    run(Command(resume={asked.id: APPROVE}), where)  # the same answer, replayed where it asked
    assert ran == ["alice"], "one approval paid twice"
    assert any("not to a question about running it again" in t for t in refusals(agent))


def killed_once_agent() -> Any:
    """per_call approval of `wire`, whose first run is killed mid-call (a crash)."""
    crash = [True]

    @tool
    def wire(to: str) -> str:
        """Wire money (needs approval)."""
        ran.append(to)
        if crash and crash.pop():
            raise KeyboardInterrupt("killed mid-call")
        return "wired"

    return wire_agent(wire)


def wire_agent(wire: Any, *middleware: Any) -> Any:
    """A run whose model calls `wire` once, gated per call, with `middleware`."""
    return build_graph(
        model=ScriptedChatModel([calls(tool_call("wire", {"to": "alice"}, id="w")), "done"]),
        tools=[wire],
        checkpointer=InMemorySaver(),
        store=InMemoryStore(),
        approve=["wire"],
        approval_mode="per_call",
        middleware=list(middleware),
    )


@pytest.mark.parametrize("form", ["sync", "async"])
def test_the_first_answer_sent_again_after_a_crash_does_not_answer_the_new_question(
    form: str,
) -> None:
    agent = killed_once_agent()
    run = runner(agent, form)
    [first] = run({"messages": [("user", "wire alice")]})["__interrupt__"]
    resend = Command(resume={first.id: {"type": "approve"}})
    with pytest.raises(KeyboardInterrupt):
        run(resend)
    [again] = run(resend)["__interrupt__"]  # cut short: asked again, as it should be
    assert again.id != first.id and ran == ["alice"]
    run(resend)  # the client sends its request once more, keyed to the first question
    assert ran == ["alice"], "one approval wired twice"
    assert any("not to a question about running it again" in t for t in refusals(agent))


@pytest.mark.parametrize("form", ["sync", "async"])
def test_a_retrying_middleware_does_not_run_a_spent_call_on_the_first_answer(form: str) -> None:
    @tool
    def wire(to: str) -> str:
        """Wire money (needs approval); fails after the money left."""
        ran.append(to)
        raise TimeoutError("the bank timed out")

    agent = wire_agent(wire, ToolRetryMiddleware(max_retries=2, initial_delay=0, jitter=False))
    run = runner(agent, form)
    [first] = run({"messages": [("user", "wire alice")]})["__interrupt__"]
    request = Command(resume={first.id: {"type": "approve"}})
    for _ in range(2):
        out = run(request)
        if not out.get("__interrupt__"):
            break
    assert ran == ["alice"], "the retries ran a spent call on the first answer"


@pytest.mark.parametrize("form", ["sync", "async"])
def test_a_person_who_approves_the_new_question_runs_the_call_again(form: str) -> None:
    agent = killed_once_agent()
    run = runner(agent, form)
    [first] = run({"messages": [("user", "wire alice")]})["__interrupt__"]
    with pytest.raises(KeyboardInterrupt):
        run(Command(resume={first.id: {"type": "approve"}}))
    out = run(None)
    for _ in range(3):  # every question the run asks, answered by its own id
        if not out.get("__interrupt__"):
            break
        [question] = out["__interrupt__"]
        out = run(Command(resume={question.id: {"type": "approve"}}))
    assert ran == ["alice", "alice"]
    assert out["status"] == "answered" and not refusals(agent)


def test_an_answer_the_re_ask_turned_down_is_not_taken_later_from_its_slot() -> None:
    """Two gated calls, approved once and run; then, at their pause's checkpoint, an approval
    keyed to each first question (turned down: not an answer to the re-ask it reaches). LangGraph
    keeps a turned-down value in the re-ask's slot, and a later unkeyed resume there (an edit)
    replayed it: the approved call ran a third time, with its old arguments."""
    from tests.support.money_tools import clock, transfer
    from tests.support.money_tools import ran as money

    money.clear()
    two = calls(
        tool_call("transfer", {"to": "alice"}, id="t1"),
        tool_call("transfer", {"to": "alice"}, id="t2"),
        tool_call("clock", {"zone": "UTC"}, id="c1"),
    )
    agent = build_graph(
        model=ScriptedChatModel([two, "done"], cycle=True),
        tools=[transfer, clock],
        checkpointer=InMemorySaver(),
        store=InMemoryStore(),
        approve=["transfer"],
        approval_mode="per_call",
    )
    pauses = agent.invoke({"messages": [("user", "pay alice twice")]}, cfg())["__interrupt__"]
    agent.invoke(Command(resume={p.id: {"type": "approve"} for p in pauses}), cfg())
    assert money.count("transfer:alice") == 2
    fork = next(
        s
        for s in agent.get_state_history(cfg())
        if s.next == ("act", "act", "act") and len(s.interrupts) == 2
    )
    for question in fork.interrupts:  # each keyed to a first question: turned down
        agent.invoke(Command(resume={question.id: {"type": "approve"}}), fork.config)
    bob = {"type": "edit", "edited_action": {"name": "transfer", "args": {"to": "bob"}}}
    agent.invoke(Command(resume=bob), fork.config)
    assert money.count("transfer:alice") == 2, "an answer turned down earlier ran the call"


def test_a_re_asked_edit_that_did_not_run_says_only_that_it_did_not_run() -> None:
    """The batched re-ask tells the model what a person's edit ran; when the edited call was
    then not run (its answer was not to the re-ask), the result must not also say it ran."""
    from langgraph.prebuilt.tool_node import ToolCallRequest

    from graph.middleware.approvals import not_shown, refused, with_edit_notice

    call = {"name": "wire", "args": {"to": "bob"}, "id": "w", "type": "tool_call"}
    request = ToolCallRequest(tool_call=call, tool=None, state={}, runtime=None)
    for result in (not_shown(call), refused(call)):
        told = with_edit_notice(result, request, edited=True)
        assert told.text == result.text and "Executed instead" not in told.text
    ran = ToolMessage("wired", tool_call_id="w", name="wire")
    told = with_edit_notice(ran, request, edited=True)
    assert "Executed instead: wire" in told.text and told.text.endswith("wired")
