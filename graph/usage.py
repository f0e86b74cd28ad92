"""Token usage of a run, summed over every model call it made: the agent's steps, and the
calls a middleware makes on its own (a summary, a fallback model, a tool selector), the
wrap-up included. LangChain's `get_usage_metadata_callback` sees each chat model call made
inside a node; the run's total rides in its bookkeeping, so a resume keeps counting."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from langchain_core.callbacks import get_usage_metadata_callback

KEYS = ("input_tokens", "output_tokens", "total_tokens")


def added(*parts: Mapping[str, Any] | None) -> dict[str, int]:
    return {key: sum(int((p or {}).get(key) or 0) for p in parts) for key in KEYS}


@contextmanager
def counted() -> Iterator[dict[str, int]]:
    """The usage of the model calls made inside the block, filled in when it ends."""
    totals: dict[str, int] = {}
    with get_usage_metadata_callback() as callback:
        try:
            yield totals
        finally:
            totals.update(added(*callback.usage_metadata.values()))


def with_tokens(state: Any, update: dict[str, Any], tokens: dict[str, int]) -> dict[str, Any]:
    """The update with this node's model calls added to the run's token count (a new run
    starts from none)."""
    if not any(tokens.values()):
        return update
    run = update.get("run") or {}
    before = None if "tokens" in run else (state.get("run") or {}).get("tokens")
    return {**update, "run": {**run, "tokens": added(before, run.get("tokens"), tokens)}}
