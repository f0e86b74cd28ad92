"""The command line as a user runs it, with the standard variables asking for spans: the run's
spans come out (printed by the `console` exporter, flushed as the process exits), and the API key
the run used is in none of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import cli_env, run_cli
from tests.support.openai_server import Reply, ScriptedOpenAIServer, ToolCall

pytestmark = pytest.mark.integration

KEY = "sk-cli-test"  # the key tests.support.cli gives every run
# `build_graph` is where the command line, `langgraph dev` and code switch tracing on


def test_the_command_line_traces_a_run_when_otel_asks(
    openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    openai_server.add(
        Reply(tool_calls=[ToolCall("calculator", {"expression": "17 * 23"})]),
        Reply(content="17 * 23 = 391"),
    )
    env = cli_env(openai_server.base_url, tmp_path, OTEL_TRACES_EXPORTER="console")
    done = run_cli("ask", "What is 17 * 23?", "--protocol", "native", env=env)
    assert done.returncode == 0, done.stderr
    for name in ("react-agent", "think", "act", "calculator", "finish", "ChatOpenAI"):
        assert f'"name": "{name}"' in done.stdout, f"no {name} span printed"
    assert KEY not in done.stdout and KEY not in done.stderr
    assert "deprecated" not in done.stderr


def test_the_command_line_prints_nothing_of_tracing_when_off(
    openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    openai_server.add(Reply(content="Hello."))
    done = run_cli("ask", "Hi", env=cli_env(openai_server.base_url, tmp_path))
    assert done.returncode == 0, done.stderr
    assert '"name":' not in done.stdout and "trace_id" not in done.stdout
