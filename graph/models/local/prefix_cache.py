"""The worked records' evaluated state on disk: made once per machine, restored by every process.

Every prompt of the embedded model begins with the same worked records (about 1,470 tokens for
the six built-in tools). Evaluating them costs about 2.6 s of a run on two cores; restoring the
KV state that evaluation left costs about 0.05 s (27 MB for Gemma 3 270M). So the first process
that evaluates a prefix saves its state next to the model file, and later ones restore it.

A state is only valid for the exact model file, prompt text, llama.cpp build and context
parameters that made it, so all of them form its key (`PrefixKey`); the key's digest names the
file, and the file repeats the key in its header. A file that does not hold that key (another
build's, a copy, a collision) or whose body does not match its checksum (a torn write, a bad
disk) is refused with a reason (`Refused`) before a byte of it reaches llama.cpp, which
trusts the state it is given. Files are written to a temporary name and renamed, so a
concurrent or interrupted process never leaves half a file where the next one reads.

This module reads and writes bytes only; `engine.py` gets and sets the state through
llama.cpp's own state API (`llama_state_get_data` / `llama_state_set_data`).
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import struct
import tempfile
import zlib
from array import array
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

MAGIC = b"react-agent prefix state\n"
FORMAT = 1
SUFFIX = ".prefix-state"
KEEP = 4  # saved prefixes kept per model file (one per tool set in use), most recent first
_HEADER_SIZE = struct.Struct("<I")


class Refused(ValueError):
    """A saved state that must not be used; the message says why, in a few words."""


@dataclass(frozen=True)
class PrefixKey:
    """Everything a saved state depends on."""

    model: str  # the model file: resolved path, size and modification time
    prompt_sha256: str
    llama_cpp: str  # llama-cpp-python's version and llama.cpp's system info (CPU kernels)
    context: str  # the context parameters that shape the KV cache (n_ctx, cache types)

    @classmethod
    def make(cls, model: Path, prompt: str, llama_cpp: str, context: str) -> PrefixKey:
        stat = model.stat()
        return cls(
            model=f"{model.resolve()}|{stat.st_size}|{stat.st_mtime_ns}",
            prompt_sha256=hashlib.sha256(prompt.encode("utf-8")).hexdigest(),
            llama_cpp=llama_cpp,
            context=context,
        )

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()


def state_path(model: Path, key: PrefixKey) -> Path:
    """Where the state for `key` lives: next to the model file, named by the key's digest."""
    return model.with_name(f"{model.name}.{key.digest()[:16]}{SUFFIX}")


def write_state(path: Path, key: PrefixKey, tokens: Sequence[int], state: bytes) -> None:
    """Save the state (atomically: a temporary file, then a rename) and drop the least
    recently used other states of the same model beyond `KEEP`. Raises OSError."""
    body = array("i", tokens).tobytes()
    header = json.dumps(
        {
            "format": FORMAT,
            "key": asdict(key),
            "tokens": len(tokens),
            "state_bytes": len(state),
            "crc32": zlib.crc32(state, zlib.crc32(body)),
        }
    ).encode()
    fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(MAGIC + _HEADER_SIZE.pack(len(header)) + header + body)
            handle.write(state)
        os.replace(temp_name, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)
    _prune(path)


def read_state(path: Path, key: PrefixKey) -> tuple[list[int], bytearray]:
    """The tokens and state saved at `path` for `key`. Raises FileNotFoundError when there is
    none, `Refused` when the file is not a whole state made for this key."""
    with path.open("rb") as handle:
        if handle.read(len(MAGIC)) != MAGIC:
            raise Refused("not a prefix state file")
        header = _header(handle.read(_HEADER_SIZE.size), handle)
        if header.get("format") != FORMAT or header.get("key") != asdict(key):
            raise Refused("made for another model file, prompt or llama.cpp build")
        tokens, size = header.get("tokens"), header.get("state_bytes")
        if not (isinstance(tokens, int) and isinstance(size, int) and tokens > 0 and size > 0):
            raise Refused("its header is damaged")
        body = handle.read(tokens * 4)
        state = bytearray(size)
        got = handle.readinto(state)
        if len(body) != tokens * 4 or got != size or handle.read(1):
            raise Refused("its length is not the one its header gives")
    if zlib.crc32(state, zlib.crc32(body)) != header.get("crc32"):
        raise Refused("its checksum does not match")
    with contextlib.suppress(OSError):
        os.utime(path)  # most recently used: kept longest by `_prune`
    return array("i", body).tolist(), state


def _header(raw: bytes, handle: Any) -> dict[str, Any]:
    if len(raw) != _HEADER_SIZE.size:
        raise Refused("it is cut short")
    (size,) = _HEADER_SIZE.unpack(raw)
    if size > 64 * 1024:
        raise Refused("its header is damaged")
    try:
        header = json.loads(handle.read(size))
    except ValueError:
        raise Refused("its header is damaged") from None
    if not isinstance(header, dict):
        raise Refused("its header is damaged")
    return header


def _prune(kept: Path) -> None:
    """Remove the states of this model file beyond the `KEEP` most recently used (a prompt
    or llama.cpp that changed leaves its old states unused)."""
    model_name = kept.name[: -len(SUFFIX)].rsplit(".", 1)[0]
    others = [p for p in kept.parent.glob(f"{glob.escape(model_name)}.*{SUFFIX}") if p != kept]
    with contextlib.suppress(OSError):
        others.sort(key=lambda p: p.stat().st_mtime_ns, reverse=True)
    for stale in others[KEEP - 1 :]:
        with contextlib.suppress(OSError):
            stale.unlink()
