"""The options the commands share, the exit statuses, and checks of what the user typed.

Kept free of heavy imports (only Typer): every command's signature is built from these when the
command line starts, including for `--help`.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
import shlex
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:  # pydantic loads when a command resolves its settings, not for `--help`
    from graph.settings import AgentContext

# One exit status per way a command can end, documented in the README.
EXIT = {
    "answered": 0,
    "error": 1,
    "usage": 2,
    "max_steps": 3,
    "stuck": 3,
    "timeout": 3,
    "stopped": 3,  # a middleware ended the run
    "paused": 4,
    "busy": 5,
    "broken_pipe": 141,  # stdout's reader went away (128 + SIGPIPE, as a shell reports it)
}


class Stop(Exception):
    """Leave a command with a message on stderr (printed as `error: ...` when `code` is not 0,
    unless empty) and an exit status."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


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
    typer.Option(
        "--tools", help="Comma-separated tool names or module:attribute (REACT_AGENT_TOOLS)."
    ),
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
Schema = Annotated[
    str | None,
    typer.Option(
        "--schema",
        help="A JSON schema file: the answer is a JSON object matching it (structured_response "
        "in --json).",
    ),
]
# `chat` has no --json: its answers are printed, each a JSON object matching the schema.
ChatSchema = Annotated[
    str | None,
    typer.Option("--schema", help="A JSON schema file: each answer is a JSON object matching it."),
]
JsonLines = Annotated[
    bool, typer.Option("--json", help="Print JSON Lines: one JSON object per line.")
]
McpConfig = Annotated[
    str | None,
    typer.Option(
        "--mcp-config",
        help="MCP servers file whose tools join the registry (REACT_AGENT_MCP_CONFIG).",
    ),
]


@dataclass(frozen=True)
class RunOptions:
    """The options every command that runs the agent takes (ask, chat, resume, replay)."""

    model: str | None = None
    base_url: str | None = None
    protocol: str | None = None
    max_steps: int | None = None
    tools: str | None = None
    approve: str | None = None
    mcp_config: str | None = None
    checkpointer: str | None = None
    schema: str | None = None

    def settings(self) -> dict[str, Any]:
        """The settings the user actually gave, as AgentContext fields."""
        not_settings = ("checkpointer", "schema")
        return given(**{k: v for k, v in asdict(self).items() if k not in not_settings})

    def context(self) -> AgentContext:
        """The run's settings, resolved (options over the environment over `.env` over the
        defaults; a bad value is a ConfigError naming the option or variable that gave it).
        A command resolves them once and hands the result to what it starts, so every part
        of one run sees the same values."""
        from graph.settings import resolve_context

        return resolve_context(self.settings(), labels=self.flags())

    def response_format(self) -> dict[str, Any] | None:
        """The JSON schema `--schema` names, read now (a bad file is one sentence, exit 2)."""
        if self.schema is None:
            return None
        try:
            schema = json.loads(Path(self.schema).expanduser().read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise Stop(f"--schema {self.schema}: cannot read a JSON schema ({exc}).", 2) from None
        if isinstance(schema, dict):  # valid JSON Schema first: its own words say what is wrong
            from graph.policies.structured_answer import check_schema

            try:
                check_schema(schema, where=f"--schema {self.schema}")
            except ValueError as exc:
                raise Stop(str(exc), EXIT["usage"]) from None
        if not isinstance(schema, dict) or schema.get("type", "object") != "object":
            raise Stop(f"--schema {self.schema}: the schema must describe a JSON object.", 2)
        # the title names the answer's tool or format, which OpenAI takes only as
        # [a-zA-Z0-9_-]{1,64}: a file's stem or a title with spaces or dots is made one
        title = str(schema.get("title") or Path(self.schema).stem)
        schema["title"] = re.sub(r"[^A-Za-z0-9_-]+", "_", title).strip("_")[:64] or "answer"
        return schema

    def repeated(self) -> str:
        """The options typed for this run, as a command that goes on with its thread must
        repeat them (` --tools x --checkpointer y`: the thread's tools and store are not
        kept with it), shell-quoted; credentials in a URL are shown redacted."""
        from graph.redaction import redact

        typed = {k: v for k, v in asdict(self).items() if v is not None}
        return "".join(f" {FLAGS[k]} {shlex.quote(redact(str(v)))}" for k, v in typed.items())

    def flags(self) -> dict[str, str]:
        """Which option gave each setting, so an error names the option that was typed."""
        return {name: FLAGS[name] for name in self.settings()}


# Each run option once: its annotation (type, flag, help) and the flag an error names.
_RUN_OPTIONS: dict[str, Any] = {
    "model": Model,
    "base_url": BaseUrl,
    "protocol": ProtocolOpt,
    "max_steps": MaxSteps,
    "tools": Tools,
    "approve": Approve,
    "mcp_config": McpConfig,
    "checkpointer": Checkpointer,
    "schema": Schema,
}
FLAGS = {name: "--" + name.replace("_", "-") for name in _RUN_OPTIONS}


def with_run_options(command: Callable[..., None]) -> Callable[..., None]:
    """`command` (which takes its own options plus `run: RunOptions`) as Typer sees it: its own
    options followed by the run options, each declared once above, gathered into `run`.

    Typer builds a command's options from its signature, so the shared ones are added to the
    signature (`__signature__`, which `inspect.signature` honours) instead of being written out
    in every command.
    """
    own = inspect.signature(command, eval_str=True)
    kept = [p for p in own.parameters.values() if p.name != "run"]
    # a command without --json (chat) gets help that does not send the reader to --json
    options = (
        _RUN_OPTIONS if "as_json" in own.parameters else {**_RUN_OPTIONS, "schema": ChatSchema}
    )
    shared = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=alias)
        for name, alias in options.items()
    ]

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> None:
        run = RunOptions(**{name: kwargs.pop(name, None) for name in _RUN_OPTIONS})
        command(run=run, **kwargs)

    wrapper.__signature__ = own.replace(parameters=[*kept, *shared])  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in (*kept, *shared)}
    return wrapper


