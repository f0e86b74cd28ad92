"""LangGraph's savers with errors a user can act on, and writes fenced by the thread lock.

`guarded(SaverClass)` is a subclass of that LangGraph saver (same constructor, same storage, so
data stays readable by the plain saver) that changes what a failure says, never what is stored:

- a driver error while reading or writing (the PostgreSQL connection closed mid-run, a SQLite
  disk error) becomes `StoreError`, one sentence naming the store, the thread and what was being
  done, with the resume command; a checkpoint that cannot be decoded becomes
  `CorruptCheckpoint`, naming the thread and the store. Driver text is redacted.
- a write for a thread whose lock this run has lost raises `LockLost` (see `fencing`).
- a write that fails says what the store still holds: the steps before it, to resume; or, when
  the failed write was a new input's (nothing of it saved), that the input must be sent again.

Behind the guard, `delta_cache.HistoryCache` keeps the last delta-channel histories read, so a
long thread's conversation is not rebuilt from the checkpoint chain on every load (issue 27);
its failures reach the guard like the saver's own.

Only public methods of `BaseCheckpointSaver` are overridden, each calling the original.
"""

from __future__ import annotations

import functools
import shlex
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import aclosing, contextmanager
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.constants import START

from graph.persistence.delta_cache import HistoryCache
from graph.persistence.errors import (
    CorruptCheckpoint,
    PersistenceError,
    StoreError,
    reason_of,
    resume_command,
)
from graph.persistence.fencing import ensure_held


def _thread_of(config: Any) -> str | None:
    try:
        thread_id = config["configurable"]["thread_id"]
    except (KeyError, TypeError):
        return None
    return None if thread_id is None else str(thread_id)


class StoreGuard:
    """The mixin; `configure_guard` sets what the messages say about the store."""

    store_label: str = "the checkpointer"  # "the PostgreSQL checkpointer at postgresql://..."
    store_errors: tuple[type[BaseException], ...] = ()  # the driver's exception classes
    store_secrets: tuple[str, ...] = ()  # masked verbatim in driver text (the URL's password)

    def configure_guard(
        self,
        label: str,
        errors: tuple[type[BaseException], ...],
        secrets: Sequence[str | None] = (),
    ) -> None:
        self.store_label = label
        self.store_errors = errors
        self.store_secrets = tuple(s for s in secrets if s)

    # -- translating errors ---------------------------------------------------------------

    def store_failure(
        self, exc: Exception, config: Any, doing: str, *, lost: str | None = None
    ) -> Exception:
        """The exception to raise instead of `exc` (or `exc` itself, untouched). `lost` names
        what a failed write leaves unsaved when no checkpoint of it exists to resume from (a
        new input, a state update): the sentence then says to send it again, not to resume."""
        if isinstance(exc, PersistenceError):
            return exc
        thread_id = _thread_of(config)
        label = self.store_label[:1].upper() + self.store_label[1:]
        if isinstance(exc, self.store_errors):
            reason = reason_of(exc, self.store_secrets)
            if thread_id is None:
                return StoreError(f"{label} failed while {doing}: {reason}.")
            if lost is not None:
                return StoreError(
                    f"{label} failed while {doing} thread {thread_id}: {reason}. The {lost} was "
                    f"not saved and the thread is as it was before it; once the store can be "
                    f"written again (free some disk space, check its permissions), send it "
                    f"again: a question with --thread {shlex.quote(thread_id)}, an approval "
                    f"decision with {resume_command(thread_id)}.",
                    thread_id=thread_id,
                )
            return StoreError(
                f"{label} failed while {doing} thread {thread_id}: {reason}. The steps saved "
                f"before are kept; once the store is reachable, continue the run with: "
                f"{resume_command(thread_id)}",
                thread_id=thread_id,
            )
        if doing.startswith("reading") and not isinstance(exc, RuntimeError):
            reason = f"{type(exc).__name__}: {reason_of(exc, self.store_secrets)}"
            where = f"of thread {thread_id} " if thread_id else ""
            return CorruptCheckpoint(
                f"A stored checkpoint {where}in {self.store_label} cannot be decoded ({reason}); "
                "its data is damaged. Other threads are not affected: start a new thread, or "
                "restore the store from a backup.",
                thread_id=thread_id,
            )
        return exc

    @contextmanager
    def _failing(self, config: Any, doing: str = "reading", lost: str | None = None) -> Any:
        """Raise what `store_failure` makes of an exception of the block. Driver text can quote
        a connection string, so its traceback is dropped; a decoding error's is kept."""
        try:
            yield
        except Exception as exc:
            failure = self.store_failure(exc, config, doing, lost=lost)
            if failure is exc:
                raise
            raise failure from (exc if isinstance(failure, CorruptCheckpoint) else None)

    # -- reads ----------------------------------------------------------------------------

    def get_tuple(self, config: Any) -> Any:
        with self._failing(config):
            return super().get_tuple(config)  # type: ignore[misc]

    def list(self, config: Any, **kwargs: Any) -> Iterator[Any]:
        with self._failing(config):
            yield from super().list(config, **kwargs)  # type: ignore[misc]

    async def aget_tuple(self, config: Any) -> Any:
        with self._failing(config):
            return await super().aget_tuple(config)  # type: ignore[misc]

    async def alist(self, config: Any, **kwargs: Any) -> AsyncIterator[Any]:
        with self._failing(config):
            async with aclosing(super().alist(config, **kwargs)) as items:  # type: ignore[misc]
                async for item in items:
                    yield item

    def get_delta_channel_history(self, *, config: Any, channels: Sequence[str]) -> Any:
        with self._failing(config):
            return super().get_delta_channel_history(  # type: ignore[misc]
                config=config, channels=channels
            )

    async def aget_delta_channel_history(self, *, config: Any, channels: Sequence[str]) -> Any:
        with self._failing(config):
            return await super().aget_delta_channel_history(  # type: ignore[misc]
                config=config, channels=channels
            )

    # -- writes: fenced by the thread lock ------------------------------------------------

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        ensure_held(config)
        with self._failing(config, *_saving(metadata)):
            return super().put(config, checkpoint, metadata, new_versions)  # type: ignore[misc]

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        ensure_held(config)
        with self._failing(config, *_saving(metadata)):
            return await super().aput(  # type: ignore[misc]
                config, checkpoint, metadata, new_versions
            )

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        ensure_held(config)
        try:
            super().put_writes(config, writes, task_id, task_path)  # type: ignore[misc]
        except Exception:
            unsaved = _starts(task_path) and not self._stored(config)
            with self._failing(config, *_writing(task_path, unsaved)):
                raise

    async def aput_writes(
        self, config: Any, writes: Any, task_id: str, task_path: str = ""
    ) -> None:
        ensure_held(config)
        try:
            await super().aput_writes(config, writes, task_id, task_path)  # type: ignore[misc]
        except Exception:
            unsaved = _starts(task_path) and not await self._astored(config)
            with self._failing(config, *_writing(task_path, unsaved)):
                raise

    # -- after a failed write: is its checkpoint in the store? ----------------------------

    def _stored(self, config: Any) -> bool:
        """Whether the checkpoint `config` names was saved (True when that cannot be told:
        a store that cannot be read either keeps the old advice, to resume)."""
        try:
            return super().get_tuple(config) is not None  # type: ignore[misc]
        except Exception:
            return True

    async def _astored(self, config: Any) -> bool:
        try:
            return await super().aget_tuple(config) is not None  # type: ignore[misc]
        except Exception:
            return True


