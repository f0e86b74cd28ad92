"""Each thread's own event loop, kept between calls: how sync code awaits async code without a
new loop or a new thread at every call.

A sync run's tool call goes through ToolNode's async path on this loop (`graph.nodes.act`).
ToolNode's sync path starts and joins a thread for every call, and `asyncio.run` builds and
tears down a loop; both cost more than the work of a small tool, and a thread hand-off costs
the kernel's time besides. Here the loop lives as long as its thread, and the work that must
block (a sync tool's body, which LangChain runs on the loop's default executor when the tool is
awaited) goes to daemon workers, so a tool stuck past its deadline never holds up the exit.

A thread that already runs a loop (a sync call made from async code, a notebook) cannot run
another: `free()` says so and the caller takes its sync path instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import threading
import weakref
from collections.abc import Coroutine
from typing import Any, TypeVar

from graph.support.workers import BLOCKING, DaemonExecutor

T = TypeVar("T")


class _Kept(threading.local):
    loop: asyncio.AbstractEventLoop | None = None


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
    loop = _loop()
    task = loop.create_task(coroutine)
    try:
        return loop.run_until_complete(task)
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                loop.run_until_complete(task)


def _loop() -> asyncio.AbstractEventLoop:
    loop = _KEPT.loop
    if loop is None or loop.is_closed():
        loop = asyncio.new_event_loop()
        loop.set_default_executor(DaemonExecutor(BLOCKING))
        # closed when its thread object goes (a worker pool's thread at the pool's end, the
        # main thread at exit); a loop left to the garbage collector warns that it was not
        weakref.finalize(threading.current_thread(), loop.close)
        _KEPT.loop = loop
        _forget_after_fork()
    return loop


@functools.cache
def _forget_after_fork() -> None:
    """Registered once, with the first loop (not at import)."""
    os.register_at_fork(after_in_child=_forget)


def _forget() -> None:
    """In a forked child: the parent's loop shares its selector with the parent; start anew."""
    _KEPT.loop = None
