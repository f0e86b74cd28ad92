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
- A regular file with more than one hard link is skipped, when scanning and again when reading
  (`fstat`): a hard link is a second name for a file that may live anywhere on the same file
  system (`ln ~/.ssh/notes.txt notes/x.txt`), and no check of the path can tell. The search
  says how many were skipped (`Skipped`).
- Hidden files and folders (a leading dot) are skipped; at most `MAX_FILES` documents of at most
  `MAX_FILE_BYTES` each are read, and at most `MAX_ENTRIES` folder entries are looked at.
- At most `MAX_INDEXED_BYTES` (20 MiB) of documents are indexed, in path order: the trigram
  index is about 3.5 times the text (60 MB of notes made a 205 MB index), so this keeps it near
  70 MB. The search says how many files were left out.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

SUFFIXES = (".md", ".markdown", ".txt")
MAX_FILE_BYTES = 1024 * 1024
MAX_FILES = 20_000
MAX_ENTRIES = 200_000
MAX_INDEXED_BYTES = 20 * 1024 * 1024


@dataclass
class Skipped:
    """Documents a scan left out, for the sentence the search adds."""

    linked: int = 0  # regular files with more than one hard link
    over_cap: int = 0  # files past MAX_INDEXED_BYTES

    def sentence(self) -> str:
        """One line per reason, or "" when nothing was left out."""
        lines = []
        if self.linked:
            files = "file was" if self.linked == 1 else "files were"
            lines.append(
                f"[{self.linked} {files} skipped for having more than one hard link: a hard "
                f"link can make a file from outside the folder look like a note.]"
            )
        if self.over_cap:
            files = "file was" if self.over_cap == 1 else "files were"
            lines.append(
                f"[Only the first {_size(MAX_INDEXED_BYTES)} of notes are searched; "
                f"{self.over_cap} {files} left out.]"
            )
        return "\n".join(lines)


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


def _size(count: int) -> str:
    mib = 1024 * 1024
    return f"{count // mib} MiB" if count % mib == 0 else f"{count:,} bytes"


def scan(folder: Path, skipped: Skipped | None = None) -> dict[str, tuple[int, int]]:
    """{relative posix path: (mtime_ns, size)} of the documents: regular `.md`/`.txt` files with
    one link, found without following links, hidden ones skipped, up to `MAX_INDEXED_BYTES`.
    What was left out is counted in `skipped`."""
    skipped = skipped if skipped is not None else Skipped()
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
                if info.st_nlink > 1:
                    skipped.linked += 1
                    continue
                found[path] = (info.st_mtime_ns, info.st_size)
                if len(found) >= MAX_FILES:
                    return _capped(found, skipped)
    return _capped(found, skipped)


def _capped(found: dict[str, tuple[int, int]], skipped: Skipped) -> dict[str, tuple[int, int]]:
    """The documents in path order, up to `MAX_INDEXED_BYTES` of what will be read."""
    kept: dict[str, tuple[int, int]] = {}
    total = 0
    for path, (mtime, size) in sorted(found.items()):
        total += min(size, MAX_FILE_BYTES)
        if total > MAX_INDEXED_BYTES:
            skipped.over_cap += 1
            continue
        kept[path] = (mtime, size)
    return kept


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
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
            return None  # a FIFO, socket, device or hard link swapped in after the scan
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