def given(**options: Any) -> dict[str, Any]:
    """The options the user actually gave, as AgentContext fields."""
    return {key: value for key, value in options.items() if value is not None}


def thread_id(value: str | None) -> str | None:
    """A `--thread` value, refused when empty: an empty id would silently start a new thread
    (or name none), which is never what the user meant."""
    if value is not None and not value.strip():
        raise Stop(
            "--thread needs a thread id (see `react-agent threads`); leave it out to start a "
            "new thread.",
            EXIT["usage"],
        )
    return value


def question(text: str) -> str:
    """The question, refused when there is nothing in it (a model call would be wasted)."""
    if not text.strip():
        from graph.persistence.errors import program

        raise Stop(
            f'The question is empty; pass the question or task as text, e.g. {program()} ask "What '
            'is 17 * 23?".',
            EXIT["usage"],
        )
    return text


def no_thread(thread: str, url: str) -> Stop:
    """An unknown thread is bad input (exit 2), like any other."""
    from graph.redaction import redact

    return Stop(f"no thread {thread!r} in {redact(url)}.", EXIT["usage"])


def no_checkpoint(checkpoint: str, thread: str) -> Stop:
    """An unknown checkpoint is bad input (exit 2), like an unknown thread."""
    return Stop(f"no checkpoint {checkpoint!r} in thread {thread!r}.", EXIT["usage"])


def positive(name: str, value: int, most: int | None = None) -> int:
    """A count the user typed, at least 1 and at most `most` (a store cannot take a number
    past its integer type: SQLite's is 64 bits), refused in one sentence otherwise."""
    if value < 1:
        raise Stop(f"{name} must be at least 1, got {value}.", EXIT["usage"])
    if most is not None and value > most:
        raise Stop(f"{name} must be at most {most:,}; give a smaller number.", EXIT["usage"])
    return value
