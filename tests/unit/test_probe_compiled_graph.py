"""A differential probe of the compiled graph as LangGraph code uses it: `build_graph(...)`
beside `create_agent(...)`, the same scripted model and tools, compared on what a user sees.

It covers what test_parity_probe.py, test_parity_probe2.py and test_parity_probe3.py leave out:

- time travel: the parent links of a thread's history and of a replayed branch, replays from
  the input, the first model step, after the tools and the head (what re-runs: the tool, the
  model), a new question at an old checkpoint, forks by `update_state` (a note, `__start__`,
  `__copy__`, `bulk_update_state`) sync and async, the text protocol's replay and fork, and
  approval pauses (the `approve` setting and a user's own `HumanInTheLoopMiddleware`) replayed,
  forked with an edited call and re-asked from before the model;
- the agent as a node of a user's graph: no parent checkpointer, `checkpointer=True` on the
  child (as a node and inside a function node, with an interrupt resumed through the parent),
  the `approve` setting's pause streamed with `subgraphs=True`, the agent's state edited and
  its history read through the parent, an async parent, `subgraphs=True` namespaces with a
  custom writer, a parent replayed from before the agent;
- `batch`/`abatch`/`batch_as_completed` over threads (an interrupt among them, a batch of
  resumes, `return_exceptions`), `astream_events(version="v2")` with a streaming model, a
  custom event and an interrupt, four stream modes with a `ToolRuntime.stream_writer`,
  `durability="exit"`/`"async"`, `with_config`, interrupt nodes at build and invoke time with
  parallel calls;
- `Command(update=...)`/`Command(goto=...)` as input, `get_graph().draw_mermaid()`,
  `graph.name`, `SqliteSaver` beside `InMemorySaver`.

Found when it was written (each a strict xfail checked to fail on its assertion), and fixed:

- a pending step replaced by a plain answer (`update_state(..., as_node="model")`, a fork or
  at the head) does not end the run: ours routes think -> observe -> think and asks the
  model again, so the answer the user wrote is not the answer;
- a result written for a pending call (LangGraph's "skip the tool" edit: `update_state` as
  the tools node, at the head or in a fork) never reaches the model: the next step replaces
  it with "The call to X was not run ... while it waited for approval, or it was written into
  a finished run", though no approval was configured and the run was not finished;
- `Command(goto="model")` as input (create_agent's node name, taken everywhere else: interrupt
  nodes, `update_state(as_node=...)`) is dropped with a log line: the model is not asked;
- a checkpointed agent invoked without a `thread_id` raises a bare `KeyError('thread_id')`
  where create_agent raises LangGraph's ValueError naming the configurable keys it needs.

Fixed in graph/agent.py (`route_after_think` ends a run whose last model message asks for no
call), graph/loop/turn.py (a result the agent did not write is the call's result unless the
call waited for a decision), graph/node_names.py (a command's goto), and
graph/policies/run_deadline.py (`invoked` leaves a config without `configurable` alone).

Differences by design, pinned as `test_by_design_*`: a replay from between an approval and
its call asks again (docs/approvals-and-clients.md); `interrupt_after=["model"]` pauses once
more before `finish`; under `durability="exit"` the history ends in LangGraph's empty delta
stub, which cannot be replayed; the graph's default name. Left out of comparisons as by
design: node names (think/act for model/tools, review for the HITL node), `finish` and
`observe` updates, the extra `values` chunk of `finish`, the interrupt's description text.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain.tools import ToolRuntime
from langchain_core.callbacks import adispatch_custom_event
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.errors import EmptyInputError
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, StateUpdate
from typing_extensions import TypedDict

from graph import build_graph
from tests.support.scripted_model import (
    ReplyingChatModel,
    ScriptedChatModel,
    action,
    answer,
    calls,
    tool_call,
)
from tests.unit.test_parity_probe import MODES, NODE, QUESTION, ask_human, config, double, seen

pytestmark = [
    pytest.mark.filterwarnings("ignore:The v3 streaming protocol"),
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings"),
]

NAMES = ("create_agent", "ours")
# the node that asks for approval: create_agent's HITL hook node, our review
APPROVAL_NODES = {"HumanInTheLoopMiddleware.after_model": "approval", "review": "approval"}
ran: list[int] = []


@tool
def rec(n: int) -> str:
    """Record a number (what ran is kept in `ran`)."""
    ran.append(n)
    return f"rec {n}"


@tool
def shout(x: int, runtime: ToolRuntime) -> str:
    """Write to the custom stream through the tool runtime."""
    runtime.stream_writer({"shout": x})
    return "loud"


@tool
async def evented(x: int) -> str:
    """Dispatch a custom callback event."""
    await adispatch_custom_event("my_event", {"x": x})
    return "sent"


@pytest.fixture(autouse=True)
def _clear_ran() -> Iterator[None]:
    ran.clear()
    yield
    ran.clear()


# -- running both ----------------------------------------------------------------------------


def hitl() -> HumanInTheLoopMiddleware:
    return HumanInTheLoopMiddleware(interrupt_on={"rec": True, "double": True})


# how ours asks for approval: its own setting, or the user's own HITL middleware
APPROVALS: dict[str, Callable[[list], dict[str, Any]]] = {
    "approve_setting": lambda tools: {"approve": [t.name for t in tools]},
    "hitl_middleware": lambda _tools: {"middleware": [hitl()]},
}


def make(
    who: str,
    model: Any,
    tools: list,
    approvals: str | None = None,
    checkpointer: Any = "memory",
    **kw: Any,
) -> Any:
    """One agent; `approvals` names how ours asks (create_agent always by its HITL)."""
    saver = InMemorySaver() if checkpointer == "memory" else checkpointer
    if who == "create_agent":
        extra = {"middleware": [hitl()]} if approvals else {}
        return create_agent(model=model, tools=tools, checkpointer=saver, **extra, **kw)
    extra = APPROVALS[approvals](tools) if approvals else {}
    return build_graph(model=model, tools=tools, checkpointer=saver, **extra, **kw)


def compare(
    read: Callable[[str, ScriptedChatModel, Any], Any], script: list, tools: list, **kw: Any
) -> Any:
    """`read(name, model, agent)` for each agent (its own model copy and saver); they agree."""
    got = {}
    for name in NAMES:
        ran.clear()
        model = ScriptedChatModel(list(script))
        got[name] = read(name, model, make(name, model, tools, **kw))
    assert got["ours"] == got["create_agent"]
    return got["ours"]


def compare_built(
    read: Callable[[str, Callable[..., Any], ScriptedChatModel], Any], script: list
) -> Any:
    """`read(name, maker, model)` where the read builds the agent itself (`maker` is
    create_agent or build_graph); they agree."""
    got = {}
    for name, maker in (("create_agent", create_agent), ("ours", build_graph)):
        ran.clear()
        got[name] = read(name, maker, ScriptedChatModel(list(script)))
    assert got["ours"] == got["create_agent"]
    return got["ours"]


def node(n: str) -> str:
    return APPROVAL_NODES.get(n, NODE.get(n, n))


def nexts(snapshot: Any) -> list[str]:
    return sorted(node(n) for n in snapshot.next)


def tools_node(name: str) -> str:
    return "tools" if name == "create_agent" else "act"


def model_node(name: str) -> str:
    return "model" if name == "create_agent" else "think"


def go(mode: str, agent: Any, payload: Any, cfg: Any = None, **kw: Any) -> Any:
    cfg = config() if cfg is None else cfg
    if mode == "sync":
        return agent.invoke(payload, cfg, **kw)
    return asyncio.run(agent.ainvoke(payload, cfg, **kw))


def history(mode: str, agent: Any, cfg: Any = None) -> list[Any]:
    cfg = config() if cfg is None else cfg
    if mode == "sync":
        return list(agent.get_state_history(cfg))

    async def collect() -> list[Any]:
        return [s async for s in agent.aget_state_history(cfg)]

    return asyncio.run(collect())


def update(mode: str, agent: Any, cfg: Any, values: Any, as_node: str | None = None) -> Any:
    if mode == "sync":
        return agent.update_state(cfg, values, as_node=as_node)
    return asyncio.run(agent.aupdate_state(cfg, values, as_node=as_node))


def ckpt(snapshot_or_config: Any) -> str:
    cfg = getattr(snapshot_or_config, "config", snapshot_or_config)
    return cfg["configurable"]["checkpoint_id"]


def before_tools(name: str, agent: Any, mode: str = "sync") -> Any:
    return next(s for s in history(mode, agent) if tools_node(name) in s.next)


def first_model_step(agent: Any, mode: str = "sync") -> Any:
    return next(s for s in history(mode, agent) if s.metadata.get("step") == 0)


TOOL_STEP = [calls(tool_call("rec", {"n": 1}, id="c1")), "done", "again", "more", "more2"]
ASK_STEP = [calls(tool_call("ask_human", {"question": "ok?"}, id="c1")), "done", "again"]
APPROVE = Command(resume={"decisions": [{"type": "approve"}]})


# -- 1. time travel --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_replayed_branch_links_to_the_checkpoint_it_left(mode: str) -> None:
    def read(name: str, _model: Any, agent: Any) -> Any:
        go(mode, agent, QUESTION)
        first = history(mode, agent)
        old_head = ckpt(first[0])
        chosen = before_tools(name, agent, mode)
        go(mode, agent, None, chosen.config)
        after = history(mode, agent)
        by_id = {ckpt(s): s for s in after}
        chain, cur = [], after[0]
        while cur.parent_config is not None:
            chain.append(ckpt(cur.parent_config))
            cur = by_id[chain[-1]]
        unique = len(by_id) == len(after)
        return (
            all(s.parent_config is None or ckpt(s.parent_config) in by_id for s in after),
            ckpt(chosen) in chain,
            old_head in by_id and old_head not in chain,
            cur.metadata.get("source"),
            unique,
            ran,
        )

    assert compare(read, TOOL_STEP, [rec]) == (True, True, True, "input", True, [1, 1])


REPLAY_POINTS: dict[str, Callable[[str, list[Any]], Any]] = {
    "input": lambda _name, hist: hist[-1],
    "first_model": lambda _name, hist: next(s for s in hist if s.metadata.get("step") == 0),
    "after_tools": lambda name, hist: next(
        s for s in hist if s.next == (model_node(name),) and s.metadata.get("step", 0) > 0
    ),
    "head_by_id": lambda _name, hist: hist[0],
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("point", sorted(REPLAY_POINTS))
def test_a_replay_reruns_what_follows_the_checkpoint(point: str, mode: str) -> None:
    """What re-runs (the tool, the model) and the messages after a replay by checkpoint id.
    (The replay from the checkpoint before the tools is probe 3's.)"""

    def read(name: str, model: ScriptedChatModel, agent: Any) -> Any:
        go(mode, agent, QUESTION)
        target = REPLAY_POINTS[point](name, history(mode, agent))
        ran.clear()
        asked = len(model.requests)
        out = go(mode, agent, None, target.config)
        return ran, len(model.requests) - asked, seen(out["messages"])

    script = [*TOOL_STEP[:2], calls(tool_call("rec", {"n": 2}, id="c2")), "after", "more"]
    got = compare(read, script, [rec])
    # the model is asked again from any point before its answer; the head re-runs nothing
    assert got[:2] == (([], 0) if point == "head_by_id" else ([2], 2))


def test_a_new_question_at_an_old_checkpoint_branches_the_same() -> None:
    def read(_name: str, model: ScriptedChatModel, agent: Any) -> Any:
        agent.invoke(QUESTION, config())
        start = first_model_step(agent)
        out = agent.invoke({"messages": [("user", "instead")]}, start.config)
        head = agent.get_state(config())
        return seen(out["messages"]), ckpt(head.parent_config) != ckpt(start), len(model.requests)

    compare(read, TOOL_STEP, [rec])


FORKS: dict[str, Callable[[str, str, Any], Any]] = {
    # a note written into the checkpoint before the tools, by no node
    "note_before_tools": lambda mode, name, agent: update(
        mode, agent, before_tools(name, agent, mode).config, {"messages": [HumanMessage("note")]}
    ),
    # the question replaced at the first model step, as the graph's input
    "as_start": lambda mode, _name, agent: update(
        mode,
        agent,
        first_model_step(agent, mode).config,
        {"messages": [HumanMessage("instead")]},
        as_node="__start__",
    ),
    # LangGraph's copy of a checkpoint as a new branch
    "copy": lambda mode, name, agent: update(
        mode, agent, before_tools(name, agent, mode).config, None, as_node="__copy__"
    ),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fork", sorted(FORKS))
def test_a_fork_by_update_state_runs_the_same(fork: str, mode: str) -> None:
    def read(name: str, model: ScriptedChatModel, agent: Any) -> Any:
        go(mode, agent, QUESTION)
        ran.clear()
        forked = FORKS[fork](mode, name, agent)
        snap = agent.get_state(forked)
        parent = ckpt(snap.parent_config)
        left = {ckpt(s) for s in history(mode, agent)}
        asked = len(model.requests)
        out = go(mode, agent, None, forked)
        return (
            nexts(snap),
            snap.metadata.get("source"),
            parent in left,
            seen(out["messages"]),
            ran,
            len(model.requests) - asked,
        )

    compare(read, TOOL_STEP, [rec])


def test_a_fork_of_several_supersteps_runs_the_same() -> None:
    def read(name: str, _model: Any, agent: Any) -> Any:
        agent.invoke(QUESTION, config())
        ran.clear()
        steps = [
            [StateUpdate({"messages": [HumanMessage("one")]}, None)],
            [StateUpdate({"messages": [HumanMessage("two")]}, None)],
        ]
        forked = agent.bulk_update_state(before_tools(name, agent).config, steps)
        snap = agent.get_state(forked)
        return nexts(snap), seen(agent.invoke(None, forked)["messages"]), ran

    compare(read, TOOL_STEP, [rec])


def test_get_state_history_filters_read_the_same() -> None:
    def read(_name: str, _model: Any, agent: Any) -> Any:
        agent.invoke(QUESTION, config())
        every = list(agent.get_state_history(config()))
        two = list(agent.get_state_history(config(), limit=2))
        before = list(agent.get_state_history(config(), before=every[1].config))
        inputs = list(agent.get_state_history(config(), filter={"source": "input"}))
        return (
            [ckpt(s) for s in two] == [ckpt(s) for s in every[:2]],
            len(before) == len(every) - 2,
            [s.metadata["step"] for s in inputs],
        )

    compare(read, TOOL_STEP, [rec])


def test_the_text_protocol_replays_and_forks_as_native_calling_does() -> None:
    """Ours under `protocol="text"` against create_agent calling natively: the same tool
    re-runs, the same model requests, the same messages (the text step keeps its thought
    as content, by design)."""

    def shape(messages: list[BaseMessage]) -> list[Any]:
        rows = []
        for row in seen(messages):
            if row[0] == "AIMessage" and len(row) > 2:
                rows.append(("AIMessage", [(c[0], c[1]) for c in row[2]]))
            else:
                rows.append(row[:2] + row[2:4])
        return rows

    got = {}
    for name, protocol in (("create_agent", "native"), ("ours", "text")):
        ran.clear()
        script = [
            action(protocol, "rec", {"n": 1}),
            answer(protocol, "done"),
            answer(protocol, "again"),
            answer(protocol, "more"),
        ]
        model = ScriptedChatModel(script)
        extra = {"protocol": "text"} if name == "ours" else {}
        agent = make(name, model, [rec], **extra)
        agent.invoke(QUESTION, config())
        point = before_tools(name, agent)
        replayed = agent.invoke(None, point.config)
        step_ = point.values["messages"][-1]
        edited = step_.model_copy(
            update={"tool_calls": [{**step_.tool_calls[0], "args": {"n": 5}}]}
        )
        forked = agent.update_state(point.config, {"messages": [edited]}, as_node="model")
        out = agent.invoke(None, forked)
        got[name] = (shape(replayed["messages"]), shape(out["messages"]), ran, len(model.requests))
    assert got["ours"] == got["create_agent"]
    assert got["ours"][2] == [1, 1, 5]


@pytest.mark.parametrize(
    ("mode", "protocol", "where"),
    [
        ("sync", "native", "fork"),
        ("async", "native", "fork"),
        ("sync", "native", "head"),
        ("sync", "text", "fork"),
    ],
)
def test_a_pending_step_replaced_by_an_answer_ends_the_run(
    mode: str, protocol: str, where: str
) -> None:
    """create_agent: the edited answer is the last word, the model is not asked again."""
    got = {}
    for name in NAMES:
        if name == "create_agent" and protocol == "text":
            continue
        script = [action(protocol, "rec", {"n": 1}), answer(protocol, "done"), "asked again"]
        model = ScriptedChatModel(script)
        pause = {"interrupt_before": ["tools"]} if where == "head" else {}
        extra = {"protocol": protocol} if name == "ours" else {}
        agent = make(name, model, [rec], **pause, **extra)
        go(mode, agent, QUESTION)
        ran.clear()
        point = agent.get_state(config()) if where == "head" else before_tools(name, agent, mode)
        step_ = point.values["messages"][-1]
        target = point.config if where == "fork" else config()
        forked = update(
            mode, agent, target, {"messages": [AIMessage("plain now", id=step_.id)]}, "model"
        )
        asked = len(model.requests)
        out = go(mode, agent, None, forked if where == "fork" else config())
        got[name] = (seen(out["messages"]), len(model.requests) - asked, ran)
    assert got["ours"] == ([("HumanMessage", "hi"), ("AIMessage", "plain now")], 0, [])
    assert got.get("create_agent", got["ours"]) == got["ours"]


@pytest.mark.parametrize("where", ["head", "fork"])
def test_a_result_written_for_a_pending_call_reaches_the_model(where: str) -> None:
    """LangGraph's way to skip a tool: write its result as the tools node, then continue."""

    def read(name: str, model: ScriptedChatModel, agent: Any) -> Any:
        agent.invoke(QUESTION, config())
        target = config() if where == "head" else before_tools(name, agent).config
        skipped = ToolMessage("skipped: 99", tool_call_id="c1", name="rec")
        written = agent.update_state(target, {"messages": [skipped]}, as_node="tools")
        out = agent.invoke(None, config() if where == "head" else written)
        sent = [x.content for x in model.requests[-1].messages if isinstance(x, ToolMessage)]
        return seen(out["messages"]), sent, ran

    pause = {"interrupt_before": ["tools"]} if where == "head" else {}
    got = compare(read, TOOL_STEP, [rec], **pause)
    assert got[1] == ["skipped: 99"]


# -- approvals under time travel -------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("approvals", sorted(APPROVALS))
def test_an_approval_pause_replayed_and_forked_reads_the_same(approvals: str, mode: str) -> None:
    """Replaying the paused checkpoint asks again and runs nothing until approved; a fork of
    it with an edited call asks about the edit, and the edit runs."""

    def read(name: str, model: ScriptedChatModel, agent: Any) -> Any:
        paused = go(mode, agent, QUESTION)
        waiting = agent.get_state(config())
        go(mode, agent, APPROVE)
        first = list(ran)
        ran.clear()
        again = go(mode, agent, None, waiting.config)
        asked_again = [i.value["action_requests"][0]["args"] for i in again["__interrupt__"]]
        not_yet = list(ran)
        done = go(mode, agent, APPROVE)
        step_ = waiting.values["messages"][-1]
        edited = AIMessage("", id=step_.id, tool_calls=[tool_call("rec", {"n": 7}, id="c1")])
        forked = update(mode, agent, waiting.config, {"messages": [edited]}, model_node(name))
        fork_snap = agent.get_state(forked)
        asked_edit = go(mode, agent, None, forked)["__interrupt__"][0].value["action_requests"]
        out = go(mode, agent, APPROVE)
        return (
            [i.value["action_requests"][0]["args"] for i in paused["__interrupt__"]],
            nexts(waiting),
            first,
            asked_again,
            not_yet,
            seen(done["messages"])[-2:],
            ckpt(fork_snap.parent_config) == ckpt(waiting),
            nexts(fork_snap),
            [r["args"] for r in asked_edit],
            seen(out["messages"]),
            ran,
        )

    got = compare(read, TOOL_STEP, [rec], approvals=approvals)
    assert got[-1] == [1, 7]


def test_an_approval_replayed_from_before_the_model_asks_again_the_same() -> None:
    script = [TOOL_STEP[0], "done", calls(tool_call("rec", {"n": 3}, id="c2")), "after reject"]

    def read(_name: str, model: ScriptedChatModel, agent: Any) -> Any:
        agent.invoke(QUESTION, config())
        agent.invoke(APPROVE, config())
        again = agent.invoke(None, first_model_step(agent).config)
        asked = [i.value["action_requests"][0]["args"] for i in again["__interrupt__"]]
        reject = Command(resume={"decisions": [{"type": "reject", "message": "no"}]})
        out = agent.invoke(reject, config())
        return (
            asked,
            seen(out["messages"])[2][2:],
            seen(out["messages"])[-1],
            ran,
            len(model.requests),
        )

    compare(read, script, [rec], approvals="approve_setting")


def test_a_user_hitl_replayed_between_approval_and_call_runs_it_as_create_agent() -> None:
    def read(name: str, _model: Any, agent: Any) -> Any:
        agent.invoke(QUESTION, config())
        agent.invoke(APPROVE, config())
        ran.clear()
        out = agent.invoke(None, before_tools(name, agent).config)
        return "__interrupt__" in out, ran, seen(out["messages"])

    compare(read, TOOL_STEP, [rec], approvals="hitl_middleware")


def test_by_design_a_replay_between_approval_and_call_asks_again() -> None:
    """docs/approvals-and-clients.md "One decision runs one call, once": under the `approve`
    setting a replay from the checkpoint between the decision and the call pauses again;
    create_agent (and ours with a user's own HITL, above) runs the call on the old decision."""
    got = {}
    for name in NAMES:
        model = ScriptedChatModel(list(TOOL_STEP))
        agent = make(name, model, [rec], approvals="approve_setting")
        agent.invoke(QUESTION, config())
        agent.invoke(APPROVE, config())
        ran.clear()
        out = agent.invoke(None, before_tools(name, agent).config)
        got[name] = ("__interrupt__" in out, list(ran))
    assert got == {"create_agent": (False, [1]), "ours": (True, [])}


# -- 2. the agent as a node of a user's graph ------------------------------------------------


def parent_of(agent: Any, saver: bool = True) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    return builder.compile(checkpointer=InMemorySaver() if saver else None)


class QA(TypedDict, total=False):
    q: str
    a: str
    n: int


def asking_parent(agent: Any) -> Any:
    """A parent whose node calls the agent by itself (no shared `messages`)."""

    def call(state: QA) -> QA:
        out = agent.invoke({"messages": [("user", state["q"])]})
        return {"a": out["messages"][-1].content, "n": len(out["messages"])}

    builder = StateGraph(QA)
    builder.add_node("call", call)
    builder.add_edge(START, "call")
    builder.add_edge("call", END)
    return builder.compile(checkpointer=InMemorySaver())


def test_an_interrupt_in_an_agent_node_without_a_parent_checkpointer_reads_the_same() -> None:
    def read(_name: str, maker: Any, model: Any) -> Any:
        out = parent_of(maker(model=model, tools=[ask_human]), saver=False).invoke(QUESTION)
        return [i.value for i in out["__interrupt__"]], seen(out["messages"])

    compare_built(read, ASK_STEP)


def test_a_child_with_checkpointer_true_remembers_its_thread_inside_a_function_node() -> None:
    def read(_name: str, maker: Any, model: Any) -> Any:
        parent = asking_parent(maker(model=model, tools=[double], checkpointer=True))
        return (
            parent.invoke({"q": "first"}, config()),
            parent.invoke({"q": "second"}, config()),
            parent.invoke({"q": "third"}, config("other")),
        )

    got = compare_built(read, ["one", "two", "three"])
    assert [x["n"] for x in got] == [2, 4, 2]


def test_a_child_with_checkpointer_true_pauses_and_resumes_through_the_parent() -> None:
    def read(_name: str, maker: Any, model: Any) -> Any:
        parent = asking_parent(maker(model=model, tools=[ask_human], checkpointer=True))
        paused = parent.invoke({"q": "first"}, config())
        waiting = parent.get_state(config(), subgraphs=True).next
        done = parent.invoke(Command(resume="yes"), config())
        return [i.value for i in paused["__interrupt__"]], waiting, done

    assert compare_built(read, ASK_STEP)[2] == {"q": "first", "a": "done", "n": 4}


def test_a_child_with_checkpointer_true_as_a_node_across_parent_turns() -> None:
    def read(_name: str, maker: Any, model: Any) -> Any:
        parent = parent_of(maker(model=model, tools=[double], checkpointer=True))
        one = parent.invoke(QUESTION, config())
        two = parent.invoke({"messages": [("user", "more")]}, config())
        return seen(one["messages"]), seen(two["messages"])

    compare_built(read, ["one", "two"])


def _ns_rows(chunks: Any) -> list[Any]:
    """(namespace's node names, mode, what) per chunk, in create_agent's names; ours' own
    finish update and custom events left out (by design)."""
    rows = []
    for ns, mode, chunk in chunks:
        names = tuple(part.split(":")[0] for part in ns)
        if mode == "updates":
            keys = [node(k) for k in chunk if k != "finish"]
            if keys:
                rows.append((names, mode, keys))
        elif mode == "custom" and not (isinstance(chunk, dict) and "event" in chunk):
            rows.append((names, mode, chunk))
    return rows


@pytest.mark.parametrize("mode", MODES)
def test_an_approval_inside_a_parent_streams_and_resumes_the_same(mode: str) -> None:
    """Ours with its `approve` setting, create_agent with HITL, each as a parent's node."""
    script = [calls(tool_call("double", {"number": 2}, id="c1")), "done"]

    def read(name: str, maker: Any, model: Any) -> Any:
        extra = (
            APPROVALS["approve_setting"]([double]) if name == "ours" else {"middleware": [hitl()]}
        )
        parent = parent_of(maker(model=model, tools=[double], **extra))
        opts = {"stream_mode": ["updates", "custom"], "subgraphs": True}

        async def astream(payload: Any) -> list[Any]:
            return [c async for c in parent.astream(payload, config(), **opts)]

        def stream(payload: Any) -> list[Any]:
            if mode == "sync":
                return list(parent.stream(payload, config(), **opts))
            return asyncio.run(astream(payload))

        # create_agent's HITL node runs after every model reply, our review only to ask:
        # the approval node's own updates are left out, the pause is read from the state
        def rows(payload: Any) -> list[Any]:
            return [r for r in _ns_rows(stream(payload)) if r[2] != ["approval"]]

        first = rows(QUESTION)
        snap = parent.get_state(config(), subgraphs=True)
        inner = snap.tasks[0].state
        second = rows(APPROVE)
        return (
            first,
            snap.next,
            nexts(inner),
            [[r["args"] for r in i.value["action_requests"]] for i in inner.interrupts],
            second,
            seen(parent.get_state(config()).values["messages"]),
        )

    compare_built(read, script)


def test_the_agents_state_edited_through_the_parent_while_paused() -> None:
    def read(_name: str, maker: Any, model: Any) -> Any:
        parent = parent_of(maker(model=model, tools=[ask_human]))
        parent.invoke(QUESTION, config())
        inner = parent.get_state(config(), subgraphs=True).tasks[0].state
        parent.update_state(inner.config, {"messages": [HumanMessage("note")]})
        edited = parent.get_state(config(), subgraphs=True).tasks[0].state
        history_ = [tuple(node(n) for n in s.next) for s in parent.get_state_history(inner.config)]
        out = parent.invoke(Command(resume="yes"), config())
        return nexts(edited), seen(edited.values["messages"]), history_, seen(out["messages"])

    compare_built(read, ASK_STEP)


def test_a_parent_replayed_from_before_the_agent_runs_it_again() -> None:
    def read(_name: str, maker: Any, model: Any) -> Any:
        parent = parent_of(maker(model=model, tools=[rec]))
        parent.invoke(QUESTION, config())
        before = next(s for s in parent.get_state_history(config()) if s.next == ("agent",))
        ran.clear()
        out = parent.invoke(None, before.config)
        return seen(out["messages"]), ran, [s.next for s in parent.get_state_history(config())]

    compare_built(read, TOOL_STEP)


@tool
def progress_rt(x: int, runtime: ToolRuntime) -> str:
    """Report progress on the custom stream."""
    runtime.stream_writer({"progress": x})
    return "ok"


def test_subgraph_namespaces_of_updates_and_custom_writes() -> None:
    script = [calls(tool_call("progress_rt", {"x": 2}, id="c1")), "done"]

    def read(_name: str, maker: Any, model: Any) -> Any:
        parent = parent_of(maker(model=model, tools=[progress_rt]))
        chunks = list(
            parent.stream(QUESTION, config(), stream_mode=["updates", "custom"], subgraphs=True)
        )
        depth = {len(ns[0].split(":")) for ns, _, _ in chunks if ns}
        return _ns_rows(chunks), depth

    got = compare_built(read, script)
    assert (("agent",), "custom", {"progress": 2}) in got[0]


# -- 3. batches, events, stream modes, durability, limits, interrupt nodes -------------------


class ByContent(ReplyingChatModel):
    """Replies by the conversation, so threads run in any order: 'n' -> double(n), 'ask ...'
    -> ask_human, a tool result -> 'got <result>', else 'plain <text>'."""

    @property
    def _llm_type(self) -> str:
        return "by-content"

    def _reply(self, messages: list[BaseMessage], stop: Any, **kwargs: Any) -> ChatResult:
        last = messages[-1]
        text = str(last.content)
        if isinstance(last, ToolMessage):
            message = AIMessage(f"got {text}")
        elif text.startswith("ask"):
            message = calls(tool_call("ask_human", {"question": text}, id=f"a_{text}"))
        elif text.isdigit():
            message = calls(tool_call("double", {"number": int(text)}, id=f"c_{text}"))
        else:
            message = AIMessage(f"plain {text}")
        return ChatResult(generations=[ChatGeneration(message=message)])


def by_content(read: Callable[[str, Any], Any], tools: list, **kw: Any) -> Any:
    got = {name: read(name, make(name, ByContent(), tools, **kw)) for name in NAMES}
    assert got["ours"] == got["create_agent"]
    return got["ours"]


def q(text: str) -> dict[str, Any]:
    return {"messages": [("user", text)]}


@pytest.mark.parametrize("mode", MODES)
def test_a_batch_over_threads_with_an_interrupt_among_them(mode: str) -> None:
    inputs = [q("1"), q("2"), q("ask x"), q("hello")]
    configs = [config(str(i)) for i in range(4)]

    def read(_name: str, agent: Any) -> Any:
        if mode == "sync":
            outs = agent.batch(inputs, configs)
            resumed = agent.batch([Command(resume="yes")], [configs[2]])
        else:
            outs = asyncio.run(agent.abatch(inputs, configs, max_concurrency=2))
            resumed = asyncio.run(agent.abatch([Command(resume="yes")], [configs[2]]))
        return (
            [seen(o["messages"])[-1] for o in outs],
            ["__interrupt__" in o for o in outs],
            seen(resumed[0]["messages"])[-1],
        )

    assert by_content(read, [double, ask_human])[1] == [False, False, True, False]


def test_a_batch_of_resumes_and_batch_as_completed() -> None:
    def read(_name: str, agent: Any) -> Any:
        agent.batch([q("ask a"), q("ask b")], [config("a"), config("b")])
        resumed = agent.batch(
            [Command(resume="A"), Command(resume="B")], [config("a"), config("b")]
        )
        done = sorted(
            (i, seen(o["messages"])[-1])
            for i, o in agent.batch_as_completed([q("1"), q("5")], [config("c"), config("d")])
        )
        return [seen(o["messages"])[-1] for o in resumed], done

    by_content(read, [double, ask_human])


def test_a_batch_with_return_exceptions_keeps_the_other_threads() -> None:
    """A bare continue on a fresh thread is refused by both (EmptyInputError from LangGraph,
    NothingToResume from ours: its type is probe 2's by-design pin); the other thread runs."""

    def read(_name: str, agent: Any) -> Any:
        outs = agent.batch([q("1"), None], [config("a"), config("b")], return_exceptions=True)
        return seen(outs[0]["messages"])[-1], isinstance(outs[1], Exception)

    by_content(read, [double])


@pytest.mark.parametrize("call", ["invoke", "ainvoke", "stream", "batch", "sqlite"])
def test_a_checkpointed_agent_without_a_thread_id_says_what_is_missing(
    call: str, tmp_path: Path
) -> None:
    errors = {}
    for name in NAMES:
        with SqliteSaver.from_conn_string(str(tmp_path / f"{name}.db")) as sqlite:
            saver = sqlite if call == "sqlite" else "memory"
            agent = make(name, ByContent(), [double], checkpointer=saver)
            run = {
                "invoke": lambda a=agent: a.invoke(q("1")),
                "sqlite": lambda a=agent: a.invoke(q("1")),
                "ainvoke": lambda a=agent: asyncio.run(a.ainvoke(q("1"))),
                "stream": lambda a=agent: list(a.stream(q("1"))),
                "batch": lambda a=agent: a.batch([q("1")]),
            }[call]
            with pytest.raises(Exception) as info:
                run()
            errors[name] = info.value
    assert isinstance(errors["create_agent"], ValueError)
    assert isinstance(errors["ours"], ValueError), repr(errors["ours"])
    assert "thread_id" in str(errors["ours"]) and "configurable" in str(errors["ours"])


class Streaming(ScriptedChatModel):
    """The scripted model, streamed in chunks (a call in one chunk, an answer word by word)."""

    def _stream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> Iterator[ChatGenerationChunk]:
        message = self._reply(messages, stop, **kw).generations[0].message
        if message.tool_calls:
            parts = [
                {
                    "name": c["name"],
                    "args": json.dumps(c["args"]),
                    "id": c["id"],
                    "index": i,
                    "type": "tool_call_chunk",
                }
                for i, c in enumerate(message.tool_calls)
            ]
            yield ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=parts))
            return
        for word in str(message.content).split(" "):
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=word + " "))
            if run_manager:
                run_manager.on_llm_new_token(word + " ", chunk=chunk)
            yield chunk


