"""Switching OpenTelemetry on for this process: a tracer provider, an exporter chosen by the
standard `OTEL_*` variables, the redacting processor, and OpenInference's LangChain
instrumentation.

Why OpenInference's `LangChainInstrumentor` and not spans of our own: it turns LangChain's
callback runs into spans with the OpenInference conventions that Phoenix, Arize and Aegra's set-up
read (LLM spans with the request messages, the reply, token counts and invocation parameters;
TOOL spans with arguments and result; CHAIN spans per graph node). LangGraph already opens a
callback run per node task (think, review, act, observe, finish, each middleware hook) and the
model and tool calls nest in them, so the span tree is the run's shape with no code in the nodes.

Once per process: the instrumentor is a singleton. When something else instrumented LangChain
first (Aegra, with its `OTEL_TARGETS`, or an application's own set-up), this adds nothing, so a
run is traced once, not twice. Switched on only by an entry point (`trace_from_environment`),
never at import.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from graph.settings import ConfigError

SERVICE = "react-agent"  # the service name when OTEL_SERVICE_NAME does not give one
# Attributes a span may hold when OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT does not say: the SDK's default
# (128) is reached by a model call of a 30-message conversation (a role, a text and the calls
# per message), and the SDK then drops the oldest attributes, the span's kind among them.
SPAN_ATTRIBUTES = 4096
MISSING = (
    "Tracing is switched on (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_TRACES_EXPORTER is set) but its "
    "packages are not installed: install the `tracing` extra (`uv sync --extra tracing`, or "
    "`pip install 'react-agent[tracing]'`), or unset those variables."
)


@dataclass
class Tracing:
    """What `enable_tracing` set up: flush it before a short-lived process exits (the provider
    also flushes at interpreter exit) and shut it down to switch tracing off again."""

    provider: Any  # opentelemetry.sdk.trace.TracerProvider
    processor: Any  # the RedactingSpanProcessor added to it
    instrumentor: Any  # LangChainInstrumentor
    owned: bool = False  # the provider was made here (and is nobody else's)

    def flush(self, timeout_millis: int = 30000) -> bool:
        return bool(self.processor.force_flush(timeout_millis))

    def shutdown(self) -> None:
        """Uninstrument LangChain and flush and stop this processor; a provider made here is
        shut down with it (so its exit handler does not stop the processor a second time), one
        given or found is left to whoever else uses it."""
        self.instrumentor.uninstrument()
        if self.owned:
            self.provider.shutdown()
        else:
            self.processor.shutdown()


def enable_tracing(
    *,
    exporter: Any = None,
    tracer_provider: Any = None,
    payloads: bool | None = None,
    batch: bool = True,
    secrets: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
) -> Tracing | None:
    """Instrument LangChain (and so every run of this agent) to export spans.

    `exporter`: a span exporter (say, `InMemorySpanExporter`); None builds one from
    `OTEL_TRACES_EXPORTER` (`otlp`, the default, over HTTP to `OTEL_EXPORTER_OTLP_ENDPOINT`, or
    `console`). `tracer_provider`: None uses the global SDK provider when one is set, else a new
    one (made global when the exporter comes from the environment), named by `OTEL_SERVICE_NAME`
    or `react-agent`. `payloads=False` keeps every message, prompt, tool argument and result out
    of the spans (True keeps them whatever the environment says); None follows OpenInference's
    own `OPENINFERENCE_HIDE_INPUTS` / `OPENINFERENCE_HIDE_OUTPUTS`. `batch=False` exports each
    span as it ends (tests).
    `secrets` are masked verbatim besides those of the environment.

    Returns None, adding nothing, when LangChain is already instrumented in this process.
    """
    env = os.environ if environ is None else environ
    try:
        from openinference.instrumentation import TraceConfig
        from openinference.instrumentation.langchain import LangChainInstrumentor
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import SpanLimits, TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    except ImportError:
        raise ConfigError(MISSING) from None

    from graph.tracing.redaction import RedactingSpanProcessor, environment_secrets

    instrumentor = LangChainInstrumentor()
    if instrumentor.is_instrumented_by_opentelemetry:
        return None
    from_env = exporter is None
    if exporter is None:
        exporter = exporter_from_environment(env)
    provider = tracer_provider
    if provider is None and from_env:
        provider = trace.get_tracer_provider()
    owned = not isinstance(provider, TracerProvider)
    if owned:
        attributes = {} if env.get("OTEL_SERVICE_NAME") else {"service.name": SERVICE}
        limits = None
        if not env.get("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT") and not env.get(
            "OTEL_ATTRIBUTE_COUNT_LIMIT"
        ):
            limits = SpanLimits(max_span_attributes=SPAN_ATTRIBUTES)
        provider = TracerProvider(resource=Resource.create(attributes), span_limits=limits)
        if from_env:
            trace.set_tracer_provider(provider)
    inner = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
    processor = RedactingSpanProcessor(inner, [*secrets, *environment_secrets(env)])
    provider.add_span_processor(processor)
    # None: OpenInference reads OPENINFERENCE_HIDE_* itself; a bool overrides them both ways
    shown = {} if payloads is None else {"hide_inputs": not payloads, "hide_outputs": not payloads}
    config = TraceConfig(**shown)
    instrumentor.instrument(tracer_provider=provider, config=config, skip_dep_check=True)
    # OpenInference reads `message.text()` the pre-1.0 way and LangChain warns about it on every
    # run's stderr; that one warning, from that package only, is not the user's to act on
    warnings.filterwarnings(
        "ignore",
        message=r"Calling \.text\(\) as a method",
        category=DeprecationWarning,
        module=r"openinference\.",
    )
    return Tracing(provider, processor, instrumentor, owned=owned)


def exporter_from_environment(env: Mapping[str, str]) -> Any:
    """The span exporter `OTEL_TRACES_EXPORTER` names (one; `otlp` by default), OTLP over the
    protocol `OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL` names (`http/protobuf` by default). The
    exporter reads its endpoint, headers and timeout from the standard variables itself."""
    names = [n.strip().lower() for n in env.get("OTEL_TRACES_EXPORTER", "otlp").split(",")]
    names = [n for n in names if n] or ["otlp"]
    if len(names) > 1:
        raise ConfigError(
            f"OTEL_TRACES_EXPORTER names {len(names)} exporters ({', '.join(names)}); this agent "
            "sends spans to one: use `otlp` and fan out in a collector."
        )
    if names[0] == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter(service_name=env.get("OTEL_SERVICE_NAME") or SERVICE)
    if names[0] != "otlp":
        raise ConfigError(
            f"OTEL_TRACES_EXPORTER={names[0]} is not one this agent builds: use `otlp` (with "
            "OTEL_EXPORTER_OTLP_ENDPOINT) or `console`."
        )
    protocol = (
        env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    if protocol != "http/protobuf":
        raise ConfigError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol} is not supported here: this agent exports "
            "OTLP over HTTP (`http/protobuf`, port 4318; Phoenix listens on 6006)."
        )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()
