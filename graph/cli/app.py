"""`react-agent`: ask the agent from a terminal, watch each step, and inspect or continue runs.

Every run is checkpointed (SQLite under the state folder by default), so a thread can be
continued (`ask --thread`, `chat`), resumed after a crash, Ctrl-C or approval pause (`resume`),
read step by step (`history`, `show`) and forked from any step (`replay`).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from collections.abc import Callable, Coroutine
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from graph.persistence.savers import default_url, describe, open_async_saver
from graph.settings import ConfigError, load_env_file, resolve_context
from graph.persistence.locks import ThreadBusy, thread_lock
from graph.cli.render import StepPrinter, excerpt, show_input

app = typer.Typer(
    help="A ReAct agent (think, act, observe) on LangGraph. Configure the model with "
    "OPENAI_API_KEY / OPENAI_BASE_URL / REACT_AGENT_MODEL or the options below.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

T = TypeVar("T")
EXIT = {"answered": 0, "error": 1, "usage": 2, "max_steps": 3, "stuck": 3, "paused": 4, "busy": 5}

Thread = Annotated[str | None, typer.Option("--thread", "-t", help="Thread id to continue.")]
ThreadRequired = Annotated[str, typer.Option("--thread", "-t", help="Thread id.")]
CheckpointId = Annotated[
    str, typer.Option("--checkpoint", "-c", help="Checkpoint id (see `history`).")
]
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
Tools = Annotated[
    str | None,
    typer.Option(help="Comma-separated tool names or module:attribute (REACT_AGENT_TOOLS)."),
]
Approve = Annotated[
    str | None,
    typer.Option(help="Tools that need your approval before each call (REACT_AGENT_APPROVE)."),
]
Checkpointer = Annotated[
    str | None,
    typer.Option(
        help="memory, sqlite:///file.sqlite or postgresql://... (REACT_AGENT_CHECKPOINTER; "
        "default: a SQLite file under the state folder)."
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print the final result as JSON only.")]


class Stop(Exception):
    """Leave a command with a message on stderr and an exit status."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def _settings(**given: Any) -> dict[str, Any]:
    """The options the user actually gave, as AgentContext fields."""
    return {key: value for key, value in given.items() if value is not None}


def _command(body: Callable[[], Any]) -> None:
    """Run a command body: one sentence and a distinct exit status for each way it can end."""
    try:
        body()
    except Stop as stop:
        if str(stop):
            err.print(str(stop))
        raise typer.Exit(stop.code) from None
    except ThreadBusy as exc:
        err.print(f"[bold red]error:[/] {exc}")
        raise typer.Exit(EXIT["busy"]) from None
    except (ConfigError, ValueError) as exc:
        err.print(f"[bold red]error:[/] {exc}")
        raise typer.Exit(EXIT["usage"]) from None
    except Exception as exc:  # a bug or an environment problem: one line, traceback on demand
        if os.environ.get("REACT_AGENT_DEBUG"):
            raise
        err.print(
            f"[bold red]error:[/] {type(exc).__name__}: {exc} "
            "(set REACT_AGENT_DEBUG=1 for the traceback)"
        )
        raise typer.Exit(EXIT["error"]) from None


def _preflight(settings: dict[str, Any]) -> None:
    """Catch what the user can fix before a thread is touched: settings, tools, endpoint."""
    from graph.tooling.registry import registry_tools
    from graph.models.factory import resolve_model

    ctx = resolve_context(settings)
    registry_tools(ctx.tools)
    resolve_model(ctx)


