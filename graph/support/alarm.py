"""A hard deadline for blocking work in the main thread, with no thread of its own.

A sync model call can block in a read that nothing else interrupts (an endpoint that trickles a
byte at a time answers every read in time). Waiting for it on another thread costs a thread
hand-off at every call; in the main thread a timer signal does the same job: `SIGALRM` breaks
the blocking read, and the handler raises `Expired` there. It is used only where it cannot
disturb anyone else's timer: in the main thread, on a platform that has the signal, when no
handler other than the default is installed and no timer is pending (a test runner's timeout,
a program's own alarm). Elsewhere `available()` says no and the caller waits on a thread.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")

# after the first signal, again every so often: a library that catches the first one (a broad
# `except BaseException`) does not get to run past the deadline
_AGAIN = 0.05


class Expired(BaseException):
    """The deadline passed. A BaseException, like KeyboardInterrupt: a model client's own
    `except Exception` (its retry loop) must not swallow it."""


def available() -> bool:
    if (
        not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        return False
    if signal.getsignal(signal.SIGALRM) is not signal.SIG_DFL:
        return False
    return signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise `Expired` in the block once `seconds` have passed (call only when `available()`)."""
    armed = True

    def expire(_signum: int, _frame: Any) -> None:
        if armed:
            signal.setitimer(signal.ITIMER_REAL, _AGAIN)
            raise Expired

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        yield
    finally:
        armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def within(seconds: float, call: Callable[[], T], missed: str) -> T:
    """`call()`, or a `TimeoutError` ("<missed> within <seconds> s") once `seconds` have passed
    (call only when `available()`): the deadline's own `Expired` stays inside."""
    try:
        with deadline(seconds):
            return call()
    except Expired:
        raise TimeoutError(f"{missed} within {seconds:g} s") from None
