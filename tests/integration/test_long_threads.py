"""Long threads: `history` streams its rows without rebuilding any full state, and says what
the full-state reading says, on every shape of thread (turns, parallel calls, approval pauses,
forks, state updates), on SQLite (threads written by the sync saver, read by the async one) and
in memory.

The full-state reading (`get_state_history` and `tests.support.history_oracle`) is the
reference: it is slow (quadratic) but plainly right. Memory is checked by growing a thread
fourfold: the streamed reading's peak stays flat while the full-state one grows.
"""

from __future__ import annotations

import asyncio
import functools
import tracemalloc
import uuid
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.types import Command

from graph import build_graph
from graph.persistence.delta_extend import aextend
from graph.persistence.forks import edited_update
from graph.persistence.savers import open_async_saver, open_saver
from graph.persistence.timeline import PAGE, aiter_history
from tests.support.cli import POSTGRES_URL
from tests.support.history_oracle import history_rows
from tests.support.scripted_model import ScriptedChatModel, calls, tool_call

pytestmark = pytest.mark.integration


@tool
def publish(text: str) -> str:
    """Publish a text."""
    return f"published {text}"


@tool
def lookup(term: str) -> str:
    """Look a term up."""
    return f"found {term} " + "x" * 400


def config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def agent_on(saver: Any, script: list[Any]) -> Any:
    model = ScriptedChatModel(script)
    return build_graph(
        model=model,
        tools=[publish, lookup],
        protocol="native",
        checkpointer=saver,
        approve=["publish"],
    )


SHAPES = [
    "one lookup, then an answer",
    "two lookups at once",
    "a paused publish, approved",
    "a paused publish, rejected",
]


def script_for_turns(turns: int) -> list[Any]:
    script: list[Any] = []
    for turn in range(turns):
        script += [calls(tool_call("lookup", {"term": f"t{turn}"}, id=f"c{turn}")), f"a{turn}"]
    return script


def build_thread(saver: Any, thread: str) -> Any:
    """A thread with every shape: turns, parallel calls, pauses answered both ways, a fork
    with an edited input, a state update, and a pause still waiting."""
    script = [
        calls(tool_call("lookup", {"term": "a"}, id="l1")),
        "First answer.",
        calls(
            tool_call("lookup", {"term": "b"}, id="l2"), tool_call("lookup", {"term": "c"}, id="l3")
        ),
        "Second answer.",
        calls(tool_call("publish", {"text": "hi"}, id="p1")),
        "Published.",
        calls(tool_call("publish", {"text": "no"}, id="p2")),
        "Not published.",
        "After the fork.",
        calls(tool_call("publish", {"text": "later"}, id="p3")),
    ]
    agent = agent_on(saver, script)
    cfg = config(thread)
    agent.invoke({"messages": [("user", "look a up")]}, cfg)
    agent.invoke({"messages": [("user", "look b and c up")]}, cfg)
    agent.invoke({"messages": [("user", "publish hi")]}, cfg)
    agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg)
    agent.invoke({"messages": [("user", "publish no")]}, cfg)
    agent.invoke(Command(resume={"decisions": [{"type": "reject", "message": "not now"}]}), cfg)
    paused = next(s for s in agent.get_state_history(cfg) if "review" in s.next)
    at = {"configurable": {"checkpoint_ns": "", **paused.config["configurable"]}}
    forked = agent.update_state(
        at, edited_update(paused.values, {"text": "edited"}), as_node="think"
    )  # what `fork_with_input` writes, through the sync API
    agent.invoke(None, forked)  # asked again, about the edited call
    agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), forked)
    agent.update_state(cfg, {"status": "error", "error": "set by hand"})
    agent.invoke({"messages": [("user", "publish later")]}, cfg)  # left waiting
    return agent


def reference(agent: Any, thread: str) -> list[Any]:
    return history_rows(list(agent.get_state_history(config(thread))))


