"""Probing MCP tools inside the agent: small FastMCP servers written here (stdio, and streamable
HTTP on a loopback port), a scripted model calling them through `build_graph` in sync and async
runs under both protocols, and the `react-agent` command. Arguments of every shape, names that
clash or that providers refuse, every kind of result, faults, approvals and concurrent runs.

Found when it was written (strict xfails, each checked to fail on its assertion), and fixed: an
argument named `config` or `run_manager` never reached the server (LangChain hands a
`StructuredTool`'s function its own under those names: MCP tools are `MCPTool`s now); results
were pre-cut at 20,000 characters and calls at 30 s, whatever the run's `observation_limit` and
`tool_timeout`; a stdio server that died between calls, or an HTTP server that restarted and
forgot the session, failed the next call (or every later one) instead of being started again;
under the text protocol a tool named like a "no tool" word (`nothing`, `none`) was never
called. Left, a strict xfail: an async call abandoned at `tool_timeout` is not cancelled on the
server (MCP's `notifications/cancelled` is not sent)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from graph import build_graph
from tests.support.cli import cli_env, run_cli
from tests.support.mcp_servers import alive, free_port
from tests.support.openai_server import Reply, ScriptedOpenAIServer, ToolCall
from tests.support.scripted_model import ScriptedChatModel, action, answer
from tools.mcp import close, close_all
from tools.mcp.naming import VALID_NAME

pytestmark = pytest.mark.integration

SERVER = r'''
"""A probe MCP server: `python server.py NAME COUNT_FILE [--small] [--http PORT]`."""
import asyncio, base64, json, logging, os, signal, sys
from typing import Literal

from mcp import types
from mcp.server.fastmcp import FastMCP, Image
from pydantic import BaseModel

logging.disable(logging.WARNING)  # FastMCP warns about "with space" on stderr
NAME, COUNT = sys.argv[1], sys.argv[2]
server = FastMCP(NAME, log_level="ERROR")


def record(line: str) -> None:
    with open(COUNT, "a") as f:
        f.write(f"{NAME} {line}\n")


@server.tool()
def echo(text: str) -> str:
    """Repeat the text, naming this server."""
    record(f"echo {text}")
    return f"{NAME}: {text}"


@server.tool()
def pid() -> int:
    """This server's process id."""
    return os.getpid()


