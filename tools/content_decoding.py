"""Bounded decompression of HTTP bodies: never inflate past the size cap.

Why a module of its own: httpx decodes `Content-Encoding` chunk by chunk, and one 32 KB zstd
chunk can inflate to gigabytes before the caller sees a byte and can count it (issue 17.2: 2.1 GB
peak for a 2 MB cap). So the tools read the raw (still compressed) stream and decode it here,
where every decoder is asked for at most the bytes still allowed:

- `gzip` and `deflate` (zlib-wrapped or raw) through `zlib`, with `max_length`;
- `zstd` through `zstandard` when it is installed (langsmith pulls it in), writing into a sink
  that stops the decoder once the budget is spent, with the window capped at 8 MB (RFC 9659);
- `identity` as it is.

Only these are advertised in `Accept-Encoding`. A body in any other coding (`br`, `compress`, or
several stacked) is refused without decoding: `UnsupportedEncoding`.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator
from typing import Protocol

try:
    import zstandard
except ImportError:  # pragma: no cover - zstandard comes with langsmith
    zstandard = None

ZSTD_MAX_WINDOW = 8 * 1024 * 1024
ZSTD_WRITE_SIZE = 64 * 1024
RAW_SLACK = 64 * 1024  # stored (incompressible) blocks make the compressed body a bit larger
SUPPORTED = ("gzip", "deflate", *(("zstd",) if zstandard is not None else ()))
ACCEPT_ENCODING = ", ".join(SUPPORTED)


class UnsupportedEncoding(ValueError):
    """A Content-Encoding this module does not decode (the reason is a short phrase)."""


class DecodingFailed(ValueError):
    """Corrupt compressed data."""


class Decoder(Protocol):
    def decode(self, data: bytes, limit: int) -> bytes:
        """The output of `data` (and anything pending), at most `limit` bytes (`limit` > 0)."""
        ...


class _Identity:
    def decode(self, data: bytes, limit: int) -> bytes:
        return data[:limit]


class _Zlib:
    def __init__(self, wbits: int, *, raw_fallback: bool = False) -> None:
        self._inflate = zlib.decompressobj(wbits)
        # `deflate` is sometimes sent without the zlib header: until the first output, keep the
        # input so it can be decoded again as raw deflate.
        self._replay: bytes | None = b"" if raw_fallback else None

    def decode(self, data: bytes, limit: int) -> bytes:
        if self._replay is not None:
            self._replay += data
        try:
            out = self._bounded(data, limit)
        except zlib.error as exc:
            if self._replay is None:
                raise DecodingFailed(str(exc)) from None
            data, self._replay = self._replay, None
            self._inflate = zlib.decompressobj(-zlib.MAX_WBITS)
            try:
                out = self._bounded(data, limit)
            except zlib.error as again:
                raise DecodingFailed(str(again)) from None
        if out or (self._replay is not None and len(self._replay) > 4096):
            self._replay = None  # the header was fine
        return out

    def _bounded(self, data: bytes, limit: int) -> bytes:
        pieces: list[bytes] = []
        size = 0
        while size < limit and not self._inflate.eof:
            want = limit - size  # never 0: zlib reads max_length=0 as "no limit"
            piece = self._inflate.decompress(data, want)
            data = self._inflate.unconsumed_tail
            pieces.append(piece)
            size += len(piece)
            if len(piece) < want:  # all input used and nothing pending
                break
        return b"".join(pieces)


class _Full(Exception):
    pass


class _Sink:
    """Where zstandard writes its output; raises `_Full` once the budget is spent."""

    def __init__(self) -> None:
        self.pieces: list[bytes] = []
        self.room = 0

    def write(self, data: bytes) -> int:
        piece = bytes(data[: self.room])
        self.pieces.append(piece)
        self.room -= len(piece)
        if self.room <= 0:
            raise _Full
        return len(data)


class _Zstd:
    def __init__(self) -> None:
        assert zstandard is not None
        self._sink = _Sink()
        decompressor = zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW)
        self._writer = decompressor.stream_writer(
            self._sink, write_size=ZSTD_WRITE_SIZE, closefd=False
        )

    def decode(self, data: bytes, limit: int) -> bytes:
        self._sink.pieces, self._sink.room = [], limit
        try:
            self._writer.write(data)
        except _Full:
            pass
        except zstandard.ZstdError as exc:
            raise DecodingFailed(str(exc)) from None
        return b"".join(self._sink.pieces)


def decoder_for(content_encoding: str) -> Decoder:
    """The bounded decoder for a `Content-Encoding` header value."""
    codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
    codings = [c for c in codings if c != "identity"]
    if not codings:
        return _Identity()
    if len(codings) > 1:
        raise UnsupportedEncoding(f"the body is compressed several times ({content_encoding})")
    coding = codings[0]
    if coding in ("gzip", "x-gzip"):
        return _Zlib(zlib.MAX_WBITS | 16)
    if coding == "deflate":
        return _Zlib(zlib.MAX_WBITS, raw_fallback=True)
    if coding == "zstd" and zstandard is not None:
        return _Zstd()
    raise UnsupportedEncoding(f"the body is in the unsupported {coding!r} encoding")


async def read_bounded(
    raw: AsyncIterator[bytes], content_encoding: str, max_bytes: int
) -> tuple[bytes, bool]:
    """(up to `max_bytes` decoded bytes, whether the body had more). Reading stops at the cap,
    and no more than `max_bytes + 1` decoded bytes ever exist at once. The compressed input is
    capped too (`max_bytes` plus `RAW_SLACK`), so a stream that inflates to nothing cannot keep
    the reader busy either."""
    decoder = decoder_for(content_encoding)
    pieces: list[bytes] = []
    size = 0
    raw_size = 0
    async for chunk in raw:
        raw_size += len(chunk)
        if raw_size > max_bytes + RAW_SLACK:
            return b"".join(pieces), True
        piece = decoder.decode(chunk, max_bytes - size + 1)
        if size + len(piece) > max_bytes:
            pieces.append(piece[: max_bytes - size])
            return b"".join(pieces), True
        pieces.append(piece)
        size += len(piece)
    tail = decoder.decode(b"", max_bytes - size + 1)  # output still held by the decoder
    if size + len(tail) > max_bytes:
        pieces.append(tail[: max_bytes - size])
        return b"".join(pieces), True
    pieces.append(tail)
    return b"".join(pieces), False
