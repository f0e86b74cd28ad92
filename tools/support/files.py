"""Where the project keeps its files, and keeping them private to the user: folders 0700,
files 0600. The one place for both, used by the checkpoint store, the locks, the command line
and the knowledge index; it imports nothing heavy, so the command line starts fast.

Only what is created here gets these modes; folders and files that already exist (the user
made them, or chose their modes) are left as they are. SQLite gives a database's `-wal`,
`-shm` and `-journal` files the mode of the database file, so creating the database file 0600
before SQLite opens it keeps those private too.
"""

from __future__ import annotations

import os
from pathlib import Path

FOLDER_MODE = 0o700
FILE_MODE = 0o600


def state_dir() -> Path:
    """Where the agent keeps its files: REACT_AGENT_STATE_DIR, else the XDG state folder."""
    explicit = os.environ.get("REACT_AGENT_STATE_DIR", "").strip()
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_STATE_HOME", "").strip() or "~/.local/state"
    return Path(base).expanduser() / "react-agent"


def private_dir(path: Path) -> Path:
    """Create `path` and its missing parents, each 0700; return `path`."""
    missing: list[Path] = []
    current = path
    while not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=FOLDER_MODE)
        except FileExistsError:  # created meanwhile by someone else: theirs, left alone
            continue
        os.chmod(folder, FOLDER_MODE)  # the umask may have taken bits away
    return path


def private_file(path: Path) -> bool:
    """Create `path` empty with mode 0600 unless something is already there; True if created."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, FILE_MODE)
    except FileExistsError:
        return False
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    return True


__all__ = ["FILE_MODE", "FOLDER_MODE", "private_dir", "private_file"]
