"""A span processor that keeps secrets out of every span, and names the run on its root span.

OpenInference records what LangChain's callbacks see: the request's messages, tool arguments and
results, error texts, invocation parameters. A secret can reach any of them through a side door
(a tool result that quotes an `Authorization` header, an endpoint error that repeats a URL with
credentials, an API key pasted into a question), so every span passes through `graph.redaction`,
the project's one masking function, before any exporter sees it: each string attribute, event
attribute and status text, with the secrets of the process's environment masked verbatim.
Attributes whose *name* says they hold a credential are dropped whole.

A finished span is read-only (`ReadableSpan`), so the processor hands its inner processor (the
batch exporter's) a cleaned copy built with the SDK's public constructor; the original is never
exported. The root span of a run (OpenInference's `AGENT` span, the compiled graph) also gets the
run's thread id, run id (when the server gave one), status and protocol as plain attributes, so a
viewer can filter on them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor
from opentelemetry.trace import Status

from graph.redaction import redact

# attribute names that hold a credential whatever their value looks like
SECRET_NAME = re.compile(r"authorization|api[_\-.]?key|password|passwd|secret|cookie", re.I)
# environment variables whose values are secrets (masked verbatim wherever they appear)
SECRET_VARIABLE = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|HEADERS", re.I)
SHORTEST_SECRET = 8  # shorter values ("true", "on", a port) would mask ordinary words
PREFIX = "react_agent."
# The inputs a span repeats from elsewhere, dropped: a graph node's input is the whole state
# (every message of the thread, again at every node), a model call's `input.value` the whole
# request serialized (its messages are `llm.input_messages.*`). Kept: a node's output (what it
# wrote), a tool's input (its arguments), the run's input (the question).
REPEATED_INPUTS = {
    "CHAIN": ("input.value", "input.mime_type", "llm.input_messages."),
    "LLM": ("input.value", "input.mime_type"),
}


def environment_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of the environment's secret-looking variables (`OPENAI_API_KEY`, the keys of
    `AGENT_API_KEYS`, the token in `OTEL_EXPORTER_OTLP_HEADERS`, ...), longest first so a key
    that contains another is masked whole. A value of several parts (`a,b`, `name=value`)
    gives the parts that hold a digit: the words around them (`authorization`) are not
    secrets, and masking them would hide them from every span."""
    env = os.environ if environ is None else environ
    found: set[str] = set()
    for name, value in env.items():
        if not SECRET_VARIABLE.search(name):
            continue
        parts = [p for p in re.split(r"[,;\s=]+", value.strip()) if p]
        if len(parts) == 1 and len(parts[0]) >= SHORTEST_SECRET:
            found.add(parts[0])
            continue
        for part in parts:
            if len(part) >= SHORTEST_SECRET and any(c.isdigit() for c in part):
                found.add(part)
    return sorted(found, key=len, reverse=True)


def _clean(value: Any, secrets: Sequence[str]) -> Any:
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, tuple | list):
        return tuple(redact(v, secrets) if isinstance(v, str) else v for v in value)
    return value


def clean_attributes(
    attributes: Mapping[str, Any] | None, secrets: Sequence[str], drop: tuple[str, ...] = ()
) -> dict[str, Any]:
    """`attributes` with credential-named keys (and keys starting with one of `drop`) left out
    and every text redacted."""
    return {
        key: _clean(value, secrets)
        for key, value in (attributes or {}).items()
        if not SECRET_NAME.search(key) and not key.startswith(drop)
    }


def _json(text: Any) -> Any:
    if not isinstance(text, str) or not text.startswith("{"):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def run_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """What a run's root span says about the run, read from OpenInference's own attributes (the
    run's metadata and, unless outputs are hidden, its output): thread id, run id, status,
    protocol. Empty for any other span."""
    if attributes.get("openinference.span.kind") != "AGENT":
        return {}
    found: dict[str, Any] = {}
    metadata = _json(attributes.get("metadata")) or {}
    thread = metadata.get("thread_id") or attributes.get("session.id")
    if thread:
        found[PREFIX + "thread_id"] = str(thread)
    if metadata.get("run_id"):
        found[PREFIX + "run_id"] = str(metadata["run_id"])
    output = _json(attributes.get("output.value")) or {}
    if isinstance(output.get("status"), str):
        found[PREFIX + "status"] = output["status"]
    protocols = [s.get("protocol") for s in output.get("steps") or () if isinstance(s, dict)]
    if protocol := next((p for p in protocols if p), None):
        found[PREFIX + "protocol"] = protocol
    return found


def cleaned(span: ReadableSpan, secrets: Sequence[str]) -> ReadableSpan:
    """A copy of `span` with no secret in it (and the run's attributes on a root span)."""
    original = span.attributes or {}
    kind = original.get("openinference.span.kind")
    drop = REPEATED_INPUTS.get(kind, ()) if span.parent is not None else ()
    attributes = clean_attributes(original, secrets, drop)
    # read before redaction, which may leave a JSON output unparsable ("input_tokens": [redacted])
    attributes.update(clean_attributes(run_attributes(original), secrets))
    events = [
        Event(event.name, clean_attributes(event.attributes, secrets), event.timestamp)
        for event in span.events
    ]
    status = span.status
    if status.description:
        status = Status(status.status_code, redact(status.description, secrets))
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=attributes,
        events=events,
        links=span.links,
        kind=span.kind,
        status=status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


class RedactingSpanProcessor(SpanProcessor):
    """Hands `inner` a redacted copy of each finished span (see the module's docstring)."""

    def __init__(self, inner: SpanProcessor, secrets: Iterable[str] = ()) -> None:
        self.inner = inner
        self.secrets = sorted({s for s in secrets if s}, key=len, reverse=True)

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        self.inner.on_start(span, parent_context=parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        self.inner.on_end(cleaned(span, self.secrets))

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)
