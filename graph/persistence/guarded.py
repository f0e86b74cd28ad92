"""LangGraph's savers with errors a user can act on, and writes fenced by the thread lock.

`guarded(SaverClass)` is a subclass of that LangGraph saver (same constructor, same storage, so
data stays readable by the plain saver) that changes two things:

- a driver error while reading or writing (the PostgreSQL connection closed mid-run, a SQLite
  disk error) becomes `StoreError`, one sentence naming the store, the thread and what was being
  done, with the resume command; a checkpoint that cannot be decoded becomes
  `CorruptCheckpoint`, naming the thread and the store. Driver text is redacted.
- a write for a thread whose lock this run has lost raises `LockLost` (see `fencing`).

Only public methods of `BaseCheckpointSaver` are overridden, each calling the original.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

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

    def store_failure(self, exc: Exception, config: Any, doing: str) -> Exception:
        """The exception to raise instead of `exc` (or `exc` itself, untouched)."""
        if isinstance(exc, PersistenceError):
            return exc
        thread_id = _thread_of(config)
        if isinstance(exc, self.store_errors):
            reason = reason_of(exc, self.store_secrets)
            if thread_id is None:
                return StoreError(f"{_cap(self.store_label)} failed while {doing}: {reason}.")
            return StoreError(
                f"{_cap(self.store_label)} failed while {doing} thread {thread_id}: {reason}. "
                f"The steps saved before are kept; once the store is reachable, continue the run "
                f"with: {resume_command(thread_id)}",
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

    def _reraise(self, exc: Exception, config: Any, doing: str) -> None:
        failure = self.store_failure(exc, config, doing)
        if failure is exc:
            raise exc
        if isinstance(failure, CorruptCheckpoint):
            raise failure from exc  # the traceback of a decoding error helps; it holds no secret
        raise failure from None  # driver text can quote a connection string

    # -- reads ----------------------------------------------------------------------------

    def get_tuple(self, config: Any) -> Any:
        try:
            return super().get_tuple(config)  # type: ignore[misc]
        except Exception as exc:
            self._reraise(exc, config, "reading")

    def list(self, config: Any, **kwargs: Any) -> Iterator[Any]:
        items = super().list(config, **kwargs)  # type: ignore[misc]
        try:
            while True:
                try:
                    item = next(items)
                except StopIteration:
                    return
                except Exception as exc:
                    self._reraise(exc, config, "reading")
                yield item
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    def get_delta_channel_history(self, *, config: Any, channels: Sequence[str]) -> Any:
        try:
            return super().get_delta_channel_history(  # type: ignore[misc]
                config=config, channels=channels
            )
        except Exception as exc:
            self._reraise(exc, config, "reading")

    async def aget_tuple(self, config: Any) -> Any:
        try:
            return await super().aget_tuple(config)  # type: ignore[misc]
        except Exception as exc:
            self._reraise(exc, config, "reading")

    async def alist(self, config: Any, **kwargs: Any) -> AsyncIterator[Any]:
        items = super().alist(config, **kwargs)  # type: ignore[misc]
        try:
            while True:
                try:
                    item = await items.__anext__()
                except StopAsyncIteration:
                    return
                except Exception as exc:
                    self._reraise(exc, config, "reading")
                yield item
        finally:
            close = getattr(items, "aclose", None)
            if close is not None:
                await close()

    async def aget_delta_channel_history(self, *, config: Any, channels: Sequence[str]) -> Any:
        try:
            return await super().aget_delta_channel_history(  # type: ignore[misc]
                config=config, channels=channels
            )
        except Exception as exc:
            self._reraise(exc, config, "reading")

    # -- writes: fenced by the thread lock ------------------------------------------------

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        ensure_held(config)
        try:
            return super().put(config, checkpoint, metadata, new_versions)  # type: ignore[misc]
        except Exception as exc:
            self._reraise(exc, config, "saving a checkpoint of")

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        ensure_held(config)
        try:
            super().put_writes(config, writes, task_id, task_path)  # type: ignore[misc]
        except Exception as exc:
            self._reraise(exc, config, "saving a step's result for")

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        ensure_held(config)
        try:
            return await super().aput(  # type: ignore[misc]
                config, checkpoint, metadata, new_versions
            )
        except Exception as exc:
            self._reraise(exc, config, "saving a checkpoint of")

    async def aput_writes(
        self, config: Any, writes: Any, task_id: str, task_path: str = ""
    ) -> None:
        ensure_held(config)
        try:
            await super().aput_writes(config, writes, task_id, task_path)  # type: ignore[misc]
        except Exception as exc:
            self._reraise(exc, config, "saving a step's result for")


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


@functools.cache
def guarded(base: type[BaseCheckpointSaver]) -> type[BaseCheckpointSaver]:
    """`base` with `StoreGuard` in front (one class per base, created once)."""
    return type(f"Guarded{base.__name__}", (StoreGuard, base), {"__module__": __name__})


__all__ = ["StoreGuard", "guarded"]
