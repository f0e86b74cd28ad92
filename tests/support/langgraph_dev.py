"""A real `langgraph dev` server as a subprocess, for integration tests.

    with langgraph_dev(env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-x"}) as dev:
        client = langgraph_sdk.get_client(url=dev.url)

The server runs the `langgraph` executable next to `sys.executable`, in its own process group,
from a temporary working directory (the in-memory runtime writes `.langgraph_api/` into its
cwd), with a temporary `langgraph.json` derived from the repository's one: graph paths and
dependencies made absolute, `env` dropped (a developer's `.env` must not leak into a test; the
caller passes what the run needs as `env`). LangSmith tracing, analytics and the version check
are off, and no LangSmith key is passed on.

The port is picked free and then confirmed from the server's own banner: the CLI silently
moves to another port when the asked one is busy, which would otherwise make the tests talk to
some other server. Readiness is `GET /ok` within a deadline. The log goes to a file; its tail
is part of every startup error, and `report_failures` adds it to the report of a failed test.
Stopping is SIGTERM to the process group, then SIGKILL.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
LANGGRAPH = Path(sys.executable).parent / "langgraph"

# Never passed on to the server: the developer's keys, endpoints, tracing and agent settings.
_SCRUBBED_PREFIXES = ("LANGSMITH_", "LANGCHAIN_", "OPENAI_", "REACT_AGENT_", "LANGGRAPH_")
_QUIET = {
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "PYTHONUNBUFFERED": "1",
    "NO_COLOR": "1",
}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_BANNER = re.compile(r"API:\s*http://([\w.\-]+):(\d+)")
_MOVED = re.compile(r"Port (\d+) is already in use, using port (\d+) instead")


class LangGraphDevError(RuntimeError):
    """The server did not start (or not where it was asked to); the message has the log tail."""


class PortTaken(LangGraphDevError):
    """Someone took the free port between our check and the server's bind; the CLI moved."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def repo_config(workdir: Path, *, absolute: bool = True) -> dict[str, Any]:
    """The repository's `langgraph.json`, its paths rewritten for a config file in `workdir`.

    `absolute=True` (for `langgraph dev`) makes graph paths and dependencies absolute;
    `absolute=False` (for `langgraph dockerfile`, which needs paths inside `dependencies` and
    relative to the config file) makes them relative to `workdir`. `env` is dropped.
    """
    config = json.loads((REPO / "langgraph.json").read_text(encoding="utf-8"))

    def moved(path: str) -> str:
        target = (REPO / path).resolve()
        return str(target) if absolute else os.path.relpath(target, workdir)

    config["dependencies"] = [
        moved(dep) if dep.startswith(".") else dep for dep in config.get("dependencies", ["."])
    ]
    graphs = {}
    for graph_id, spec in config["graphs"].items():
        path, _, variable = spec.rpartition(":")
        graphs[graph_id] = f"{moved(path)}:{variable}" if path.startswith(".") else spec
    config["graphs"] = graphs
    config.pop("env", None)
    return config


def server_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUBBED_PREFIXES)}
    env.update(_QUIET)
    env.update(extra or {})
    return env


def clean_log(text: str) -> str:
    return _ANSI.sub("", text)


