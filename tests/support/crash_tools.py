"""Tools for crash, approval and fork tests run through the CLI (`--tools module:TOOLS`).

Each execution appends a line to the file named by CALLS_FILE, so a test can count how often
each tool really ran, across processes and restarts.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from langchain_core.tools import tool


def _record(name: str, value: str) -> None:
    path = os.environ.get("CALLS_FILE")
    if path:
        with Path(path).open("a", encoding="utf-8") as handle:
            handle.write(f"{name}:{value}\n")
            handle.flush()
            os.fsync(handle.fileno())


@tool
def tick(label: str) -> str:
    """Record a quick, completed call."""
    _record("tick", label)
    return f"ticked {label}"


@tool
def sleepy(label: str) -> str:
    """Start, then sleep SLEEPY_SECONDS before finishing (a slow call to kill mid-flight); with
    RELEASE_FILE set, finish as soon as that file exists."""
    _record("sleepy-start", label)
    deadline = time.monotonic() + float(os.environ.get("SLEEPY_SECONDS", "0"))
    release = os.environ.get("RELEASE_FILE")
    while time.monotonic() < deadline and not (release and Path(release).exists()):
        time.sleep(0.05)
    _record("sleepy-done", label)
    return f"slept {label}"


@tool
def publish(text: str) -> str:
    """Publish a text (a side effect that needs approval)."""
    _record("publish", text)
    return f"published {text!r}"


TOOLS = [tick, sleepy, publish]
