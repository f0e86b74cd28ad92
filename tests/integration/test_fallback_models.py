"""`fallback_models`: the next model takes over on a connection error, a 429 or a 5xx, and
never on the run's deadline or a model that refuses tools. The real ChatOpenAI against two
scripted OpenAI-compatible servers, under both protocols."""

from __future__ import annotations

import socket

import pytest

from graph import build_graph
from tests.support.openai_server import HTTPError, Reply, ScriptedOpenAIServer

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-primary")
    monkeypatch.setenv("BACKUP_KEY", "sk-backup")


def answer(protocol: str) -> Reply:
    return Reply(content="Fine." if protocol == "native" else "Thought: ok\nFinal Answer: Fine.")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def agent(primary_url: str, backup: ScriptedOpenAIServer, protocol: str, **kw):
    return build_graph(
        model="primary",
        base_url=primary_url,
        tools=[],
        protocol=protocol,
        max_retries=0,
        fallback_models=[f"backup|{backup.base_url}|BACKUP_KEY"],
        **kw,
    )


@pytest.mark.parametrize("protocol", ["native", "text"])
@pytest.mark.parametrize(
    "failure", [HTTPError(503, "overloaded"), HTTPError(429, "slow down")], ids=["503", "429"]
)
def test_the_fallback_answers_when_the_endpoint_fails(protocol: str, failure) -> None:
    with ScriptedOpenAIServer([failure]) as primary, ScriptedOpenAIServer([answer(protocol)]) as b:
        out = agent(primary.base_url, b, protocol).invoke({"messages": [("user", "hi")]})
        assert (out["status"], out["answer"]) == ("answered", "Fine.")
        [request] = b.chat_requests
        assert request.body["model"] == "backup"
        assert request.headers.get("authorization") == "Bearer sk-backup"


@pytest.mark.parametrize("protocol", ["native", "text"])
def test_an_unreachable_endpoint_falls_back(protocol: str) -> None:
    with ScriptedOpenAIServer([answer(protocol)]) as backup:
        url = f"http://127.0.0.1:{closed_port()}/v1"
        out = agent(url, backup, protocol).invoke({"messages": [("user", "hi")]})
    assert out["answer"] == "Fine."


def test_the_runs_deadline_never_switches_models() -> None:
    slow = Reply(content="too late", delay=3)
    with ScriptedOpenAIServer([slow]) as primary, ScriptedOpenAIServer([answer("native")]) as b:
        out = agent(primary.base_url, b, "native", model_timeout=0.5).invoke(
            {"messages": [("user", "hi")]}
        )
        assert out["status"] in ("error", "timeout")
        assert b.chat_requests == []


def test_a_model_refusing_tools_goes_to_text_not_to_the_fallback() -> None:
    from langchain_core.tools import tool

    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    refused = HTTPError(400, "this model does not support tools", code="tools_unsupported")
    script = [refused, answer("text")]
    with ScriptedOpenAIServer(script) as primary, ScriptedOpenAIServer([]) as backup:
        graph = build_graph(
            model="primary",
            base_url=primary.base_url,
            tools=[echo],
            protocol="auto",
            max_retries=0,
            fallback_models=[f"backup|{backup.base_url}"],
        )
        out = graph.invoke({"messages": [("user", "hi")]})
        assert out["answer"] == "Fine." and backup.chat_requests == []
        assert any(s["kind"] == "fallback" for s in out["steps"])


def test_an_entry_without_a_model_is_one_sentence() -> None:
    graph = build_graph(model="m", base_url="http://127.0.0.1:9/v1", fallback_models=["|x"])
    out = graph.invoke({"messages": [("user", "hi")]})
    assert out["status"] == "error" and "names no model" in out["error"]


@pytest.mark.parametrize("protocol", ["native", "text"])
def test_an_entry_for_another_endpoint_without_a_key_variable_gets_no_key(protocol: str) -> None:
    """The primary's key belongs to the primary's endpoint: `model|url` is sent none."""
    down = HTTPError(503, "down")
    with ScriptedOpenAIServer([down]) as primary, ScriptedOpenAIServer([answer(protocol)]) as b:
        graph = build_graph(
            model="primary",
            base_url=primary.base_url,
            tools=[],
            protocol=protocol,
            max_retries=0,
            fallback_models=[f"backup|{b.base_url}"],
        )
        out = graph.invoke({"messages": [("user", "hi")]})
        [request] = b.chat_requests
    assert out["answer"] == "Fine."
    assert "sk-primary" not in str(request.headers.get("authorization"))


def test_a_fallback_on_the_same_endpoint_keeps_the_runs_key() -> None:
    with ScriptedOpenAIServer([HTTPError(503, "down"), answer("native")]) as primary:
        graph = build_graph(
            model="primary",
            base_url=primary.base_url,
            tools=[],
            max_retries=0,
            fallback_models=["backup", f"other|{primary.base_url}/"],
        )
        assert graph.invoke({"messages": [("user", "hi")]})["answer"] == "Fine."
        _first, second = primary.chat_requests
    assert second.body["model"] == "backup"
    assert second.headers.get("authorization") == "Bearer sk-primary"


def test_when_every_fallback_fails_the_error_names_the_endpoint_that_failed() -> None:
    down, bad = HTTPError(503, "down"), HTTPError(502, "bad gateway")
    with ScriptedOpenAIServer([down]) as primary, ScriptedOpenAIServer([bad]) as backup:
        out = agent(primary.base_url, backup, "native").invoke({"messages": [("user", "hi")]})
        urls = primary.base_url, backup.base_url
    assert out["status"] == "error"
    assert out["error"].startswith(
        f"The model endpoint {urls[1]} (model 'backup') kept failing with HTTP 502"
    )
    assert urls[0] not in out["error"] and "'primary'" not in out["error"]
