"""Tools from MCP servers: the config file, the tools of real FastMCP servers over stdio,
streamable HTTP and SSE (127.0.0.1 only), faults as observations, the agent end to end, and no
child process left behind however the process ends."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import ToolException

import tools
from graph import build_graph
from graph.protocols.text.grammar import grammar_for
from graph.protocols.text.prompts import text_system_prompt
from tests.support.mcp_servers import alive, children, serve, toolbox, write_config
from tests.support.scripted_model import ScriptedChatModel, calls, tool_call
from tools.mcp import (
    MCPConfigError,
    MCPServerError,
    amcp_tools,
    close,
    close_all,
    describe,
    load_config,
    mcp_tools,
)
from tools.mcp.naming import VALID_NAME, assign_names

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
TOOL_NAMES = ["echo", "add", "math_mul", "explode", "slow", "picture", "big", "die", "pid"]


@pytest.fixture(autouse=True)
def no_leftovers(http_servers: dict[str, str]) -> Iterator[None]:
    """Every test ends with its MCP servers closed and no child process of ours left over
    (the module's HTTP servers aside)."""
    yield
    close_all()
    keep = {int(pid) for pid in http_servers.get("pids", "").split()}
    left = [c for c in children() if c[0] not in keep]
    assert left == [], f"child processes left behind: {left}"


@pytest.fixture(scope="module")
def http_servers() -> Iterator[dict[str, str]]:
    """The toolbox over streamable HTTP and over SSE on loopback ports, for the whole module."""
    http, http_port = serve("--http")
    sse, sse_port = serve("--sse")
    yield {
        "http": f"http://127.0.0.1:{http_port}/mcp",
        "sse": f"http://127.0.0.1:{sse_port}/sse",
        "pids": f"{http.pid} {sse.pid}",
    }
    for process in (http, sse):
        process.kill()
        process.wait()


@pytest.fixture
def box(tmp_path: Path) -> Path:
    return write_config(tmp_path / "mcp.json", {"box": toolbox()})


# -- the config file ---------------------------------------------------------------------------


def test_config_reads_both_kinds_of_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "work").mkdir()
    path = write_config(
        tmp_path / "mcp.json",
        {
            "files": {"command": "npx", "args": ["-y", "srv"], "env": {"K": "v"}, "cwd": "work"},
            "web": {"url": "https://example.test/mcp", "headers": {"A": "${MCP_TEST_TOKEN}"}},
            "old": {"type": "sse", "url": "http://127.0.0.1:1/sse", "autoApprove": []},
            "plain": {"transport": "http", "url": "http://127.0.0.1:1/mcp"},
            "off": {"command": "nothing", "disabled": True},
        },
    )
    monkeypatch.setenv("MCP_TEST_TOKEN", "secret")
    config = load_config(path)
    web = config.server("web").connection()
    assert [s.name for s in config.servers] == ["files", "web", "old", "plain"]
    assert config.server("files").connection() == {
        "transport": "stdio",
        "command": "npx",
        "args": ["-y", "srv"],
        "env": {"K": "v"},
        "cwd": str(tmp_path / "work"),
    }
    assert web == {
        "transport": "streamable_http",
        "url": "https://example.test/mcp",
        "headers": {"A": "secret"},
    }
    assert config.server("old").transport == "sse"
    assert config.server("plain").transport == "streamable_http"
    assert "secret" not in repr(config)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "the file does not exist"),
        ("{not json", "not valid JSON"),
        ('{"servers": {}}', '"mcpServers"'),
        ('{"mcpServers": {"a": []}}', "mcpServers.a must be an object"),
        ('{"mcpServers": {"a": {}}}', 'mcpServers.a needs exactly one of "command"'),
        ('{"mcpServers": {"a": {"command": "x", "url": "http://h"}}}', "exactly one of"),
        ('{"mcpServers": {"a": {"command": ""}}}', "mcpServers.a.command must be"),
        ('{"mcpServers": {"a": {"command": "x", "args": "-v"}}}', "mcpServers.a.args must be"),
        ('{"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}', "mcpServers.a.env must be"),
        ('{"mcpServers": {"a": {"url": "ftp://h/x"}}}', "mcpServers.a.url must be an http"),
        ('{"mcpServers": {"a": {"url": "http://h", "transport": "stdio"}}}', "needs a"),
        ('{"mcpServers": {"a": {"command": "x", "transport": "ws"}}}', "a.transport must be"),
        ('{"mcpServers": {"a": {"url": "http://h", "headers": []}}}', "a.headers must be"),
    ],
)
def test_config_errors_name_the_file_and_the_field(
    tmp_path: Path, content: str | None, expected: str
) -> None:
    path = tmp_path / "mcp.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(MCPConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert message.startswith(f"MCP config {path}: ") and expected in message
    assert message.count("\n") == 0 and message.endswith(".")
    with pytest.raises(MCPConfigError):
        mcp_tools(path)  # the same sentence from the loader, before anything starts


