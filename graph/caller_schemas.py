"""The caller's own state and run context (`build_graph(state_schema=..., context_schema=...)`),
the way `create_agent` takes them: the state schema's keys become channels beside the agent's
(in the input and output unless marked private); the context schema's fields reach tools and
middleware through `runtime.context`, beside the run settings.

The operator/run trust boundary stays: a caller field may not share a name with any setting,
and the caller's fields are set aside before the run settings are read, so they never reach
an operator setting.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, get_type_hints

from pydantic import BaseModel
from typing_extensions import TypedDict, is_typeddict

from graph.settings import AgentContext, ConfigError, RunContext


def field_names(schema: type | None) -> frozenset[str]:
    """The fields a TypedDict, dataclass or pydantic model declares."""
    if schema is None:
        return frozenset()
    if dataclasses.is_dataclass(schema):
        return frozenset(f.name for f in dataclasses.fields(schema))
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return frozenset(schema.model_fields)
    return frozenset(get_type_hints(schema))


def context_schema_for(schema: type | None) -> tuple[type, frozenset[str]]:
    """The graph's context schema (the run settings plus the caller's fields, when both are
    TypedDicts, so Studio's form shows both) and the caller's field names."""
    names = field_names(schema)
    clash = sorted(names & set(AgentContext.model_fields))
    if clash:
        raise ConfigError(
            f"context_schema field(s) {', '.join(clash)} have the name of a setting; rename "
            "them (settings come from the run context's own fields)."
        )
    if schema is None:
        return RunContext, names
    if is_typeddict(schema):
        merged = {**get_type_hints(RunContext, include_extras=True)}
        merged.update(get_type_hints(schema, include_extras=True))
        return TypedDict("RunContext", merged, total=False), names  # type: ignore[operator]
    return schema, names


def settings_part(run_context: Any, caller_fields: frozenset[str]) -> Any:
    """The run settings a run context carries, the caller's own fields set aside; a caller's
    context object (a dataclass or pydantic instance) is read field by field."""
    if run_context is None or isinstance(run_context, AgentContext):
        return run_context
    if isinstance(run_context, BaseModel):
        run_context = run_context.model_dump()
    elif dataclasses.is_dataclass(run_context) and not isinstance(run_context, type):
        run_context = {
            f.name: getattr(run_context, f.name) for f in dataclasses.fields(run_context)
        }
    if not isinstance(run_context, Mapping):
        return run_context
    return {k: v for k, v in run_context.items() if k not in caller_fields}