if "--small" not in sys.argv:

    class Point(BaseModel):
        x: int
        y: int
        label: str = "p"

    @server.tool()
    def shape(
        point: Point,
        tags: list[str],
        mode: Literal["fast", "slow"] = "fast",
        limit: int = 10,
        note: str | None = None,
    ) -> str:
        """Every argument back as JSON."""
        got = {"point": point.model_dump(), "tags": tags, "mode": mode, "limit": limit}
        return json.dumps({**got, "note": note}, sort_keys=True)

    @server.tool()
    def calculator(expression: str) -> str:
        """A look-alike of the built-in calculator."""
        return f"{NAME} calculator"

    @server.tool(name="dotted.name")
    def dotted() -> str:
        """A dotted name."""
        return "dotted ok"

    @server.tool(name="with space")
    def spaced() -> str:
        """A name with a space."""
        return "space ok"

    @server.tool(name="kebab-name")
    def kebab() -> str:
        """A name with a hyphen."""
        return "kebab ok"

    @server.tool(name="n" * 70)
    def long_name() -> str:
        """A name of 70 characters."""
        return "long ok"

    @server.tool()
    def takes_config(config: dict) -> str:
        """An argument named config."""
        return "config=" + json.dumps(config, sort_keys=True)

    @server.tool()
    def takes_run_manager(run_manager: str) -> str:
        """An argument named run_manager."""
        return "run_manager=" + run_manager

    @server.tool()
    def multi() -> list[str]:
        """Two text blocks."""
        return ["first", "second"]

    @server.tool()
    def picture() -> Image:
        """A PNG image of 2,000 bytes."""
        return Image(data=b"\x89PNG" + b"\0" * 1996, format="png")

    class Weather(BaseModel):
        city: str
        temp: float

    @server.tool()
    def structured(city: str) -> Weather:
        """Structured content with its text."""
        return Weather(city=city, temp=21.5)

    @server.tool()
    def structured_only() -> types.CallToolResult:
        """Structured content alone."""
        return types.CallToolResult(content=[], structuredContent={"k": "v"})

    @server.tool()
    def embedded() -> types.EmbeddedResource:
        """An embedded text resource."""
        text = types.TextResourceContents(uri="file:///a.txt", text="embedded text")
        return types.EmbeddedResource(type="resource", resource=text)

    @server.tool()
    def blob() -> types.EmbeddedResource:
        """An embedded binary resource."""
        data = base64.b64encode(b"\0" * 3000).decode()
        blob = types.BlobResourceContents(uri="file:///b.bin", blob=data, mimeType="app/x")
        return types.EmbeddedResource(type="resource", resource=blob)

    @server.tool()
    def empty_result() -> types.CallToolResult:
        """No content at all."""
        return types.CallToolResult(content=[])

    def named(word: str):
        def tool() -> str:
            return f"{word} ok"

        return tool

    for word in ("finish", "answer", "nothing", "none"):  # words the text protocol reads too
        server.add_tool(named(word), name=word, description=f"A tool named {word}.")

    @server.tool()
    def big(n: int) -> str:
        """n characters of text."""
        return "y" * n

    @server.tool()
    def explode() -> str:
        """Raises."""
        raise ValueError("kaboom")

    @server.tool()
    def flagged() -> types.CallToolResult:
        """An isError result."""
        text = types.TextContent(type="text", text="flagged failure")
        return types.CallToolResult(content=[text], isError=True)

    @server.tool()
    async def slow(seconds: float) -> str:
        """Sleeps."""
        await asyncio.sleep(seconds)
        return f"slept {seconds:g}"

    @server.tool()
    async def slow_mark(seconds: float) -> str:
        """Sleeps, then records that it finished."""
        await asyncio.sleep(seconds)
        record("finished")
        return "finished"

    @server.tool()
    async def die() -> str:
        """Kills this server mid-call."""
        await asyncio.sleep(0.1)
        os.kill(os.getpid(), signal.SIGKILL)
        await asyncio.sleep(10)
        return "unreachable"


if "--http" in sys.argv:
    server.settings.host = "127.0.0.1"
    server.settings.port = int(sys.argv[sys.argv.index("--http") + 1])
    server.run("streamable-http")
else:
    server.run("stdio")
