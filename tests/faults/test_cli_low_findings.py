"""The command line's low findings of the third adversarial round (issue 40), each run as a
user runs it: bad input is refused in one sentence, with exit 2, before any thread is created
or forked and before any model is asked; a server that cannot start is named with what to
check; hints say the command the user typed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from graph.persistence.errors import as_sentences, program
from tests.support.cli import CLI, REPO, cli_env, run_cli
from tests.support.openai_server import Reply, ScriptedOpenAIServer, ToolCall

pytestmark = pytest.mark.integration
TOOLS = "tests.support.crash_tools:TOOLS"
CLASS_NAME = re.compile(r"\b[A-Z][a-z]+(Error|Exception|Group)\b")


@pytest.fixture
def env(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> dict[str, str]:
    return cli_env(openai_server.base_url, tmp_path / "state")


def thread_ids(env: dict[str, str]) -> list[str]:
    listing = run_cli("threads", "--json", env=env)
    assert listing.returncode == 0, listing.stderr
    return [json.loads(line)["thread_id"] for line in listing.stdout.splitlines()]


def one_sentence(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0].removeprefix("error: ")


def test_an_approval_naming_no_tool_is_refused_before_any_thread(
    openai_server: ScriptedOpenAIServer, env: dict[str, str]
) -> None:
    done = run_cli("ask", "hi", "--approve", "nosuchtool", env=env)
    assert done.returncode == 2
    sentence = one_sentence(done.stderr)
    assert sentence.startswith("The approval setting 'nosuchtool' names no tool")
    listed = sentence.split("(the tools are: ", 1)[1].rstrip(").").split(", ")
    assert listed == sorted(set(listed)) and "calculator" in listed  # each tool once
    assert thread_ids(env) == [] and openai_server.chat_requests == []


def test_an_mcp_server_that_cannot_start_is_one_sentence_for_a_person(
    env: dict[str, str], tmp_path: Path
) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"files": {"command": "/nonexistent/mcp-bin"}}}))
    done = run_cli("ask", "hi", "--mcp-config", str(config), env=env)
    assert done.returncode == 1
    sentence = one_sentence(done.stderr)
    assert sentence == (
        "MCP server 'files' did not start: no program '/nonexistent/mcp-bin' was found; check "
        f"its command in {config.resolve()} and that the program is installed and runs."
    )
    assert not CLASS_NAME.search(sentence) and "REACT_AGENT_DEBUG" not in sentence


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "nonsense"}, "not a valid JSON Schema at type: 'nonsense' is not valid"),
        (
            {"type": "object", "properties": {"a": {"type": "nonsense"}}},
            "not a valid JSON Schema at properties/a/type",
        ),
        ({"type": "object", "required": "a"}, "at required: 'a' is not of type 'array'"),
        (
            json.loads('{"type": "object", "properties": {"a": ' * 100 + "{}" + "}}" * 100),
            "nests more than 64 levels",
        ),
    ],
    ids=["type", "nested-type", "required", "deep"],
)
def test_a_schema_that_is_not_json_schema_is_refused(
    openai_server: ScriptedOpenAIServer,
    env: dict[str, str],
    tmp_path: Path,
    schema: dict,
    expected: str,
) -> None:
    path = tmp_path / "answer.json"
    path.write_text(json.dumps(schema))
    done = run_cli("ask", "hi", "--schema", str(path), env=env)
    assert done.returncode == 2
    sentence = one_sentence(done.stderr)
    assert sentence.startswith(f"--schema {path}: ") and expected in sentence, sentence
    assert thread_ids(env) == [] and openai_server.chat_requests == []


def test_replay_input_that_is_not_json_is_refused_before_forking(
    openai_server: ScriptedOpenAIServer, env: dict[str, str]
) -> None:
    openai_server.add(Reply(tool_calls=[ToolCall("tick", {"label": "a"})]), Reply(content="Done."))
    assert run_cli("ask", "tick a", "-t", "r1", "--tools", TOOLS, env=env).returncode == 0
    history = run_cli("history", "-t", "r1", "--json", env=env).stdout.splitlines()
    before_act = next(json.loads(r) for r in history if json.loads(r)["next"] == ["act"])
    asked = len(openai_server.chat_requests)
    done = run_cli(
        "replay", "-t", "r1", "-c", before_act["checkpoint_id"], "--input", "not json",
        "--tools", TOOLS, env=env,
    )  # fmt: skip
    assert done.returncode == 2
    assert one_sentence(done.stderr).startswith("--input is not JSON (Expecting value")
    assert run_cli("history", "-t", "r1", "--json", env=env).stdout.splitlines() == history
    assert len(openai_server.chat_requests) == asked


def test_max_steps_above_the_cap_is_refused(
    openai_server: ScriptedOpenAIServer, env: dict[str, str]
) -> None:
    done = run_cli("ask", "hi", "--max-steps", "1000", env=env)
    assert done.returncode == 2
    assert one_sentence(done.stderr) == (
        "--max-steps 1000 is above the cap of 50 steps (REACT_AGENT_MAX_STEPS_CAP); ask for at "
        "most 50, or raise the cap."
    )
    from_env = run_cli(
        "ask", "hi", env={**env, "REACT_AGENT_MAX_STEPS": "7", "REACT_AGENT_MAX_STEPS_CAP": "5"}
    )
    assert from_env.returncode == 2 and one_sentence(from_env.stderr).startswith(
        "REACT_AGENT_MAX_STEPS 7 is above the cap of 5 steps"
    )
    assert thread_ids(env) == [] and openai_server.chat_requests == []
    openai_server.add(Reply(content="Fine."))
    raised = run_cli(
        "ask", "hi", "--max-steps", "60", env={**env, "REACT_AGENT_MAX_STEPS_CAP": "60"}
    )
    assert raised.returncode == 0, raised.stderr


def test_chat_help_does_not_point_at_a_json_flag_it_lacks(env: dict[str, str]) -> None:
    chat = run_cli("chat", "--help", env=env)
    assert chat.returncode == 0 and "--schema" in chat.stdout
    assert "--json" not in chat.stdout
    ask = run_cli("ask", "--help", env=env)
    assert "structured_response in --json" in " ".join(ask.stdout.split())


def run_under_uv(*args: str, env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess:
    """The command started the way `uv run react-agent` starts it: by a parent process named
    uv that sets UV_RUN_RECURSION_DEPTH (a Python named `uv` here, which runs the script)."""
    launcher = tmp_path / "uv"
    if not launcher.exists():
        launcher.symlink_to(sys.executable)
    starter = "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)"
    return subprocess.run(
        [str(launcher), "-c", starter, CLI, *args],
        env={**env, "UV_RUN_RECURSION_DEPTH": "1"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=REPO,
    )


def test_hints_name_the_command_as_the_user_typed_it(
    openai_server: ScriptedOpenAIServer, env: dict[str, str], tmp_path: Path
) -> None:
    openai_server.add(Reply(tool_calls=[ToolCall("publish", {"text": "x"})]))
    args = ["ask", "publish x", "-t", "u1", "--tools", TOOLS, "--approve", "publish"]
    paused = run_under_uv(*args, env=env, tmp_path=tmp_path)
    assert paused.returncode == 4, paused.stderr
    assert "Paused for approval. Continue with: uv run react-agent resume --thread u1" in (
        paused.stderr
    )
    direct = run_cli("resume", "-t", "u1", "--tools", TOOLS, "--approve", "publish", env=env)
    assert direct.returncode == 4, direct.stderr  # the installed script, run as it is
    assert "Continue with: react-agent resume --thread u1" in direct.stderr
    empty = run_under_uv("ask", " ", env=env, tmp_path=tmp_path)
    assert 'e.g. uv run react-agent ask "What is 17 * 23?"' in empty.stderr


def test_a_process_that_is_not_the_command_names_the_installed_script() -> None:
    assert os.path.basename(sys.argv[0]) != "react-agent"
    assert program() == "react-agent"


@pytest.mark.parametrize(
    ("driver", "sentences"),
    [
        (
            'connection to server at "127.0.0.1", port 9 failed: Connection refused\n'
            "\tIs the server running on that host and accepting TCP/IP connections?",
            'connection to server at "127.0.0.1", port 9 failed: Connection refused. Is the '
            "server running on that host and accepting TCP/IP connections?",
        ),
        ("disk I/O error", "disk I/O error."),
        ("already a sentence.\n\n", "already a sentence."),
    ],
)
def test_driver_text_reads_as_sentences(driver: str, sentences: str) -> None:
    """What the PostgreSQL error needs: the driver's question keeps its own mark, so the
    sentence after it starts cleanly ("...connections? Check ...", never "?. Check")."""
    assert as_sentences(driver) == sentences
