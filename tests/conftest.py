"""Shared fixtures: a clean environment for every test, the scripted OpenAI server, and the
local services some tests need.

Tests that need PostgreSQL, Redis or a browser skip, with the reason, when the service is not
there (so the README's test command passes on a machine without them); CI sets
REACT_AGENT_REQUIRE_SERVICES=1, which turns those skips into failures. A test says what it needs
with a marker (`@pytest.mark.postgres`, `redis`, `browser`, `aegra`) or by using one of the
fixtures in `SERVICE_FIXTURES`.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
from collections.abc import AsyncIterator, Iterator
from functools import cache
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from graph.settings import ENV_VARS
from tests.support.openai_server import ScriptedOpenAIServer

_ISOLATED = {
    *ENV_VARS.values(),
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "LANGSMITH_API_KEY",
    "LANGCHAIN_API_KEY",
}


REQUIRE_SERVICES = "REACT_AGENT_REQUIRE_SERVICES"
# Where each service is, overridable by one variable each (read at collection, before
# `clean_env` removes REACT_AGENT_* variables from the tests' environment).
SERVICE_URLS = {
    "postgres": ("REACT_AGENT_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test"),
    "redis": ("REACT_AGENT_TEST_REDIS", "redis://127.0.0.1:6379/0"),
}
DEFAULT_PORTS = {"postgresql": 5432, "postgres": 5432, "redis": 6379}
# Fixtures of the test modules that connect to a service: a test using one needs it.
SERVICE_FIXTURES = {
    "postgres": "postgres",
    "database": "postgres",
    "schema_url": "postgres",
    "two_instances": "aegra",  # tests/integration/test_aegra.py
}
# Parametrized fixtures whose given value needs a service: (fixture, value) -> service.
SERVICE_PARAMS = {("store", "postgres"): "postgres"}
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
# Each service a test may mark that it needs (`@pytest.mark.<name>`), and what it is.
SERVICES = {
    "postgres": "PostgreSQL",
    "redis": "Redis",
    "browser": "Chromium",
    "aegra": "Aegra's serving environment, PostgreSQL and redis-server",
}


def listening(host: str, port: int, timeout: float = 0.5) -> bool:
    """Whether something accepts TCP connections at host:port (a short connect, nothing sent)."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def service_url(name: str, env: dict[str, str] | None = None) -> str:
    variable, default = SERVICE_URLS[name]
    source = os.environ if env is None else env
    return source.get(variable, "").strip() or default


def service_problem(name: str, env: dict[str, str] | None = None) -> str | None:
    """Why service `name` cannot be used, in one sentence; None when it can."""
    if name == "browser":
        return _missing_browser()
    if name == "aegra":
        from tests.support.aegra import missing  # imports psycopg: only where a test asks

        return missing()
    variable, _ = SERVICE_URLS[name]
    parts = urlsplit(service_url(name, env))
    host, port = parts.hostname or "127.0.0.1", parts.port or DEFAULT_PORTS[parts.scheme]
    if listening(host, port):
        return None
    return f"{name} needs a server at {host}:{port} and nothing listens there (set {variable})"


@cache
def missing_service(name: str) -> str | None:
    """`service_problem` for this session's environment, probed once per service."""
    return service_problem(name)


def _missing_browser() -> str | None:
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "browser tests need playwright (uv sync --group dev)"
    if any(shutil.which(name) for name in CHROMIUM_NAMES):
        return None
    return "browser tests need Chromium on PATH (apt-get install chromium)"


def needed_services(item: pytest.Item) -> set[str]:
    """The services a collected test needs: its markers, its fixtures, its parameters."""
    needs = {name for name in SERVICES if item.get_closest_marker(name)}
    needs |= {
        SERVICE_FIXTURES[f] for f in getattr(item, "fixturenames", ()) if f in SERVICE_FIXTURES
    }
    params = getattr(getattr(item, "callspec", None), "params", {})
    needs |= {
        service for (key, value), service in SERVICE_PARAMS.items() if params.get(key) == value
    }
    return needs


_REQUIRED = os.environ.get(REQUIRE_SERVICES, "").strip() not in ("", "0")  # before clean_env


def pytest_configure(config: pytest.Config) -> None:
    for name, what in SERVICES.items():
        config.addinivalue_line("markers", f"{name}: needs {what}; skipped when it is not there")
    # A suite started in the background of a non-interactive shell (`pytest &`, nohup, some CI
    # runners) inherits SIGINT ignored, and so would every process a test starts: the Ctrl-C
    # tests would wait out their timeouts. Python's own handler is put back, so a child starts
    # with the default action and installs its KeyboardInterrupt as usual.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test whose service is missing is skipped with the reason, or fails when CI requires
    the services (REACT_AGENT_REQUIRE_SERVICES=1)."""
    reasons = [r for r in map(missing_service, sorted(needed_services(item))) if r is not None]
    if not reasons:
        return
    if _REQUIRED:
        pytest.fail(f"{'; '.join(reasons)} ({REQUIRE_SERVICES} is set).", pytrace=False)
    pytest.skip("; ".join(reasons))


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A developer's own keys, endpoints and agent settings never leak into a test."""
    for name in list(os.environ):
        # OTEL_* / OPENINFERENCE_*: a developer's own tracing set-up would instrument LangChain
        # in every test that builds a graph (tests/tracing switches it on itself)
        if name in _ISOLATED or name.startswith(("REACT_AGENT_", "OTEL_", "OPENINFERENCE_")):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANGSMITH_TRACING", "false")
    monkeypatch.setenv("REACT_AGENT_LOCAL", "off")  # the embedded model only where a test asks
    monkeypatch.setenv("REACT_AGENT_STATE_DIR", str(tmp_path_factory.mktemp("state")))


@pytest.fixture
def openai_server() -> Iterator[ScriptedOpenAIServer]:
    """A started scripted server with an empty script; tests `add(...)` their replies."""
    with ScriptedOpenAIServer() as server:
        yield server


# The `langgraph dev` modules (server tests, faults, security) share these two; each module
# provides its own module-scoped `model_server` and `dev`.
@pytest.fixture
def script(model_server: ScriptedOpenAIServer) -> Iterator[ScriptedOpenAIServer]:
    """The module's scripted endpoint, emptied of what an earlier failed test left behind."""
    while model_server.remaining:  # each request consumes one item (public HTTP API only)
        httpx.post(f"{model_server.base_url}/chat/completions", json={"messages": []}, timeout=10)
    yield model_server


@pytest.fixture
async def client(dev: Any) -> AsyncIterator[Any]:
    """A LangGraph SDK client of the module's `langgraph dev` server, as Agent Chat UI uses."""
    from langgraph_sdk import get_client

    sdk = get_client(url=dev.url, timeout=30)
    try:
        yield sdk
    finally:
        await sdk.aclose()