class Session:
    """One open store and agent for a command; runs turns and answers approval pauses."""

    def __init__(self, saver: Any, settings: dict[str, Any], url: str, *, quiet: bool) -> None:
        from graph.agent import build_graph
        from graph.tooling.registry import registry_tools

        options = dict(settings)
        if "tools" in options:  # names on the command line, tool objects for build_graph
            options["tools"] = registry_tools(resolve_context(settings).tools)
        self.agent = build_graph(checkpointer=saver, **options)
        self.url = url
        self.printer = StepPrinter(out, quiet=quiet)

    async def drive(self, payload: Any, config: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """Run until the turn ends; return the final values and whether it is paused."""
        from langgraph.types import Command

        thread = {"configurable": {"thread_id": config["configurable"]["thread_id"]}}
        snapshot = await self.agent.aget_state(config)
        if payload is None and snapshot.interrupts:
            verdicts = ask_verdicts(snapshot.interrupts)
            if verdicts is None:
                return snapshot.values, True
            payload = Command(resume=verdicts)
        while True:
            stream = self.agent.astream(payload, config, stream_mode=["custom"], durability="sync")
            async for _mode, chunk in stream:
                self.printer.event(chunk)
            snapshot = await self.agent.aget_state(thread)
            if not snapshot.interrupts:
                return snapshot.values, False
            verdicts = ask_verdicts(snapshot.interrupts)
            if verdicts is None:
                return snapshot.values, True
            payload, config = Command(resume=verdicts), thread


def ask_verdicts(interrupts: Any) -> dict[str, Any] | None:
    """Ask the person about each paused tool call; None when stdin has no answer (EOF)."""
    verdicts: dict[str, Any] = {}
    for pause in interrupts:
        request = pause.value if isinstance(pause.value, dict) else {"question": pause.value}
        tool, args = request.get("tool", "?"), request.get("input")
        err.print(f"[bold yellow]Approval needed:[/] {tool} {show_input(args)}")
        answer = _read("  [a]pprove, [e]dit input, [r]eject? ")
        if answer is None:
            return None
        word = answer.strip().lower()
        if word in ("a", "approve", "y", "yes"):
            verdicts[pause.id] = {"action": "approve"}
        elif word in ("e", "edit"):
            raw = _read("  new input (JSON): ")
            if raw is None:
                return None
            try:
                new_input: Any = json.loads(raw)
            except ValueError:
                new_input = raw.strip()
            verdicts[pause.id] = {"action": "edit", "input": new_input}
        else:
            reason = _read("  reason (optional): ")
            verdicts[pause.id] = {"action": "reject", "reason": (reason or "").strip()}
    return verdicts


def _read(prompt: str) -> str | None:
    err.print(prompt, end="")
    line = sys.stdin.readline()
    return None if line == "" else line.rstrip("\n")


async def _open_thread(
    url: str | None, settings: dict[str, Any], thread_id: str, quiet: bool, body: Any
) -> Any:
    """Open the store, take the thread's lock, and run `body(session)`."""
    target = url or default_url()
    async with open_async_saver(target) as saver, thread_lock(target, thread_id):
        return await body(Session(saver, settings, target, quiet=quiet))


def _report(values: dict[str, Any], thread_id: str, paused: bool, as_json: bool) -> None:
    status = "paused" if paused else values.get("status") or "error"
    if as_json:
        summary = {
            "thread_id": thread_id,
            "status": status,
            "answer": values.get("answer"),
            "error": values.get("error"),
            "steps": values.get("steps", []),
        }
        sys.stdout.write(json.dumps(summary, ensure_ascii=False, default=str, indent=2) + "\n")
    elif paused:
        err.print(
            f"[yellow]Paused for approval.[/] Continue with: react-agent resume "
            f"--thread {thread_id}"
        )
    else:
        if status == "error":
            err.print(f"[bold red]error:[/] {values.get('error')}")
        err.print(f"[dim]thread {thread_id} · continue with --thread {thread_id}[/]")
    raise Stop("", EXIT.get(status, 1))


def _run_turns(coro: Coroutine[Any, Any, T], thread_id: str) -> T:
    """Run the agent; on Ctrl-C say how to resume and leave at once.

    Every finished step is already checkpointed (durability "sync"). A tool still running in a
    worker thread cannot be cancelled, and waiting for it would make Ctrl-C hang, so the process
    exits without waiting; that call runs again on resume (at least once, like a crash).
    """
    loop = asyncio.new_event_loop()
    try:
        result = loop.run_until_complete(coro)
    except KeyboardInterrupt:
        err.print(
            f"\nInterrupted. The run is saved; continue it with: react-agent resume --thread "
            f"{thread_id}"
        )
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.run_until_complete(loop.shutdown_default_executor())
    loop.close()
    return result


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question or task.")],
    thread: Thread = None,
    model: Model = None,
    base_url: BaseUrl = None,
    protocol: ProtocolOpt = None,
    max_steps: MaxSteps = None,
    tools: Tools = None,
    approve: Approve = None,
    checkpointer: Checkpointer = None,
    as_json: AsJson = False,
) -> None:
    """Ask one question; each step is shown as it happens."""
    settings = _settings(
        model=model,
        base_url=base_url,
        protocol=protocol,
        max_steps=max_steps,
        tools=tools,
        approve=approve,
    )

    def body() -> None:
        _preflight(settings)
        thread_id = thread or uuid.uuid4().hex[:12]

        async def turn(session: Session) -> tuple[dict[str, Any], bool]:
            payload = {"messages": [("user", question)]}
            return await session.drive(payload, {"configurable": {"thread_id": thread_id}})

        values, paused = _run_turns(
            _open_thread(checkpointer, settings, thread_id, as_json, turn), thread_id
        )
        _report(values, thread_id, paused, as_json)

    _command(body)