def test_astream_events_v2_names_the_model_and_tool_events_the_same() -> None:
    script = [calls(tool_call("double", {"number": 2}, id="c1")), "four it is"]

    async def events(agent: Any) -> list[Any]:
        rows = []
        async for ev in agent.astream_events(QUESTION, config(), version="v2"):
            if ev["event"].startswith(("on_chat_model", "on_tool")):
                where = ev.get("metadata", {}).get("langgraph_node")
                rows.append((ev["event"], ev["name"], node(where)))
        return rows

    got = {}
    for name in NAMES:
        got[name] = asyncio.run(events(make(name, Streaming(list(script)), [double])))
    assert got["ours"] == got["create_agent"]
    assert {"on_chat_model_stream", "on_tool_start", "on_tool_end"} <= {r[0] for r in got["ours"]}


def test_astream_events_v2_carries_a_tools_custom_event() -> None:
    script = [calls(tool_call("evented", {"x": 3}, id="e1")), "sent it"]

    def read(_name: str, _model: Any, agent: Any) -> Any:
        async def events() -> list[Any]:
            rows = []
            async for ev in agent.astream_events(QUESTION, config(), version="v2"):
                if ev["event"] in ("on_custom_event", "on_tool_start", "on_tool_end"):
                    where = node(ev.get("metadata", {}).get("langgraph_node"))
                    rows.append(
                        (
                            ev["event"],
                            ev["name"],
                            ev["data"] if ev["event"] == "on_custom_event" else None,
                            where,
                        )
                    )
            return rows

        return asyncio.run(events())

    assert ("on_custom_event", "my_event", {"x": 3}, "act") in compare(read, script, [evented])


