"""Tracing switched on with an in-memory exporter, one test at a time.

`LangChainInstrumentor` is a process-wide singleton, so each test that needs spans instruments
through `graph.tracing.enable_tracing` and uninstruments when it ends; spans are exported as each
one ends (`batch=False`), so a test reads them right after its run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("openinference.instrumentation.langchain", reason="the `tracing` extra")

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from graph.tracing import enable_tracing


class Spans:
    """The finished spans of a test, read as a tree."""

    def __init__(self, exporter: InMemorySpanExporter) -> None:
        self.exporter = exporter

    @property
    def all(self) -> list[ReadableSpan]:
        return sorted(self.exporter.get_finished_spans(), key=lambda s: s.start_time or 0)

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.all if s.name == name]

    def children(self, span: ReadableSpan) -> list[ReadableSpan]:
        return [s for s in self.all if s.parent and s.parent.span_id == span.context.span_id]

    def tree(self) -> list[str]:
        """Each span as `name (KIND)` indented by its depth, in start order."""
        by_id = {s.context.span_id: s for s in self.all}

        def depth(span: ReadableSpan) -> int:
            level = 0
            while span.parent and span.parent.span_id in by_id:
                span = by_id[span.parent.span_id]
                level += 1
            return level

        return [
            "  " * depth(s) + f"{s.name} ({s.attributes.get('openinference.span.kind')})"
            for s in self.all
        ]

    def text(self) -> str:
        """Every name, attribute, event and status text of every span, as one string."""
        parts = []
        for span in self.all:
            parts.append(span.name)
            parts += [f"{k}={v}" for k, v in (span.attributes or {}).items()]
            for event in span.events:
                parts += [f"{k}={v}" for k, v in (event.attributes or {}).items()]
            parts.append(span.status.description or "")
        return "\n".join(parts)


@pytest.fixture
def traced() -> Iterator[Callable[..., Spans]]:
    """`traced(**options)` switches tracing on for this test (options as `enable_tracing`)."""
    active: list[Any] = []

    def switch_on(**options: Any) -> Spans:
        exporter = InMemorySpanExporter()
        options.setdefault("environ", {})
        tracing = enable_tracing(exporter=exporter, batch=False, **options)
        assert tracing is not None, "LangChain was already instrumented"
        active.append(tracing)
        return Spans(exporter)

    yield switch_on
    for tracing in active:
        tracing.shutdown()