@dataclass
class LangGraphDev:
    """A running `langgraph dev`: its URL, process and log."""

    process: subprocess.Popen[bytes]
    host: str
    port: int
    workdir: Path
    log_path: Path
    config_path: Path
    started_at: float = 0.0
    _log_file: Any = field(default=None, repr=False)
    started_in: float = 0.0  # seconds from launch to a good `/ok`

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def log(self) -> str:
        try:
            return clean_log(self.log_path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            return ""

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def alive(self) -> bool:
        return self.process.poll() is None

    def fail(
        self, message: str, kind: type[LangGraphDevError] = LangGraphDevError
    ) -> LangGraphDevError:
        return kind(
            f"{message}\n--- langgraph dev log ({self.log_path}), last lines ---\n{self.log_tail()}"
        )

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        url = f"{self.url}/ok"
        last = "no answer yet"
        while time.monotonic() < deadline:
            if not self.alive():
                raise self.fail(f"langgraph dev exited with status {self.process.returncode}")
            self._check_port()
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200 and self._banner_port() == self.port:
                        self.started_in = time.monotonic() - self.started_at
                        return
                    last = f"HTTP {response.status}"
            except (urllib.error.URLError, OSError) as exc:
                last = str(exc)
            time.sleep(0.2)
        raise self.fail(f"langgraph dev was not ready at {url} within {timeout:.0f}s ({last})")

    def _banner_port(self) -> int | None:
        found = _BANNER.search(self.log())
        return int(found.group(2)) if found else None

    def _check_port(self) -> None:
        log = self.log()
        moved = _MOVED.search(log)
        banner = self._banner_port()
        if moved or (banner is not None and banner != self.port):
            raise self.fail(
                f"langgraph dev did not listen on the port it was given ({self.port}); "
                f"its log says it moved to {moved.group(2) if moved else banner}",
                PortTaken,
            )

    def stop(self, grace: float = 5.0) -> None:
        if self.alive():
            stop_group(self.process, grace)
        # stragglers of the group (reloader or worker children) never outlive the fixture
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None


@contextlib.contextmanager
def langgraph_dev(
    env: Mapping[str, str] | None = None,
    *,
    config: Mapping[str, Any] | None = None,
    workdir: Path | None = None,
    host: str = "127.0.0.1",
    startup_timeout: float = 60.0,
    keep_log: Path | None = None,
) -> Iterator[LangGraphDev]:
    """Start `langgraph dev` on a free port, wait for `/ok`, yield it, stop it.

    `env` is added to a scrubbed copy of the environment (e.g. `OPENAI_BASE_URL`); `config`
    replaces the repository's `langgraph.json` (default: `repo_config(absolute=True)`);
    `workdir` is the server's cwd (default: a temporary directory, removed afterwards).
    """
    if not LANGGRAPH.exists():
        raise LangGraphDevError(f"{LANGGRAPH} not found: install the dev group (langgraph-cli)")
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="lgdev-")))
        workdir.mkdir(parents=True, exist_ok=True)
        config_path = workdir / "langgraph.json"
        config_path.write_text(
            json.dumps(dict(config) if config is not None else repo_config(workdir), indent=2),
            encoding="utf-8",
        )
        log_path = keep_log or workdir / "langgraph-dev.log"
        for attempt in range(1, _ATTEMPTS + 1):
            dev = _start(config_path, workdir, log_path, host, env)
            try:
                dev.wait_ready(startup_timeout)
            except PortTaken:
                dev.stop()
                if attempt == _ATTEMPTS:
                    raise
                continue
            except BaseException:
                dev.stop()
                raise
            break
        try:
            yield dev
        finally:
            dev.stop()


_ATTEMPTS = 3  # only a port taken in the meantime is retried, with another free port


def _start(
    config_path: Path, workdir: Path, log_path: Path, host: str, env: Mapping[str, str] | None
) -> LangGraphDev:
    port = free_port(host)
    log_file = open(log_path, "wb")  # noqa: SIM115 - closed by LangGraphDev.stop
    started = time.monotonic()
    process = subprocess.Popen(
        [
            str(LANGGRAPH),
            "dev",
            "--config",
            str(config_path),
            "--no-browser",
            "--no-reload",
            "--host",
            host,
            "--port",
            str(port),
        ],
        cwd=workdir,
        env=server_env(env),
        stdin=subprocess.DEVNULL,
        stdout=log_file,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, stopped as one
    )
    return LangGraphDev(
        process, host, port, workdir, log_path, config_path, started, _log_file=log_file
    )


class _LogOnFailure:
    """A pytest plugin: a failed test of `module` gets the server's log tail in its report."""

    def __init__(self, dev: LangGraphDev, module: str) -> None:
        self.dev = dev
        self.module = module

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
        report = yield
        if report.failed and item.nodeid.startswith(self.module):
            state = "running" if self.dev.alive() else f"exited ({self.dev.process.returncode})"
            report.sections.append(
                (
                    f"langgraph dev log, last lines ({state}, {self.dev.log_path})",
                    self.dev.log_tail(),
                )
            )
        return report


@contextlib.contextmanager
def report_failures(request: pytest.FixtureRequest, dev: LangGraphDev) -> Iterator[None]:
    """While active, failed tests of the requesting module show the server log's tail."""
    plugin = _LogOnFailure(dev, request.node.nodeid)
    request.config.pluginmanager.register(plugin)
    try:
        yield
    finally:
        request.config.pluginmanager.unregister(plugin)


def stop_group(process: subprocess.Popen, grace: float = 5.0) -> None:
    """SIGTERM a server's process group, then SIGKILL it if it is still there after `grace`."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(grace)