def streamed(agent: Any, thread: str, url: str | None = None) -> list[Any]:
    """The rows `react-agent history` streams (`aiter_history`): through the agent's own saver
    (memory reads both ways) or, with `url`, through an async saver on that store."""

    async def read() -> list[Any]:
        if url is None:
            return [row async for row in aiter_history(agent, thread)]
        async with open_async_saver(url) as saver:
            return [row async for row in aiter_history(agent, thread, saver=saver)]

    return asyncio.run(read())


def test_streamed_rows_match_the_full_state_reading_in_memory() -> None:
    agent = build_thread(InMemorySaver(), "shapes")
    expected = reference(agent, "shapes")
    got = streamed(agent, "shapes")
    assert [r.checkpoint_id for r in got] == [r.checkpoint_id for r in expected]
    assert got == expected
    summaries = " | ".join(r.summary for r in got)
    for seen in (
        "question: look b and c up",
        "→ Action: lookup(",
        "waiting for approval: publish(",
        "publish → published edited",  # the fork's edited call
        "error: set by hand",  # the state update
    ):
        assert seen in summaries, seen
    assert got[-1].summary.endswith('waiting for approval: publish({"text": "later"})')


def test_streamed_rows_match_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'checkpoints.sqlite'}"
    with open_saver(url) as saver:
        agent = build_thread(saver, "shapes")
        expected = reference(agent, "shapes")
        assert streamed(agent, "shapes", url) == expected  # the sync saver open meanwhile
        assert streamed(agent, "nobody", url) == []

    async def read() -> list[Any]:
        async with open_async_saver(url) as saver:
            agent = agent_on(saver, [])
            return [row async for row in aiter_history(agent, "shapes")]

    assert asyncio.run(read()) == expected


def test_ids_are_read_in_pages(tmp_path: Path) -> None:
    """More checkpoints than one page of ids: every row, in order, once."""
    url = f"sqlite:///{tmp_path / 'checkpoints.sqlite'}"
    turns = PAGE // 6 + 3  # six checkpoints a turn: input, start, think, act, think, finish
    with open_saver(url) as saver:
        agent = agent_on(saver, script_for_turns(turns))
        for turn in range(turns):
            agent.invoke({"messages": [("user", f"q{turn}")]}, config("long"))
        rows = streamed(agent, "long", url)
        ids = [
            s.config["configurable"]["checkpoint_id"]
            for s in agent.get_state_history(config("long"))
        ]
    assert len(rows) > PAGE
    assert [r.checkpoint_id for r in rows] == ids[::-1]
    assert sum(r.summary.startswith("question: ") for r in rows) == turns


def peak_bytes(read: Any) -> int:
    tracemalloc.start()
    try:
        read()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def streamed_peak(agent: Any, thread: str, url: str) -> int:
    """The peak of Python allocations while `aiter_history` streams the thread's rows (the
    async saver opened before the count starts)."""

    async def read() -> int:
        async with open_async_saver(url) as saver:
            tracemalloc.start()
            try:
                async for _ in aiter_history(agent, thread, saver=saver):
                    pass
                return tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()

    return asyncio.run(read())


def test_history_memory_does_not_grow_with_the_thread(tmp_path: Path) -> None:
    """The streamed reading's peak memory at 40 turns is about that at 10; the full-state
    reading's grows with the square of the length (the measure the test stands on)."""
    url = f"sqlite:///{tmp_path / 'checkpoints.sqlite'}"
    with open_saver(url) as saver:
        agent = agent_on(saver, script_for_turns(40))
        peaks: dict[int, tuple[int, int]] = {}
        for turn in range(40):
            agent.invoke({"messages": [("user", f"q{turn}")]}, config("grow"))
            if turn + 1 in (10, 40):
                full = peak_bytes(lambda: len(reference(agent, "grow")))
                peaks[turn + 1] = (streamed_peak(agent, "grow", url), full)
    (streamed_10, full_10), (streamed_40, full_40) = peaks[10], peaks[40]
    assert full_40 > 6 * full_10  # the reference grows
    assert streamed_40 < 1.5 * streamed_10 + 200_000, peaks
    assert streamed_40 < full_40 / 10, peaks