def test_astream_events_v2_across_an_interrupt_and_its_resume() -> None:
    def read(_name: str, _model: Any, agent: Any) -> Any:
        async def events() -> Any:
            rows = []
            async for ev in agent.astream_events(QUESTION, config(), version="v2"):
                if ev["event"] in ("on_tool_start", "on_tool_end", "on_tool_error"):
                    rows.append((ev["event"], ev["name"]))
                elif ev["event"] == "on_chain_stream" and not ev.get("parent_ids"):
                    rows.append((ev["event"], ev["name"], [node(k) for k in ev["data"]["chunk"]]))
            waiting = nexts(await agent.aget_state(config()))
            async for ev in agent.astream_events(Command(resume="ok"), config(), version="v2"):
                if ev["event"] == "on_tool_end":
                    rows.append((ev["event"], ev["name"], ev["data"]["output"].content))
            return rows, waiting

        return asyncio.run(events())

    got = compare(read, ASK_STEP, [ask_human], name="agent")  # create_agent's default name
    assert ("on_tool_end", "ask_human", "human said ok") in got[0]


def _mode_row(mode: str, chunk: Any) -> Any:
    if mode == "updates":
        keys = [node(k) for k in chunk if k != "finish"]
        return (mode, keys) if keys else None
    if mode == "messages":
        message, meta = chunk
        return (mode, type(message).__name__, message.text, node(meta["langgraph_node"]))
    if mode == "custom":
        return None if isinstance(chunk, dict) and "event" in chunk else (mode, chunk)
    return (mode, seen(chunk["messages"]))