@app.command()
def chat(
    thread: Thread = None,
    model: Model = None,
    base_url: BaseUrl = None,
    protocol: ProtocolOpt = None,
    max_steps: MaxSteps = None,
    tools: Tools = None,
    approve: Approve = None,
    checkpointer: Checkpointer = None,
) -> None:
    """An interactive conversation on one thread (Ctrl-D or /exit to leave)."""
    settings = _settings(
        model=model,
        base_url=base_url,
        protocol=protocol,
        max_steps=max_steps,
        tools=tools,
        approve=approve,
    )

    def body() -> None:
        _preflight(settings)
        thread_id = thread or uuid.uuid4().hex[:12]
        err.print(f"[dim]thread {thread_id} · /exit or Ctrl-D to leave[/]")

        async def conversation(session: Session) -> None:
            while True:
                line = _read("you> ")
                if line is None or line.strip() in ("/exit", "/quit"):
                    return
                if not line.strip():
                    continue
                config = {"configurable": {"thread_id": thread_id}}
                values, paused = await session.drive({"messages": [("user", line)]}, config)
                if paused:
                    return
                if values.get("status") == "error":
                    err.print(f"[bold red]error:[/] {values.get('error')}")

        _run_turns(_open_thread(checkpointer, settings, thread_id, False, conversation), thread_id)
        err.print(
            f"[dim]thread {thread_id} · continue with: react-agent chat --thread {thread_id}[/]"
        )

    _command(body)


@app.command()
def resume(
    thread: ThreadRequired,
    model: Model = None,
    base_url: BaseUrl = None,
    protocol: ProtocolOpt = None,
    tools: Tools = None,
    approve: Approve = None,
    checkpointer: Checkpointer = None,
    as_json: AsJson = False,
) -> None:
    """Continue a run that stopped early: a crash, Ctrl-C, an approval pause, a model outage."""
    settings = _settings(
        model=model, base_url=base_url, protocol=protocol, tools=tools, approve=approve
    )

    def body() -> None:
        _preflight(settings)

        async def go(session: Session) -> tuple[dict[str, Any], bool]:
            from graph.persistence.resume import aresume_config

            config = {"configurable": {"thread_id": thread}}
            snapshot = await session.agent.aget_state(config)
            if snapshot.created_at is None:
                raise Stop(f"error: no thread {thread!r} in {describe(session.url)}.", 1)
            target = await aresume_config(session.agent, config)
            if target is None:
                status = (snapshot.values or {}).get("status")
                raise Stop(
                    f"error: thread {thread!r} has nothing to resume: its last run ended "
                    f"with status {status!r}. Ask a new question with --thread {thread}.",
                    1,
                )
            return await session.drive(None, target)

        values, paused = _run_turns(
            _open_thread(checkpointer, settings, thread, as_json, go), thread
        )
        _report(values, thread, paused, as_json)

    _command(body)


@app.command()
def history(thread: ThreadRequired, checkpointer: Checkpointer = None) -> None:
    """The thread step by step: one row per checkpoint, oldest first."""

    def body() -> None:
        from graph.persistence.history import history_rows

        async def read(session: Session) -> list[Any]:
            config = {"configurable": {"thread_id": thread}}
            return [s async for s in session.agent.aget_state_history(config)]

        snapshots = asyncio.run(_with_store(checkpointer, read))
        if not snapshots:
            raise Stop(
                f"error: no thread {thread!r} in {describe(checkpointer or default_url())}.", 1
            )
        table = Table(title=f"thread {thread}", show_lines=False, expand=False)
        table.add_column("step", justify="right")
        table.add_column("node")
        table.add_column("checkpoint", no_wrap=True)
        table.add_column("next")
        table.add_column("what happened", overflow="fold", ratio=1)
        for row in history_rows(snapshots):
            table.add_row(
                str(row.step), row.node, row.checkpoint_id, ",".join(row.next), row.summary
            )
        out.print(table)

    _command(body)


