"""Each thread's own event loop, kept between calls: how sync code awaits async code without a
new loop or a new thread at every call.

A sync run's tool call goes through ToolNode's async path on this loop (`graph.nodes.act`).
ToolNode's sync path starts and joins a thread for every call, and `asyncio.run` builds and
tears down a loop; both cost more than the work of a small tool, and a thread hand-off costs
the kernel's time besides. Here the loop lives as long as its thread.

A tool's sync function, awaited there (`outside`), runs in this same thread with the loop
stopped, as a plain call would: no hand-off, and a function that runs a loop of its own
(`asyncio.run`, a sync client built on one) still can. Its deadline is a timer signal
(`graph.support.alarm`), as for a sync model call; where that is not available (not the main
thread, a timer of someone else's) the function runs on a daemon worker instead, so a call
stuck past its deadline never holds up the run or the exit.

A thread that already runs a loop (a sync call made from async code, a notebook) cannot run
another: `free()` says so and the caller takes its sync path instead. A function run with the
loop stopped may itself run a sync agent: that run drives a loop of the next depth.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import threading
import weakref
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from graph.support import alarm
from graph.support.workers import BLOCKING, DaemonExecutor

T = TypeVar("T")

Waiting = tuple[Callable[[], Any], float, "asyncio.Future[Any]"]


class _Level:
    """A loop this thread drives, and the functions waiting to run while it is stopped."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.loop.set_default_executor(DaemonExecutor(BLOCKING))
        # closed when its thread object goes (a worker pool's thread at the pool's end, the
        # main thread at exit); a loop left to the garbage collector warns that it was not
        weakref.finalize(threading.current_thread(), self.loop.close)
        self.waiting: list[Waiting] = []

    def run_waiting(self) -> None:
        while self.waiting:
            _settle(*self.waiting.pop(0))


class _Kept(threading.local):
    def __init__(self) -> None:
        self.levels: list[_Level] = []  # one per depth of sync runs nested in this thread
        self.depth = 0


_KEPT = _Kept()


def free() -> bool:
    """Whether this thread can run its own loop now: no event loop is running in it."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return True
    return False


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run `coroutine` to its end on this thread's loop (call only when `free()`), in a copy
    of the caller's context. Interrupted from outside (Ctrl-C), it is cancelled before the
    interruption goes on, so it never resumes at a later call."""
    kept = _KEPT
    level = _level(kept.depth)
    loop = level.loop
    task = loop.create_task(coroutine)
    task.add_done_callback(_stop_loop)
    kept.depth += 1
    try:
        while not task.done():
            loop.run_forever()  # until the task ends, or a function waits to run (`outside`)
            level.run_waiting()
        return task.result()
    finally:
        kept.depth -= 1
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                loop.run_until_complete(task)
        level.waiting.clear()


async def outside(call: Callable[[], T], seconds: float) -> T:
    """Await `call()`, run in this thread with its loop stopped and cut at `seconds` (a
    `TimeoutError`), or on a daemon worker where this thread cannot do that."""
    loop = asyncio.get_running_loop()
    kept = _KEPT
    level = kept.levels[kept.depth - 1] if kept.depth else None
    if level is None or level.loop is not loop or not alarm.available():
        return await asyncio.wrap_future(BLOCKING.submit(call))
    future: asyncio.Future[T] = loop.create_future()
    level.waiting.append((call, seconds, future))
    loop.stop()
    try:
        return await future
    finally:
        # a failure's traceback holds this frame, and the future holds the failure: a
        # reference cycle that only the garbage collector would free
        del future


def _settle(call: Callable[[], Any], seconds: float, future: asyncio.Future[Any]) -> None:
    if future.done():  # cancelled while it waited
        return
    ok, outcome = _outcome(call, seconds)
    try:
        future.set_result(outcome) if ok else future.set_exception(outcome)
    finally:
        # a failure's traceback reaches this frame (the frame it was caught in links back to
        # it): holding the future that holds the failure would make a reference cycle
        del future, outcome


def _outcome(call: Callable[[], Any], seconds: float) -> tuple[bool, Any]:
    """A call's result or failure, cut at `seconds`."""
    try:
        return True, alarm.within(seconds, call, "the call did not return")
    except Exception as exc:  # the awaiting layers report it; Ctrl-C and exits go on
        return False, exc


def _stop_loop(task: asyncio.Future[Any]) -> None:
    task.get_loop().stop()


def _level(depth: int) -> _Level:
    levels = _KEPT.levels
    if depth < len(levels) and not levels[depth].loop.is_closed():
        return levels[depth]
    level = _Level()
    levels[depth:] = [level]
    _forget_after_fork()
    return level


@functools.cache
def _forget_after_fork() -> None:
    """Registered once, with the first loop (not at import)."""
    os.register_at_fork(after_in_child=_forget)


def _forget() -> None:
    """In a forked child: the parent's loops share their selectors with the parent; start
    anew."""
    _KEPT.levels = []
    _KEPT.depth = 0
