"""SQLite stores: a thread's lock on the database file itself, keyed on the file (its device
and inode), never on a name: a symlink, a relative path, a renamed file or a hard link from
another folder all reach the same lock.

On Linux the lock is an open-file-description byte-range lock (`F_OFD_SETLK`) on one byte of the
database per thread, far past the bytes SQLite locks (its lock page sits at 1 GiB; ours start at
1 TiB, and locking past the end of a file does not grow it). The kernel drops it when the
process ends. Elsewhere, an exclusive `flock` on a small file in a folder named after the
database's device and inode, next to its real path.

Each held lock has a descriptor of its own (two runs of one thread in one process must see
each other), and a released descriptor is kept for the next lock instead of closed: closing
any descriptor of a file drops every POSIX lock the process holds on it, SQLite's included, and
a worker running other threads on the same store may be inside a transaction right then.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import struct
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from graph.persistence.errors import ThreadBusy
from graph.persistence.urls import read_only_message, sqlite_path
from graph.settings import ConfigError
from tools.support.files import private_dir, private_file

# Open-file-description locks where the kernel has them (Linux, 64-bit struct flock).
OFD_LOCKS = sys.platform == "linux" and hasattr(fcntl, "F_OFD_SETLK") and struct.calcsize("@q") == 8
_BASE = 1 << 40  # the first byte of a thread lock: far past SQLite's lock page at 1 GiB
# Descriptors of SQLite stores whose lock was released, by (device, inode): reused, never
# closed, since closing one would drop SQLite's own locks in this process (see above).
_IDLE: dict[tuple[int, int], list[int]] = {}


def store_key(url: str) -> tuple[int, int]:
    """The SQLite store's (device, inode), the file created (0600) if new."""
    path = sqlite_path(url)
    try:
        private_file(path)
        info = path.stat()
    except PermissionError:
        raise ConfigError(read_only_message(path)) from None
    except OSError as exc:
        raise ConfigError(f"Cannot open the SQLite checkpointer {path}: {exc.strerror}.") from None
    return info.st_dev, info.st_ino


def lock_offset(thread_id: str) -> int:
    """The byte of the database file that stands for the thread (past 1 TiB)."""
    digest = hashlib.blake2b(thread_id.encode(), digest_size=8).digest()
    return _BASE + int.from_bytes(digest, "big") % _BASE


def lock_file(url: str, thread_id: str) -> Path:
    """Where systems without open-file-description locks keep the thread's flock file: a
    folder named after the database's device and inode, next to its real path."""
    real = Path(os.path.realpath(sqlite_path(url)))
    device, inode = store_key(url)
    name = hashlib.sha256(thread_id.encode()).hexdigest()[:32]
    return real.with_name(f"{real.name}.locks") / f"{device}-{inode}" / f"{name}.lock"


@contextmanager
def sqlite_lock(url: str, thread_id: str) -> Iterator[None]:
    """Hold the thread's lock on the store's file; ThreadBusy if another holder has it. Taking
    and dropping it are single system calls that never wait, so it needs no async form."""
    if not OFD_LOCKS:
        with _flock_file(url, thread_id):
            yield
        return
    key = store_key(url)
    fd = _idle_descriptor(key, sqlite_path(url))
    offset = lock_offset(thread_id)
    try:
        _ofd_lock(fd, fcntl.F_WRLCK, offset)
    except OSError as exc:
        _IDLE.setdefault(key, []).append(fd)
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            raise ThreadBusy.of(thread_id) from None
        raise
    try:
        yield
    finally:
        _ofd_lock(fd, fcntl.F_UNLCK, offset)
        _IDLE.setdefault(key, []).append(fd)
        _close_deleted()


def _close_deleted() -> None:
    """Close the kept descriptors of store files that were deleted: no other process can open
    such a file, so no lock on it matters, and a kept descriptor would hold its disk space for
    the process's life (a server that makes and deletes a store per test or per tenant)."""
    for key, fds in list(_IDLE.items()):
        kept = [fd for fd in fds if os.fstat(fd).st_nlink]
        for fd in set(fds) - set(kept):
            os.close(fd)
        if kept:
            _IDLE[key] = kept
        else:
            del _IDLE[key]


def _idle_descriptor(key: tuple[int, int], path: Path) -> int:
    """A descriptor of the store with no lock on it: a kept one, or a new one."""
    idle = _IDLE.get(key)
    while idle:
        fd = idle.pop()
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) == key and info.st_nlink:
            return fd
        os.close(fd)  # that file was deleted (and its inode reused): nothing of it is open
    try:
        return os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except PermissionError:
        raise ConfigError(read_only_message(path)) from None


def _ofd_lock(fd: int, kind: int, offset: int) -> None:
    """Set or clear the open-file-description lock on one byte (struct flock, 64-bit Linux:
    type, whence, start, length, pid, padded to 32 bytes)."""
    request = struct.pack("@hhqqi", kind, os.SEEK_SET, offset, 1, 0).ljust(32, b"\0")
    fcntl.fcntl(fd, fcntl.F_OFD_SETLK, request)  # type: ignore[attr-defined]


@contextmanager
def _flock_file(url: str, thread_id: str) -> Iterator[None]:
    path = lock_file(url, thread_id)
    private_dir(path.parent.parent)
    private_dir(path.parent)
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ThreadBusy.of(thread_id) from None
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextmanager
def held_exclusively(path: Path | None) -> Iterator[None]:
    """An exclusive `flock` on `path` for the block, waited for (None: no lock), around a
    read-then-write that other processes sharing a file make too (the approvals ledger's claims
    in the state folder's file: each holds it for one read and one write)."""
    if path is None:
        yield
        return
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # drops the flock (this descriptor is the lock file's alone)
