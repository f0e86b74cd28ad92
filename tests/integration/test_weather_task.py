"""The seed's task end to end: "What's the weather like in Beijing and Guangzhou?"

The real ChatOpenAI talks to the scripted OpenAI-compatible server, the real weather tool talks to
a local server speaking the China Meteorological Administration API (the first seed article's).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar
from urllib.parse import parse_qs, urlsplit

import pytest

from graph import build_graph
from tests.support.openai_server import Reply, ScriptedOpenAIServer, ToolCall
from tests.unit.test_tools_weather import CMA_NOW, CMA_STATIONS

pytestmark = pytest.mark.integration
QUESTION = "What's the weather like in Beijing and Guangzhou?"


def autocomplete(query: str) -> list[str]:
    """Stations whose Chinese or English name starts with the query, like CMA's endpoint."""
    stations = dict.fromkeys(s for found in CMA_STATIONS.values() for s in found)
    return [s for s in stations if any(n.casefold().startswith(query) for n in s.split("|")[1:3])]


class CMAHandler(BaseHTTPRequestHandler):
    paths: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        self.paths.append(url.path)
        if url.path == "/api/autocomplete":
            query = parse_qs(url.query)["q"][0].casefold()
            body = {"code": 0, "data": autocomplete(query)}
        elif url.path.startswith("/api/now/"):
            body = {"msg": "success", "code": 0, "data": CMA_NOW[url.path.rsplit("/", 1)[1]]}
        else:
            self.send_error(404)
            return
        data = json.dumps(body, ensure_ascii=False).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def cma_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), CMAHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("REACT_AGENT_WEATHER_PROVIDER", "cma")
    monkeypatch.setenv("REACT_AGENT_CMA_BASE_URL", base)
    monkeypatch.setenv("REACT_AGENT_HTTP_BACKOFF", "0")
    CMAHandler.paths = []
    yield base
    server.shutdown()
    server.server_close()


@pytest.fixture
def endpoint(openai_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("REACT_AGENT_MODEL", "deepseek-v3")


FINAL = (
    "Beijing: 23.4°C, humidity 43%, southwest wind 2.7 m/s. "
    "Guangzhou: 24.2°C, humidity 79%, northeast wind 1.3 m/s."
)


def test_native_protocol_two_parallel_weather_calls(
    openai_server: ScriptedOpenAIServer, cma_server: str, endpoint: None
) -> None:
    openai_server.add(
        Reply(
            tool_calls=[
                ToolCall("weather", {"location": "Beijing"}),
                ToolCall("weather", {"location": "Guangzhou"}),
            ]
        ),
        Reply(content=FINAL),
    )
    out = build_graph(protocol="native").invoke({"messages": [("user", QUESTION)]})
    assert out["status"] == "answered"
    actions = [s for s in out["steps"] if s["kind"] == "action"]
    assert [s["tool_input"]["location"] for s in actions] == ["Beijing", "Guangzhou"]
    assert {s["step"] for s in actions} == {1}  # one step, both calls in parallel
    assert "23.4°C" in actions[0]["observation"] and "24.2°C" in actions[1]["observation"]
    assert "23.4°C" in out["answer"] and "24.2°C" in out["answer"]
    sent = [m for m in openai_server.chat_requests[1].body["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in sent] == [s["observation"] for s in actions]
    assert len(openai_server.chat_requests) == 2


def test_text_protocol_the_deepseek_replies_from_the_seed(
    openai_server: ScriptedOpenAIServer, cma_server: str, endpoint: None
) -> None:
    openai_server.add(
        Reply(
            content=(
                "Thought: I need to get weather information for Beijing and Guangzhou. First, I "
                'will get the weather in Beijing.\n\nAction:\n```\n{\n "action": "weather",\n '
                '"action_input": {\n "location": "北京"\n }\n}\n```'
            )
        ),
        Reply(
            content=(
                "Thought: I have already obtained the weather information for Beijing. Next, I "
                'will obtain the weather information for Guangzhou.\n\nAction:\n```\n{\n"action": '
                '"weather",\n"action_input": {\n"location": "Guangzhou"\n}\n}\n```\nObservation'
            )
        ),
        Reply(
            content=(
                "Thought: I have obtained the weather information for Beijing and Guangzhou, and "
                f"now I can answer.\nFinal Answer: {FINAL}"
            )
        ),
    )
    out = build_graph(protocol="text").invoke({"messages": [("user", QUESTION)]})
    assert out["status"] == "answered" and out["answer"] == FINAL
    actions = [s for s in out["steps"] if s["kind"] == "action"]
    assert [s["tool_input"] for s in actions] == [{"location": "北京"}, {"location": "Guangzhou"}]
    assert [s["step"] for s in actions] == [1, 2]
    assert actions[0]["observation"].startswith("北京 (中国, 北京), 2025-04-26 15:00: 23.4°C")
    assert "24.2°C" in actions[1]["observation"]
    third = openai_server.chat_requests[2].body
    assert third["stop"] == ["Observation:"]
    observations = [m["content"] for m in third["messages"] if m["role"] == "user"][1:]
    assert observations[0].startswith("Observation: 北京 (中国, 北京)")
    assert observations[1].startswith("Observation: Guangzhou (China, Guangdong)")
    assert CMAHandler.paths.count("/api/autocomplete") == 2