def test_names_stay_valid_and_are_prefixed_only_on_a_clash() -> None:
    pairs = [("a", "echo"), ("b", "echo"), ("a", "math.mul"), ("b", "solo"), ("x y", "ls")]
    assert assign_names(pairs) == ["a_echo", "b_echo", "math_mul", "solo", "ls"]
    assert assign_names(pairs, reserved=["ls"]) == [
        "a_echo",
        "b_echo",
        "math_mul",
        "solo",
        "x_y_ls",
    ]
    long = assign_names([("s", "t" * 80), ("r", "t" * 80)])
    assert len(set(long)) == 2 and all(VALID_NAME.match(n) for n in long)
    assert all(VALID_NAME.match(n) for n in assign_names([("s", "ünï/cøde"), ("s", "")]))


def test_import_starts_nothing() -> None:
    code = (
        "import sys, threading, tools, tools.mcp, tools.mcp.config\n"
        "assert 'mcp' not in sys.modules and 'langchain_mcp_adapters' not in sys.modules\n"
        "assert threading.active_count() == 1\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)


# -- tools of real servers ---------------------------------------------------------------------


def test_stdio_tools_are_loaded_once_and_called_sync_and_async(box: Path) -> None:
    loaded = mcp_tools(box, timeout=5)
    found = {t.name: t for t in loaded}
    assert list(found) == TOOL_NAMES
    assert found["add"].args_schema["required"] == ["a"]
    assert found["echo"].invoke({"text": "hi"}) == "echo: hi"
    assert found["add"].invoke({"a": 2, "b": 40}) == "42"
    assert found["math_mul"].invoke({"a": 3, "b": 0.5}) == "1.5"
    assert asyncio.run(found["echo"].ainvoke({"text": "async"})) == "echo: async"
    pid = found["pid"].invoke({})
    again = {t.name: t for t in mcp_tools(str(box), timeout=5)}  # cached: the same server
    assert again["pid"].invoke({}) == pid and found["pid"].invoke({}) == pid
    assert found["pid"].metadata["mcp_server"] == "box"
    assert [d["name"] for d in describe(box)] == TOOL_NAMES
    mul = next(d for d in describe(box) if d["name"] == "math_mul")
    assert mul["mcp_name"] == "math.mul" and mul["server"] == "box"
    assert mul["schema"]["properties"]["a"]["type"] == "number"
    close(box)
    assert not alive(int(pid))
    with pytest.raises(ToolException, match="was closed"):
        found["echo"].invoke({"text": "late"})
    assert mcp_tools(box)[0].invoke({"text": "new"}) == "echo: new"  # a fresh start


@pytest.mark.parametrize("transport", ["http", "sse"])
def test_remote_tools(tmp_path: Path, http_servers: dict[str, str], transport: str) -> None:
    server = {"url": http_servers[transport], "transport": transport}
    found = {t.name: t for t in mcp_tools(write_config(tmp_path / "m.json", {"web": server}))}
    assert list(found) == TOOL_NAMES
    assert found["echo"].invoke({"text": "remote"}) == "echo: remote"
    assert asyncio.run(found["add"].ainvoke({"a": 1, "b": 1})) == "2"
    assert found["picture"].invoke({}) == "[image/png, 12 kB, not shown]"


@pytest.mark.parametrize("where", ["stdio", "http"])
def test_faults_are_tool_exceptions_and_the_server_goes_on(
    tmp_path: Path, http_servers: dict[str, str], where: str
) -> None:
    server = toolbox() if where == "stdio" else {"url": http_servers["http"]}
    found = {
        t.name: t for t in mcp_tools(write_config(tmp_path / "m.json", {"s": server}), timeout=1)
    }
    with pytest.raises(
        ToolException, match=r"^MCP tool 'explode' \(server 's'\) failed: .*disk on fire"
    ):
        found["explode"].invoke({})
    started = time.monotonic()
    with pytest.raises(
        ToolException, match=r"^MCP tool 'slow' \(server 's'\) timed out after 1 s\.$"
    ):
        found["slow"].invoke({"seconds": 5})
    assert time.monotonic() - started < 3
    assert found["picture"].invoke({}) == "[image/png, 12 kB, not shown]"
    text = found["big"].invoke({})
    assert len(text) < 21_000 and text.endswith(
        "[... 980,000 more characters cut; 1,000,000 in all]"
    )
    assert found["echo"].invoke({"text": "still here"}) == "echo: still here"


def test_a_server_killed_mid_call_is_restarted_on_the_next_call(box: Path) -> None:
    found = {t.name: t for t in mcp_tools(box, timeout=10)}
    first = int(found["pid"].invoke({}))
    started = time.monotonic()
    with pytest.raises(ToolException, match="MCP server 'box' stopped during the call to 'die'"):
        found["die"].invoke({})
    assert time.monotonic() - started < 5  # noticed at once, not at the timeout
    assert not alive(first) and first not in [c[0] for c in children()]  # reaped
    assert int(found["pid"].invoke({})) != first
    assert found["add"].invoke({"a": 1}) == "1"


def test_an_http_server_killed_mid_call_is_noticed_before_the_timeout(tmp_path: Path) -> None:
    process, port = serve("--http")
    try:
        config = write_config(tmp_path / "m.json", {"web": {"url": f"http://127.0.0.1:{port}/mcp"}})
        found = {t.name: t for t in mcp_tools(config, timeout=20)}
        started = time.monotonic()
        with pytest.raises(
            ToolException, match="MCP server 'web' stopped during the call to 'die'"
        ):
            found["die"].invoke({})
        assert time.monotonic() - started < 10
        with pytest.raises(ToolException, match=r"MCP server 'web' did not start: .*not made"):
            found["echo"].invoke({"text": "anyone?"})
    finally:
        process.kill()
        process.wait()


@pytest.mark.parametrize(
    ("server", "expected"),
    [
        (
            {"command": "/nonexistent/mcp-server"},
            "no program '/nonexistent/mcp-server' was found; check its command in",
        ),
        (
            {"command": sys.executable, "args": ["-c", "import sys; sys.exit(3)"]},
            "the server exited or hung up before the MCP handshake finished; check its command",
        ),
        ({"command": "sleep", "args": ["30"]}, "no answer within 1 s; check its command"),
        (
            {"url": "http://user:pw@127.0.0.1:9/mcp?key=s"},
            "check that a server is up at http://127.0.0.1:9/mcp and that its url in",
        ),
    ],
)
def test_a_server_that_does_not_start_is_one_clear_error(
    tmp_path: Path, server: dict, expected: str
) -> None:
    hangs = "sleep" in str(server)
    servers = {"broken": server} if hangs else {"good": toolbox(), "broken": server}
    config = write_config(tmp_path / "m.json", servers)
    started = time.monotonic()
    with pytest.raises(MCPServerError) as caught:
        mcp_tools(config, start_timeout=1 if hangs else 30)
    assert time.monotonic() - started < 8
    message = str(caught.value)
    assert message.startswith("MCP server 'broken' did not start: ") and expected in message
    assert "good" not in message and "\n" not in message
    assert str(config) in message and message.endswith(".")
    # a sentence for a person: no exception class names, no credentials of the URL
    assert not re.search(r"[A-Z][a-z]+(Error|Exception|Group)\b", message), message
    assert "pw" not in message and "key=" not in message


def test_clashing_names_are_prefixed_with_the_server(tmp_path: Path) -> None:
    config = write_config(tmp_path / "m.json", {"one": toolbox(), "two": toolbox()})
    names = [t.name for t in mcp_tools(config)]
    assert names == [f"one_{n}" for n in TOOL_NAMES] + [f"two_{n}" for n in TOOL_NAMES]
    found = {t.name: t for t in mcp_tools(config)}
    assert found["one_pid"].invoke({}) != found["two_pid"].invoke({})
    assert tools.mcp_tools(tmp_path / "m.json")[0].name == "one_echo"


def test_the_registry_function_keeps_built_in_names_free(tmp_path: Path) -> None:
    config = write_config(tmp_path / "m.json", {"box": toolbox()})
    reserved = [t.name for t in tools.mcp_tools(config, timeout=5)]
    assert reserved[:2] == ["echo", "add"]
    assert [t.name for t in mcp_tools(config, reserved=("echo",))][:2] == ["box_echo", "add"]


def test_works_from_inside_a_running_event_loop(box: Path) -> None:
    async def main() -> tuple[str, str, str]:
        loaded = {t.name: t for t in await amcp_tools(box)}
        blocking = mcp_tools(box)[0].invoke({"text": "sync in a loop"})  # e.g. langgraph dev
        together = await asyncio.gather(*(loaded["slow"].ainvoke({"seconds": 0.5}) for _ in "ab"))
        return blocking, *together

    started = time.monotonic()
    assert asyncio.run(main()) == ("echo: sync in a loop", "slept 0.5 s", "slept 0.5 s")
    assert time.monotonic() - started < 10


def test_the_async_path_never_blocks_the_callers_loop(box: Path) -> None:
    """What `langgraph dev` checks: BlockBuster raises on any blocking call made on the loop."""
    blockbuster = pytest.importorskip("blockbuster")

    async def main() -> list[str]:
        loaded = {t.name: t for t in await amcp_tools(box, timeout=5)}
        out = [await loaded["echo"].ainvoke({"text": "a"})]
        with pytest.raises(ToolException, match="stopped during the call to 'die'"):
            await loaded["die"].ainvoke({})
        return [*out, await loaded["add"].ainvoke({"a": 1, "b": 2})]

    with blockbuster.blockbuster_ctx():
        assert asyncio.run(main()) == ["echo: a", "3"]


def test_the_prompt_and_grammar_take_mcp_tools(box: Path) -> None:
    loaded = mcp_tools(box)
    prompt = text_system_prompt(loaded)
    assert "- math_mul: Multiply two numbers" in prompt
    assert '"required": ["a", "b"]' in prompt
    grammar = grammar_for(loaded)
    assert "Action: math_mul\\nAction Input: " in grammar and "root ::=" in grammar


# -- the agent end to end ----------------------------------------------------------------------


def step(protocol: str, name: str, args: dict) -> AIMessage | str:
    if protocol == "native":
        return calls(tool_call(name, args))
    return f"Thought: I need {name}.\nAction: {name}\nAction Input: {json.dumps(args)}"


@pytest.mark.parametrize(("protocol", "mode"), [("native", "sync"), ("text", "async")])
def test_agent_runs_on_through_every_fault(box: Path, protocol: str, mode: str) -> None:
    script = [
        step(protocol, "echo", {"text": "hi"}),
        step(protocol, "explode", {}),
        step(protocol, "slow", {"seconds": 5}),
        step(protocol, "die", {}),
        step(protocol, "add", {"a": 2, "b": 3}),
        step(protocol, "picture", {}),
        "Done." if protocol == "native" else "Thought: enough.\nFinal Answer: Done.",
    ]
    agent = build_graph(
        model=ScriptedChatModel(script), tools=mcp_tools(box, timeout=1), protocol=protocol
    )
    inputs = {"messages": [("user", "Try every tool.")]}
    out = asyncio.run(agent.ainvoke(inputs)) if mode == "async" else agent.invoke(inputs)
    assert out["status"] == "answered" and out["answer"] == "Done."
    seen = [(s["tool"], s["is_error"], s["observation"]) for s in out["steps"][:-1]]
    assert seen[0] == ("echo", False, "echo: hi")
    assert seen[1][:2] == ("explode", True) and "disk on fire" in seen[1][2]
    assert seen[2] == ("slow", True, "MCP tool 'slow' (server 'box') timed out after 1 s.")
    assert seen[3][:2] == ("die", True) and "stopped during the call to 'die'" in seen[3][2]
    assert seen[4] == ("add", False, "5")
    assert seen[5] == ("picture", False, "[image/png, 12 kB, not shown]")


# -- cleanup however the process ends ----------------------------------------------------------

SCRIPT = """
import atexit, os, sys, time
from tools.mcp import mcp_tools

def report():  # registered before the MCP hook, so it runs after it
    try:
        os.kill(server, 0)
    except ProcessLookupError:
        print("closed at exit", flush=True)

atexit.register(report)
tools = {{t.name: t for t in mcp_tools({config!r})}}
server = int(tools["pid"].invoke({{}}))
print(server, flush=True)
{ending}
"""


@pytest.mark.parametrize(
    ("ending", "at_exit"),
    [
        ("pass", True),  # a normal exit
        ("raise RuntimeError('crash')", True),  # an uncaught exception
        ("time.sleep(60)", True),  # interrupted with SIGINT (Ctrl-C)
        ("os._exit(0)", False),  # no atexit: the server sees its stdin close and exits
        ("time.sleep(60)  # SIGKILL", False),  # likewise
    ],
)
def test_no_server_outlives_its_process(box: Path, ending: str, at_exit: bool) -> None:
    code = textwrap.dedent(SCRIPT).format(config=str(box), ending=ending)
    process = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    server = int(process.stdout.readline())
    assert alive(server)
    if "sleep" in ending:
        process.send_signal(signal.SIGKILL if "SIGKILL" in ending else signal.SIGINT)
    rest = process.stdout.read()
    process.wait(30)
    assert ("closed at exit" in rest) is at_exit
    deadline = time.monotonic() + 10
    while alive(server) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(server)
