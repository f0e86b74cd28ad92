"""How big the embedded model runs, whichever way it runs (in this process or as a server):
its context in tokens and the threads it computes with."""

from __future__ import annotations

import os

DEFAULT_CONTEXT = 4096


def cpu_count() -> int:
    """The cores this process may use (its affinity, where the system says), at least one."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return max(os.cpu_count() or 1, 1)
