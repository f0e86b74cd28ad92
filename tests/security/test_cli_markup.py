"""What the model, a tool or a stored thread says can never rewrite what the person sees.

The CLI runs as a subprocess against the scripted OpenAI-compatible server, and the model asks
for a call whose input carries Rich markup, ANSI escapes, C1 controls, DEL and bidirectional
overrides. The person approving it must see exactly the input that will run, as one JSON
document, with nothing hidden, nothing recoloured and nothing crashing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.cli import cli_env, run_cli
from tests.support.openai_server import Reply, ScriptedOpenAIServer, ToolCall

pytestmark = pytest.mark.integration
TOOLS = "tests.support.crash_tools:TOOLS"
HOSTILE = (
    "boss@corp.example [bcc attacker@evil.example] [/] [bold red]x[/bold red] "
    "\x1b[31mred\x1b[0m \x1b]8;;https://evil.example\x07link\x1b]8;;\x07 "
    "\u202eevil\u202c \u2066iso\u2069 \x85nel \x9bcsi \x7fdel \r\n\t end"
)
# What may never reach the terminal raw: C0 controls but newline, DEL, C1, bidi controls.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture
def calls_file(tmp_path: Path) -> Path:
    return tmp_path / "calls.txt"


@pytest.fixture
def env(openai_server: ScriptedOpenAIServer, tmp_path: Path, calls_file: Path) -> dict:
    return cli_env(openai_server.base_url, tmp_path / "state", CALLS_FILE=str(calls_file))


def shown_input(stderr: str, prefix: str) -> object:
    """The JSON document printed after `prefix` on one line of stderr."""
    lines = [line for line in stderr.splitlines() if line.startswith(prefix)]
    assert len(lines) == 1, stderr
    return json.loads(lines[0][len(prefix) :])


def ask_publish(env: dict, stdin: str, thread: str = "hostile") -> object:
    return run_cli(
        "ask",
        "publish it",
        "--thread",
        thread,
        "--tools",
        TOOLS,
        "--approve",
        "publish",
        env=env,
        stdin=stdin,
    )


def test_approver_sees_the_exact_input_and_nothing_hides_or_crashes(
    openai_server: ScriptedOpenAIServer, env: dict, calls_file: Path
) -> None:
    openai_server.add(
        Reply(tool_calls=[ToolCall("publish", {"text": HOSTILE})]), Reply(content="Done.")
    )
    done = ask_publish(env, "a\n")
    assert done.returncode == 0, done.stderr
    assert shown_input(done.stderr, "Approval needed: publish ") == {"text": HOSTILE}
    assert "[bcc attacker@evil.example] [/] [bold red]x[/bold red]" in done.stderr
    assert "  [a]pprove, [e]dit input, [r]eject" in done.stderr  # the keys show too
    assert not RAW.search(done.stderr) and not RAW.search(done.stdout)
    assert shown_input(done.stdout, "Action: publish ") == {"text": HOSTILE}
    assert "Traceback" not in done.stderr
    assert calls_file.read_bytes().decode() == f"publish:{HOSTILE}\n"


def test_an_edit_shows_what_will_run_exactly(
    openai_server: ScriptedOpenAIServer, env: dict, calls_file: Path
) -> None:
    openai_server.add(
        Reply(tool_calls=[ToolCall("publish", {"text": "harmless"})]), Reply(content="Done.")
    )
    edited = {"text": "[/] \u202eedited\u202c \x1b[2J"}
    done = ask_publish(env, "e\n" + json.dumps(edited) + "\n")
    assert done.returncode == 0, done.stderr
    assert shown_input(done.stderr.replace("  will run:", "\nwill run:"), "will run: publish ") == (
        edited
    )
    assert not RAW.search(done.stderr)
    assert calls_file.read_bytes().decode() == f"publish:{edited['text']}\n"


def test_a_rejection_reason_with_markup_reaches_the_model_verbatim(
    openai_server: ScriptedOpenAIServer, env: dict, calls_file: Path
) -> None:
    openai_server.add(
        Reply(tool_calls=[ToolCall("publish", {"text": HOSTILE})]), Reply(content="Fine.")
    )
    done = ask_publish(env, "r\nnot [/] today\n")
    assert done.returncode == 0, done.stderr
    assert not calls_file.exists()
    tool_reply = openai_server.chat_requests[1].body["messages"][-1]
    assert "publish" in tool_reply["content"] and "not [/] today" in tool_reply["content"]


def test_stored_markup_does_not_break_threads_or_history(
    openai_server: ScriptedOpenAIServer, env: dict
) -> None:
    question = "[/] [bold]what[/bold] \x1b[31m is \u202e this?"
    openai_server.add(Reply(content="An answer with [/] and \x1b[5mblink."))
    done = run_cli("ask", question, "--thread", "m1", env=env)
    assert done.returncode == 0, done.stderr
    assert "Final Answer: An answer with [/] and \\u{001B}[5mblink." in done.stdout
    for args in (["threads"], ["history", "--thread", "m1"]):
        listing = run_cli(*args, env=env)
        assert listing.returncode == 0, listing.stderr
        assert "[/] [bold]what[/bold] \\u{001B}[31m is \\u{202E} this?" in listing.stdout
        assert not RAW.search(listing.stdout) and "Traceback" not in listing.stderr
    as_json = run_cli("threads", "--json", env=env)
    assert json.loads(as_json.stdout)["last_question"] == question  # JSON keeps the exact text


@pytest.mark.parametrize(
    "args",
    [
        ["ask", "hi", "--tools", "[/]"],
        ["ask", "hi", "--tools", "\x1b[31mred[/]"],
        ["ask", "hi", "--protocol", "[/]"],
        ["history", "--thread", "[/]"],
    ],
)
def test_markup_in_arguments_never_crashes_the_error_handler(args: list[str], env: dict) -> None:
    done = run_cli(*args, env=env)
    assert done.returncode in (1, 2), done.stderr
    assert done.stderr.startswith("error: ") and "[/]" in done.stderr
    assert "Traceback" not in done.stderr and not RAW.search(done.stderr)
