"""What `history`, `show`, `threads`, `config` and `tools` print: whole rows when piped,
JSON Lines with `--json`, and never a credential."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.cli import REPO, cli_env, run_cli
from tests.support.openai_server import Reply, ScriptedOpenAIServer, ToolCall

pytestmark = pytest.mark.integration
TOOLS = "tests.support.crash_tools:TOOLS"
LONG = "a label long enough that any 80-column table would have to wrap it " * 3


@pytest.fixture
def env(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> dict[str, str]:
    environment = cli_env(openai_server.base_url, tmp_path / "state")
    del environment["COLUMNS"]  # the default width a pipe gets
    return environment


@pytest.fixture
def finished_thread(openai_server: ScriptedOpenAIServer, env: dict[str, str]) -> str:
    openai_server.add(
        Reply(tool_calls=[ToolCall("tick", {"label": LONG.strip()})]), Reply(content="Ticked.")
    )
    done = run_cli("ask", "tick " + LONG, "--thread", "o1", "--tools", TOOLS, env=env)
    assert done.returncode == 0, done.stderr
    return "o1"


def test_history_plain_rows_are_whole_lines(finished_thread: str, env: dict[str, str]) -> None:
    listing = run_cli("history", "--thread", finished_thread, env={**env, "COLUMNS": "40"})
    assert listing.returncode == 0, listing.stderr
    header, *rows = listing.stdout.splitlines()
    assert header.split() == ["step", "node", "checkpoint", "next", "what", "happened"]
    assert [row.split()[1] for row in rows] == [
        "input",
        "__start__",
        "think",
        "act",
        "think",
        "finish",
    ]
    assert all(row.split()[0].lstrip("-").isdigit() for row in rows)  # nothing wrapped
    assert "→ Action: tick(" in rows[2] and "tick → ticked a label long" in rows[3]
    assert "│" not in listing.stdout and "\x1b" not in listing.stdout  # no table art, no colour


def test_history_and_show_as_json(finished_thread: str, env: dict[str, str]) -> None:
    listing = run_cli("history", "--thread", finished_thread, "--json", env=env)
    assert listing.returncode == 0, listing.stderr
    rows = [json.loads(line) for line in listing.stdout.splitlines()]
    assert [row["node"] for row in rows][:4] == ["input", "__start__", "think", "act"]
    assert rows[1]["summary"] == "question: " + ("tick " + LONG).strip()[:199] + "…"
    assert all(row["thread_id"] == finished_thread for row in rows)
    assert rows[-1]["next"] == [] and rows[1]["parent_checkpoint_id"] == rows[0]["checkpoint_id"]
    before_act = rows[2]["checkpoint_id"]

    shown = run_cli(
        "show", "--thread", finished_thread, "--checkpoint", before_act, "--json", env=env
    )
    assert shown.returncode == 0, shown.stderr
    assert len(shown.stdout.splitlines()) == 1
    state = json.loads(shown.stdout)
    assert state["pending"] == [
        {"id": state["pending"][0]["id"], "name": "tick", "args": {"label": LONG.strip()}}
    ]
    assert state["messages"][0]["type"] == "human"
    indented = run_cli("show", "--thread", finished_thread, "--checkpoint", before_act, env=env)
    assert json.loads(indented.stdout) == state and len(indented.stdout.splitlines()) > 1


def test_threads_plain_and_json(finished_thread: str, env: dict[str, str]) -> None:
    listing = run_cli("threads", env=env)
    assert listing.returncode == 0, listing.stderr
    header, row = listing.stdout.splitlines()
    assert header.split() == ["thread", "updated", "status", "last", "question"]
    assert row.startswith(f"{finished_thread}  ") and "answered" in row
    assert row.endswith(("tick " + LONG).strip())  # the whole question, not cut at 80
    as_json = [
        json.loads(line)
        for line in run_cli("threads", "--json", env=env).stdout.split("\n")
        if line
    ]
    assert as_json == [
        {
            "thread_id": finished_thread,
            "updated": as_json[0]["updated"],
            "status": "answered",
            "last_question": "tick " + LONG,  # JSON keeps the exact text
        }
    ]


def test_config_never_prints_credentials(env: dict[str, str]) -> None:
    secret_env = {
        **env,
        "OPENAI_BASE_URL": "https://alice:hunter2@llm.example/v1?api_key=sk-query-secret",
        "REACT_AGENT_CHECKPOINTER": "postgresql://bob:pgpass99@db.example:5432/agent",
    }
    done = run_cli("config", env=secret_env)
    assert done.returncode == 0, done.stderr
    for secret in ("hunter2", "sk-query-secret", "pgpass99", "sk-cli-test"):
        assert secret not in done.stdout + done.stderr
    assert "llm.example/v1" in done.stdout and "db.example:5432/agent" in done.stdout
    assert "[redacted]" in done.stdout


def test_tools_lists_each_tool_with_its_source_and_schema(env: dict[str, str]) -> None:
    from tools import TOOL_NAMES

    everything = run_cli("tools", "--json", env=env)
    assert everything.returncode == 0, everything.stderr
    records = [json.loads(line) for line in everything.stdout.splitlines()]
    assert [r["name"] for r in records] == list(TOOL_NAMES)
    assert {r["source"] for r in records} == {"built-in"}
    calculator = records[0]
    assert calculator["schema"]["required"] == ["expression"]
    assert calculator["schema"]["properties"]["expression"]["type"] == "string"

    mixed = run_cli("tools", "--tools", f"calculator,{TOOLS}", env=env)
    assert mixed.returncode == 0, mixed.stderr
    lines = mixed.stdout.splitlines()
    assert "calculator  (built-in)" in lines and f"publish  ({TOOLS})" in lines
    assert '    schema: {"properties": {"text": {"title": "Text", "type": "string"}}, ' in (
        mixed.stdout
    )
    unknown = run_cli("tools", "--tools", "teleport", env=env)
    assert unknown.returncode == 2 and unknown.stderr.startswith("error: Unknown tool 'teleport'")


TOOLBOX = REPO / "tests" / "support" / "mcp_servers" / "toolbox.py"


@pytest.mark.skipif(not TOOLBOX.is_file(), reason="no MCP test server in this checkout")
def test_tools_lists_mcp_tools_with_their_server(env: dict[str, str], tmp_path: Path) -> None:
    pytest.importorskip("tools.mcp")
    config = tmp_path / "mcp.json"
    server = {"command": sys.executable, "args": [str(TOOLBOX)]}
    config.write_text(json.dumps({"mcpServers": {"box": server}}))
    with_mcp = {**env, "REACT_AGENT_MCP_CONFIG": str(config)}
    everything = run_cli("tools", "--json", env=with_mcp)  # every built-in and MCP tool
    assert everything.returncode == 0, everything.stderr
    records = {r["name"]: r for r in map(json.loads, everything.stdout.splitlines())}
    assert records["calculator"]["source"] == "built-in"
    assert records["echo"]["source"] == "mcp:box" and records["echo"]["mcp_name"] == "echo"
    assert records["echo"]["schema"]["properties"]["text"]["type"] == "string"
    assert records["math_mul"]["mcp_name"] == "math.mul"

    chosen = run_cli("tools", "--tools", "echo,calculator", "--mcp-config", str(config), env=env)
    assert chosen.returncode == 0, chosen.stderr
    assert [line for line in chosen.stdout.splitlines() if not line.startswith(" ")] == [
        "echo  (mcp:box)",
        "calculator  (built-in)",
    ]
    missing = run_cli("tools", "--mcp-config", str(tmp_path / "none.json"), env=env)
    assert missing.returncode == 2 and missing.stderr.startswith("error: ")
