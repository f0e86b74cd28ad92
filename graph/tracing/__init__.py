"""OpenTelemetry for runs of this agent, switched on the standard way and off by default.

`trace_from_environment()` is what every entry point calls (the CLI and `langgraph dev` through
`build_graph`, Aegra through deploy/aegra): with no `OTEL_EXPORTER_OTLP_ENDPOINT`,
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_TRACES_EXPORTER` in the environment it reads three
variables and returns; nothing of OpenTelemetry is imported. `enable_tracing(exporter=...)` switches
it on in code (the tests and the bench hand it an in-memory exporter).

This package imports nothing heavy at import: `setup` and `redaction` import OpenTelemetry and
OpenInference, which only a switched-on process needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graph.tracing.setup import Tracing

# The standard variables that ask for traces (OpenTelemetry's SDK configuration). Any of them,
# non-empty, switches tracing on; `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` keeps it
# off whatever else is set.
ASKING = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_TRACES_EXPORTER",
)


def tracing_wanted(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the environment asks for traces: three dictionary lookups, so an entry point can
    call it on every start at no measurable cost."""
    import os

    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return False
    return any(env.get(name, "").strip() for name in ASKING)


def trace_from_environment(environ: Mapping[str, str] | None = None) -> Tracing | None:
    """Switch tracing on when the environment asks for it (`tracing_wanted`), once per process;
    None when it does not. A bad setting (an exporter this install lacks) is a `ConfigError`
    with one sentence."""
    if not tracing_wanted(environ):
        return None
    from graph.tracing.setup import enable_tracing

    return enable_tracing()


def enable_tracing(**options: Any) -> Tracing | None:
    """`graph.tracing.setup.enable_tracing`, imported when called."""
    from graph.tracing.setup import enable_tracing as enable

    return enable(**options)


__all__ = ["ASKING", "enable_tracing", "trace_from_environment", "tracing_wanted"]