def _without_finish_values(rows: list[Any]) -> list[Any]:
    """Our finish node adds one `values` chunk that repeats the last (by design)."""
    return [r for i, r in enumerate(rows) if not (i and r[0] == "values" and r == rows[i - 1])]


@pytest.mark.parametrize("mode", MODES)
def test_four_stream_modes_with_a_tool_runtime_writer(mode: str) -> None:
    script = [calls(tool_call("shout", {"x": 3}, id="s1")), "got loud"]
    modes = ["updates", "messages", "custom", "values"]

    def read(_name: str, _model: Any, agent: Any) -> Any:
        async def collect() -> list[Any]:
            return [c async for c in agent.astream(QUESTION, config(), stream_mode=modes)]

        chunks = (
            list(agent.stream(QUESTION, config(), stream_mode=modes))
            if mode == "sync"
            else asyncio.run(collect())
        )
        rows = [r for r in (_mode_row(m, c) for m, c in chunks) if r is not None]
        return _without_finish_values(rows)

    got = compare(read, script, [shout])
    assert ("custom", {"shout": 3}) in got


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("durability", ["exit", "async"])
def test_durability_then_reading_the_state(durability: str, mode: str) -> None:
    def read(_name: str, agent: Any) -> Any:
        out = go(mode, agent, q("3"), durability=durability)
        first = seen(agent.get_state(config()).values["messages"])
        paused = go(mode, agent, q("ask z"), durability=durability)
        waiting = nexts(agent.get_state(config()))
        done = go(mode, agent, Command(resume="fine"), durability=durability)
        head = agent.get_state(config())
        return (
            seen(out["messages"]),
            first,
            [i.value for i in paused["__interrupt__"]],
            waiting,
            seen(done["messages"]),
            seen(head.values["messages"]),
            head.next,
        )

    by_content(read, [double, ask_human])


