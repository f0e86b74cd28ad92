"""Which files in the notes folder are documents, and reading them without leaving the folder.

Kept apart from the index and the search because it is the security boundary of
`knowledge_search` (issue 16.4): the folder may come from a synced drive or a cloned repository,
and whatever is read here ends up in the model's context.

- Only regular files count: symlinks (to files or folders, pointing outside the folder or
  inside it), FIFOs, sockets and devices are skipped when scanning (`lstat`, never following a
  link). Links inside the folder are skipped too: a link can be re-pointed at any moment, so
  "it points inside" is not something a check can promise at read time, and a note reachable
  by a link is usually also present under its real name.
- Reading opens each path component relative to the folder with `O_NOFOLLOW` (`dir_fd`), the
  file itself also with `O_NONBLOCK`, then checks with `fstat` that what was opened is a
  regular file. A link or FIFO swapped in after the scan is refused by the open itself, and a
  FIFO never blocks the tool. (Where `dir_fd` or `O_NOFOLLOW` is missing, e.g. on Windows, the
  path is checked with `lstat` and `resolve` before opening instead.)
- Hidden files and folders (a leading dot) are skipped; at most `MAX_FILES` documents of at most
  `MAX_FILE_BYTES` each are read, and at most `MAX_ENTRIES` folder entries are looked at.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path

SUFFIXES = (".md", ".markdown", ".txt")
MAX_FILE_BYTES = 1024 * 1024
MAX_FILES = 20_000
MAX_ENTRIES = 200_000

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_FILE_FLAGS = (
    os.O_RDONLY
    | _NOFOLLOW
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_RELATIVE_OPEN = bool(_NOFOLLOW) and os.open in os.supports_dir_fd

_ATX = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")


def scan(folder: Path) -> dict[str, tuple[int, int]]:
    """{relative posix path: (mtime_ns, size)} of the documents: regular `.md`/`.txt` files,
    found without following links, hidden ones skipped."""
    found: dict[str, tuple[int, int]] = {}
    pending = [""]
    visited = 0
    while pending:
        relative = pending.pop()
        try:
            with os.scandir(folder / relative if relative else folder) as listing:
                entries = sorted(listing, key=lambda e: e.name, reverse=True)
        except OSError:
            continue
        for entry in entries:
            visited += 1
            if visited > MAX_ENTRIES:
                return found
            if entry.name.startswith("."):
                continue
            path = f"{relative}/{entry.name}" if relative else entry.name
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                pending.append(path)
            elif stat.S_ISREG(info.st_mode) and entry.name.lower().endswith(SUFFIXES):
                found[path] = (info.st_mtime_ns, info.st_size)
                if len(found) >= MAX_FILES:
                    return found
    return dict(sorted(found.items()))


def read_document(folder: Path, relative: str) -> str | None:
    """The text of `folder/relative` (its first `MAX_FILE_BYTES`), or None when that is not a
    regular file reached without following a link. OSError if it cannot be read."""
    try:
        fd = _open_inside(folder, relative)
    except OSError as exc:
        if _is_link_refusal(exc):
            return None
        raise
    if fd is None:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None  # a FIFO, socket or device swapped in after the scan
        chunks: list[bytes] = []
        size = 0
        while size < MAX_FILE_BYTES:
            chunk = os.read(fd, min(MAX_FILE_BYTES - size, 256 * 1024))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8-sig", errors="replace")


def _open_inside(folder: Path, relative: str) -> int | None:
    parts = relative.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return None
    if not _RELATIVE_OPEN:
        path = folder.joinpath(*parts)
        if path.is_symlink() or not path.resolve().is_relative_to(folder.resolve()):
            return None
        return os.open(path, _FILE_FLAGS)
    directory = os.open(folder, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            inner = os.open(part, _DIR_FLAGS | _NOFOLLOW, dir_fd=directory)
            os.close(directory)
            directory = inner
        return os.open(parts[-1], _FILE_FLAGS, dir_fd=directory)
    finally:
        os.close(directory)


def _is_link_refusal(exc: OSError) -> bool:
    """What `O_NOFOLLOW` (ELOOP; EMLINK on FreeBSD) or `O_DIRECTORY` on a non-folder (ENOTDIR)
    raise: the path is not a plain one inside the folder."""
    return exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENOTDIR)


def document_title(text: str, fallback: str) -> str:
    """The front-matter title, the first Markdown heading, a .txt file's short first line
    followed by a blank line, or `fallback` (the file name)."""
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":
        for index, line in enumerate(lines[1:40], start=1):
            if line.strip() in ("---", "..."):
                lines = lines[index + 1 :]
                break
            key, _, value = line.partition(":")
            if key.strip().lower() == "title" and value.strip():
                return value.strip().strip("\"'")
    for index, line in enumerate(lines[:200]):
        match = _ATX.match(line)
        if match:
            return match.group(1).strip()
        following = lines[index + 1] if index + 1 < len(lines) else ""
        if line.strip() and _SETEXT.match(following) and not _SETEXT.match(line):
            return line.strip()
    if fallback.lower().endswith(".txt"):  # plain text: a short first line set off by a blank
        filled = [line.strip() for line in lines[:3]]
        if len(filled) >= 2 and filled[0] and len(filled[0]) <= 80 and not filled[1]:
            return filled[0]
    return fallback
