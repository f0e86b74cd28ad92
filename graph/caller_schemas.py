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

from langchain_core.runnables import ensure_config
from langgraph.config import get_config
from pydantic import BaseModel
from typing_extensions import TypedDict, is_typeddict

from graph.settings import RUN_FIELDS, AgentContext, ConfigError, RunContext


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


# in a run's config: the run is nested in another graph's run (`nested_marked`)
NESTED = "__react_agent_nested__"


def nested_marked(config: Any) -> Any:
    """The config of a call of the graph, marked when the call comes from inside another
    graph's run (a parent graph's node, or a parent's node or tool calling the agent): its
    config, or the one LangChain passes down to code a task runs, then names the parent's task
    (`checkpoint_ns`), and LangGraph hands the parent's runtime context down to the agent."""
    inherited = ensure_config(config).get("configurable") or {}  # with the caller's own
    if not inherited.get("checkpoint_ns"):
        return config
    configurable = (config or {}).get("configurable") or {}
    return {**(config or {}), "configurable": {**configurable, NESTED: True}}


def settings_part(run_context: Any, caller_fields: frozenset[str]) -> Any:
    """The run settings a run context carries, the caller's own fields set aside; a caller's
    context object (a dataclass or pydantic instance) is read field by field. In a nested run
    (`nested_marked`) the context is the parent's, not addressed to the agent: its run
    settings are read and its other keys left alone, where a direct caller's unknown key is
    refused."""
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
    if _nested():
        return {k: v for k, v in run_context.items() if k in RUN_FIELDS}
    return {k: v for k, v in run_context.items() if k not in caller_fields}


def run_settings_only(run_context: Any) -> Any:
    """The run settings of a run context and nothing else: for a router, which cannot tell a
    nested run from its config (LangGraph hands routers the graph's config, not the node's),
    and never refuses a context think already read in this run (think says what it refused)."""
    part = settings_part(run_context, frozenset())
    if not isinstance(part, Mapping):
        return part
    return {k: v for k, v in part.items() if k in RUN_FIELDS}


def _nested() -> bool:
    try:
        return bool((get_config().get("configurable") or {}).get(NESTED))
    except RuntimeError:  # read outside a run (the command line resolving its settings)
        return False
