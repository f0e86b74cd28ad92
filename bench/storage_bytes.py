"""What a thread takes in the savers' own tables, in total and part by part.

Totals are what `storage.py` judges: SQLite `checkpoints` (`checkpoint` + `metadata` blobs) and
`writes` (`value` blobs); PostgreSQL `checkpoints`, `checkpoint_blobs` and `checkpoint_writes` as
`sum(pg_column_size(t.*))`, what the rows take after TOAST compression, key columns included.

The parts say where those bytes go, so a regression can be traced to a channel or a field:
SQLite checkpoint blobs are decoded with the saver's own serializer and each field re-encoded
(its bytes inside the blob: `channel_versions`, `versions_seen`, each channel's value; the rest
is the id, timestamp, `updated_channels` and msgpack framing); PostgreSQL rows are split into
their payload columns (the `checkpoint` JSON's version maps, blobs and writes per channel) and
everything else in the row (key columns and tuple headers).
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from typing import Any


def sqlite_bytes(conn: sqlite3.Connection, thread_id: str) -> dict[str, int]:
    checkpoints, checkpoint_bytes, metadata_bytes = conn.execute(
        "select count(*), coalesce(sum(length(checkpoint)), 0), "
        "coalesce(sum(length(metadata)), 0) from checkpoints where thread_id = ?",
        (thread_id,),
    ).fetchone()
    writes, write_bytes = conn.execute(
        "select count(*), coalesce(sum(length(value)), 0) from writes where thread_id = ?",
        (thread_id,),
    ).fetchone()
    return {
        "checkpoint_rows": checkpoints,
        "write_rows": writes,
        "checkpoint_bytes": checkpoint_bytes,
        "metadata_bytes": metadata_bytes,
        "write_bytes": write_bytes,
        "stored_bytes": checkpoint_bytes + metadata_bytes + write_bytes,
    }


def sqlite_parts(saver: Any, conn: sqlite3.Connection, thread_id: str) -> dict[str, int]:
    """Bytes per field of the checkpoint blobs, metadata, and writes per channel."""
    parts: Counter[str] = Counter()

    def size(value: Any) -> int:
        return len(saver.serde.dumps_typed(value)[1])

    rows = conn.execute(
        "select type, checkpoint, metadata from checkpoints where thread_id = ?", (thread_id,)
    )
    for kind, blob, metadata in rows:
        checkpoint = saver.serde.loads_typed((kind, blob))
        fields = {
            "checkpoint: channel_versions": size(checkpoint.get("channel_versions", {})),
            "checkpoint: versions_seen": size(checkpoint.get("versions_seen", {})),
        }
        for channel, value in checkpoint.get("channel_values", {}).items():
            fields[f"checkpoint: value of {channel}"] = size(value)
        parts.update(fields)
        parts["checkpoint: id, ts, updated_channels, framing"] += len(blob) - sum(fields.values())
        parts["metadata"] += len(metadata)
    for channel, total in conn.execute(
        "select channel, coalesce(sum(length(value)), 0) from writes where thread_id = ? "
        "group by channel",
        (thread_id,),
    ):
        parts[f"writes: {channel}"] += total
    return dict(parts)


PG_TABLES = {
    "checkpoints": "octet_length(checkpoint::text) + octet_length(metadata::text)",
    "checkpoint_blobs": "coalesce(octet_length(blob), 0)",
    "checkpoint_writes": "octet_length(blob)",
}


def postgres_bytes(conn: Any, thread_id: str) -> dict[str, int]:
    out: dict[str, int] = {"stored_bytes": 0, "raw_bytes": 0}
    for name, raw in PG_TABLES.items():
        rows, stored, payload = conn.execute(
            f"select count(*), coalesce(sum(pg_column_size(t.*)), 0), coalesce(sum({raw}), 0) "
            f"from {name} t where thread_id = %s",
            (thread_id,),
        ).fetchone()
        out[f"{name}_rows"] = rows
        out[f"{name}_bytes"] = int(stored)
        out["stored_bytes"] += int(stored)
        out["raw_bytes"] += int(payload)
    out["checkpoint_rows"] = out["checkpoints_rows"]
    out["write_rows"] = out["checkpoint_writes_rows"]
    return out


def postgres_parts(conn: Any, thread_id: str) -> dict[str, int]:
    """Row bytes split into payload columns (per channel) and the rest of each row."""
    parts: Counter[str] = Counter()
    row, versions, seen, checkpoint, metadata = conn.execute(
        "select coalesce(sum(pg_column_size(t.*)), 0), "
        "coalesce(sum(pg_column_size(checkpoint -> 'channel_versions')), 0), "
        "coalesce(sum(pg_column_size(checkpoint -> 'versions_seen')), 0), "
        "coalesce(sum(pg_column_size(checkpoint)), 0), coalesce(sum(pg_column_size(metadata)), 0) "
        "from checkpoints t where thread_id = %s",
        (thread_id,),
    ).fetchone()
    parts["checkpoints: channel_versions (≈)"] = int(versions)
    parts["checkpoints: versions_seen (≈)"] = int(seen)
    parts["checkpoints: rest of the checkpoint JSON"] = int(checkpoint - versions - seen)
    parts["checkpoints: metadata"] = int(metadata)
    parts["checkpoints: keys and row headers"] = int(row - checkpoint - metadata)
    for table, label in (("checkpoint_blobs", "blobs"), ("checkpoint_writes", "writes")):
        for channel, row, payload in conn.execute(
            "select channel, sum(pg_column_size(t.*)), sum(coalesce(pg_column_size(blob), 0)) "
            f"from {table} t where thread_id = %s group by channel",
            (thread_id,),
        ):
            parts[f"{label}: {channel}"] += int(payload)
            parts[f"{label}: keys and row headers"] += int(row - payload)
    return dict(parts)
