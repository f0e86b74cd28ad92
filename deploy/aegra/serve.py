"""Start one Aegra instance serving this project's graph: the command docs/deployment.md gives.

    uv run --project deploy/aegra python deploy/aegra/serve.py --port 2026

Every instance started this way against the same PostgreSQL database and Redis server is one
more worker of the same deployment: any instance answers any thread, and a run whose instance
dies is finished by another (Aegra's leases). What this adds to Aegra's own `aegra serve`:

- the project's settings and `.env` as `langgraph dev` reads them: `aegra.json` here names the
  same graph as `langgraph.json` and the same `.env` (the process environment wins over it);
- PostgreSQL and Redis checked before anything starts, the database created when it does not
  exist yet, and Aegra's migrations run under a PostgreSQL advisory lock, so instances started
  together never race on a fresh database (each instance then skips Aegra's own startup
  migrations);
- the key check (`deploy/aegra/auth.py`): it refuses to start with no key in `AGENT_API_KEYS`,
  since such a server would refuse every request;
- 127.0.0.1 unless `--host` says otherwise (Aegra's default is every interface);
- the server runs in this process (`uvicorn.run`), so this process's id is the server's: a
  supervisor's or a test's signal reaches the server itself (`aegra serve` starts uvicorn as
  a child and leaves it running when it is killed).

Errors a user can cause (no database URL, PostgreSQL or Redis unreachable, no key) end the
command with one sentence and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

HERE = Path(__file__).resolve().parent
CONFIG = HERE / "aegra.json"
KEYS_VARIABLE = "AGENT_API_KEYS"  # read by auth.py
# One number for this project's migration lock (any constant shared by every instance).
MIGRATION_LOCK = 0x7265_6163_7461_6567  # "reactaeg"
APP = "aegra_api.main:app"


class StartError(Exception):
    """Something the user can fix before the server can start; the message says what."""


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="deploy/aegra/serve.py",
        description="Serve the agent on Aegra (PostgreSQL + Redis); run it once per instance.",
    )
    parser.add_argument("--host", help="interface to listen on (default 127.0.0.1, or HOST)")
    parser.add_argument("--port", type=int, help="port to listen on (default 2026, or PORT)")
    parser.add_argument(
        "--database", help="PostgreSQL URL (default: DATABASE_URL from the environment or .env)"
    )
    parser.add_argument(
        "--redis", help="Redis URL (default: REDIS_URL from the environment or .env)"
    )
    parser.add_argument(
        "--config",
        type=Path,
        default=CONFIG,
        help="Aegra config (default: deploy/aegra/aegra.json)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="check the settings, PostgreSQL and Redis, run the migrations, then exit",
    )
    return parser.parse_args(argv)


def load_env_file(config_path: Path, config: Mapping[str, object], environ: dict[str, str]) -> None:
    """Apply the config's `env` as `langgraph dev` does: a dotenv file (relative to the config)
    or a mapping; variables already set in the environment keep their values."""
    spec = config.get("env")
    if isinstance(spec, Mapping):
        values = {str(k): str(v) for k, v in spec.items()}
    elif isinstance(spec, str) and spec:
        path = (config_path.parent / spec).resolve()
        if not path.is_file():
            return  # like `langgraph dev` without a .env: the environment alone
        from dotenv import dotenv_values

        values = {k: v for k, v in dotenv_values(path).items() if v is not None}
    else:
        return
    for name, value in values.items():
        environ.setdefault(name, value)


def read_config(path: Path) -> dict[str, object]:
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise StartError(f"Cannot read the Aegra config {path}: {exc.strerror}.") from None
    except json.JSONDecodeError as exc:
        raise StartError(f"The Aegra config {path} is not valid JSON ({exc}).") from None
    if not isinstance(config, dict) or not isinstance(config.get("graphs"), dict):
        raise StartError(f"The Aegra config {path} needs a `graphs` object, as langgraph.json has.")
    return config


def settle_environment(args: argparse.Namespace, environ: dict[str, str]) -> None:
    """Fill in the variables Aegra's settings read at import (so before importing it)."""
    config_path = args.config.resolve()
    load_env_file(config_path, read_config(config_path), environ)
    environ["AEGRA_CONFIG"] = str(config_path)
    if args.database:
        environ["DATABASE_URL"] = args.database
    if args.redis:
        environ["REDIS_URL"] = args.redis
    if args.host:
        environ["HOST"] = args.host
    if args.port:
        environ["PORT"] = str(args.port)
    environ.setdefault("HOST", "127.0.0.1")
    environ.setdefault("PORT", "2026")
    if not environ.get("DATABASE_URL", "").strip():
        raise StartError(
            "Give the PostgreSQL database: --database postgresql://USER@HOST:5432/NAME "
            "(or DATABASE_URL in the environment or .env)."
        )
    if not environ.get("REDIS_URL", "").strip():
        raise StartError(
            "Give the Redis server: --redis redis://HOST:6379/0 (or REDIS_URL in the environment "
            "or .env); for one process without it, use `uv run langgraph dev`."
        )
    if not any(key.strip() for key in environ.get(KEYS_VARIABLE, "").split(",")):
        raise StartError(
            f"Set {KEYS_VARIABLE} (in the environment or .env) to the key clients must send in "
            "the x-api-key header; without one the server would refuse every request."
        )
    environ["REDIS_BROKER_ENABLED"] = "true"  # the job queue, leases and the reaper
    environ["RUN_MIGRATIONS_ON_STARTUP"] = "false"  # done here, under a lock
    port = environ["PORT"]
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise StartError(f"The port must be a number from 1 to 65535, not {port!r}.")


