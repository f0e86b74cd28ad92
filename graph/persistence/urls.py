"""Store URLs: `memory`, `sqlite:///path/file.sqlite`, `postgresql://...`, what kind each is,
how it is shown in a message (never with its password), and the SQLite file it names.

Files created here are private: the state folder 0700, a new SQLite file 0600 (its -wal/-shm
files follow it).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

from graph.redaction import redact
from graph.settings import ConfigError
from tools.support.files import private_dir, private_file, state_dir

ENV_VAR = "REACT_AGENT_CHECKPOINTER"
_HELP = (
    "use 'memory', 'sqlite:///path/to/file.sqlite' or "
    "'postgresql://user:password@host:5432/database'"
)


def default_url() -> str:
    return os.environ.get(ENV_VAR, "").strip() or f"sqlite:///{state_dir() / 'checkpoints.sqlite'}"


def describe(url: str) -> str:
    """The URL for messages: its password (in the userinfo, the query string, or a
    `key=value` connection string) masked, the user name and the rest kept."""
    if "://" not in url:
        return redact(url)  # `memory`, or a libpq key=value string
    parts = urlsplit(url)
    shown = url
    if parts.password is not None:
        user = parts.netloc.rpartition("@")[0].split(":", 1)[0]
        host = parts.netloc.rpartition("@")[2]
        shown = shown.replace(parts.netloc, f"{user}:***@{host}", 1)
    if parts.query:
        shown = shown.replace(f"?{parts.query}", f"?{redact(parts.query)}", 1)
    return shown


def url_secrets(url: str) -> tuple[str, ...]:
    """The URL's password as written and decoded, to mask verbatim in driver messages
    (libpq quotes what it cannot parse, spaces included)."""
    try:
        password = urlsplit(url).password if "://" in url else None
    except ValueError:
        password = None
    return tuple({password, unquote(password)}) if password else ()


def kind_of(url: str) -> str:
    """`memory`, `sqlite` or `postgres`; anything else is a ConfigError."""
    if url == "memory":
        return "memory"
    scheme = urlsplit(url).scheme
    if scheme == "sqlite":
        sqlite_path(url)
        return "sqlite"
    if scheme in ("postgres", "postgresql"):
        return "postgres"
    raise ConfigError(f"Unknown checkpointer URL {describe(url)!r}: {_HELP}.")


def sqlite_path(url: str) -> Path:
    """The file of a `sqlite:///relative` or `sqlite:////absolute` URL, its folder created."""
    rest = url[len("sqlite://") :]
    if not rest.startswith("/") or len(rest) < 2:
        raise ConfigError(f"Checkpointer URL {url!r} names no file: {_HELP}.")
    path = Path(rest[1:]).expanduser()  # sqlite:///rel/file or sqlite:////abs/file
    try:
        private_dir(path.parent)
    except OSError as exc:
        raise ConfigError(f"Cannot create the folder for {path}: {exc.strerror}.") from None
    return path


def sqlite_file(url: str) -> Path:
    """The SQLite file, created 0600 if new (SQLite gives its -wal/-shm files the same mode).
    A store this process cannot write (its file, or the folder its -wal and -shm files go in)
    is one sentence saying so, before SQLite fails on it half way through a command."""
    path = sqlite_path(url)
    try:
        private_file(path)
    except PermissionError:
        raise ConfigError(read_only_message(path)) from None
    except OSError as exc:
        if exc.errno == errno.EROFS:
            raise ConfigError(read_only_message(path)) from None
        raise ConfigError(f"Cannot create the checkpointer file {path}: {exc.strerror}.") from None
    if not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)):
        raise ConfigError(read_only_message(path))
    return path


def read_only_message(path: Path) -> str:
    return (
        f"The SQLite checkpointer {path} is read-only: give this user write access to it and to "
        f"its folder (SQLite writes its -wal and -shm files there), or choose another store "
        f"with --checkpointer or {ENV_VAR}."
    )
