"""`react-agent` run as a subprocess, exactly as a user runs it, against the scripted server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import cli_env, run_cli
from tests.support.openai_server import Reply, ScriptedOpenAIServer

CALC = (
    'Thought: I should use the calculator.\nAction: calculator\nAction Input: {"expression": '
    '"17 * 23"}'
)
DONE = "Thought: The calculator says 391.\nFinal Answer: 17 * 23 = 391"


def react_agent(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return run_cli(*args, env=env)


@pytest.fixture
def env(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> dict[str, str]:
    return cli_env(openai_server.base_url, tmp_path / "state")


def test_ask_streams_each_step_and_exits_zero(
    openai_server: ScriptedOpenAIServer, env: dict[str, str]
) -> None:
    openai_server.add(Reply(content=CALC), Reply(content=DONE))
    done = react_agent("ask", "What is 17 * 23?", "--protocol", "text", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "Thought: I should use the calculator.",
        'Action: calculator {"expression": "17 * 23"}',
        "Observation: 391",
        "Thought: The calculator says 391.",
        "Final Answer: 17 * 23 = 391",
    ]
    assert "continue with --thread" in done.stderr
    assert (Path(env["REACT_AGENT_STATE_DIR"]) / "checkpoints.sqlite").is_file()


def test_json_output_for_scripts(openai_server: ScriptedOpenAIServer, env: dict[str, str]) -> None:
    openai_server.add(Reply(content=CALC), Reply(content=DONE))
    done = react_agent("ask", "17*23?", "--protocol", "text", "--json", "--thread", "j1", env=env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["thread_id"] == "j1"
    assert result["status"] == "answered" and result["answer"] == "17 * 23 = 391"
    assert [s["kind"] for s in result["steps"]] == ["action", "answer"]


def test_second_question_on_a_thread_sees_the_first(
    openai_server: ScriptedOpenAIServer, env: dict[str, str]
) -> None:
    openai_server.add(Reply(content="Hello Ada."), Reply(content="You are Ada."))
    first = react_agent("ask", "I am Ada.", "--thread", "t1", "--protocol", "native", env=env)
    second = react_agent("ask", "Who am I?", "--thread", "t1", "--protocol", "native", env=env)
    assert first.returncode == 0 and second.returncode == 0, second.stderr
    sent = [m["content"] for m in openai_server.chat_requests[1].body["messages"]]
    assert sent[1:] == ["I am Ada.", "Hello Ada.", "Who am I?"]


def test_max_steps_exits_nonzero_with_the_reason(
    openai_server: ScriptedOpenAIServer, env: dict[str, str]
) -> None:
    openai_server.add(*[Reply(content=CALC)] * 2)
    done = react_agent("ask", "loop", "--protocol", "text", "--max-steps", "2", env=env)
    assert done.returncode == 3
    assert "Stopped: I stopped after 2 steps" in done.stdout


def test_missing_endpoint_is_one_sentence(env: dict[str, str]) -> None:
    del env["OPENAI_BASE_URL"], env["OPENAI_API_KEY"]
    done = react_agent("ask", "hi", env=env)
    assert done.returncode == 2
    assert done.stderr.startswith("error: No model endpoint is configured: set OPENAI_API_KEY")
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tools", "calculator,teleport"], "Unknown tool 'teleport'; known tools: calculator"),
        (["--protocol", "smoke"], "Invalid agent configuration: --protocol: "),
        (["--max-steps", "0"], "Invalid agent configuration: --max-steps: "),
        (["--checkpointer", "mongodb://x"], "Unknown checkpointer URL 'mongodb://x'"),
    ],
)
def test_bad_input_is_one_clear_sentence(
    args: list[str], message: str, env: dict[str, str]
) -> None:
    done = react_agent("ask", "hi", *args, env=env)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_mcp_server_tools_from_the_command_line(
    openai_server: ScriptedOpenAIServer, env: dict[str, str], tmp_path: Path
) -> None:
    """`--mcp-config` names the servers (an operator choice); their tools are picked by name
    like the built-ins and run under the text protocol; the server is gone afterwards."""
    from tests.support.mcp_servers import toolbox, write_config

    config = write_config(tmp_path / "mcp.json", {"box": toolbox()})
    openai_server.add(
        Reply(content='Thought: echo it.\nAction: echo\nAction Input: {"text": "hi"}'),
        Reply(content="Thought: done.\nFinal Answer: it said hi"),
    )
    args = ["--protocol", "text", "--tools", "echo,calculator", "--mcp-config", str(config)]
    done = react_agent("ask", "echo hi", *args, "--json", env=env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert [s["observation"] for s in result["steps"] if s["kind"] == "action"] == ["echo: hi"]
    assert "echo:" in openai_server.chat_requests[0].messages[0]["content"]  # in the prompt
    leftover = [
        p for p in Path("/proc").iterdir() if p.name.isdigit() and b"toolbox.py" in _cmdline(p)
    ]
    assert leftover == []  # the CLI closed its MCP server


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""