def where(url: str) -> str:
    """A URL for a message: host, port and path, never a password."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def ensure_database(url: str) -> None:
    """Connect to the database, creating it first when the server says it does not exist."""
    import psycopg
    from psycopg import sql

    try:
        psycopg.connect(url, connect_timeout=5).close()
        return
    except psycopg.OperationalError as exc:
        if "does not exist" not in str(exc) or 'database "' not in str(exc):
            raise StartError(
                f"Cannot reach PostgreSQL at {where(url)}: {first_line(exc)}."
            ) from None
    name = urlsplit(url).path.lstrip("/")
    maintenance = urlunsplit(urlsplit(url)._replace(path="/postgres"))
    try:
        with psycopg.connect(maintenance, connect_timeout=5, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except psycopg.errors.DuplicateDatabase:
        pass  # another instance created it in the meantime
    except psycopg.Error as exc:
        raise StartError(
            f"The database {name!r} does not exist and could not be created ({first_line(exc)}); "
            "create it, or give a URL to one that exists."
        ) from None
    print(f"created database {name!r} at {where(url)}", file=sys.stderr)


def check_redis(url: str) -> None:
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=5)
    try:
        client.ping()
    except (redis.RedisError, OSError) as exc:
        raise StartError(f"Cannot reach Redis at {where(url)}: {first_line(exc)}.") from None
    finally:
        client.close()


def migrate(url: str, timeout: float = 600.0) -> None:
    """Bring Aegra's tables to the installed version, one instance at a time: a session-level
    advisory lock is held while Alembic runs (Aegra 0.11 takes none of its own).

    The lock is asked for with `pg_try_advisory_lock` every half second, never waited for in
    one statement: a waiting statement holds a snapshot, and Aegra's migrations build indexes
    CONCURRENTLY, which wait for every older snapshot in the database, so a second instance
    blocked in `pg_advisory_lock` would stall the first one's migration forever.

    LangGraph's checkpoint and store tables are set up here too: every instance runs their
    setup as it starts, and two instances doing it at once on a new database deadlock in
    PostgreSQL; done once here first, the instances' own setup finds nothing left to do."""
    import psycopg
    from aegra_api.core.migrations import run_migrations_if_needed
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.store.postgres import PostgresStore

    deadline = time.monotonic() + timeout
    with psycopg.connect(url, connect_timeout=5, autocommit=True) as conn:
        while not conn.execute("SELECT pg_try_advisory_lock(%s)", (MIGRATION_LOCK,)).fetchone()[0]:
            if time.monotonic() > deadline:
                raise StartError(
                    f"Another instance has been migrating the database for {timeout:.0f}s; "
                    "check it, then start this one again."
                )
            time.sleep(0.5)
        try:
            run_migrations_if_needed()
            with PostgresSaver.from_conn_string(url) as saver:
                saver.setup()
            with PostgresStore.from_conn_string(url) as store:
                store.setup()
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))


def first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0].rstrip(".")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        settle_environment(args, os.environ)  # type: ignore[arg-type]
        database = os.environ["DATABASE_URL"]
        ensure_database(database)
        check_redis(os.environ["REDIS_URL"])
        migrate(database)
    except StartError as exc:
        print(f"serve.py: {exc}", file=sys.stderr)
        return 2
    if args.check:
        print(f"ready to serve {os.environ['AEGRA_CONFIG']}", file=sys.stderr)
        return 0
    import uvicorn

    uvicorn.run(APP, host=os.environ["HOST"], port=int(os.environ["PORT"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
