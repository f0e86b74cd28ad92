"""No key and no `Authorization` value in any span; with payloads off, no message text at all.
And off by default: nothing of OpenTelemetry is imported when the environment does not ask."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from langchain_core.tools import tool

from graph import build_graph
from graph.settings import ConfigError
from graph.tracing import tracing_wanted
from graph.tracing.setup import exporter_from_environment
from tests.support.openai_server import Reply, ScriptedOpenAIServer, ToolCall
from tests.tracing.conftest import Spans

KEY = "sk-tracing-test-0123456789abcdef"
BEARER = "tok-live-5e6f7a8b9c0d1e2f"
OPERATOR_KEY = "agent-operator-key-9f8e7d6c"


@tool
def fetch_headers(url: str) -> str:
    """Echo what a server answered, headers and all (a tool that quotes a credential)."""
    return f"HTTP 401 from {url} (sent Authorization: Bearer {BEARER}; api_key={KEY})"


def run_over_http(
    spans_on: Any, monkeypatch: pytest.MonkeyPatch, **options: Any
) -> tuple[Spans, dict[str, Any]]:
    """A real ChatOpenAI against the scripted server, with the key in the environment (where
    the agent and the tracer read it), and a tool whose result quotes the key and a bearer
    token."""
    script = [
        Reply(tool_calls=[ToolCall("fetch_headers", {"url": "https://user:pw123456@api.test/x"})]),
        Reply(content="The server refused the request."),
    ]
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("AGENT_API_KEYS", f"first-key-0000,{OPERATOR_KEY}")
    monkeypatch.setenv("REACT_AGENT_LOCAL", "off")
    spans = spans_on(environ=dict(os.environ), **options)
    with ScriptedOpenAIServer(script) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        agent = build_graph(model="scripted", tools=[fetch_headers], protocol="native")
        question = f"Fetch it; my key is {KEY} and the operator's is {OPERATOR_KEY}."
        out = agent.invoke(
            {"messages": [("user", question)]}, {"configurable": {"thread_id": "t-secret"}}
        )
        assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"  # it was sent
    return spans, out


def test_no_key_or_authorization_value_is_in_any_span(
    traced: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    spans, out = run_over_http(traced, monkeypatch)
    assert out["status"] == "answered"
    text = spans.text()
    assert "fetch_headers" in text and "The server refused the request." in text  # traced
    for secret in (KEY, BEARER, OPERATOR_KEY, "pw123456"):
        assert secret not in text, f"{secret} leaked into a span"
    assert "Authorization: [redacted]" in text  # the header's name stays readable
    names = {k for s in spans.all for k in (s.attributes or {})}
    assert not [n for n in names if "api_key" in n.lower() or "authorization" in n.lower()]


def test_payloads_off_leaves_no_message_text(traced: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    spans, out = run_over_http(traced, monkeypatch, payloads=False)
    assert out["status"] == "answered"
    text = spans.text()
    assert "fetch_headers" in text  # the tool's name and the tree stay
    for payload in ("Fetch it", "The server refused", "HTTP 401", "api.test", "my key is"):
        assert payload not in text, f"message text {payload!r} is in a span with payloads off"
    llm = [s for s in spans.all if s.attributes["openinference.span.kind"] == "LLM"]
    assert llm and all("llm.token_count.total" in s.attributes for s in llm)  # tokens stay


def test_tracing_is_off_unless_the_environment_asks() -> None:
    assert not tracing_wanted({})
    assert not tracing_wanted({"OTEL_SERVICE_NAME": "agent"})  # a name alone asks for nothing
    assert tracing_wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:6006"})
    assert tracing_wanted({"OTEL_TRACES_EXPORTER": "console"})
    assert not tracing_wanted({"OTEL_TRACES_EXPORTER": "none"})
    assert not tracing_wanted(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}
    )


def test_off_by_default_nothing_of_opentelemetry_is_imported() -> None:
    """A run with tracing off imports nothing of the tracing set-up: no OpenInference, no
    instrumentation, no exporter or span processor (LangSmith, which LangChain imports, loads
    the bare SDK package where it is installed; that is not ours to save)."""
    code = (
        "import sys\n"
        "from graph.tracing import trace_from_environment\n"
        "from graph import build_graph\n"
        "from tests.support.scripted_model import ScriptedChatModel\n"
        "assert trace_from_environment() is None\n"
        "agent = build_graph(model=ScriptedChatModel(['hi']), tools=[])\n"
        "agent.invoke({'messages': [('user', 'hello')]})\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('openinference', "
        "'opentelemetry.instrumentation', 'opentelemetry.exporter', "
        "'opentelemetry.sdk.trace.export')))\n"
        "print(loaded)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER=zipkin is not one"),
        ({"OTEL_TRACES_EXPORTER": "otlp,console"}, "names 2 exporters"),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not"),
    ],
)
def test_a_setting_this_agent_cannot_follow_is_one_sentence(env: dict, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        exporter_from_environment(env)


def test_the_otlp_exporter_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    assert isinstance(exporter_from_environment({}), OTLPSpanExporter)