def test_by_design_under_durability_exit_the_history_ends_in_an_empty_stub() -> None:
    """Probe 2 pins the extra checkpoint (LangGraph's delta stub, step -2, for the
    `messages` delta channel). Surprising beside it: a UI that offers "replay from here" on
    the oldest checkpoint gets LangGraph's EmptyInputError from ours, where create_agent's
    oldest (its only) checkpoint replays as the finished state. For the lead to decide."""
    got = {}
    for name in NAMES:
        agent = make(name, ByContent(), [double])
        agent.invoke(q("3"), config(), durability="exit")
        oldest = list(agent.get_state_history(config()))[-1]
        try:
            got[name] = seen(agent.invoke(None, oldest.config)["messages"])[-1]
        except EmptyInputError:
            got[name] = "EmptyInputError"
    assert got == {"create_agent": ("AIMessage", "got 6"), "ours": "EmptyInputError"}


def test_with_config_keeps_the_agent_and_its_checks() -> None:
    def read(name: str, agent: Any) -> Any:
        configured = agent.with_config(recursion_limit=200, tags=["mine"])
        out = configured.invoke(q("4"), config())
        refused = None
        try:
            configured.invoke(None, config("fresh"))
        except Exception as exc:  # both refuse a bare continue on a fresh thread
            refused = isinstance(exc, (EmptyInputError, ValueError))
        kind = type(configured) is type(agent)
        return seen(out["messages"]), refused, kind, configured.name == agent.name

    assert by_content(read, [double])[1:] == (True, True, True)


