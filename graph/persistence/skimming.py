"""A read-only view of a saver whose delta channels replay nothing (what `timeline` reads a
thread's checkpoints through).

Loading a checkpoint through it yields the next tasks, the pauses and the plain channels, with
the conversation left empty (or as its last stored snapshot), so no full state is rebuilt.
`hold(tuple)` hands it a checkpoint already read, so the graph does not read it a second time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple


class SkimmingSaver(BaseCheckpointSaver):
    """A read-only view of `inner` whose delta channels replay nothing."""

    def __init__(self, inner: BaseCheckpointSaver) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner
        self._held: CheckpointTuple | None = None

    def hold(self, item: CheckpointTuple | None) -> None:
        self._held = item

    def _cached(self, config: Any) -> CheckpointTuple | None:
        held = self._held
        if held is None:
            return None
        wanted = (config.get("configurable") or {}).get("checkpoint_id")
        return held if wanted == held.config["configurable"]["checkpoint_id"] else None

    def get_tuple(self, config: Any) -> CheckpointTuple | None:
        return self._cached(config) or self.inner.get_tuple(config)

    async def aget_tuple(self, config: Any) -> CheckpointTuple | None:
        return self._cached(config) or await self.inner.aget_tuple(config)

    def list(self, config: Any, **kwargs: Any) -> Iterator[CheckpointTuple]:
        return self.inner.list(config, **kwargs)

    def alist(self, config: Any, **kwargs: Any) -> AsyncIterator[CheckpointTuple]:
        return self.inner.alist(config, **kwargs)

    def get_delta_channel_history(
        self, *, config: Any, channels: Sequence[str]
    ) -> Mapping[str, Any]:
        return {channel: {"writes": []} for channel in channels}

    async def aget_delta_channel_history(
        self, *, config: Any, channels: Sequence[str]
    ) -> Mapping[str, Any]:
        return self.get_delta_channel_history(config=config, channels=channels)

    def get_next_version(self, current: Any, channel: Any) -> Any:
        return self.inner.get_next_version(current, channel)

    def _refuse(self, *_: Any, **__: Any) -> Any:
        raise RuntimeError("the skimming view of a saver only reads")

    put = put_writes = delete_thread = _refuse

    async def aput(self, *args: Any, **kwargs: Any) -> Any:
        self._refuse()

    async def aput_writes(self, *args: Any, **kwargs: Any) -> None:
        self._refuse()


__all__ = ["SkimmingSaver"]
