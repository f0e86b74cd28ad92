"""Small helpers the tools share: reading configuration from the environment at call time.

Every `env_*` reader looks at `os.environ` when it is called (never at import), so tests and
long-running processes see the current value; a malformed value is a `ToolException` naming the
variable, which the agent shows the model verbatim.
"""

from __future__ import annotations

import os

from langchain_core.tools import ToolException


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
