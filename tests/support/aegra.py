"""Aegra instances serving this project's graph, as subprocesses, for integration tests and
benchmarks.

    with aegra(env={"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk-x"}) as served:
        client = langgraph_sdk.get_client(url=served.urls[0], api_key=served.api_key)

Each deployment gets a PostgreSQL database of its own (created fresh in the server named by
REACT_AGENT_TEST_POSTGRES, dropped afterwards) and a Redis server of its own (`redis-server` on
a free port: 6379 may be shared with other tests), and runs `instances` processes of the
documented command, `deploy/aegra/serve.py`, in the serving environment (deploy/aegra/.venv,
Python 3.12). Each process is its instance's server (the launcher runs uvicorn in-process), in
a session of its own; stopping is SIGTERM to that session's process group, then SIGKILL, and
the Redis server likewise, so nothing this module started outlives the context.

The launcher reads a temporary copy of deploy/aegra/aegra.json with absolute paths and without
`env`: a developer's `.env` must not leak into a test. The callers pass what runs need as
`env` (model endpoint, tools, Aegra's lease timings).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.support.langgraph_dev import clean_log, free_port, server_env

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy" / "aegra"
LAUNCHER = DEPLOY / "serve.py"
CONFIG = DEPLOY / "aegra.json"
SERVING_PYTHON = DEPLOY / ".venv" / "bin" / "python"
REDIS_SERVER = "redis-server"
# How the serving environment is made (the error a missing one reports).
SETUP = "uv sync --project deploy/aegra (on these machines add --python /path/to/python3.12)"
# Read at import, before the tests' clean_env removes REACT_AGENT_* variables.
POSTGRES_URL = (
    os.environ.get("REACT_AGENT_TEST_POSTGRES", "").strip()
    or "postgresql://postgres@127.0.0.1:5432/test"
)
# Aegra's crash recovery made quick for tests: a lease of 6 s renewed every 2 s, the reaper
# every 2 s (the defaults are 30, 10 and 15 s: a dead instance's runs resume within ~45 s).
FAST_RECOVERY = {
    "LEASE_DURATION_SECONDS": "6",
    "HEARTBEAT_INTERVAL_SECONDS": "2",
    "REAPER_INTERVAL_SECONDS": "2",
}
_QUIET = {"LOG_LEVEL": "WARNING", "ENV_MODE": "PRODUCTION", "OTEL_TARGETS": "", "NO_COLOR": "1"}


class AegraError(RuntimeError):
    """An instance or its services did not start; the message has the log tail."""


def missing() -> str | None:
    """Why Aegra instances cannot be started here, in one sentence; None when they can."""
    if not SERVING_PYTHON.exists():
        return f"the Aegra serving environment (Python 3.12) is not set up: {SETUP}"
    if shutil.which(REDIS_SERVER) is None:
        return "Aegra's tests start a Redis server of their own and redis-server is not on PATH"
    import psycopg

    try:
        psycopg.connect(POSTGRES_URL, connect_timeout=3).close()
    except psycopg.Error as exc:
        return f"Aegra's tests need PostgreSQL at {_where(POSTGRES_URL)} ({_first_line(exc)})"
    return None


@dataclass
class Process:
    """A started subprocess with its log; `pid` is also its process group's id."""

    name: str
    process: subprocess.Popen[bytes]
    log_path: Path
    _log_file: Any = field(default=None, repr=False)

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def log(self) -> str:
        try:
            return clean_log(self.log_path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            return ""

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def kill(self) -> None:
        """`kill -9` of this process alone, as a machine dying would end it."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        self.process.wait(10)

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM to the process group (the server and anything it started), then SIGKILL."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(grace)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(grace)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None


@dataclass
class Instance(Process):
    """One Aegra instance: its URL and its process."""

    url: str = ""

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=2) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False


@dataclass
class Deployment:
    """Running instances sharing one database and one Redis server."""

    instances: list[Instance]
    database_url: str
    redis_url: str
    api_key: str
    redis: Process
    workdir: Path

    @property
    def urls(self) -> list[str]:
        return [instance.url for instance in self.instances]

    @property
    def pids(self) -> list[int]:
        """Every process this deployment started (instances and Redis)."""
        return [*(i.pid for i in self.instances), self.redis.pid]

    def logs(self) -> str:
        return "\n".join(
            f"--- {i.name} ({'running' if i.alive() else f'exited {i.process.returncode}'}) ---\n"
            + i.log_tail()
            for i in self.instances
        )


def config_for_tests(workdir: Path) -> Path:
    """deploy/aegra/aegra.json with absolute paths and no `env`, written into `workdir`."""
    config = json.loads(CONFIG.read_text(encoding="utf-8"))

    def absolute(spec: str) -> str:
        path, colon, attribute = spec.partition(":")
        return str((DEPLOY / path).resolve()) + colon + attribute

    config["dependencies"] = [str((DEPLOY / dep).resolve()) for dep in config["dependencies"]]
    config["graphs"] = {name: absolute(spec) for name, spec in config["graphs"].items()}
    config["auth"]["path"] = absolute(config["auth"]["path"])
    config.pop("env", None)
    path = workdir / "aegra.json"
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    return path


def instance_command(config: Path, port: int, database_url: str, redis_url: str) -> list[str]:
    """The documented command (docs/deployment.md), with the serving environment's Python."""
    return [
        str(SERVING_PYTHON),
        str(LAUNCHER),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--database",
        database_url,
        "--redis",
        redis_url,
        "--config",
        str(config),
    ]


@contextlib.contextmanager
def aegra(
    env: Mapping[str, str] | None = None,
    *,
    instances: int = 2,
    api_key: str | None = None,
    startup_timeout: float = 120.0,
) -> Iterator[Deployment]:
    """Start a fresh database, a Redis server and `instances` Aegra instances; yield them
    (`.urls`, `.api_key`); stop every process and drop the database afterwards."""
    problem = missing()
    if problem is not None:
        raise AegraError(problem)
    key = api_key or f"test-{secrets.token_hex(8)}"
    with contextlib.ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="aegra-")))
        database_url = stack.enter_context(fresh_database())
        redis = stack.enter_context(redis_server(workdir))
        config = config_for_tests(workdir)
        base = {**_QUIET, **FAST_RECOVERY, **(env or {}), "AGENT_API_KEYS": key}
        started: list[Instance] = []
        stack.callback(_stop_all, started)
        deployment = Deployment(started, database_url, redis.url, key, redis, workdir)
        # one after another: on a fresh database each instance's start inserts the default
        # assistants, and two starting at once race on that insert (Aegra 0.11: the loser exits
        # with a duplicate key on assistant_pkey); a deployment rolls instances out alike
        for index in range(instances):
            port = free_port()
            started.append(
                _launch(
                    Instance,
                    f"aegra-{index}",
                    instance_command(config, port, database_url, redis.url),
                    workdir,
                    base,
                    url=f"http://127.0.0.1:{port}",
                )
            )
            _wait_healthy(deployment, startup_timeout)
        yield deployment