@app.command()
def show(
    thread: ThreadRequired, checkpoint: CheckpointId, checkpointer: Checkpointer = None
) -> None:
    """The full state at one checkpoint, as JSON."""

    def body() -> None:
        from graph.persistence.history import state_as_json

        async def read(session: Session) -> Any:
            config = {"configurable": {"thread_id": thread, "checkpoint_id": checkpoint}}
            return await session.agent.aget_state(config)

        snapshot = asyncio.run(_with_store(checkpointer, read))
        if snapshot.created_at is None:
            raise Stop(f"error: no checkpoint {checkpoint!r} in thread {thread!r}.", 1)
        err.print(
            f"[dim]thread {thread} · checkpoint {checkpoint} · next: "
            f"{', '.join(snapshot.next) or '(end)'}[/]"
        )
        sys.stdout.write(state_as_json(snapshot.values) + "\n")

    _command(body)


@app.command()
def replay(
    thread: ThreadRequired,
    checkpoint: CheckpointId,
    tool_input: Annotated[
        str | None,
        typer.Option(
            "--input",
            help="New JSON input for the tool call pending at that "
            "checkpoint (a checkpoint whose next node is act).",
        ),
    ] = None,
    call: Annotated[int, typer.Option(help="Which pending call --input replaces.")] = 0,
    model: Model = None,
    base_url: BaseUrl = None,
    protocol: ProtocolOpt = None,
    tools: Tools = None,
    approve: Approve = None,
    checkpointer: Checkpointer = None,
    as_json: AsJson = False,
) -> None:
    """Time travel: re-run from a checkpoint as a fork (the original history stays)."""
    settings = _settings(
        model=model, base_url=base_url, protocol=protocol, tools=tools, approve=approve
    )

    def body() -> None:
        _preflight(settings)

        async def go(session: Session) -> tuple[dict[str, Any], bool]:
            from graph.persistence.forks import fork_with_input

            config = {"configurable": {"thread_id": thread, "checkpoint_id": checkpoint}}
            snapshot = await session.agent.aget_state(config)
            if snapshot.created_at is None:
                raise Stop(f"error: no checkpoint {checkpoint!r} in thread {thread!r}.", 1)
            if tool_input is not None:
                config = await fork_with_input(
                    session.agent, snapshot, _parse_input(tool_input), call
                )
            err.print(f"[dim]forking thread {thread} from checkpoint {checkpoint}[/]")
            return await session.drive(None, config)

        values, paused = _run_turns(
            _open_thread(checkpointer, settings, thread, as_json, go), thread
        )
        _report(values, thread, paused, as_json)

    _command(body)


def _parse_input(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


@app.command()
def threads(
    limit: Annotated[int, typer.Option(help="Most threads to list, newest first.")] = 50,
    checkpointer: Checkpointer = None,
) -> None:
    """The threads in the store, newest first, with their last status and question."""

    def body() -> None:
        from graph.persistence.history import last_question

        async def read(session: Session) -> list[tuple[str, Any]]:
            seen: dict[str, Any] = {}
            async for item in session.agent.checkpointer.alist(None):
                thread_id = item.config["configurable"]["thread_id"]
                if thread_id not in seen:
                    seen[thread_id] = item.checkpoint.get("ts")
                    if len(seen) >= limit:
                        break
            rows = []
            for thread_id, ts in seen.items():
                state = await session.agent.aget_state({"configurable": {"thread_id": thread_id}})
                rows.append((thread_id, ts, state))
            return rows

        rows = asyncio.run(_with_store(checkpointer, read))
        table = Table(title=f"threads in {describe(checkpointer or default_url())}")
        for column in ("thread", "updated", "status", "last question"):
            table.add_column(column, overflow="fold")
        for thread_id, ts, state in rows:
            values = state.values or {}
            status = "paused" if state.interrupts else values.get("status") or "-"
            if state.next and not state.interrupts:
                status = "unfinished"
            question = excerpt(last_question(values.get("messages", [])), 80)
            table.add_row(thread_id, str(ts or "")[:19], status, question)
        out.print(table)

    _command(body)


async def _with_store(url: str | None, body: Any) -> Any:
    target = url or default_url()
    async with open_async_saver(target) as saver:
        return await body(Session(saver, {}, target, quiet=True))


@app.command()
def config() -> None:
    """Show the effective configuration (never the API key) and where state is stored."""

    def body() -> None:
        ctx = resolve_context()
        for name, value in ctx.model_dump().items():
            out.print(f"{name:18} {value}")
        out.print(f"{'checkpointer':18} {describe(default_url())}")

    _command(body)


def main() -> None:
    load_env_file()
    app()


if __name__ == "__main__":
    main()