PARALLEL = [
    calls(tool_call("double", {"number": 1}, id="c1"), tool_call("double", {"number": 2}, id="c2")),
    "done",
]


@pytest.mark.parametrize("when", ["build", "invoke"])
@pytest.mark.parametrize(
    "where", [{"interrupt_before": ["tools"]}, {"interrupt_after": ["tools"]}], ids=str
)
def test_interrupt_nodes_with_parallel_calls_pause_and_continue_the_same(
    where: dict[str, list[str]], when: str
) -> None:
    def read(_name: str, maker: Any, model: Any) -> Any:
        agent = maker(
            model=model,
            tools=[double],
            checkpointer=InMemorySaver(),
            **(where if when == "build" else {}),
        )
        at_invoke = where if when == "invoke" else {}
        paused = agent.invoke(QUESTION, config(), **at_invoke)
        # after a step of several calls ours observes before the model (by design)
        waiting = [n if n != "observe" else "think" for n in nexts(agent.get_state(config()))]
        out = agent.invoke(None, config(), **at_invoke)
        return (
            seen(paused["messages"]),
            waiting,
            seen(out["messages"]),
            agent.get_state(config()).next,
        )

    compare_built(read, PARALLEL)


def test_by_design_interrupt_after_model_pauses_once_more_before_finish() -> None:
    """The final answer is followed by `finish` (ours only), so `interrupt_after=["model"]`
    pauses after it too: three calls to end the run where create_agent needs two."""
    got = {}
    for name in NAMES:
        agent = make(name, ScriptedChatModel(list(PARALLEL)), [double], interrupt_after=["model"])
        agent.invoke(QUESTION, config())
        agent.invoke(None, config())
        got[name] = nexts(agent.get_state(config()))
    assert got == {"create_agent": [], "ours": ["finish"]}