def _saving(metadata: Any) -> tuple[str, str | None]:
    """What a failed checkpoint write was doing, and what it loses for good. A checkpoint of
    the loop follows one whose steps' results are saved, so the run resumes from there; the
    checkpoint of a new input (or of a state update) is the only record of it."""
    source = metadata.get("source") if isinstance(metadata, dict) else None
    if source == "input":
        return "saving the new input of", "new input"
    if source in ("update", "fork"):
        return "saving a state update of", "state update"
    return "saving a checkpoint of", None


def _writing(task_path: str, unsaved: bool) -> tuple[str, str | None]:
    """What a failed write of pending writes was doing. A step's results carry the path of the
    task that made them, and the step runs again on resume; writes with no task (a new input,
    a state update, an answer to a pause) are saved on the checkpoint before them, ahead of the
    checkpoint they start, so when they fail nothing of them is in the store. `unsaved`: the
    writes are the input step's and the new input's checkpoint did not reach the store either."""
    if task_path and not unsaved:
        return "saving a step's result for", None
    return "saving the new input of", "new input"


def _starts(task_path: str) -> bool:
    """Whether the writes are the input step's (the graph's start node turning the input into
    state): when the new input's checkpoint did not reach the store either, nothing of the
    input is saved, and resuming would find the previous run's end."""
    return START in task_path.replace(" ", "").split(",")


@functools.cache
def guarded(base: type[BaseCheckpointSaver]) -> type[BaseCheckpointSaver]:
    """`base` with `StoreGuard` in front, then the history cache (one class per base, created
    once)."""
    bases = (StoreGuard, HistoryCache, base)
    return type(f"Guarded{base.__name__}", bases, {"__module__": __name__})


__all__ = ["StoreGuard", "guarded"]
