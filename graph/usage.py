"""Token usage of a run, summed over every model call it made: the agent's steps, and the
calls a middleware makes on its own (a summary, a fallback model, a tool selector), the
wrap-up included. LangChain's usage handler sees each chat model call made inside a node; the
run's total rides in its bookkeeping, so a resume keeps counting."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult
from langchain_core.tracers.context import register_configure_hook

KEYS = ("input_tokens", "output_tokens", "total_tokens")


class InlineUsageHandler(BaseCallbackHandler):
    """The usage of each chat model call that ends, as LangChain's `UsageMetadataCallbackHandler`
    reads it (the first generation's `usage_metadata`), but counted whether or not the reply
    names its model: that handler skips a reply without `model_name`, which many
    OpenAI-compatible servers and wrappers leave out. Run inline: in an async run a handler
    that is not sends each callback event of each model call to a worker thread."""

    run_inline = True

    def __init__(self) -> None:
        self.usage: list[Mapping[str, Any]] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        """Nothing to do when a call starts (usage is read when it ends). Without it a chat
        model call turns every message of the request into text for `on_llm_start`: the whole
        conversation again, at every step."""

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        first = response.generations[0][:1] if response.generations else []
        message = getattr(first[0], "message", None) if first else None
        usage = getattr(message, "usage_metadata", None)
        if usage:
            self.usage.append(usage)  # list.append is atomic: no lock for parallel calls


# One variable, registered once. `get_usage_metadata_callback()` registers a new configure
# hook on every call and never removes it, so a long-lived process would configure callbacks
# through one more hook at every step.
_CURRENT: ContextVar[InlineUsageHandler | None] = ContextVar("react_agent_usage", default=None)


@functools.cache
def _registered() -> None:
    register_configure_hook(_CURRENT, inheritable=True)


def added(*parts: Mapping[str, Any] | None) -> dict[str, int]:
    return {key: sum(int((p or {}).get(key) or 0) for p in parts) for key in KEYS}


@contextmanager
def counted() -> Iterator[dict[str, int]]:
    """The usage of the model calls made inside the block, filled in when it ends (a block
    inside another counts its calls for itself only)."""
    _registered()
    totals: dict[str, int] = {}
    handler = InlineUsageHandler()
    token = _CURRENT.set(handler)
    try:
        yield totals
    finally:
        _CURRENT.reset(token)
        totals.update(added(*handler.usage))


def with_tokens(state: Any, update: dict[str, Any], tokens: dict[str, int]) -> dict[str, Any]:
    """The update with this node's model calls added to the run's token count (a new run
    starts from none)."""
    if not any(tokens.values()):
        return update
    run = update.get("run") or {}
    before = None if "tokens" in run else (state.get("run") or {}).get("tokens")
    return {**update, "run": {**run, "tokens": added(before, run.get("tokens"), tokens)}}