# -- 4. commands as input, the drawing, the name, the savers ---------------------------------


COMMANDS: dict[str, tuple[dict[str, Any], Callable[[str], Command]]] = {
    "update_on_a_fresh_thread": (
        {"fresh": True},
        lambda _name: Command(update={"messages": [HumanMessage("via update")]}),
    ),
    "update_on_a_finished_thread": (
        {},
        lambda _name: Command(update={"messages": [HumanMessage("via update")]}),
    ),
    "update_while_paused_before_the_tools": (
        {"interrupt_before": ["tools"]},
        lambda _name: Command(update={"messages": [HumanMessage("a note")]}),
    ),
    "goto_the_model_node_by_its_own_name": (
        {},
        lambda name: Command(goto=model_node(name), update={"messages": [HumanMessage("go on")]}),
    ),
    "goto_end_while_paused": ({"interrupt_before": ["tools"]}, lambda _name: Command(goto=END)),
}


@pytest.mark.parametrize("case", sorted(COMMANDS))
def test_a_command_as_input_runs_the_same(case: str) -> None:
    options, command = COMMANDS[case]
    options = dict(options)
    fresh = options.pop("fresh", False)

    def read(name: str, model: ScriptedChatModel, agent: Any) -> Any:
        if not fresh:
            agent.invoke(QUESTION, config())
        out = agent.invoke(command(name), config())
        return seen(out["messages"]), nexts(agent.get_state(config())), ran, len(model.requests)

    compare(read, TOOL_STEP, [rec], **options)