def ids_and_states(agent: Any, history: list[Any]) -> dict[str, Any]:
    return {
        s.config["configurable"]["checkpoint_id"]: agent.get_state(s.config).values for s in history
    }


async def aids_and_states(agent: Any, history: list[Any]) -> dict[str, Any]:
    return {
        s.config["configurable"]["checkpoint_id"]: (await agent.aget_state(s.config)).values
        for s in history
    }


def stored_states(url: str, history: list[Any]) -> dict[str, Any]:
    """Every checkpoint's state as a saver with nothing cached loads it."""
    with open_saver(url) as fresh:
        return ids_and_states(agent_on(fresh, []), history)


def test_cached_histories_load_the_same_states_as_the_store(tmp_path: Path) -> None:
    """Every checkpoint of the shapes thread, loaded (twice, the second time from the cache)
    through the saver that built it, equals the same checkpoint loaded through a fresh saver;
    and changing a loaded state's conversation or bookkeeping changes no later load."""
    url = f"sqlite:///{tmp_path / 'checkpoints.sqlite'}"
    with open_saver(url) as saver:
        agent = build_thread(saver, "shapes")
        history = list(agent.get_state_history(config("shapes")))
        again = {}
        for snapshot in history:
            for _ in range(2):  # read from the store, then from the cache: the caller changes it
                values = agent.get_state(snapshot.config).values
                values.get("messages", []).append(("user", "added by the caller"))
                values.get("run", {})["step"] = 999
            again[snapshot.config["configurable"]["checkpoint_id"]] = agent.get_state(
                snapshot.config
            ).values
        assert saver.histories.get(saver.histories.key(history[-2].config), ["messages"])
    stored = stored_states(url, history)
    assert again == stored  # the store holds nothing the caller added


def test_a_write_on_an_earlier_checkpoint_reaches_later_loads(tmp_path: Path) -> None:
    """Writes stored through the saver on a checkpoint that has children (LangGraph never does
    that, a caller of the saver may), and a checkpoint stored again under its id, change the
    later checkpoints' states; loads through the caching saver see that as the store does."""
    url = f"sqlite:///{tmp_path / 'checkpoints.sqlite'}"
    with open_saver(url) as saver:
        agent = build_thread(saver, "shapes")
        history = list(agent.get_state_history(config("shapes")))
        head, earlier = history[0], history[4]
        before = agent.get_state(head.config).values  # the head's history is cached now
        late = AIMessage(content="written later", id="written-later")
        saver.put_writes(earlier.config, [("messages", [late])], "a-caller", "")
        after = agent.get_state(head.config).values
        assert "written later" in [m.content for m in after["messages"]]
        assert after == stored_states(url, [head])[head.config["configurable"]["checkpoint_id"]]
        assert before != after
        # `earlier` stored again as a thread's first checkpoint: the walk stops there now
        ids_and_states(agent, history[:4])
        stored = saver.get_tuple(earlier.config)
        root = {"configurable": {"thread_id": "shapes", "checkpoint_ns": ""}}
        saver.put(root, stored.checkpoint, stored.metadata, {})
        cut = ids_and_states(agent, history[:4])
    assert cut == stored_states(url, history[:4])
    assert cut[head.config["configurable"]["checkpoint_id"]] != after


def test_deleting_a_thread_forgets_its_cached_histories(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'checkpoints.sqlite'}"
    with open_saver(url) as saver:
        agent = build_thread(saver, "shapes")
        key = saver.histories.key(agent.get_state(config("shapes")).config)
        assert saver.histories.get(key, ["messages", "run"]) is not None
        saver.delete_thread("shapes")
        assert saver.histories.get(key, ["messages"]) is None
        assert agent.get_state(config("shapes")).values == {}


