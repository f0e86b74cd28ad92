"""Each thread's own event loop (`graph.support.thread_loop`): kept between calls, one per
thread, the caller's context, nothing left running after an interruption, closed with its
thread, and blocking work on daemon threads."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import os
import threading
import time

import pytest

from graph.support import thread_loop
from graph.support.workers import DaemonExecutor, DaemonWorkers

WHO = contextvars.ContextVar("who", default="nobody")


async def running_loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


def test_a_thread_keeps_its_loop_and_another_thread_has_its_own() -> None:
    first = thread_loop.run(running_loop())
    assert thread_loop.run(running_loop()) is first and not first.is_running()
    other: list[asyncio.AbstractEventLoop] = []
    worker = threading.Thread(target=lambda: other.append(thread_loop.run(running_loop())))
    worker.start()
    worker.join()
    assert other and other[0] is not first


def test_the_coroutine_sees_the_callers_context() -> None:
    async def who() -> str:
        return WHO.get()

    token = WHO.set("caller")
    try:
        assert thread_loop.run(who()) == "caller"
    finally:
        WHO.reset(token)


def test_an_exception_reaches_the_caller() -> None:
    async def fail() -> None:
        raise ValueError("no good")

    with pytest.raises(ValueError, match="no good"):
        thread_loop.run(fail())
    assert thread_loop.run(running_loop()) is not None  # the loop still works


def test_an_interrupted_call_is_cancelled_and_never_resumes() -> None:
    events: list[str] = []

    def interrupt() -> None:
        raise KeyboardInterrupt  # as Ctrl-C does, from inside the loop

    async def long_call() -> None:
        asyncio.get_running_loop().call_later(0.01, interrupt)
        try:
            await asyncio.sleep(30)
            events.append("finished")
        except asyncio.CancelledError:
            events.append("cancelled")
            raise

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        thread_loop.run(long_call())
    assert events == ["cancelled"] and time.monotonic() - started < 10
    loop = thread_loop.run(running_loop())
    assert not [t for t in asyncio.all_tasks(loop) if not t.done()]
    assert events == ["cancelled"]


def test_free_is_false_where_a_loop_already_runs() -> None:
    async def inside() -> bool:
        return thread_loop.free()

    assert thread_loop.free()
    assert asyncio.run(inside()) is False


def test_a_threads_loop_is_closed_when_the_thread_is_gone() -> None:
    seen: list[asyncio.AbstractEventLoop] = []
    worker = threading.Thread(target=lambda: seen.append(thread_loop.run(running_loop())))
    worker.start()
    worker.join()
    del worker
    gc.collect()
    assert seen[0].is_closed()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_starts_its_own_loop() -> None:
    """The parent's loop shares its selector with the parent: a child must not run it."""
    parent = thread_loop.run(running_loop())
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, and leave without running the parent's cleanup
        try:
            child = thread_loop.run(running_loop())
            os.write(write, b"new" if child is not parent else b"same")
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    assert os.read(read, 8) == b"new"
    os.close(read)


def test_blocking_work_awaited_on_the_loop_runs_on_a_daemon_thread() -> None:
    async def off_the_loop() -> tuple[bool, str]:
        def where() -> tuple[bool, str]:
            return threading.current_thread().daemon, WHO.get()

        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        return await loop.run_in_executor(None, context.run, where)

    token = WHO.set("caller")
    try:
        assert thread_loop.run(off_the_loop()) == (True, "caller")
    finally:
        WHO.reset(token)


def test_a_job_waited_past_its_deadline_finishes_and_its_worker_is_reused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The loop gives up on a job at its deadline (cancelling the job's future); the job goes
    on to its end and its worker takes the next job, with no error in the worker."""
    errors: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: errors.append(args.exc_value))
    workers = DaemonWorkers("test-worker")
    gate, finished = threading.Event(), threading.Event()
    ran_on: list[threading.Thread] = []

    def job() -> None:
        ran_on.append(threading.current_thread())
        gate.wait(5)
        finished.set()

    async def wait_briefly() -> None:
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(0.05):
            await loop.run_in_executor(DaemonExecutor(workers), job)

    with pytest.raises(TimeoutError):
        asyncio.run(wait_briefly())
    gate.set()
    assert finished.wait(5)
    time.sleep(0.05)  # the worker records its result, then waits for the next job
    assert workers.submit(threading.current_thread).result(5) is ran_on[0]
    assert errors == []
