"""Traced once, not twice: a second switch-on in the same process, or a host that instrumented
LangChain first (Aegra does, with its `OTEL_TARGETS`), adds nothing, and each run is one trace."""

from __future__ import annotations

from typing import Any

from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from graph import build_graph
from graph.tracing import enable_tracing, trace_from_environment
from tests.support.scripted_model import ScriptedChatModel
from tests.tracing.conftest import Spans

ASKING = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}


def one_run() -> None:
    agent = build_graph(model=ScriptedChatModel(["hello"]), tools=[])
    agent.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "t-once"}})


def test_a_second_switch_on_adds_nothing(traced: Any) -> None:
    spans: Spans = traced()
    assert enable_tracing(exporter=InMemorySpanExporter(), environ={}) is None
    assert trace_from_environment(ASKING) is None
    one_run()
    assert len(spans.named("react-agent")) == 1
    assert spans.tree() == [
        "react-agent (AGENT)",
        "  think (CHAIN)",
        "    ScriptedChatModel (LLM)",
        "  finish (CHAIN)",
    ]


def test_a_host_that_instrumented_first_keeps_the_only_trace() -> None:
    """What Aegra's set-up does at start (its own provider, LangChainInstrumentor), then the
    agent's entry point with OTEL_EXPORTER_OTLP_ENDPOINT set: nothing is added."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    host = LangChainInstrumentor()
    host.instrument(tracer_provider=provider)
    try:
        assert trace_from_environment(ASKING) is None
        one_run()
        roots = [s for s in exporter.get_finished_spans() if s.name == "react-agent"]
        assert len(roots) == 1
    finally:
        host.uninstrument()
