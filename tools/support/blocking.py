"""Running a coroutine from synchronous code: a sync tool or node whose implementation is async
(the tools' HTTP clients, the graph's tool runner and hooks)."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


def run_sync(make_coroutine: Callable[[], Awaitable[T]]) -> T:
    """Run an async implementation from synchronous code.

    With no event loop running in this thread it is simply `asyncio.run`. Inside a running loop
    (a sync `invoke` made from async code) the coroutine runs on a fresh loop in a worker thread,
    with a copy of the caller's context so context variables (test transports, fixed clocks)
    still apply.
    """

    async def main() -> T:
        return await make_coroutine()

    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop runs in this thread
        return asyncio.run(main())
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="react-agent-tool") as pool:
        return pool.submit(context.run, asyncio.run, main()).result()