def test_extended_histories_on_the_async_store_match_the_full_walk(tmp_path: Path) -> None:
    """The async SQLite saver extends a cached ancestor's history instead of walking back to
    the last snapshot: every checkpoint, read oldest first (each one's parent cached) and
    newest first, loads the same state as LangGraph's own walk on a fresh saver; so does the
    head after a write on an earlier checkpoint through the async saver. The extension itself
    (not a fallback to the walk) gives the head's history from its cached parent."""
    url = f"sqlite:///{tmp_path / 'checkpoints.sqlite'}"
    with open_saver(url) as saver:
        history = list(build_thread(saver, "shapes").get_state_history(config("shapes")))
    expected = stored_states(url, history)
    head, earlier = history[0], history[4]

    async def read() -> tuple[dict[str, Any], dict[str, Any], Any]:
        async with open_async_saver(url) as saver:
            agent = agent_on(saver, [])
            newest_first = await aids_and_states(agent, history)
            oldest_first = await aids_and_states(agent, history[::-1])
            await agent.aget_state(history[1].config)  # the head's parent, cached
            cached = functools.partial(saver.histories.covering, channels=["messages"])
            key = saver.histories.key(head.config)
            extended = await aextend(saver, key, ["messages"], cached)
        async with open_async_saver(url) as fresh:  # LangGraph's own walk, nothing cached
            walked = await AsyncSqliteSaver.aget_delta_channel_history(
                fresh, config=head.config, channels=["messages"]
            )
        assert extended is not None
        assert extended == walked
        async with open_async_saver(url) as saver:
            agent = agent_on(saver, [])
            await agent.aget_state(history[1].config)
            late = AIMessage(content="written later", id="written-later")
            await saver.aput_writes(earlier.config, [("messages", [late])], "a-caller", "")
            return newest_first, oldest_first, (await agent.aget_state(head.config)).values

    newest_first, oldest_first, written = asyncio.run(read())
    assert newest_first == expected
    assert oldest_first == expected
    assert "written later" in [m.content for m in written["messages"]]
    assert written == stored_states(url, [head])[head.config["configurable"]["checkpoint_id"]]


@pytest.mark.postgres
def test_streamed_rows_match_on_postgres() -> None:
    """PostgreSQL pages its ids with its own placeholders; the rows are the same."""
    thread = f"test-long-{uuid.uuid4().hex[:10]}"
    try:
        with open_saver(POSTGRES_URL) as saver:
            agent = build_thread(saver, thread)
            expected = reference(agent, thread)
            assert streamed(agent, thread, POSTGRES_URL) == expected

        async def read() -> list[Any]:
            async with open_async_saver(POSTGRES_URL) as saver:
                agent = agent_on(saver, [])
                return [row async for row in aiter_history(agent, thread)]

        assert asyncio.run(read()) == expected
    finally:
        with open_saver(POSTGRES_URL) as saver:
            saver.delete_thread(thread)


@pytest.mark.postgres
def test_cached_histories_on_postgres_match_and_pruning_forgets_them() -> None:
    """The PostgreSQL savers cache histories too (no extension there): loads through the
    caching saver equal a fresh saver's, and pruning a thread drops its cached histories."""
    thread = f"test-long-{uuid.uuid4().hex[:10]}"
    try:
        with open_saver(POSTGRES_URL) as saver:
            agent = build_thread(saver, thread)
            history = list(agent.get_state_history(config(thread)))
            cached = ids_and_states(agent, history)
            key = saver.histories.key(agent.get_state(history[0].config).config)
            assert saver.histories.get(key, ["messages"]) is not None
            with open_saver(POSTGRES_URL) as fresh:
                assert ids_and_states(agent_on(fresh, []), history) == cached
            saver.prune([thread], strategy="delete")
            assert saver.histories.get(key, ["messages"]) is None
    finally:
        with open_saver(POSTGRES_URL) as saver:
            saver.delete_thread(thread)