'''

INPUT = {"messages": [("user", "Use the tools.")]}
MODES = [("native", "sync"), ("native", "async"), ("text", "sync"), ("text", "async")]
SHORT_MODES = [("native", "sync"), ("text", "async")]


@pytest.fixture(autouse=True)
def closed(tmp_path: Path) -> Iterator[None]:
    """A test's own servers (its config files) stop with it; the shared ones with the module."""
    yield
    for path in tmp_path.glob("*.json"):
        close(path)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("probe_mcp")
    close_all()


@pytest.fixture(scope="module")
def script(folder: Path) -> Path:
    path = folder / "server.py"
    path.write_text(SERVER)
    return path


@pytest.fixture(scope="module")
def shared(folder: Path, script: Path) -> Path:
    """Server `a` for the tests that neither count its calls nor stop it."""
    path = folder / "shared.json"
    servers = {"a": server(script, folder / "calls.txt", "a")}
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


@pytest.fixture(scope="module")
def shared_two(folder: Path, script: Path) -> Path:
    """Server `a` (every tool) and server `b` (echo and pid only): echo and pid clash."""
    calls = folder / "calls.txt"
    servers = {"a": server(script, calls, "a"), "b": server(script, calls, "b", "--small")}
    path = folder / "shared_two.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


@pytest.fixture
def counts(tmp_path: Path) -> Path:
    return tmp_path / "calls.txt"


def server(script: Path, counts: Path, name: str, *extra: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(script), name, str(counts), *extra]}


@pytest.fixture
def config(tmp_path: Path, script: Path, counts: Path) -> Path:
    """One full server `a`."""
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"a": server(script, counts, "a")}}))
    return path


@pytest.fixture
def two(tmp_path: Path, script: Path, counts: Path) -> Path:
    """Server `a` (every tool) and server `b` (echo and pid only): echo and pid clash."""
    servers = {"a": server(script, counts, "a"), "b": server(script, counts, "b", "--small")}
    path = tmp_path / "two.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def serve_http(script: Path, counts: Path, port: int) -> subprocess.Popen:
    """The probe server `h` over streamable HTTP on 127.0.0.1:port, once it listens."""
    process = subprocess.Popen(
        [sys.executable, str(script), "h", str(counts), "--http", str(port)],
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"the probe server did not listen on {port}")


@pytest.fixture(scope="module")
def http_url(folder: Path, script: Path) -> Iterator[str]:
    port = free_port()
    process = serve_http(script, folder / "http_calls.txt", port)
    yield f"http://127.0.0.1:{port}/mcp"
    process.kill()
    process.wait()


def run(agent: Any, mode: str, inputs: Any = INPUT, config: dict | None = None) -> dict:
    if mode == "async":
        return asyncio.run(agent.ainvoke(inputs, config))
    return agent.invoke(inputs, config)


def agent_for(protocol: str, script: list, mcp: Path | str, **settings: Any) -> Any:
    model = ScriptedChatModel([*script, answer(protocol, "Done.")])
    return build_graph(model=model, protocol=protocol, mcp_config=str(mcp), **settings)


def observed(out: dict) -> list[tuple[str, bool, str]]:
    return [(s["tool"], s["is_error"], s["observation"]) for s in out["steps"] if s.get("tool")]


def lines(counts: Path) -> list[str]:
    return counts.read_text().splitlines() if counts.exists() else []


# -- arguments and names -----------------------------------------------------------------------


@pytest.mark.parametrize(("protocol", "mode"), MODES)
def test_arguments_of_every_shape_reach_the_server(shared: Path, protocol: str, mode: str) -> None:
    point = {"x": 1, "y": -2}
    script = [
        action(protocol, "shape", {"point": point, "tags": ["a", "b"]}),  # defaults left out
        action(
            protocol,
            "shape",
            {"point": {**point, "label": "q"}, "tags": [], "mode": "slow", "note": "n"},
        ),
        action(protocol, "shape", {"point": point, "tags": ["a"], "mode": "medium"}),
    ]
    out = run(agent_for(protocol, script, shared), mode)
    assert out["status"] == "answered", out
    seen = observed(out)
    first, second = json.loads(seen[0][2]), json.loads(seen[1][2])
    assert first == {
        "point": {"x": 1, "y": -2, "label": "p"},
        "tags": ["a", "b"],
        "mode": "fast",
        "limit": 10,
        "note": None,
    }
    assert second["point"]["label"] == "q" and second["mode"] == "slow" and second["note"] == "n"
    assert second["tags"] == []
    assert seen[2][:2] == ("shape", True) and "mode" in seen[2][2]  # the server refused it


@pytest.mark.parametrize(("protocol", "mode"), SHORT_MODES)
def test_names_are_valid_unique_and_reach_the_right_tool(
    shared_two: Path, protocol: str, mode: str
) -> None:
    calls = {
        "a_echo": ({"text": "x"}, "a: x"),
        "b_echo": ({"text": "y"}, "b: y"),
        "calculator": ({"expression": "2+2"}, "4"),  # the built-in keeps its name
        "a_calculator": ({"expression": "2+2"}, "a calculator"),
        "dotted_name": ({}, "dotted ok"),
        "with_space": ({}, "space ok"),
        "kebab-name": ({}, "kebab ok"),
        "n" * 64: ({}, "long ok"),
    }
    model = ScriptedChatModel(
        [
            *(action(protocol, name, args) for name, (args, _) in calls.items()),
            answer(protocol, "ok"),
        ]
    )
    agent = build_graph(model=model, protocol=protocol, mcp_config=str(shared_two), max_steps=20)
    out = run(agent, mode)
    assert out["status"] == "answered", out
    assert observed(out) == [(name, False, text) for name, (_, text) in calls.items()]
    if protocol == "native":
        offered = [t["function"]["name"] for t in model.requests[0].tools]
    else:
        prompt = model.requests[0].messages[0].text
        offered = [line[2:].split(":")[0] for line in prompt.splitlines() if line.startswith("- ")]
    assert len(offered) == len(set(offered)) and all(VALID_NAME.match(n) for n in offered)
    assert set(calls) <= set(offered) and "echo" not in offered


@pytest.mark.parametrize(
    ("tool", "args", "expected"),
    [
        ("takes_config", {"config": {"depth": 2}}, 'config={"depth": 2}'),
        ("takes_run_manager", {"run_manager": "cron"}, "run_manager=cron"),
    ],
)
def test_arguments_named_like_langchain_parameters_reach_the_server(
    shared: Path, tool: str, args: dict, expected: str
) -> None:
    out = run(agent_for("native", [action("native", tool, args)], shared), "sync")
    assert out["status"] == "answered"
    assert observed(out) == [(tool, False, expected)]


@pytest.mark.parametrize(
    "name",
    [
        "finish",
        "answer",
        "nothing",
        "none",
    ],
)
def test_text_protocol_calls_a_tool_named_like_a_protocol_word(shared: Path, name: str) -> None:
    out = run(agent_for("text", [action("text", name, {})], shared), "sync")
    assert (out["answer"], observed(out)) == ("Done.", [(name, False, f"{name} ok")])


def test_a_run_picks_mcp_tools_by_name(shared_two: Path) -> None:
    model = ScriptedChatModel([action("native", "dotted_name", {}), answer("native", "ok")])
    agent = build_graph(model=model, mcp_config=str(shared_two))
    out = agent.invoke(INPUT, context={"tools": ["a_echo", "dotted_name", "calculator"]})
    assert observed(out) == [("dotted_name", False, "dotted ok")]
    offered = [t["function"]["name"] for t in model.requests[0].tools]
    assert offered == ["a_echo", "dotted_name", "calculator"]


# -- results -----------------------------------------------------------------------------------

RESULTS = {
    "multi": "first\nsecond",
    "picture": "[image/png, 2 kB, not shown]",
    "structured": {"city": "Oslo", "temp": 21.5},
    "structured_only": {"k": "v"},
    "embedded": "embedded text",
    "blob": "[app/x, 3 kB, file:///b.bin, not shown]",
    "empty_result": "(the tool returned no content)",
}


@pytest.mark.parametrize(("protocol", "mode"), SHORT_MODES)
def test_every_kind_of_result_is_one_text_observation(
    shared: Path, protocol: str, mode: str
) -> None:
    args = {"structured": {"city": "Oslo"}}
    script = [action(protocol, name, args.get(name, {})) for name in RESULTS]
    out = run(agent_for(protocol, script, shared, max_steps=20), mode)
    assert out["status"] == "answered", out
    seen = observed(out)
    assert [(tool, error) for tool, error, _ in seen] == [(n, False) for n in RESULTS]
    for (tool, _, text), expected in zip(seen, RESULTS.values(), strict=True):
        assert (json.loads(text) if isinstance(expected, dict) else text) == expected, tool
    messages = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert all(isinstance(m.content, str) and "base64" not in m.content for m in messages)


def test_a_large_result_within_the_limit_is_cut_with_a_true_note(shared: Path) -> None:
    """observation_limit under the MCP cap: cut once, at the limit."""
    script = [action("native", "big", {"n": 15_000})]
    out = run(agent_for("native", script, shared, observation_limit=1000), "sync")
    text = observed(out)[0][2]
    assert text == "y" * 1000 + "\n[... 14,000 more characters cut; 15,000 in all]"


@pytest.mark.parametrize("limit", [4000, 30_000])
def test_a_huge_result_is_cut_at_the_observation_limit(shared: Path, limit: int) -> None:
    script = [action("native", "big", {"n": 50_000})]
    out = run(agent_for("native", script, shared, observation_limit=limit), "sync")
    text = observed(out)[0][2]
    assert text == "y" * limit + f"\n[... {50_000 - limit:,} more characters cut; 50,000 in all]"


# -- faults ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("protocol", "mode"), MODES)
def test_faults_are_observations_and_the_run_goes_on(
    config: Path, protocol: str, mode: str
) -> None:
    """tool_timeout leaves room for the server's start (the first call) and its restart after
    `die` (inside the next call), with the machine loaded: 2.5 s was once too little."""
    script = [
        action(protocol, "pid", {}),
        action(protocol, "explode", {}),
        action(protocol, "flagged", {}),
        action(protocol, "slow", {"seconds": 10}),
        action(protocol, "echo", {"text": "after the timeout"}),
        action(protocol, "die", {}),
        action(protocol, "pid", {}),
    ]
    started = time.monotonic()
    out = run(agent_for(protocol, script, config, tool_timeout=5, max_steps=20), mode)
    assert time.monotonic() - started < 30
    assert out["status"] == "answered" and out["answer"] == "Done."
    seen = observed(out)
    assert seen[1][:2] == ("explode", True) and "kaboom" in seen[1][2]
    assert "Traceback" not in seen[1][2]
    assert seen[2] == ("flagged", True, "MCP tool 'flagged' (server 'a') failed: flagged failure")
    assert seen[3] == ("slow", True, "Tool 'slow' timed out after 5 s.")
    assert seen[4] == ("echo", False, "a: after the timeout")
    assert seen[5][:2] == ("die", True) and "MCP server 'a' stopped during the call" in seen[5][2]
    first, second = int(seen[0][2]), int(seen[6][2])
    assert seen[6][1] is False and second != first and not alive(first)


@pytest.mark.xfail(
    strict=True,
    reason="an MCP call abandoned at tool_timeout in an async run is not cancelled on the "
    "server (no notifications/cancelled): it runs on to its end",
)
def test_an_abandoned_async_call_is_cancelled_on_the_server(config: Path, counts: Path) -> None:
    script = [action("native", "slow_mark", {"seconds": 1.5}), action("native", "pid", {})]
    out = run(agent_for("native", script, config, tool_timeout=0.5), "async")
    assert observed(out)[0] == ("slow_mark", True, "Tool 'slow_mark' timed out after 0.5 s.")
    time.sleep(2)  # past the end of the call on the server
    assert alive(int(observed(out)[1][2]))
    assert lines(counts) == []


def test_the_agents_mcp_tools_have_no_limits_of_their_own(
    shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's `tool_timeout` and `observation_limit` are the limits: the agent asks the MCP
    layer for none shorter (it had a 30 s call limit and a 20,000-character cut of its own, so
    a 31 s call failed under `tool_timeout=40`; checked here without waiting 31 s)."""
    import graph.tooling.registry as registry

    asked: list[dict[str, Any]] = []

    def recording(path: str, **limits: Any) -> list[Any]:
        asked.append(limits)
        return []

    monkeypatch.setattr(registry, "mcp_tools", recording)
    registry.registry_tools(None, str(shared))
    assert asked == [{"timeout": None, "max_chars": registry.MCP_MAX_CHARS}]
    assert registry.MCP_MAX_CHARS >= 100_000  # observation_limit's largest value


@pytest.mark.parametrize(("protocol", "mode"), SHORT_MODES)
def test_a_second_run_after_the_server_died_mid_run(config: Path, protocol: str, mode: str) -> None:
    model = ScriptedChatModel(
        [
            action(protocol, "die", {}),
            answer(protocol, "first"),
            action(protocol, "echo", {"text": "second run"}),
            answer(protocol, "second"),
        ]
    )
    agent = build_graph(model=model, protocol=protocol, mcp_config=str(config))
    first = run(agent, mode)
    assert first["status"] == "answered" and observed(first)[0][1] is True
    second = run(agent, mode)
    assert second["status"] == "answered"
    assert observed(second) == [("echo", False, "a: second run")]


@pytest.mark.parametrize(("protocol", "mode"), SHORT_MODES)
def test_a_server_that_died_between_runs_is_started_again(
    config: Path, protocol: str, mode: str
) -> None:
    """A call the dead server's session could not even write is made again on a new server.
    When the session saw the server hang up first ("Connection closed"), the call may have
    reached it, so it is not made twice: that call fails with a sentence saying the server
    starts again, and the next one does."""
    model = ScriptedChatModel(
        [
            action(protocol, "pid", {}),
            answer(protocol, "first"),
            action(protocol, "echo", {"text": "second run"}),
            answer(protocol, "second"),
            action(protocol, "echo", {"text": "third run"}),
            answer(protocol, "third"),
        ]
    )
    agent = build_graph(model=model, protocol=protocol, mcp_config=str(config))
    pid = int(observed(run(agent, mode))[0][2])
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    second = observed(run(agent, mode))
    started_again = "it will be started again on the next call."
    assert second == [("echo", False, "a: second run")] or (
        second[0][1] and second[0][2].endswith(started_again) and "Error" not in second[0][2]
    ), second
    assert observed(run(agent, mode)) == [("echo", False, "a: third run")]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_server_that_does_not_start_ends_the_run_with_one_sentence(
    tmp_path: Path, mode: str
) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"files": {"command": "/nonexistent/probe-mcp"}}}))
    agent = agent_for("native", [action("native", "echo", {"text": "x"})], path)
    out = run(agent, mode)
    assert out["status"] == "error"
    error = out.get("error") or out.get("answer") or ""
    assert error.startswith("MCP server 'files' did not start: no program '/nonexistent/")
    assert "\n" not in error and "Traceback" not in error and str(path) in error


# -- over streamable HTTP ----------------------------------------------------------------------


@pytest.mark.parametrize(("protocol", "mode"), SHORT_MODES)
def test_a_streamable_http_server_in_the_agent(
    tmp_path: Path, http_url: str, protocol: str, mode: str
) -> None:
    path = tmp_path / "remote.json"
    path.write_text(json.dumps({"mcpServers": {"web": {"url": http_url}}}))
    script = [
        action(protocol, "shape", {"point": {"x": 3, "y": 4}, "tags": ["r"]}),
        action(protocol, "picture", {}),
        action(protocol, "flagged", {}),
        action(protocol, "slow", {"seconds": 5}),
        action(protocol, "dotted_name", {}),
    ]
    out = run(agent_for(protocol, script, path, tool_timeout=1), mode)
    assert out["status"] == "answered", out
    seen = observed(out)
    assert json.loads(seen[0][2])["point"] == {"x": 3, "y": 4, "label": "p"}
    assert seen[1] == ("picture", False, "[image/png, 2 kB, not shown]")
    assert seen[2] == ("flagged", True, "MCP tool 'flagged' (server 'web') failed: flagged failure")
    assert seen[3] == ("slow", True, "Tool 'slow' timed out after 1 s.")
    assert seen[4] == ("dotted_name", False, "dotted ok")


def test_runs_go_on_after_an_http_server_restarts(
    tmp_path: Path, script: Path, counts: Path
) -> None:
    port = free_port()
    process = serve_http(script, counts, port)
    path = tmp_path / "remote.json"
    path.write_text(json.dumps({"mcpServers": {"web": {"url": f"http://127.0.0.1:{port}/mcp"}}}))
    replies = []
    for n in range(3):
        replies += [action("native", "echo", {"text": f"run {n}"}), answer("native", f"{n}")]
    agent = build_graph(model=ScriptedChatModel(replies), mcp_config=str(path), tool_timeout=10)
    try:
        assert observed(run(agent, "sync")) == [("echo", False, "h: run 0")]
        process.kill()
        process.wait()
        process = serve_http(script, counts, port)  # the same server, started again
        run(agent, "sync")  # the first call after the restart may fail, once
        third = run(agent, "async")
    finally:
        process.kill()
        process.wait()
    assert observed(third) == [("echo", False, "h: run 2")]


# -- approvals ---------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", ["echo", "a:echo", "a_echo"])
@pytest.mark.parametrize(("protocol", "mode"), SHORT_MODES)
def test_a_gated_mcp_call_pauses_and_runs_once_after_approval(
    two: Path, counts: Path, entry: str, protocol: str, mode: str
) -> None:
    model = ScriptedChatModel(
        [action(protocol, "a_echo", {"text": "gated"}), answer(protocol, "Done.")]
    )
    agent = build_graph(
        model=model,
        protocol=protocol,
        mcp_config=str(two),
        checkpointer=InMemorySaver(),
        approve=[entry],
    )
    thread = {"configurable": {"thread_id": f"gate-{entry}"}}
    paused = run(agent, mode, INPUT, thread)
    requests = paused["__interrupt__"][0].value["action_requests"]
    assert [(r["name"], r["args"]) for r in requests] == [("a_echo", {"text": "gated"})]
    assert lines(counts) == []  # nothing ran before the decision
    out = run(agent, mode, Command(resume={"decisions": [{"type": "approve"}]}), thread)
    assert out["status"] == "answered"
    assert observed(out) == [("a_echo", False, "a: gated")]
    assert lines(counts) == ["a echo gated"]  # exactly once


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_rejected_mcp_call_never_runs_and_another_servers_tool_is_not_gated(
    two: Path, counts: Path, mode: str
) -> None:
    model = ScriptedChatModel(
        [
            action("native", "a_echo", {"text": "refused"}),
            action("native", "b_echo", {"text": "free"}),
            answer("native", "Done."),
        ]
    )
    agent = build_graph(
        model=model, mcp_config=str(two), checkpointer=InMemorySaver(), approve=["a:echo"]
    )
    thread = {"configurable": {"thread_id": "reject"}}
    assert "__interrupt__" in run(agent, mode, INPUT, thread)
    reject = {"decisions": [{"type": "reject", "message": "no"}]}
    out = run(agent, mode, Command(resume=reject), thread)
    assert out["status"] == "answered"
    assert observed(out)[1] == ("b_echo", False, "b: free")
    assert lines(counts) == ["b echo free"]


def test_an_approval_naming_no_mcp_tool_is_refused(shared_two: Path) -> None:
    agent = agent_for("native", [], shared_two, approve=["c:echo"])
    out = run(agent, "sync")
    assert out["status"] == "error"
    assert "'c:echo' names no tool" in (out.get("error") or out.get("answer") or "")


# -- concurrent runs ---------------------------------------------------------------------------


def _per_user(messages: list) -> AIMessage:
    """Slow, then echo the user's own words; answer with what came back."""
    user = next(m for m in messages if isinstance(m, HumanMessage)).text
    results = [m for m in messages if isinstance(m, ToolMessage)]
    if not results:
        return action("native", "slow", {"seconds": 0.5})
    if len(results) == 1:
        return action("native", "echo", {"text": user})
    return AIMessage(content=f"{user} -> {results[-1].text}")


@pytest.mark.parametrize("mode", ["async", "threads"])
def test_concurrent_runs_share_the_servers_without_cross_talk(shared: Path, mode: str) -> None:
    model = ScriptedChatModel([_per_user], cycle=True)
    agent = build_graph(model=model, mcp_config=str(shared), checkpointer=InMemorySaver())
    users = [f"user{i}" for i in range(6)]

    def one(user: str) -> dict:
        return agent.invoke({"messages": [("user", user)]}, {"configurable": {"thread_id": user}})

    async def gathered() -> list[dict]:
        return await asyncio.gather(
            *(
                agent.ainvoke({"messages": [("user", u)]}, {"configurable": {"thread_id": u}})
                for u in users
            )
        )

    started = time.monotonic()
    if mode == "async":
        outs = asyncio.run(gathered())
    else:
        outs: list[dict] = [{}] * len(users)

        def into(i: int) -> None:
            outs[i] = one(users[i])

        workers = [threading.Thread(target=into, args=(i,)) for i in range(len(users))]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(30)
    assert time.monotonic() - started < 10  # the slow calls overlapped
    assert [o["answer"] for o in outs] == [f"{u} -> a: {u}" for u in users]
    pids = {observed(o)[0] for o in outs}
    assert len(pids) == 1  # one server for every run


# -- the command line --------------------------------------------------------------------------


@pytest.fixture
def env(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> dict[str, str]:
    return cli_env(openai_server.base_url, tmp_path / "state")


def test_cli_ask_json_runs_mcp_tools(
    openai_server: ScriptedOpenAIServer, env: dict[str, str], config: Path, counts: Path
) -> None:
    openai_server.add(
        Reply(
            tool_calls=[
                ToolCall("shape", {"point": {"x": 1, "y": 2}, "tags": ["c"], "mode": "slow"}),
                ToolCall("dotted_name", {}),
            ]
        ),
        Reply(tool_calls=[ToolCall("picture", {})]),
        Reply(tool_calls=[ToolCall("explode", {})]),
        Reply(content="All done."),
    )
    args = ["--protocol", "native", "--mcp-config", str(config), "--json"]
    done = run_cli("ask", "go", *args, env=env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "answered" and result["answer"] == "All done."
    seen = [(s["tool"], s["observation"]) for s in result["steps"] if s["kind"] == "action"]
    assert json.loads(seen[0][1])["mode"] == "slow"
    assert seen[1:3] == [("dotted_name", "dotted ok"), ("picture", "[image/png, 2 kB, not shown]")]
    assert seen[3][0] == "explode" and "kaboom" in seen[3][1]
    offered = [t["function"]["name"] for t in openai_server.chat_requests[0].body["tools"]]
    assert all(VALID_NAME.match(name) for name in offered)
    leftover = [  # the command's own server (its calls file is this test's) is gone
        p
        for p in Path("/proc").iterdir()
        if p.name.isdigit() and str(counts).encode() in _cmdline(p)
    ]
    assert leftover == []


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"mcpServers": {"files": {}}}', 'mcpServers.files needs exactly one of "command"'),
        ("{not json", "not valid JSON"),
        (None, "the file does not exist"),
        ('{"mcpServers": {"files": {"url": "ftp://x"}}}', "mcpServers.files.url must be"),
    ],
)
def test_cli_bad_mcp_config_is_one_sentence_with_exit_2(
    openai_server: ScriptedOpenAIServer,
    env: dict[str, str],
    tmp_path: Path,
    content: str | None,
    expected: str,
) -> None:
    path = tmp_path / "mcp.json"
    if content is not None:
        path.write_text(content)
    done = run_cli("ask", "go", "--json", "--mcp-config", str(path), env=env)
    assert done.returncode == 2
    assert done.stdout == "" and "Traceback" not in done.stderr
    errors = done.stderr.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith(f"error: MCP config {path}")
    assert expected in errors[0] and openai_server.chat_requests == []


def test_cli_server_that_does_not_start_is_one_sentence(
    openai_server: ScriptedOpenAIServer, env: dict[str, str], tmp_path: Path
) -> None:
    path = tmp_path / "mcp.json"
    broken = {"command": sys.executable, "args": ["-c", "import sys; sys.exit(3)"]}
    path.write_text(json.dumps({"mcpServers": {"broken": broken}}))
    done = run_cli("ask", "go", "--json", "--mcp-config", str(path), env=env)
    assert done.returncode == 1  # an environment fault (graph/cli/guard.py), not bad input
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in done.stderr
    assert errors[0].startswith("error: MCP server 'broken' did not start: ")
    assert openai_server.chat_requests == []
