"""The HTTP tools against a real HTTP server on 127.0.0.1 (stdlib ThreadingHTTPServer), and the
knowledge index shared by two processes at once. Nothing leaves the machine."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from multiprocessing.queues import Queue
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from langchain_core.tools import ToolException

from tests.unit.test_tools_weather import (
    BEIJING_CMA,
    BEIJING_OPEN_METEO,
    CMA_NOW,
    CMA_STATIONS,
    CURRENT_UNITS,
    FORECASTS,
    GEOCODING,
    GUANGZHOU_OPEN_METEO,
)
from tests.unit.test_tools_wikipedia import INDIA_OBSERVATION, INDIA_RESPONSE
from tools.knowledge import index_path, search_knowledge
from tools.weather import weather
from tools.web_fetch import web_fetch
from tools.wikipedia import wikipedia

pytestmark = pytest.mark.integration


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    stream_bytes: int = 0  # send this many bytes in chunks, without Content-Length

    @classmethod
    def json(cls, data: object, status: int = 200) -> Reply:
        return cls(
            status,
            json.dumps(data, ensure_ascii=False).encode(),
            {"Content-Type": "application/json; charset=utf-8"},
        )

    @classmethod
    def html(cls, text: str, status: int = 200, **headers: str) -> Reply:
        return cls(status, text.encode(), {"Content-Type": "text/html; charset=utf-8", **headers})


Route = Callable[[dict[str, str]], Reply]


class LocalServer:
    """Routes by path; a route is a function of the query parameters, or a list of replies
    given in turn (the last one repeats). Every request is recorded."""

    def __init__(self) -> None:
        self.routes: dict[str, Route | list[Reply]] = {}
        self.requests: list[tuple[str, dict[str, str], dict[str, str]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                server.requests.append((parts.path, query, dict(self.headers)))
                route = server.routes.get(parts.path)
                if route is None:
                    reply = Reply(404, b"not found")
                elif callable(route):
                    reply = route(query)
                else:
                    reply = route[0] if len(route) == 1 else route.pop(0)
                time.sleep(reply.delay)
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._send(reply)

            def _send(self, reply: Reply) -> None:
                self.send_response(reply.status)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                if reply.stream_bytes:
                    self.send_header("Connection", "close")
                    self.end_headers()
                    chunk = b"z" * 65536
                    for _ in range(reply.stream_bytes // len(chunk)):
                        self.wfile.write(chunk)
                    self.close_connection = True
                    return
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def paths(self) -> list[str]:
        return [path for path, _, _ in self.requests]


@pytest.fixture
def server() -> Iterator[LocalServer]:
    local = LocalServer()
    local.thread.start()
    try:
        yield local
    finally:
        local.httpd.shutdown()
        local.httpd.server_close()


@pytest.fixture(autouse=True)
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith("REACT_AGENT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("REACT_AGENT_HTTP_BACKOFF", "0")
    monkeypatch.setenv("REACT_AGENT_HTTP_TIMEOUT", "5")
    monkeypatch.setenv("REACT_AGENT_STATE_DIR", str(tmp_path / "state"))


def geocoding(query: dict[str, str]) -> Reply:
    place = GEOCODING.get(query["name"].casefold())
    return Reply.json({"results": [place], "generationtime_ms": 0.4} if place else {})


def forecast(query: dict[str, str]) -> Reply:
    return Reply.json(
        {
            "timezone": "Asia/Shanghai",
            "timezone_abbreviation": "GMT+8",
            "current_units": CURRENT_UNITS,
            "current": FORECASTS[query["latitude"]],
        }
    )


@pytest.fixture
def open_meteo(server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> LocalServer:
    monkeypatch.setenv("REACT_AGENT_OPEN_METEO_GEOCODING_URL", server.url)
    monkeypatch.setenv("REACT_AGENT_OPEN_METEO_URL", server.url + "/")
    server.routes["/v1/search"] = geocoding
    server.routes["/v1/forecast"] = forecast
    return server


@pytest.fixture
def cma(server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> LocalServer:
    monkeypatch.setenv("REACT_AGENT_WEATHER_PROVIDER", "cma")
    monkeypatch.setenv("REACT_AGENT_CMA_BASE_URL", server.url)
    server.routes["/api/autocomplete"] = lambda q: Reply.json(
        {"code": 0, "data": CMA_STATIONS.get(q["q"].casefold(), [])}
    )
    for station, data in CMA_NOW.items():
        server.routes[f"/api/now/{station}"] = [
            Reply.json({"msg": "success", "code": 0, "data": data})
        ]
    return server


# --- weather -----------------------------------------------------------------------------------


async def test_open_meteo_over_real_http(open_meteo: LocalServer) -> None:
    assert await weather.ainvoke({"location": "北京"}) == BEIJING_OPEN_METEO
    assert await weather.ainvoke({"location": "Guangzhou"}) == GUANGZHOU_OPEN_METEO
    path, query, headers = open_meteo.requests[0]
    assert (path, query["name"], query["count"]) == ("/v1/search", "北京", "1")
    assert headers["User-Agent"] == "react-agent/0.1 (+LangGraph ReAct agent)"
    assert await weather.ainvoke({"location": "Atlantis"}) == (
        "No weather station found for 'Atlantis'."
    )


async def test_cma_over_real_http(cma: LocalServer) -> None:
    assert await weather.ainvoke({"location": "北京"}) == BEIJING_CMA
    assert await weather.ainvoke({"location": "Beijing"}) == BEIJING_CMA.replace(
        "北京 (", "Beijing (", 1
    )
    assert cma.paths() == ["/api/autocomplete", "/api/now/54511"] * 2
    assert await weather.ainvoke({"location": "Xyz"}) == "No weather station found for 'Xyz'."


async def test_500_then_success(cma: LocalServer) -> None:
    cma.routes["/api/now/54511"] = [Reply(500, b"oops"), *cma.routes["/api/now/54511"]]
    assert await weather.ainvoke({"location": "北京"}) == BEIJING_CMA
    assert cma.paths() == ["/api/autocomplete", "/api/now/54511", "/api/now/54511"]


async def test_malformed_json(open_meteo: LocalServer) -> None:
    open_meteo.routes["/v1/forecast"] = [Reply(200, b'{"current": {"temperature_2m": 2')]
    with pytest.raises(ToolException) as caught:
        await weather.ainvoke({"location": "Beijing"})
    assert str(caught.value) == "Weather service (Open-Meteo) error: invalid JSON."


async def test_timeout(open_meteo: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_HTTP_TIMEOUT", "0.2")
    monkeypatch.setenv("REACT_AGENT_HTTP_RETRIES", "2")
    open_meteo.routes["/v1/search"] = [Reply.json({}, 200)]
    open_meteo.routes["/v1/search"][0].delay = 1.0
    started = time.monotonic()
    with pytest.raises(ToolException) as caught:
        await weather.ainvoke({"location": "Beijing"})
    assert str(caught.value) == "Weather service (Open-Meteo geocoding) timed out after 0.2 s."
    assert time.monotonic() - started < 1.5
    assert open_meteo.paths() == ["/v1/search", "/v1/search"]


async def test_streamed_oversize_response(
    open_meteo: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REACT_AGENT_HTTP_MAX_BYTES", "65536")
    open_meteo.routes["/v1/forecast"] = [Reply(200, stream_bytes=8 * 1024 * 1024)]
    started = time.monotonic()
    with pytest.raises(ToolException) as caught:
        await weather.ainvoke({"location": "Beijing"})
    assert str(caught.value) == "Weather service (Open-Meteo) error: response larger than 64 KB."
    assert time.monotonic() - started < 3


async def test_declared_oversize_response(
    open_meteo: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REACT_AGENT_HTTP_MAX_BYTES", "1000")
    open_meteo.routes["/v1/search"] = [Reply.json({"results": [], "pad": "x" * 5000})]
    with pytest.raises(ToolException) as caught:
        await weather.ainvoke({"location": "Beijing"})
    assert str(caught.value) == (
        "Weather service (Open-Meteo geocoding) error: response larger than 1000 bytes."
    )


async def test_connection_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("REACT_AGENT_WEATHER_PROVIDER", "cma")
    monkeypatch.setenv("REACT_AGENT_CMA_BASE_URL", f"http://127.0.0.1:{port}")
    with pytest.raises(ToolException) as caught:
        await weather.ainvoke({"location": "广州"})
    assert str(caught.value) == "Weather service (CMA) unreachable: connection refused."


def test_sync_invoke_over_real_http(open_meteo: LocalServer) -> None:
    assert weather.invoke({"location": "Beijing"}) == BEIJING_OPEN_METEO


# --- wikipedia ---------------------------------------------------------------------------------


async def test_wikipedia_over_real_http(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REACT_AGENT_WIKIPEDIA_URL", server.url)
    server.routes["/w/api.php"] = lambda q: (
        Reply.json(INDIA_RESPONSE)
        if q["srsearch"] == "India"
        else Reply.json({"batchcomplete": True})
    )
    assert await wikipedia.ainvoke({"query": "India"}) == INDIA_OBSERVATION
    assert await wikipedia.ainvoke({"query": "Qwzx"}) == "No Wikipedia results for 'Qwzx'."
    assert server.requests[0][1]["gsrsearch"] == "India"


# --- web_fetch ---------------------------------------------------------------------------------

PAGE = (
    "<html><head><title>Local page</title><script>alert(1)</script></head>"
    "<body><nav>menu</nav><h1>Hello</h1><p>from 127.0.0.1</p></body></html>"
)


async def test_web_fetch_refuses_the_local_server_by_default(server: LocalServer) -> None:
    server.routes["/page"] = [Reply.html(PAGE)]
    with pytest.raises(ToolException) as caught:
        await web_fetch.ainvoke({"url": f"{server.url}/page"})
    assert str(caught.value) == (
        f"Refusing to fetch {server.url}/page: 127.0.0.1 is a loopback address (allowed only if "
        f"listed in REACT_AGENT_FETCH_ALLOW)."
    )
    assert server.requests == []


async def test_web_fetch_allow_list_permits_the_local_server(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REACT_AGENT_FETCH_ALLOW", "127.0.0.1/32")
    server.routes["/old"] = [Reply.html("", 301, Location="/page")]
    server.routes["/page"] = [Reply.html(PAGE)]
    assert await web_fetch.ainvoke({"url": f"{server.url}/old"}) == (
        f"Title: Local page\nURL: {server.url}/page\n\nHello\nfrom 127.0.0.1"
    )
    assert server.paths() == ["/old", "/page"]
    assert server.requests[0][2]["Host"] == f"127.0.0.1:{server.port}"


async def test_web_fetch_allow_list_by_host_name(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REACT_AGENT_FETCH_ALLOW", "localhost")
    server.routes["/page"] = [Reply.html(PAGE)]
    url = f"http://localhost:{server.port}/page"  # the system resolver; ::1 may come first
    assert await web_fetch.ainvoke({"url": url}) == (
        f"Title: Local page\nURL: {url}\n\nHello\nfrom 127.0.0.1"
    )
    assert server.requests[-1][2]["Host"] == f"localhost:{server.port}"


async def test_web_fetch_redirect_out_of_the_allow_list_is_refused(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REACT_AGENT_FETCH_ALLOW", "127.0.0.1/32")
    server.routes["/jump"] = [Reply.html("", 302, Location=f"http://[::1]:{server.port}/x")]
    with pytest.raises(ToolException) as caught:
        await web_fetch.ainvoke({"url": f"{server.url}/jump"})
    assert str(caught.value) == (
        f"Refusing to follow the redirect from {server.url}/jump to http://[::1]:{server.port}/x: "
        f"::1 is a loopback address (allowed only if listed in REACT_AGENT_FETCH_ALLOW)."
    )


async def test_web_fetch_truncates_a_huge_page(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REACT_AGENT_FETCH_ALLOW", "127.0.0.1")
    monkeypatch.setenv("REACT_AGENT_HTTP_MAX_BYTES", "65536")
    monkeypatch.setenv("REACT_AGENT_FETCH_MAX_CHARS", "100")
    server.routes["/huge"] = [
        Reply(200, headers={"Content-Type": "text/plain"}, stream_bytes=4 * 1024 * 1024)
    ]
    result = await web_fetch.ainvoke({"url": f"{server.url}/huge"})
    assert result == (
        f"URL: {server.url}/huge\n[The page is larger than 64 KB; only the first 64 KB were "
        f"read.]\n\n{'z' * 100}\n[Cut: showing the first 100 of 65,536 characters.]"
    )


# --- knowledge base shared by two processes ----------------------------------------------------


def _search_in_child(results: Queue, rounds: int) -> None:
    try:
        for _ in range(rounds):
            result = search_knowledge("checkpoint answer")
        results.put(result.splitlines()[0])
    except BaseException as exc:
        results.put(f"error: {exc!r}")


def test_two_processes_index_and_search_the_same_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = tmp_path / "kb"
    corpus.mkdir()
    for i in range(40):
        (corpus / f"doc{i:02d}.md").write_text(
            f"# Document {i}\n\n"
            + "filler text about agents and tools. " * 200
            + ("\nThe checkpoint answer lives here.\n" if i == 17 else ""),
            encoding="utf-8",
        )
    monkeypatch.setenv("REACT_AGENT_KB_DIR", str(corpus))
    # Forked children are real processes (SQLite locks between them are file locks) that
    # start at once, without re-importing everything.
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    children = [context.Process(target=_search_in_child, args=(results, 5)) for _ in range(2)]
    for child in children:
        child.start()
    answers = [results.get(timeout=60) for _ in children]
    for child in children:
        child.join(timeout=60)
        assert child.exitcode == 0
    assert answers == ["[1] doc17.md — Document 17"] * 2
    with sqlite3.connect(index_path(corpus)) as conn:
        assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 40
