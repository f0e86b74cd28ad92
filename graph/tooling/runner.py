"""Run one tool call and always come back with a result: failures become error observations.

Unknown tool, arguments that fail the schema, an exception, a timeout: each is reported in a
sentence the model can act on. Only LangGraph's own control flow (interrupts) passes through.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import time
from collections.abc import Mapping
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langgraph.errors import GraphBubbleUp
from pydantic import ValidationError
from typing_extensions import TypedDict

from graph.lru import LRU
from graph.support.blocking import run_sync
from graph.workers import DaemonWorkers

T = TypeVar("T")
PendingCall = dict[str, Any]  # a LangChain ToolCall: name, args, id (and `error` if unusable)


class ToolResult(TypedDict):
    id: str
    name: str
    args: dict[str, Any] | str
    output: str
    is_error: bool
    duration_ms: float


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


def coerce_arguments(tool: BaseTool, raw: dict[str, Any] | str | None) -> dict[str, Any]:
    """Fit what the model sent to the tool: a plain string fills a one-argument tool, a lone
    misnamed key is renamed, JSON text is decoded. Anything else is left to validation."""
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


def _result(call: PendingCall, started: float, output: str, is_error: bool) -> ToolResult:
    return {
        "id": call["id"],
        "name": call["name"],
        "args": call["args"],
        "output": output,
        "is_error": is_error,
        "duration_ms": round((time.perf_counter() - started) * 1000, 3),
    }


def _prepare(
    call: PendingCall, tools: Mapping[str, BaseTool], started: float
) -> tuple[BaseTool, dict[str, Any]] | ToolResult:
    """The tool and its fitted arguments, or the error result when there is nothing to run."""
    if "error" in call:
        return _result(call, started, call["error"], True)
    tool = tools.get(call["name"])
    if tool is None:
        valid = ", ".join(tools) or "(none)"
        return _result(call, started, f"Unknown tool '{call['name']}'. Valid tools: {valid}.", True)
    try:
        return tool, coerce_arguments(tool, call["args"])
    except ArgumentsError as exc:
        text = f"Invalid arguments: {exc}. Expected {describe_arguments(tool)}."
        return _result(call, started, text, True)


def _failure(
    exc: Exception, call: PendingCall, tool: BaseTool, timeout: float, started: float
) -> ToolResult:
    """What the model is told when the call raised (LangGraph's interrupts pass through)."""
    if isinstance(exc, GraphBubbleUp):
        raise exc
    if isinstance(exc, ValidationError):
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
            for err in exc.errors()
        )
        text = (
            f"Invalid arguments for tool '{tool.name}': {problems}. "
            f"Expected {describe_arguments(tool)}."
        )
    elif isinstance(exc, TimeoutError):
        text = f"Tool '{tool.name}' timed out after {timeout:g} s."
    elif isinstance(exc, ToolException):
        text = str(exc) or f"Tool '{tool.name}' failed."
    else:
        text = f"Tool '{tool.name}' failed: {type(exc).__name__}: {exc}"
    return _result(call, started, text, True)


async def run_tool_call(
    call: PendingCall,
    tools: Mapping[str, BaseTool],
    timeout: float,
    config: RunnableConfig | None = None,
) -> ToolResult:
    """Execute one call; never raises except for LangGraph interrupts and cancellation."""
    started = time.perf_counter()
    prepared = _prepare(call, tools, started)
    if isinstance(prepared, dict):
        return prepared
    tool, args = prepared
    try:
        output = await asyncio.wait_for(tool.ainvoke(args, config), timeout)
    except Exception as exc:
        return _failure(exc, call, tool, timeout, started)
    return _result(call, started, _as_text(output), False)


# Sync runs call sync tools on worker threads, so a timeout can stop waiting for them; starting
# an event loop per call instead costs more than the rest of the step.
_POOL = DaemonWorkers("tool")


def run_tool_call_sync(
    call: PendingCall,
    tools: Mapping[str, BaseTool],
    timeout: float,
    config: RunnableConfig | None = None,
) -> ToolResult:
    """The sync form of `run_tool_call`: sync tools on a worker thread, async-only tools on a
    short-lived event loop."""
    started = time.perf_counter()
    prepared = _prepare(call, tools, started)
    if isinstance(prepared, dict):
        return prepared
    tool, args = prepared
    try:
        if isinstance(tool, StructuredTool) and tool.func is None:  # async-only
            output = run_sync(lambda: asyncio.wait_for(tool.ainvoke(args, config), timeout))
        else:
            context = contextvars.copy_context()  # LangGraph's config travels with the call
            future = _POOL.submit(context.run, tool.invoke, args, config)
            output = future.result(timeout)
    except Exception as exc:
        return _failure(exc, call, tool, timeout, started)
    return _result(call, started, _as_text(output), False)


def _as_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    content = getattr(output, "content", None)  # a ToolMessage or similar
    if isinstance(content, str):
        return content
    try:
        return json.dumps(output, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(output)
