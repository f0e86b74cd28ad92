"""The state's checks and the channels that apply them: every value a node or a client writes
to an output field or to the loop's bookkeeping is checked here, and a value a check refuses is
dropped (logged) instead of failing every later read of the thread.

A client's write is refused before LangGraph stores it (`graph.checked`, with these same
checks), so what reaches a channel unchecked is a value stored by an earlier release or a bug
of the agent's own: reading the thread must not fail on it, and its next run goes on from the
valid values.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langgraph.channels import LastValue, UntrackedValue

STATUSES: frozenset[str] = frozenset(
    {"running", "answered", "max_steps", "stuck", "timeout", "error", "stopped"}
)
USAGE_FIELDS = ("input_tokens", "output_tokens", "total_tokens")

_log = logging.getLogger(__name__)

_RUN_TYPES: dict[str, tuple[type, ...]] = {
    "question_id": (str, type(None)),
    "iteration": (int,),
    "protocol": (str, type(None)),
    "approve": (list,),
    "review": (list,),
    "asking": (list,),
    "invalid": (str, type(None)),
    "invalid_streak": (int,),
    "wrap_up": (bool,),
    "started_at": (float, int, type(None)),
    "closed": (bool,),
    "ended_by": (str, type(None)),
    "unshown": (dict, type(None)),
    "tokens": (dict, type(None)),
}


# bookkeeping earlier releases kept in `run`: dropped when their threads are read back, so they
# can go on (the trace, the routing and the repeated-call count are derived from the messages)
_LEGACY_RUN_KEYS = frozenset(
    {"decision", "thought", "usage", "pending", "note", "repeats", "last_calls"}
)


def merge_run(current: dict[str, Any] | None, update: Any) -> dict[str, Any]:
    """Fold a partial bookkeeping update into the current one, refusing malformed values."""
    if update is None:
        return current or {}
    if not isinstance(update, dict):
        raise ValueError(f"'run' must be an object of bookkeeping fields, got {update!r:.80}.")
    update = {k: v for k, v in update.items() if k not in _LEGACY_RUN_KEYS}
    for key, value in update.items():
        kinds = _RUN_TYPES.get(key)
        if kinds is None:
            raise ValueError(
                f"'run' has no field {key!r} (fields: {', '.join(sorted(_RUN_TYPES))})."
            )
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise ValueError(f"'run.{key}' cannot be {value!r:.80}.")
    return {**(current or {}), **update}


def replace_steps(current: list[Any] | None, update: Any) -> list[Any]:
    """The trace is replaced whole (by `finish`); it must be a list of step objects."""
    if not isinstance(update, list) or not all(isinstance(s, dict) for s in update):
        raise ValueError(f"'steps' must be a list of step objects, got {update!r:.80}.")
    return update


def replace_status(current: str | None, update: Any) -> str | None:
    if update is not None and (not isinstance(update, str) or update not in STATUSES):
        raise ValueError(
            f"'status' must be one of {', '.join(sorted(STATUSES))}, got {update!r:.80}."
        )
    return update


def replace_seals(current: dict[str, str] | None, update: Any) -> dict[str, str]:
    """The review step's seals on approved calls (`graph.middleware.approval_seal`), replaced
    whole: an object of call ids to seal strings."""
    if update is None:
        return {}
    if not isinstance(update, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in update.items()
    ):
        raise ValueError(f"'approvals' must map call ids to seals, got {update!r:.80}.")
    return update


def replace_usage(current: dict[str, int] | None, update: Any) -> dict[str, int] | None:
    if update is not None and (
        not isinstance(update, dict)
        or not all(isinstance(update.get(k, 0), int) for k in USAGE_FIELDS)
    ):
        raise ValueError(f"'usage' must be token counts, got {update!r:.80}.")
    return update


def replace_text(current: str | None, update: Any) -> str | None:
    if update is not None and not isinstance(update, str):
        raise ValueError(f"'answer' and 'error' must be text or null, got {update!r:.80}.")
    return update


# The strict check of each of the agent's own channels, for writes that come from outside the
# loop (a client's update, `graph.checked`; a middleware hook's): a bad value raises one
# sentence before anything is stored. `messages` is checked by `graph.message_reducer`.
CHECKS: dict[str, Callable[[Any, Any], Any]] = {
    "run": merge_run,
    "steps": replace_steps,
    "status": replace_status,
    "answer": replace_text,
    "error": replace_text,
    "usage": replace_usage,
    "approvals": replace_seals,
}


def check_update(update: Mapping[str, Any]) -> None:
    """Refuse, with one sentence, an update holding a malformed value for one of the agent's
    own channels."""
    for key, value in update.items():
        check = CHECKS.get(key)
        if check is not None:
            check(None, value)


def merge_run_batches(current: dict[str, Any] | None, writes: Sequence[Any]) -> dict[str, Any]:
    """`merge_run` over a batch of writes. As a delta channel, each checkpoint stores only the
    fields that changed, not the whole bookkeeping again. The channel replays the stored writes
    on every load, so a malformed stored field is dropped (logged) instead of failing every
    read of the thread; the well-formed fields of the same write are kept."""
    merged = current or {}
    for write in writes:
        try:
            merged = merge_run(merged, write)
        except ValueError as exc:
            dropped("run", exc)
            merged = merge_run(merged, _valid_run_fields(write))
    return merged


def _valid_run_fields(write: Any) -> dict[str, Any]:
    if not isinstance(write, dict):
        return {}
    kept = {}
    for key, value in write.items():
        try:
            merge_run(None, {key: value})
        except ValueError:
            continue
        kept[key] = value
    return kept


def dropped(key: str, exc: Exception) -> None:
    """Say that a channel dropped a value its check refused (a stored value written before the
    checks, or a write of the agent's own that is a bug): the run goes on without it."""
    _log.warning("A value for %r was dropped: %s", key, exc)


class Trace(UntrackedValue):
    """The trace (`steps`): part of a run's output and of streamed values, never stored, since
    every entry is derived from the stored messages (`graph.steps.steps_of` rebuilds it from a
    checkpoint). A malformed write is refused all the same."""

    def update(self, values: Sequence[Any]) -> bool:
        kept = []
        for value in values:
            try:
                replace_steps(None, value)
            except ValueError as exc:
                dropped("steps", exc)
                continue
            kept.append(value)
        return super().update(kept)


class Checked(LastValue):
    """The last value written that passes the subclass's `check`; several writes in one step:
    the last good one wins. A value the check refuses is dropped (logged), here and when a
    stored value is loaded: client writes are refused before they are stored
    (`graph.checked`), so what reaches a channel unchecked is a stored value from before
    (reading the thread must not fail on it) or a bug of the agent's own. It replaces
    `Annotated[T, replacing_reducer]` for the output fields: LangGraph copies every channel
    each time it evaluates a conditional edge, and a `BinaryOperatorAggregate` copy tries to
    build an empty `T` (for `str | None` by raising and catching an error), twice per
    iteration per field; a `LastValue` copy is two assignments. It also checks the first
    write, which a `BinaryOperatorAggregate` takes unchecked."""

    __slots__ = ()
    check: staticmethod

    def update(self, values: Sequence[Any]) -> bool:
        taken = False
        for value in values:
            try:
                self.value = self.check(None, value)
            except ValueError as exc:
                dropped(self.key, exc)
                continue
            taken = True
        return taken

    def from_checkpoint(self, checkpoint: Any) -> Checked:
        channel = super().from_checkpoint(checkpoint)
        if channel.is_available():
            try:
                self.check(None, channel.value)
            except ValueError as exc:
                dropped(self.key, exc)
                return self.__class__(self.typ, self.key)
        return channel


class TextValue(Checked):
    __slots__ = ()
    check = staticmethod(replace_text)


class StatusValue(Checked):
    __slots__ = ()
    check = staticmethod(replace_status)


class UsageValue(Checked):
    __slots__ = ()
    check = staticmethod(replace_usage)


class SealsValue(Checked):
    __slots__ = ()
    check = staticmethod(replace_seals)
