"""`react-agent`: ask the agent from a terminal and watch each step as it happens."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from typing import Annotated, Any

import typer
from rich.console import Console

from graph.checkpointer import default_url, describe, open_async_saver
from graph.context import ConfigError, load_env_file, resolve_context
from graph.render import StepPrinter

app = typer.Typer(
    help="A ReAct agent (think, act, observe) on LangGraph. Configure the model with "
    "OPENAI_API_KEY / OPENAI_BASE_URL / REACT_AGENT_MODEL or the options below.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

EXIT_CODES = {"answered": 0, "error": 1, "max_steps": 3}

Thread = Annotated[str | None, typer.Option("--thread", "-t", help="Thread id to continue.")]
Model = Annotated[str | None, typer.Option(help="Model name (REACT_AGENT_MODEL).")]
BaseUrl = Annotated[
    str | None, typer.Option("--base-url", help="OpenAI-compatible endpoint (OPENAI_BASE_URL).")
]
ProtocolOpt = Annotated[
    str | None, typer.Option(help="native, text or auto (REACT_AGENT_PROTOCOL).")
]
MaxSteps = Annotated[
    int | None, typer.Option("--max-steps", help="Most iterations (REACT_AGENT_MAX_STEPS).")
]
Tools = Annotated[str | None, typer.Option(help="Comma-separated tool names (REACT_AGENT_TOOLS).")]
Checkpointer = Annotated[
    str | None,
    typer.Option(
        help="memory, sqlite:///file.sqlite or postgresql://... (REACT_AGENT_CHECKPOINTER; "
        "default: a SQLite file under the state folder)."
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print the final result as JSON only.")]


def _settings(**given: Any) -> dict[str, Any]:
    """The options the user actually gave, as AgentContext fields."""
    return {key: value for key, value in given.items() if value is not None}


def _fail(message: str, code: int = 1) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}")
    return typer.Exit(code)


def _preflight(settings: dict[str, Any]) -> None:
    """Catch what the user can fix before a thread is created: settings, tools, endpoint."""
    from graph.agent import registry_tools
    from graph.models import resolve_model

    ctx = resolve_context(settings)
    registry_tools(ctx.tools)
    resolve_model(ctx)


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question or task.")],
    thread: Thread = None,
    model: Model = None,
    base_url: BaseUrl = None,
    protocol: ProtocolOpt = None,
    max_steps: MaxSteps = None,
    tools: Tools = None,
    checkpointer: Checkpointer = None,
    as_json: AsJson = False,
) -> None:
    """Ask one question; each step is shown as it happens."""
    settings = _settings(
        model=model, base_url=base_url, protocol=protocol, max_steps=max_steps, tools=tools
    )
    try:
        _preflight(settings)
    except (ConfigError, ValueError) as exc:
        raise _fail(str(exc), 2) from None
    thread_id = thread or uuid.uuid4().hex[:12]
    try:
        result = asyncio.run(_ask(question, thread_id, settings, checkpointer, as_json))
    except KeyboardInterrupt:
        err.print(
            f"\n[yellow]Interrupted.[/] The run is saved; continue it with: "
            f'react-agent ask --thread {thread_id} "..."'
        )
        raise typer.Exit(130) from None
    except ConfigError as exc:
        raise _fail(str(exc), 2) from None
    _finish(result, thread_id, as_json)


async def _ask(
    question: str,
    thread_id: str,
    settings: dict[str, Any],
    checkpointer: str | None,
    as_json: bool,
) -> dict[str, Any]:
    from graph.agent import build_graph

    async with open_async_saver(checkpointer or default_url()) as saver:
        agent = build_graph(checkpointer=saver, **settings)
        printer = StepPrinter(out, quiet=as_json)
        config = {"configurable": {"thread_id": thread_id}}
        payload = {"messages": [("user", question)]}
        final: dict[str, Any] = {}
        async for mode, chunk in agent.astream(payload, config, stream_mode=["custom", "values"]):
            if mode == "custom":
                printer.event(chunk)
            else:
                final = chunk
        return final


def _finish(result: dict[str, Any], thread_id: str, as_json: bool) -> None:
    status = result.get("status") or "error"
    if as_json:
        summary = {
            "thread_id": thread_id,
            "status": status,
            "answer": result.get("answer"),
            "error": result.get("error"),
            "steps": result.get("steps", []),
        }
        sys.stdout.write(json.dumps(summary, ensure_ascii=False, default=str, indent=2) + "\n")
    else:
        if status == "error":
            err.print(f"[bold red]error:[/] {result.get('error')}")
        err.print(f"[dim]thread {thread_id} · continue with --thread {thread_id}[/]")
    raise typer.Exit(EXIT_CODES.get(status, 1))


@app.command()
def config() -> None:
    """Show the effective configuration (never the API key) and where state is stored."""
    try:
        ctx = resolve_context()
    except ConfigError as exc:
        raise _fail(str(exc), 2) from None
    for name, value in ctx.model_dump().items():
        out.print(f"{name:18} {value}")
    out.print(f"{'checkpointer':18} {describe(default_url())}")


def main() -> None:
    load_env_file()
    app()


if __name__ == "__main__":
    main()
