"""Two tools for the approval tests: `transfer` (the one that needs approval) and `clock` (one
that does not). Each call is recorded in `ran`, which a test clears first, so a test counts what
really ran, not what the run reports."""

from __future__ import annotations

from langchain_core.tools import tool

ran: list[str] = []


@tool
def transfer(to: str) -> str:
    """Transfer money to someone (needs approval)."""
    ran.append(f"transfer:{to}")
    return f"transferred to {to}"


@tool
def clock(zone: str) -> str:
    """Tell the time (needs no approval)."""
    ran.append(f"clock:{zone}")
    return f"noon in {zone}"
