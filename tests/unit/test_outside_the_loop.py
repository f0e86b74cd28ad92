"""A sync function awaited on a thread's own loop (`graph.support.thread_loop.outside`): run in
that thread with the loop stopped, cut at its deadline by the timer signal, on a daemon worker
where the signal is not the thread's to use; and what a sync run's tool sees of it."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.tools import tool

from graph import build_graph
from graph.support import thread_loop
from tests.support.scripted_model import ScriptedChatModel, action, answer

PROTOCOLS = ["native", "text"]
WHO = contextvars.ContextVar("who", default="nobody")


def where() -> tuple[bool, bool]:
    """(daemon thread, main thread) of the calling thread."""
    here = threading.current_thread()
    return here.daemon, here is threading.main_thread()


def awaited(call: Any, seconds: float = 5.0) -> Any:
    async def main() -> Any:
        return await thread_loop.outside(call, seconds)

    return thread_loop.run(main())


def in_a_thread(work: Any) -> Any:
    result: list[Any] = []
    worker = threading.Thread(target=lambda: result.append(work()))
    worker.start()
    worker.join(30)
    return result[0]


def asked(protocol: str, tools: list[Any], script: list[Any], **kw: Any) -> dict[str, Any]:
    """A sync run, from this thread, of an agent with the scripted model."""
    agent = build_graph(model=ScriptedChatModel(script), tools=tools, protocol=protocol, **kw)
    return agent.invoke({"messages": [("user", "go")]})


@pytest.fixture
def alarm_left_alone() -> Iterator[None]:
    yield
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL


def test_the_call_runs_in_the_main_thread_with_no_loop_running(alarm_left_alone: None) -> None:
    def inside() -> tuple[tuple[bool, bool], bool, str]:
        return where(), thread_loop.free(), WHO.get()

    token = WHO.set("caller")
    try:
        assert awaited(inside) == ((False, True), True, "caller")
    finally:
        WHO.reset(token)


def test_a_call_may_run_a_loop_of_its_own(alarm_left_alone: None) -> None:
    async def answer_later() -> str:
        await asyncio.sleep(0)
        return "from a loop of its own"

    assert awaited(lambda: asyncio.run(answer_later())) == "from a loop of its own"


def test_a_call_past_its_deadline_is_cut_and_the_loop_goes_on(alarm_left_alone: None) -> None:
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        awaited(lambda: time.sleep(30), seconds=0.2)
    assert time.monotonic() - started < 10
    assert awaited(lambda: "next") == "next"


def test_a_call_that_swallows_exceptions_is_still_cut(alarm_left_alone: None) -> None:
    def stubborn() -> str:
        while True:
            try:
                time.sleep(30)
            except Exception:  # a retry loop: the deadline is not an Exception
                continue

    started = time.monotonic()
    with pytest.raises(TimeoutError):
        awaited(stubborn, seconds=0.2)
    assert time.monotonic() - started < 10


def test_a_failure_reaches_the_awaiting_code_unchanged(alarm_left_alone: None) -> None:
    def fail() -> None:
        raise LookupError("not there")

    with pytest.raises(LookupError, match="not there"):
        awaited(fail)


def test_ctrl_c_in_the_call_stops_the_run_and_the_loop_still_works(
    alarm_left_alone: None,
) -> None:
    def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        awaited(interrupted)
    assert awaited(lambda: "next") == "next"


def test_a_failed_call_leaves_no_reference_cycle(alarm_left_alone: None) -> None:
    def fail() -> None:
        raise LookupError("not there")

    async def caught() -> str:
        try:
            return await thread_loop.outside(fail, 5.0)
        except LookupError as exc:
            return str(exc)

    assert thread_loop.run(caught()) == "not there"  # the thread's loop is made first
    gc.collect()
    gc.disable()
    try:
        assert thread_loop.run(caught()) == "not there"
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_off_the_main_thread_the_call_runs_on_a_daemon_worker() -> None:
    assert in_a_thread(lambda: awaited(where)) == (True, False)


def test_where_the_program_has_its_own_timer_handler_the_call_runs_on_a_daemon_worker() -> None:
    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(signum))
    try:
        assert awaited(where) == (True, False)
        assert signal.getsignal(signal.SIGALRM) is not signal.SIG_DFL  # still the program's
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert fired == []


def test_a_call_may_await_another_sync_run_inside_it(alarm_left_alone: None) -> None:
    """The inner run drives a loop of its own depth; its call goes to a worker, since the outer
    call's timer is armed."""

    def inner() -> tuple[tuple[bool, bool], tuple[bool, bool]]:
        return where(), awaited(where)

    assert awaited(inner) == ((False, True), (True, False))
    assert awaited(where) == (False, True)  # the outer loop is back to the call in place


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_sync_tool_in_a_sync_run_can_run_its_own_event_loop(protocol: str) -> None:
    async def look_up(text: str) -> str:
        await asyncio.sleep(0)
        return f"looked up {text}"

    @tool
    def lookup(text: str) -> str:
        """Look it up with an async client."""
        return asyncio.run(look_up(text))

    out = asked(
        protocol, [lookup], [action(protocol, "lookup", {"text": "x"}), answer(protocol, "ok")]
    )
    assert out["steps"][0]["observation"] == "looked up x"
    assert out["status"] == "answered"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_tool_that_runs_another_agent_in_a_sync_run(protocol: str) -> None:
    @tool
    def double(n: int) -> str:
        """Double a number."""
        return str(2 * n)

    @tool
    def delegate(question: str) -> str:
        """Ask a helper agent."""
        inner = [action(protocol, "double", {"n": 21}), answer(protocol, "42")]
        return asked(protocol, [double], inner)["answer"]

    script = [action(protocol, "delegate", {"question": "21 doubled?"}), answer(protocol, "42")]
    out = asked(protocol, [delegate], script)
    assert out["steps"][0]["observation"] == "42"
    assert out["answer"] == "42"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_stuck_sync_tool_in_a_sync_run_is_cut_at_the_deadline(
    protocol: str, alarm_left_alone: None
) -> None:
    @tool
    def stuck(text: str) -> str:
        """Never returns."""
        time.sleep(3600)
        return text

    script = [action(protocol, "stuck", {"text": "x"}), answer(protocol, "gave up")]
    started = time.monotonic()
    out = asked(protocol, [stuck], script, tool_timeout=0.3)
    assert time.monotonic() - started < 20
    assert out["steps"][0]["observation"] == "Tool 'stuck' timed out after 0.3 s."
    assert out["answer"] == "gave up"