def _stop_all(started: list[Instance]) -> None:
    with ThreadPoolExecutor(max_workers=max(1, len(started))) as pool:
        list(pool.map(lambda instance: instance.stop(), started))


def _wait_healthy(deployment: Deployment, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    waiting = list(deployment.instances)
    while waiting:
        for instance in list(waiting):
            if not instance.alive():
                raise AegraError(
                    f"{instance.name} exited with status {instance.process.returncode}:\n"
                    + instance.log_tail()
                )
            if instance.healthy():
                waiting.remove(instance)
        if waiting and time.monotonic() > deadline:
            raise AegraError(f"no healthy /health within {timeout:.0f}s:\n" + deployment.logs())
        time.sleep(0.3)


def _launch(
    kind: type[Process] | type[Instance],
    name: str,
    command: list[str],
    workdir: Path,
    env: Mapping[str, str],
    **extra: Any,
) -> Any:
    log_path = workdir / f"{name}.log"
    log_file = open(log_path, "wb")  # noqa: SIM115 - closed by Process.stop
    process = subprocess.Popen(
        command,
        cwd=workdir,
        env=server_env(env),
        stdin=subprocess.DEVNULL,
        stdout=log_file,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, stopped as one
    )
    return kind(name, process, log_path, _log_file=log_file, **extra)


@dataclass
class RedisServer(Process):
    url: str = ""


@contextlib.contextmanager
def redis_server(workdir: Path, timeout: float = 15.0) -> Iterator[RedisServer]:
    """A private `redis-server` on a free loopback port, nothing persisted."""
    port = free_port()
    command = [
        REDIS_SERVER,
        "--bind",
        "127.0.0.1",
        "--port",
        str(port),
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        str(workdir),
    ]
    server: RedisServer = _launch(
        RedisServer, "redis", command, workdir, {}, url=f"redis://127.0.0.1:{port}/0"
    )
    try:
        deadline = time.monotonic() + timeout
        while not _redis_answers(port):
            if not server.alive() or time.monotonic() > deadline:
                raise AegraError(f"redis-server did not start on port {port}:\n{server.log_tail()}")
            time.sleep(0.1)
        yield server
    finally:
        server.stop()


def _redis_answers(port: int) -> bool:
    import socket

    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@contextlib.contextmanager
def fresh_database() -> Iterator[str]:
    """A new, empty database in the test PostgreSQL server; dropped (connections and all)
    afterwards. Yields its URL."""
    import psycopg
    from psycopg import sql

    name = f"aegra_test_{os.getpid()}_{secrets.token_hex(4)}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield urlunsplit(urlsplit(POSTGRES_URL)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


class _LogsOnFailure:
    """A pytest plugin: a failed test of `module` gets the instances' log tails in its report."""

    def __init__(self, deployment: Deployment, module: str) -> None:
        self.deployment = deployment
        self.module = module

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
        report = yield
        if report.failed and item.nodeid.startswith(self.module):
            report.sections.append(("Aegra instances' logs, last lines", self.deployment.logs()))
        return report


@contextlib.contextmanager
def report_failures(request: pytest.FixtureRequest, deployment: Deployment) -> Iterator[None]:
    """While active, failed tests of the requesting module show the instances' logs."""
    plugin = _LogsOnFailure(deployment, request.node.nodeid)
    request.config.pluginmanager.register(plugin)
    try:
        yield
    finally:
        request.config.pluginmanager.unregister(plugin)


def group_members(pgids: list[int]) -> list[int]:
    """Processes still in any of these process groups (read from /proc): what `stop` must
    leave empty."""
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if fields[0] != "Z" and int(fields[2]) in pgids:
                alive.append(int(stat.parent.name))
    return alive


def _where(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.hostname or 'localhost'}:{parts.port or 5432}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


if __name__ == "__main__":  # a manual check: start two instances, print their URLs, wait
    with aegra() as served:
        print(json.dumps({"urls": served.urls, "api_key": served.api_key}), flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()
    sys.exit(0)
