"""Commands that describe the set-up without running anything: `config` and `tools`.

`config` must start fast (no LangChain, no LangGraph, no tool modules), so listing the tools, which
imports every tool module and may start MCP servers, is its own command.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from graph.cli import options as o
from graph.cli.guard import run_command
from graph.cli.output import json_lines, say, visible, visible_json


@o.with_run_options
def config(run: o.RunOptions) -> None:
    """Show the settings a run would use (never the API key), where each value comes from
    (option, environment, .env, embedded-model default, default) and where state is stored.
    Takes the options a run takes, and refuses the settings a run refuses; tool names, MCP
    servers and approvals are checked when a run loads its tools (`react-agent tools`)."""
    import os

    before = frozenset(os.environ)  # run_command reads .env next: what it adds is its own

    def body() -> None:
        from graph.cli.checks import check_light
        from graph.redaction import redact
        from graph.settings import resolve_context

        ctx = resolve_context(run.settings(), labels=run.flags())
        run.response_format()  # a bad --schema is one sentence here too
        url = check_light(run, ctx, create=False)  # what every run refuses, config refuses too
        rows = _rows(ctx, run, before)
        rows["checkpointer"] = (url, _source(run, before)["checkpointer"])
        width = max(map(len, rows))
        for name, (value, source) in rows.items():  # URLs can carry credentials
            print(f"{name:{width}}  {visible(redact(value))}  ({source})")

    run_command(body)


def _rows(ctx: Any, run: o.RunOptions, before: frozenset[str]) -> dict[str, tuple[str, str]]:
    """Each setting's value as a run would use it, and where it comes from."""
    from graph.settings import EMBEDDED_DEFAULTS, shown_value

    embedded = _embedded(ctx)
    given = _source(run, before)
    rows: dict[str, tuple[str, str]] = {}
    for name, value in ctx.model_dump().items():
        source = given.get(name, "default")
        if name in embedded:  # the model and its endpoint: the embedded one, however chosen
            value = embedded[name]
            source = "embedded model" if name == "base_url" or source == "default" else source
        elif embedded and value is None and name in EMBEDDED_DEFAULTS:
            value, source = EMBEDDED_DEFAULTS[name], "embedded-model default"
        empty = "(the default tools)" if name == "tools" else "(none)"  # none named: all
        rows[name] = (empty if value in (None, []) else shown_value(value), source)
    return rows


def _source(run: o.RunOptions, before: frozenset[str]) -> dict[str, str]:
    """Where each setting given anywhere comes from: the option typed, else the environment
    variable (set before `.env` was read), else `.env`; missing: the default."""
    import os

    from graph.settings import ENV_VARS

    variables = {**ENV_VARS, "checkpointer": "REACT_AGENT_CHECKPOINTER"}
    found = {name: "default" for name in variables}
    for name, variable in variables.items():
        if os.environ.get(variable, "").strip():
            found[name] = f"environment {variable}" if variable in before else f".env {variable}"
    typed = {**run.settings(), **({"checkpointer": run.checkpointer} if run.checkpointer else {})}
    found.update({name: f"option {o.FLAGS[name]}" for name in typed})
    return found


def _embedded(ctx: Any) -> dict[str, str]:
    """The model and endpoint lines when a run would use the embedded model, else nothing.

    The same decision as `graph.models.factory.wants_local` (a test keeps the two in step),
    made without importing it: that module loads LangChain, and `config` must start fast.
    """
    import os
    from pathlib import Path

    from graph.models.local.model_file import GGUF_VARIABLE, installed_models, local_available

    configured = os.environ.get(ctx.api_key_env, "").strip() or ctx.base_url
    if ctx.model != "local" and (configured or not local_available()):
        return {}
    gguf = os.environ.get(GGUF_VARIABLE, "").strip()
    packaged = installed_models()
    label = Path(gguf).name if gguf else packaged[0].label if packaged else "not installed"
    why = "asked for by name" if ctx.model == "local" else f"no {ctx.api_key_env} or endpoint"
    return {
        "model": f"local: the embedded model ({label}; {why})",
        "base_url": "none: llama.cpp runs the model, started by each run that needs it",
    }


def tools(
    names: o.Tools = None, mcp_config: o.McpConfig = None, as_json: o.JsonLines = False
) -> None:
    """Every tool a run gets with this configuration: name, source and JSON argument schema."""

    def body() -> None:
        from graph.settings import resolve_context

        ctx = resolve_context(o.given(tools=names, mcp_config=mcp_config), labels=o.FLAGS)
        served = _mcp_records(ctx.mcp_config) if ctx.mcp_config else []
        records = _listed(ctx.tools, served)
        if as_json:
            json_lines(records)
            return
        for record in records:
            print(f"{visible(record['name'])}  ({visible(record['source'])})")
            for line in str(record.get("description") or "").strip().splitlines():
                print(f"    {visible(line)}")
            print(f"    schema: {visible_json(record['schema'])}")

    run_command(body)


def _listed(names: list[str] | None, served: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tools as `graph.tooling.registry.registry_tools` picks them: no names means every
    built-in and every MCP tool; a name is an import path, an MCP tool or a built-in tool; each
    name once (a later tool of the same name wins, as in the registry)."""
    from graph.tooling.registry import import_tools, registry_tools

    if not names:
        chosen = [_record(tool, "built-in") for tool in registry_tools(None)] + served
    else:
        by_name = {record["name"]: record for record in served}
        chosen = []
        for name in names:
            if ":" in name:
                chosen += [_record(tool, name) for tool in import_tools(name)]
            elif name in by_name:
                chosen.append(by_name[name])
            else:
                chosen += [_record(tool, "built-in") for tool in registry_tools([name])]
    return list({record["name"]: record for record in chosen}.values())


def _record(tool: Any, source: str) -> dict[str, Any]:
    return {
        "name": tool.name,
        "source": source,
        "description": tool.description,
        "schema": _schema(tool),
    }


def _schema(tool: Any) -> dict[str, Any]:
    """The arguments' JSON schema, as the model is shown it (function `parameters`: without the
    top-level title and description, which are the tool's name and description)."""
    return _schema_dict(tool.tool_call_schema)


def _schema_dict(schema: Any) -> dict[str, Any]:
    if schema is None:
        return {}
    if not isinstance(schema, dict):
        schema = (
            schema.model_json_schema()
            if hasattr(schema, "model_json_schema")
            else schema.schema()  # a pydantic v1 model
        )
    return {k: v for k, v in schema.items() if k not in ("title", "description")}


def _mcp_records(path: str) -> list[dict[str, Any]]:
    """The tools of the MCP servers in `path` (their servers started, then stopped), named as
    the registry names them."""
    if importlib.util.find_spec("tools.mcp") is None:
        say(f"note: this installation has no MCP support (tools.mcp), so {path} was not read.")
        return []
    from tools import TOOL_NAMES

    mcp = importlib.import_module("tools.mcp")
    try:  # named as the registry names them: never a built-in tool's name, which stays built-in
        found = mcp.describe(path, reserved=TOOL_NAMES)
    finally:
        mcp.close_all()
    return [
        {
            "name": item["name"],
            "source": f"mcp:{item['server']}",
            "description": item.get("description") or "",
            "schema": _schema_dict(item.get("schema")),
            "mcp_name": item.get("mcp_name"),
        }
        for item in found
    ]
