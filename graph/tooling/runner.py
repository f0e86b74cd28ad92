"""Fitting a model's arguments to a tool, and the sentences a failed call is reported in.

Unknown tool, arguments that fail the schema, an exception, a timeout: each is reported in a
sentence the model can act on (`graph.tooling.execution` runs the calls).
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, Tool, ToolException
from pydantic import ValidationError

from graph.lru import LRU


class ArgumentsError(ValueError):
    """Arguments that cannot be fitted to the tool's schema."""


_PARAMETERS = LRU(256)


def tool_parameters(tool: BaseTool) -> tuple[dict[str, Any], list[str]]:
    """The tool's argument properties and required names, from its JSON schema (cached by
    name, checked by identity: the schema is rebuilt from pydantic on every access otherwise)."""
    cached = _PARAMETERS.peek(tool.name)
    if cached is not None and cached[0] is tool:
        return cached[1], cached[2]
    schema = tool.tool_call_schema
    json_schema = schema if isinstance(schema, dict) else schema.model_json_schema()
    properties = json_schema.get("properties", {}) or {}
    required = list(json_schema.get("required", []) or [])
    _PARAMETERS.put(tool.name, (tool, properties, required))
    return properties, required


def declares_no_schema(tool: Any) -> bool:
    """A function tool made with `infer_schema=False`: it takes whatever arguments it is given
    (LangChain's schema for it, `args`, `kwargs` and a required `config`, is a catch-all, and
    `create_agent` passes the model's arguments on as they are)."""
    return isinstance(tool, StructuredTool) and tool.args_schema is None


def coerce_arguments(tool: BaseTool, raw: dict[str, Any] | str | None) -> dict[str, Any]:
    """Fit what the model sent to the tool: a plain string fills a one-argument tool, a lone
    misnamed key is renamed, JSON text is decoded. Anything else is left to validation."""
    if isinstance(raw, dict) and declares_no_schema(tool):
        return raw
    if isinstance(tool, Tool) and tool.args_schema is None:  # one text input, however named
        return raw if isinstance(raw, dict) else {} if raw is None else {"__arg1": raw}
    properties, required = tool_parameters(tool)
    if raw is None:
        return {}
    if isinstance(raw, str):
        text = raw.strip()
        if text.startswith("{"):
            try:
                decoded = json.loads(text)
            except ValueError:
                decoded = None
            if isinstance(decoded, dict):
                return coerce_arguments(tool, decoded)
        if not properties:
            return {}
        target = _single_target(properties, required)
        if target is None:
            raise ArgumentsError(
                f"tool '{tool.name}' takes several arguments ({', '.join(properties)}) and got "
                f"the plain text {text!r}; send a JSON object"
            )
        return {target: text}
    if isinstance(raw, dict):
        unknown = [key for key in raw if key not in properties]
        target = _single_target(properties, required)
        if properties and len(raw) == 1 and unknown and target is not None:
            return {target: next(iter(raw.values()))}
        return raw
    raise ArgumentsError(f"tool '{tool.name}' needs a JSON object of arguments, got {raw!r}")


def _single_target(properties: dict[str, Any], required: list[str]) -> str | None:
    if len(properties) == 1:
        return next(iter(properties))
    if len(required) == 1:
        return required[0]
    return None


def describe_arguments(tool: BaseTool) -> str:
    properties, required = tool_parameters(tool)
    parts = []
    for name, spec in properties.items():
        kind = spec.get("type") or "any"
        parts.append(f"{name}: {kind}{'' if name in required else ' (optional)'}")
    return "{" + ", ".join(parts) + "}"


class ToolDeadline(TimeoutError):
    """The call passed the run's `tool_timeout` and was abandoned (not a tool's own timeout,
    which is reported as the failure it is)."""


def failure_text(exc: Exception, tool_name: str, tool: BaseTool | None, timeout: float) -> str:
    """What the model is told when a call raised (LangGraph's interrupts never get here)."""
    source = getattr(exc, "source", None)  # ToolNode's ToolInvocationError wraps validation
    if isinstance(source, ValidationError):
        exc = source
    if isinstance(exc, ValidationError):
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
            for err in exc.errors()
        )
        expected = f" Expected {describe_arguments(tool)}." if tool is not None else ""
        return f"Invalid arguments for tool '{tool_name}': {problems}.{expected}"
    if isinstance(exc, ToolDeadline):
        return f"Tool '{tool_name}' timed out after {timeout:g} s."
    if isinstance(exc, ToolException):
        return str(exc) or f"Tool '{tool_name}' failed."
    return f"Tool '{tool_name}' failed: {type(exc).__name__}: {exc}"