@pytest.mark.parametrize("mode", MODES)
def test_command_goto_create_agents_model_name_asks_the_model(mode: str) -> None:
    def read(_name: str, model: ScriptedChatModel, agent: Any) -> Any:
        go(mode, agent, QUESTION)
        out = go(mode, agent, Command(goto="model", update={"messages": [HumanMessage("go on")]}))
        return seen(out["messages"])[-2:], len(model.requests)

    got = compare(read, ["one", "two"], [rec])
    assert got == ([("HumanMessage", "go on"), ("AIMessage", "two")], 2)


def test_the_drawing_and_the_name() -> None:
    def read(_name: str, maker: Any, model: Any) -> Any:
        agent = maker(model=model, tools=[double], name="kid")
        drawn = agent.get_graph().draw_mermaid()
        deep = agent.get_graph(xray=True).draw_mermaid()
        inside = parent_of(agent).get_graph(xray=True).draw_mermaid()
        return (
            agent.name,
            drawn.startswith("---"),
            "__start__" in drawn,
            bool(deep),
            "agent" in inside,
        )

    assert compare_built(read, ["x"]) == ("kid", True, True, True, True)
    assert (
        "think"
        in build_graph(model=ScriptedChatModel(["x"]), tools=[double]).get_graph().draw_mermaid()
    )


def test_by_design_the_default_name() -> None:
    """build_graph(name="react-agent"): the root of astream_events and LangSmith runs reads
    react-agent where create_agent's reads LangGraph."""
    names = {name: make(name, ScriptedChatModel(["x"]), [double]).name for name in NAMES}
    assert names == {"create_agent": "LangGraph", "ours": "react-agent"}


def _journey(name: str, agent: Any, model: ScriptedChatModel) -> Any:
    paused = agent.invoke(QUESTION, config())
    waiting = nexts(agent.get_state(config()))
    done = agent.invoke(Command(resume="yes"), config())
    every = list(agent.get_state_history(config()))
    replayed = agent.invoke(None, before_tools(name, agent).config)
    step_ = before_tools(name, agent).values["messages"][-1]
    edited = AIMessage(
        "", id=step_.id, tool_calls=[tool_call("ask_human", {"question": "no?"}, id="c1")]
    )
    forked = agent.update_state(
        before_tools(name, agent).config, {"messages": [edited]}, as_node="model"
    )
    asked = agent.invoke(None, forked)["__interrupt__"][0].value
    final_ = agent.invoke(Command(resume="no"), config())
    return (
        [i.value for i in paused["__interrupt__"]],
        waiting,
        seen(done["messages"]),
        [
            (tuple(node(n) for n in s.next), s.metadata.get("source"))
            for s in every
            if "finish" not in s.next
        ],
        "__interrupt__" in replayed,
        asked,
        seen(final_["messages"]),
        len(model.requests),
    )


def test_sqlite_and_memory_savers_read_the_same(tmp_path: Path) -> None:
    got = {}
    for name in NAMES:
        for saver in ("memory", "sqlite"):
            model = ScriptedChatModel(list(ASK_STEP))
            with SqliteSaver.from_conn_string(str(tmp_path / f"{name}.db")) as sqlite:
                agent = make(
                    name, model, [ask_human], checkpointer=sqlite if saver == "sqlite" else "memory"
                )
                got[name, saver] = _journey(name, agent, model)
    assert got["ours", "sqlite"] == got["ours", "memory"]
    assert got["create_agent", "sqlite"] == got["create_agent", "memory"]
    assert got["ours", "sqlite"] == got["create_agent", "sqlite"]
