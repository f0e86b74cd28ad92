"""Small helpers the tools share: reading configuration from the environment at call time and
running a coroutine from synchronous code.

Every `env_*` reader looks at `os.environ` when it is called (never at import), so tests and
long-running processes see the current value; a malformed value is a `ToolException` naming the
variable, which the agent shows the model verbatim.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from langchain_core.tools import ToolException

T = TypeVar("T")


def env_str(name: str, default: str) -> str:
    """The variable's value with surrounding blanks removed; unset or blank means `default`."""
    value = os.environ.get(name, "").strip()
    return value or default


def env_float(name: str, default: float, *, minimum: float = 0.0) -> float:
    """A number of at least `minimum`; unset or blank means `default`."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value >= minimum or value == float("inf"):
        raise ToolException(f"{name} must be a number of at least {minimum:g}, not {raw!r}.")
    return value


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    """A whole number of at least `minimum` (2_000_000 is fine); unset or blank means `default`."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise ToolException(f"{name} must be a whole number of at least {minimum}, not {raw!r}.")
    return value


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
    except RuntimeError:
        return asyncio.run(main())
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="react-agent-tool") as pool:
        return pool.submit(context.run, asyncio.run, main()).result()
