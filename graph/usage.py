"""Token usage of a run, summed over every model call it made: the agent's steps, and the
calls a middleware makes on its own (a summary, a fallback model, a tool selector), the
wrap-up included. A handler sees each chat model call made inside a node.

Most of it is stored already: each reply the run keeps carries its call's `usage_metadata`,
and finish sums them (`run_usage`). The run's bookkeeping (`run.unshown`, so a resume keeps
counting) holds only what those replies do not show: calls whose reply is not kept (a
correction's, a fallback's, a hook's own call) and replies a hook rewrote or removed. So a
step whose reply is stored as the model returned it writes nothing more: a write per step
costs a checkpoint row (about 0.2 KB on PostgreSQL), as much as a tenth of an observation."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, RemoveMessage
from langchain_core.outputs import LLMResult
from langchain_core.tracers.context import register_configure_hook
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from graph.messages import ID_OF
from graph.steps import run_messages

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
    """The update with what this node's model calls used and its kept replies do not show
    added to the run's token count (a new run starts from none); the update as it is when
    they show it all."""
    stored, run = state.get("run") or {}, update.get("run") or {}
    if "tokens" not in run and stored.get("tokens") is not None:
        key, unshown = "tokens", tokens  # a run an earlier release started: its count is whole
    else:
        key, unshown = "unshown", _unshown(state, update, tokens)
    if not any(unshown.values()):
        return update
    before = None if key in run else stored.get(key)
    return {**update, "run": {**run, key: added(before, run.get(key), unshown)}}


def run_usage(run: Mapping[str, Any], in_run: list[BaseMessage]) -> dict[str, int]:
    """The run's total: the usage its kept replies carry, plus what they do not show (a run
    an earlier release started kept the whole count in `tokens`)."""
    if run.get("tokens") is not None:
        return added(run["tokens"])
    return added(run.get("unshown"), *(_usage(x) for x in in_run))


def _unshown(state: Any, update: dict[str, Any], tokens: dict[str, int]) -> dict[str, int]:
    """`tokens` less the usage the update adds to the run's kept replies (what it removes or
    rewrites counts back). Negative where a kept reply shows usage no call here had (a reply a
    middleware made up from a cache): the total is the calls', whatever the replies say."""
    written = update.get("messages")
    items = written if isinstance(written, list) else [] if written is None else [written]
    if not any(isinstance(x, (AIMessage, RemoveMessage)) for x in items):
        return tokens
    messages = state.get("messages") or []
    if not any(isinstance(x, RemoveMessage) for x in items):
        stored = set(map(ID_OF, messages))
        if not any(x.id in stored for x in items if isinstance(x, BaseMessage)):  # all new
            return _less(tokens, added(*map(_usage, items)))
    question = (state.get("run") or {}).get("question_id")
    in_run = run_messages(messages, question)
    earlier = {x.id for x in messages[: len(messages) - len(in_run)]}  # not the run's
    kept = {x.id: x for x in in_run}
    before = added(*map(_usage, kept.values()))
    rebuilt = False  # the whole conversation written anew: the run is what follows its question
    for x in items:
        if isinstance(x, RemoveMessage) and x.id == REMOVE_ALL_MESSAGES:
            rebuilt, kept = True, {}
        elif isinstance(x, RemoveMessage):
            kept.pop(x.id, None)
        elif rebuilt and question and x.id == question:
            kept = {}
        elif isinstance(x, BaseMessage) and (rebuilt or x.id not in earlier):
            kept[x.id or str(id(x))] = x
    return _less(tokens, _less(added(*map(_usage, kept.values())), before))


def _usage(message: Any) -> Mapping[str, Any] | None:
    return getattr(message, "usage_metadata", None) if isinstance(message, AIMessage) else None


def _less(total: Mapping[str, int], part: Mapping[str, int]) -> dict[str, int]:
    return {key: int(total.get(key) or 0) - int(part.get(key) or 0) for key in KEYS}
