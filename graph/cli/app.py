"""`react-agent`: ask the agent from a terminal, watch each step, and inspect or continue runs.

Every run is checkpointed (SQLite under the state folder by default), so a thread can be
continued (`ask --thread`, `chat`), resumed after a crash, Ctrl-C or approval pause (`resume`),
read step by step (`history`, `show`) and forked from any step (`replay`).

This module only assembles the commands. It imports Typer and the light CLI helpers, never
LangChain, LangGraph, a saver or pydantic, so `--help` and `config` start fast; each command
imports what it needs when it runs (a test checks `sys.modules` after importing this module).
"""

from __future__ import annotations

import gc

import typer

from graph.cli.commands import info, reading, runs, trace_run

app = typer.Typer(
    help="A ReAct agent (think, act, observe) on LangGraph. Configure the model with "
    "OPENAI_API_KEY / OPENAI_BASE_URL / REACT_AGENT_MODEL or the options below.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # click's plain help: Typer's Rich help costs 0.2 s of imports
)

for command in (
    runs.ask,
    runs.chat,
    runs.resume,
    reading.history,
    reading.show,
    trace_run.trace,
    runs.replay,
    reading.threads,
    info.config,
    info.tools,
):
    app.command()(command)


def main() -> None:
    """Run the command line (each command reads `.env` before it starts).

    The cyclic garbage collector is off until the command's model is ready (`Session.ready`
    turns it back on, for the turns): what the command imports and builds before that lives
    as long as the process, and the collector's passes over it, about 0.15 s of GIL-held time
    in a three-second `ask` on two cores, would delay both the command and the embedded
    model's start. A command that starts no model (`history`, `config`, ...) reads a bounded
    amount and ends. Once the command is done, every object left is frozen out of the
    collector (`gc.freeze`): the interpreter's last full collection at exit would otherwise
    walk all that LangChain, LangGraph and pydantic built (0.2-0.35 s) to free memory the
    process is about to give back. Whatever must be written is closed by the command itself
    (the store, the thread's lock); Python does not promise to finalize objects still alive
    at exit anyway.
    """
    gc.disable()
    try:
        app()
    finally:
        gc.freeze()


if __name__ == "__main__":
    main()
