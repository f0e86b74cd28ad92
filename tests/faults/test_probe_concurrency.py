"""A probe of the compiled graph driven from code under concurrency and cancellation.

Covered (both protocols where cheap; sync and async entry points):

- many runs at once: `asyncio.gather` of 20-30 `ainvoke`s on distinct threads with
  InMemorySaver, AsyncSqliteSaver and AsyncPostgresSaver (skipped without PostgreSQL), a thread
  pool of sync `invoke`s (InMemorySaver, SqliteSaver), runs on one thread at once, one compiled
  graph used from several event loops at once: every answer, trace, usage total and tool
  execution is its run's own;
- cancellation (`Task.cancel()`, `asyncio.wait_for`) while the model call, a sync tool or an
  async tool is in flight, then a resume or a new question on the same thread: the thread is
  valid (every call has one result, no duplicate ids), a call cut short is said to be cut
  short or runs again marked `react_rerun`, the next turn answers, no task or worker thread is
  left behind; a cancel at many points of a run (all three savers); an async tool that
  swallows its cancellation; a sync-only model whose call is abandoned (its late reply is never
  written);
- approvals: two resumes of one pause at once (batched and per_call, three stores, async and
  from two threads) run the call once; a cancelled approved resume asks again;
- streams abandoned after the first event (`aclose`, a sync generator's `close`), then the
  thread continues.

Not repeated: tool deadlines and a tool swallowing the deadline's cancellation, a sync-only
model past model_timeout (tests/faults/test_probe_tool_deadlines.py), worker-thread forms of
tools (tests/unit/test_tool_threads.py), thread locks (tests/faults/test_locks.py), approvals
spent by forks and replays (tests/security/test_approval_once.py), kill -9 and Ctrl-C of the
command (tests/integration/test_persistence.py).

Defects found (strict xfails, each checked to fail on its own assertion with --runxfail), now
fixed and ordinary tests:

- an `astream` closed after its first `updates` event, then a new question on the same thread
  (InMemorySaver): the abandoned run's step landed in the store after the new run started, and
  the stored thread then differed from what that run returned: it held the abandoned step's
  tool call with no result (and a new id for the question). `AgentGraph.astream` iterated
  LangGraph's stream without closing it when it was closed itself, so LangGraph's run ended
  later, from the event loop's generator finalizer; it now closes it (`aclosing`), as
  `yield from` does for the sync stream.

What held: no cross-talk between concurrent runs on any saver or entry point, nothing lost,
each tool ran once; several event loops on one graph; cancellation at any point leaves a
valid thread on all three savers; a cancelled sync tool runs again on a resume marked as a
re-run, and a new question says it was cut short; a cancelled call of an async tool likewise;
an async tool that swallows its cancellation holds the cancel until it ends, as under
`create_agent` (whose thread keeps the call without any result, where ours answers it); a
sync-only model's abandoned reply is never stored; two resumes at once run an approved call
once (one answers, the other asks again), as docs/approvals-and-clients.md promises; a
cancelled approved call asks again on resume; runs on one thread at once keep the last writer's
conversation, valid, as `create_agent` does (one run per thread is the caller's discipline:
docs/checkpoints.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pydantic import Field

from graph import build_graph
from tests.support import money_tools
from tests.support.concurrency_model import ConversationModel, Counted, until

pytestmark = [
    pytest.mark.filterwarnings("ignore:The v3 streaming protocol"),
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings"),
]

PROTOCOLS = ["native", "text"]
# read at import, before the suite's clean_env removes REACT_AGENT_* variables
POSTGRES_URL = (
    os.environ.get("REACT_AGENT_TEST_POSTGRES", "").strip()
    or "postgresql://postgres@127.0.0.1:5432/test"
)
SAVERS = ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
HOLD = 10.0  # how long a blocked tool would wait if its gate were never opened


# -- helpers ---------------------------------------------------------------------------------


def cfg(thread: str | None = None) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread or f"t-{uuid.uuid4().hex}"}}


def ask(text: str) -> dict[str, Any]:
    return {"messages": [("user", text)]}


def counting_tools(counted: Counted) -> dict[str, BaseTool]:
    @tool
    async def echo(text: str) -> str:
        """Repeat the text back (async)."""
        counted.add(text)
        await asyncio.sleep(0.002 * (len(text) % 5))  # interleave the runs
        return f"echo: {text}"

    @tool("echo")
    def secho(text: str) -> str:
        """Repeat the text back (sync)."""
        counted.add(text)
        time.sleep(0.001 * (len(text) % 5))
        return f"echo: {text}"

    return {"async": echo, "sync": secho}


def agent(protocol: str, tools: list[BaseTool], saver: Any = None, **kw: Any) -> Any:
    model = ConversationModel(protocol=protocol, tool=tools[0].name)
    return build_graph(
        model=model,
        tools=tools,
        protocol=protocol,
        checkpointer=saver if saver is not None else InMemorySaver(),
        **kw,
    )


def problems(messages: list[BaseMessage]) -> list[str]:
    """What makes a stored conversation invalid: a duplicate id, a call without exactly one
    result, a result for no call."""
    found = []
    ids = Counter(x.id for x in messages)
    found += [f"duplicate id {i}" for i, n in ids.items() if n > 1]
    calls = [c["id"] for x in messages if isinstance(x, AIMessage) for c in x.tool_calls]
    results = Counter(x.tool_call_id for x in messages if isinstance(x, ToolMessage))
    found += [f"call {c} has {results[c]} results" for c in calls if results[c] != 1]
    found += [f"result for no call {r}" for r in results if r not in calls]
    return found


def own(out: dict[str, Any], n: int) -> None:
    """The run asked `q<n>` and got its own answer, trace and usage."""
    q = f"q{n}"
    assert out["status"] == "answered", out.get("error")
    assert out["answer"] == f"answer {q} echo: {q}"
    tools = [(s["tool"], s["tool_input"], s["observation"]) for s in out["steps"] if s["tool"]]
    assert tools == [("echo", {"text": q}, f"echo: {q}")]
    assert out["usage"] == {"input_tokens": 2 * n, "output_tokens": 2, "total_tokens": 2 * n + 2}
    assert [x.text for x in out["messages"] if x.type == "human"] == [q]
    assert problems(out["messages"]) == []


@contextlib.asynccontextmanager
async def async_saver(kind: str, folder: Path) -> AsyncIterator[Any]:
    if kind == "memory":
        yield InMemorySaver()
    elif kind == "sqlite":
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with AsyncSqliteSaver.from_conn_string(str(folder / "c.sqlite")) as saver:
            yield saver
    else:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        async with AsyncPostgresSaver.from_conn_string(POSTGRES_URL) as saver:
            await saver.setup()
            yield saver


@contextlib.contextmanager
def sync_saver(kind: str, folder: Path) -> Iterator[Any]:
    if kind == "memory":
        yield InMemorySaver()
    else:
        from langgraph.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(str(folder / "s.sqlite")) as saver:
            yield saver


def others() -> set[asyncio.Task[Any]]:
    current = asyncio.current_task()
    return {t for t in asyncio.all_tasks() if t is not current}


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """What a blocked tool waits for; opened when the test ends, so no thread outlives it."""
    event = threading.Event()
    yield event
    event.set()


# -- many runs at once -----------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("saver_kind", SAVERS)
async def test_many_async_runs_on_distinct_threads_each_get_their_own_answer(
    saver_kind: str, protocol: str, tmp_path: Path
) -> None:
    counted = Counted()
    n = 20 if saver_kind == "postgres" else 30
    async with async_saver(saver_kind, tmp_path) as saver:
        graph = agent(protocol, [counting_tools(counted)["async"]], saver)
        configs = [cfg() for _ in range(n)]
        outs = await asyncio.gather(
            *(graph.ainvoke(ask(f"q{i}"), c) for i, c in zip(range(1, n + 1), configs, strict=True))
        )
        for i, (out, c) in enumerate(zip(outs, configs, strict=True), start=1):
            own(out, i)
            stored = (await graph.aget_state(c)).values
            assert [x.id for x in stored["messages"]] == [x.id for x in out["messages"]]
    assert counted.counts == Counter({f"q{i}": 1 for i in range(1, n + 1)})


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("saver_kind", ["memory", "sqlite"])
def test_a_thread_pool_of_sync_invokes_each_get_their_own_answer(
    saver_kind: str, protocol: str, tmp_path: Path
) -> None:
    counted = Counted()
    n = 24
    with sync_saver(saver_kind, tmp_path) as saver:
        graph = agent(protocol, [counting_tools(counted)["sync"]], saver)
        configs = [cfg() for _ in range(n)]
        with ThreadPoolExecutor(8) as pool:
            outs = list(
                pool.map(
                    lambda i: graph.invoke(ask(f"q{i}"), configs[i - 1]),
                    range(1, n + 1),
                )
            )
        for i, out in enumerate(outs, start=1):
            own(out, i)
            stored = graph.get_state(configs[i - 1]).values
            assert [x.id for x in stored["messages"]] == [x.id for x in out["messages"]]
    assert counted.counts == Counter({f"q{i}": 1 for i in range(1, n + 1)})


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_one_compiled_graph_from_several_event_loops_at_once(protocol: str) -> None:
    counted = Counted()
    graph = agent(protocol, [counting_tools(counted)["async"]])

    def loop(k: int) -> list[dict[str, Any]]:
        async def runs() -> list[dict[str, Any]]:
            questions = [ask(f"q{k * 10 + i}") for i in range(1, 6)]
            return await asyncio.gather(*(graph.ainvoke(q, cfg()) for q in questions))

        return asyncio.run(runs())

    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(loop, range(6)))
    for k, outs in enumerate(results):
        for i, out in enumerate(outs, start=1):
            own(out, k * 10 + i)
    assert counted.counts == Counter({f"q{k * 10 + i}": 1 for k in range(6) for i in range(1, 6)})


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_runs_on_one_thread_at_once_leave_one_valid_conversation_as_create_agent_does(
    protocol: str,
) -> None:
    """LangGraph runs every one of them from the head it read at its start, so the thread
    keeps the conversation of the run that wrote last (the others' questions are not in it),
    under `create_agent` too: one run per thread is the caller's discipline
    (docs/checkpoints.md, `thread_lock`). What must hold: each run answers its own question,
    each tool runs once, the thread is one valid conversation and takes the next question."""
    counted = Counted()
    echo = counting_tools(counted)["async"]
    ours = agent(protocol, [echo])
    model = ConversationModel(protocol="native")
    theirs = create_agent(model, [echo], checkpointer=InMemorySaver())
    for graph in (ours, theirs):
        counted.counts.clear()
        c = cfg()
        outs = await asyncio.gather(*(graph.ainvoke(ask(f"q{i}"), c) for i in range(1, 21)))
        assert [o["messages"][-1].text for o in outs] == [
            f"answer q{i} echo: q{i}" for i in range(1, 21)
        ]
        assert counted.counts == Counter({f"q{i}": 1 for i in range(1, 21)})
        head = (await graph.aget_state(c)).values["messages"]
        assert problems(head) == []
        assert len([x for x in head if x.type == "human"]) == 1  # the last writer's
        after = await graph.ainvoke(ask("q99"), c)
        assert after["messages"][-1].text == "answer q99 echo: q99"
        assert problems(after["messages"]) == []


# -- cancellation ----------------------------------------------------------------------------


class HeldModel(ConversationModel):
    """A ConversationModel whose async call waits on an event (set: reply) when `held`."""

    held: bool = True

    async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any):
        if self.held:
            STARTED.set()
            await asyncio.sleep(HOLD)
        return self._reply(messages, stop, **kw)


STARTED = threading.Event()


def blocking_tools(gate: threading.Event, log: list[str]) -> dict[str, BaseTool]:
    @tool("work")
    def sync_work(text: str) -> str:
        """A sync tool that waits for its gate."""
        log.append(f"start {text}")
        if text == "q1":
            gate.wait(HOLD)
        log.append(f"end {text}")
        return f"worked {text}"

    @tool("work")
    async def async_work(text: str) -> str:
        """An async tool that waits for its gate."""
        log.append(f"start {text}")
        try:
            if text == "q1":
                while not gate.is_set():
                    await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            log.append(f"cancelled {text}")
            raise
        log.append(f"end {text}")
        return f"worked {text}"

    return {"sync_tool": sync_work, "async_tool": async_work}


@pytest.mark.parametrize("then", ["resume", "question"])
@pytest.mark.parametrize("where", ["model", "sync_tool", "async_tool"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_cancelled_run_leaves_a_valid_thread_that_goes_on(
    protocol: str, where: str, then: str, gate: threading.Event
) -> None:
    log: list[str] = []
    work = blocking_tools(gate, log)["async_tool" if where == "model" else where]
    model = HeldModel(protocol=protocol, tool="work", held=False)
    graph = build_graph(model=model, tools=[work], protocol=protocol, checkpointer=InMemorySaver())
    await graph.ainvoke(ask("q0"), cfg())  # warm up: the workers a run needs exist
    threads, tasks = threading.active_count(), others()
    c = cfg()

    STARTED.clear()
    model.held = where == "model"
    run = asyncio.create_task(graph.ainvoke(ask("q1"), c))
    if where == "model":
        await until(STARTED.is_set, what="the model call")
    else:
        await until(lambda: "start q1" in log, what="the tool")
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    gate.set()  # a sync tool's worker goes on to its end, alone
    model.held = False
    if where == "sync_tool":
        await until(lambda: "end q1" in log, what="the abandoned sync call to end")
    before = (await graph.aget_state(c)).values["messages"]
    assert problems([x for x in before if not isinstance(x, AIMessage) or not x.tool_calls]) == []

    if then == "resume":
        out = await graph.ainvoke(None, c)
        assert out["status"] == "answered"
        assert out["answer"] == "answer q1 worked q1"
        result = [x for x in out["messages"] if isinstance(x, ToolMessage)]
        assert [x.text for x in result] == ["worked q1"]
        if where != "model":  # the call started before and never finished: marked
            assert result[0].response_metadata.get("react_rerun") == 1
            assert log.count("start q1") == 2
        else:
            assert log.count("start q1") == 1
    else:
        out = await graph.ainvoke(ask("q2"), c)
        assert out["answer"] == "answer q2 worked q2"
        texts = [x.text for x in out["messages"] if isinstance(x, ToolMessage)]
        if where == "model":
            assert texts == ["worked q2"]
        else:
            assert len(texts) == 2 and texts[1] == "worked q2"
            assert texts[0].startswith("The call to work was cut short: it started")
        assert log.count("start q1") == (0 if where == "model" else 1)
    assert problems(out["messages"]) == []
    stored = (await graph.aget_state(c)).values["messages"]
    assert [x.id for x in stored] == [x.id for x in out["messages"]]
    if where == "async_tool":
        assert "cancelled q1" in log
    await until(lambda: others() <= tasks, what="the run's tasks to end")
    await until(lambda: threading.active_count() <= threads, what="worker threads to go idle")


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("saver_kind", SAVERS)
async def test_a_cancel_at_any_point_of_a_run_leaves_a_thread_the_next_question_answers(
    saver_kind: str, protocol: str, tmp_path: Path
) -> None:
    counted = Counted()
    async with async_saver(saver_kind, tmp_path) as saver:
        graph = agent(protocol, [counting_tools(counted)["async"]], saver)
        for hops in (0, 1, 2, 3, 5, 8, 13, 21, 34, 55):
            c = cfg()
            run = asyncio.create_task(graph.ainvoke(ask("q1"), c))
            for _ in range(hops):  # cut the run at a different point each time
                await asyncio.sleep(0)
            run.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await run
            out = await graph.ainvoke(ask("q2"), c)
            assert out["answer"] == "answer q2 echo: q2", hops
            stored = (await graph.aget_state(c)).values["messages"]
            assert problems(stored) == [], hops
            assert [x.id for x in stored] == [x.id for x in out["messages"]], hops
    assert counted.counts["q2"] == 10
    assert counted.counts["q1"] <= 10


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_wait_for_around_astream_while_a_tool_runs_then_the_thread_resumes(
    protocol: str, gate: threading.Event
) -> None:
    log: list[str] = []
    graph = agent(protocol, [blocking_tools(gate, log)["async_tool"]])
    c = cfg()

    async def consume() -> None:
        async for _ in graph.astream(ask("q1"), c, stream_mode=["updates", "custom"]):
            pass

    with pytest.raises(TimeoutError):
        await asyncio.wait_for(consume(), 0.5)
    assert log == ["start q1", "cancelled q1"]
    gate.set()
    out = await graph.ainvoke(None, c)
    assert out["answer"] == "answer q1 worked q1"
    assert problems(out["messages"]) == []


async def test_an_async_tool_swallowing_its_cancellation_holds_the_cancel_as_in_create_agent(
    gate: threading.Event,
) -> None:
    """A coroutine that ignores `cancel()` is waited for, here and under `create_agent`: the
    cancelled `ainvoke` raises CancelledError once the tool returns, and its result is not
    stored. The next question then says the call was cut short (`create_agent` leaves the call
    with no result at all)."""
    log: list[str] = []

    @tool
    async def stubborn(text: str) -> str:
        """Ignores cancellation until its gate opens."""
        log.append("start")
        while not gate.is_set():
            try:
                await asyncio.sleep(0.01)
            except asyncio.CancelledError:
                log.append("swallowed")
        log.append("end")
        return "stubborn done"

    graph = agent("native", [stubborn])
    c = cfg()
    run = asyncio.create_task(graph.ainvoke(ask("q1"), c))
    await until(lambda: "start" in log, what="the tool")
    run.cancel()
    await until(lambda: "swallowed" in log, what="the cancellation to reach the tool")
    assert not run.done()  # held by the tool, as under create_agent
    gate.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(run, 10)
    out = await graph.ainvoke(ask("q2"), c)
    assert out["answer"] == "answer q2 stubborn done"
    texts = [x.text for x in out["messages"] if isinstance(x, ToolMessage)]
    assert texts[0].startswith("The call to stubborn was cut short")
    assert problems(out["messages"]) == []


class SyncOnlyModel(BaseChatModel):
    """A chat model with only `_generate` (LangChain runs it on the loop's executor)."""

    hold: float = 0.0
    started: list[str] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "sync-only"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any):
        self.started.append("start")
        deadline = time.monotonic() + self.hold
        while time.monotonic() < deadline and not RELEASE.is_set():
            time.sleep(0.01)
        self.started.append("end")
        text = "late reply" if self.hold else "on time"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


RELEASE = threading.Event()


async def test_a_cancelled_sync_only_model_call_never_writes_its_late_reply() -> None:
    RELEASE.clear()
    model = SyncOnlyModel(hold=HOLD, started=[])
    graph = build_graph(model=model, tools=[], checkpointer=InMemorySaver())
    c = cfg()
    run = asyncio.create_task(graph.ainvoke(ask("q1"), c))
    await until(lambda: model.started == ["start"], what="the model call")
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(run, 10)
    RELEASE.set()
    await until(lambda: model.started == ["start", "end"], what="the abandoned call to end")
    await asyncio.sleep(0.05)
    stored = (await graph.aget_state(c)).values["messages"]
    assert [x.text for x in stored] == ["q1"]
    model.hold = 0.0
    out = await graph.ainvoke(ask("q2"), c)
    assert (out["status"], out["answer"]) == ("answered", "on time")
    assert "late reply" not in [x.text for x in out["messages"]]


# -- approvals under concurrency -------------------------------------------------------------


@pytest.mark.parametrize("mode", ["batched", "per_call"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(
    "store_kind", ["file", "memory", pytest.param("postgres", marks=pytest.mark.postgres)]
)
async def test_two_resumes_of_one_pause_at_once_run_the_approved_call_once(
    store_kind: str, protocol: str, mode: str
) -> None:
    money_tools.ran.clear()
    async with contextlib.AsyncExitStack() as stack:
        store = None
        if store_kind == "memory":
            from langgraph.store.memory import InMemoryStore

            store = InMemoryStore()
        elif store_kind == "postgres":
            from langgraph.store.postgres.aio import AsyncPostgresStore

            store = await stack.enter_async_context(
                AsyncPostgresStore.from_conn_string(POSTGRES_URL)
            )
            await store.setup()
        tools = [money_tools.transfer, money_tools.clock]
        graph = agent(protocol, tools, InMemorySaver(), store=store, approval_mode=mode)
        c = cfg()
        paused = await graph.ainvoke(ask("bob"), c, context={"approve": ["transfer"]})
        assert paused.get("__interrupt__")
        if mode == "per_call":  # LangChain's per-call form: one decision per interrupt id
            approve = Command(resume={i.id: {"type": "approve"} for i in paused["__interrupt__"]})
        else:
            approve = Command(resume={"decisions": [{"type": "approve"}]})
        outs = await asyncio.gather(graph.ainvoke(approve, c), graph.ainvoke(approve, c))
    assert money_tools.ran == ["transfer:bob"]
    answered = [o for o in outs if o.get("status") == "answered"]
    asked = [o for o in outs if o.get("__interrupt__")]
    assert len(answered) == 1 and len(asked) == 1, outs
    assert answered[0]["answer"] == "answer bob transferred to bob"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_two_sync_resumes_of_one_pause_from_two_threads_run_the_call_once(protocol: str) -> None:
    money_tools.ran.clear()
    graph = agent(protocol, [money_tools.transfer, money_tools.clock])
    c = cfg()
    paused = graph.invoke(ask("bob"), c, context={"approve": ["transfer"]})
    assert paused.get("__interrupt__")
    approve = Command(resume={"decisions": [{"type": "approve"}]})
    barrier = threading.Barrier(2)

    def resume(_: int) -> dict[str, Any]:
        barrier.wait(10)
        return graph.invoke(approve, c)

    with ThreadPoolExecutor(2) as pool:
        outs = list(pool.map(resume, range(2)))
    assert money_tools.ran == ["transfer:bob"]
    assert sorted(bool(o.get("__interrupt__")) for o in outs) == [False, True]


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_cancelled_approved_call_asks_again_on_resume(
    protocol: str, gate: threading.Event
) -> None:
    """docs/approvals-and-clients.md: a call that needs approval and was cut short asks again
    instead of running on its spent decision."""
    log: list[str] = []
    work = blocking_tools(gate, log)["async_tool"]
    graph = agent(protocol, [work])
    c = cfg()
    paused = await graph.ainvoke(ask("q1"), c, context={"approve": ["work"]})
    assert paused.get("__interrupt__")
    approve = Command(resume={"decisions": [{"type": "approve"}]})
    run = asyncio.create_task(graph.ainvoke(approve, c))
    await until(lambda: "start q1" in log, what="the approved call")
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    gate.set()
    again = await graph.ainvoke(None, c)
    assert again.get("__interrupt__"), "the cut-short call ran again on its spent decision"
    assert log.count("start q1") == 1
    out = await graph.ainvoke(approve, c)
    assert out["answer"] == "answer q1 worked q1"
    assert log.count("start q1") == 2
    assert problems(out["messages"]) == []


# -- abandoned streams -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["updates", "messages", "values", "custom"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_an_astream_closed_after_its_first_event_then_a_resume_finishes_the_run(
    protocol: str, mode: str
) -> None:
    counted = Counted()
    graph = agent(protocol, [counting_tools(counted)["async"]])
    c = cfg()
    tasks = others()
    stream = graph.astream(ask("q1"), c, stream_mode=mode)
    async for _ in stream:
        break
    await stream.aclose()
    await until(lambda: others() <= tasks, what="the stream's tasks to end")
    out = await graph.ainvoke(None, c)
    own(out, 1)
    assert counted.counts == Counter({"q1": 1})
    after = await graph.ainvoke(ask("q2"), c)
    assert after["answer"] == "answer q2 echo: q2"
    assert problems(after["messages"]) == []


@pytest.mark.parametrize("mode", ["updates", "messages"])
def test_a_sync_stream_closed_after_its_first_event_then_the_thread_goes_on(mode: str) -> None:
    counted = Counted()
    graph = agent("native", [counting_tools(counted)["sync"]])
    c = cfg()
    stream = graph.stream(ask("q1"), c, stream_mode=mode)
    for _ in stream:
        break
    stream.close()
    own(graph.invoke(None, c), 1)
    after = graph.invoke(ask("q2"), c)
    assert after["answer"] == "answer q2 echo: q2"
    assert problems(graph.get_state(c).values["messages"]) == []
    assert counted.counts == Counter({"q1": 1, "q2": 1})


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_an_astream_closed_after_its_first_update_then_a_new_question_stores_what_it_ran(
    protocol: str,
) -> None:
    """The caller closed the stream after the model's step was streamed to it, then asked
    again at once. Whatever the new run takes the thread's head to be, the stored thread must
    be the conversation it returned, with every call answered (a call that never ran is
    answered as not run, as at any new turn)."""
    counted = Counted()
    graph = agent(protocol, [counting_tools(counted)["async"]])
    c = cfg()
    stream = graph.astream(ask("q1"), c, stream_mode="updates")
    async for _ in stream:
        break
    await stream.aclose()
    out = await graph.ainvoke(ask("q2"), c)
    assert out["answer"] == "answer q2 echo: q2"
    await asyncio.sleep(0.1)  # anything of the abandoned run has landed by now
    stored = (await graph.aget_state(c)).values["messages"]
    assert (problems(stored), [x.id for x in stored]) == ([], [x.id for x in out["messages"]])
