"""The embedded local model end to end: a real llama.cpp server with the packaged model, the
agent on the text protocol with grammar-constrained decoding and the few-shot completion prompt.

What is asserted is what the grammar guarantees (every step parses, every action names a real
tool with a schema-valid input, the run ends with a status), what the server manager
guarantees (no server outlives its owner, however the owner ends), and the arithmetic answer,
with all default tools enabled. One server serves the whole module. Needs the `local` extra
(CI installs it).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from langchain_core.tools import BaseTool
from langgraph.checkpoint.memory import InMemorySaver

from graph import build_graph
from graph.models.local import (
    ANSWER_AFTER,
    STEP_TOKENS,
    LocalModelError,
    LocalServer,
    chat_model,
    local_available,
    local_server,
    stop_local_server,
)
from graph.protocols.text.grammar import grammar_for, request_options
from graph.protocols.text.observations import quotable_lines
from graph.protocols.text.reader import parse_react
from tools import TOOL_NAMES, load_tools

pytestmark = [
    pytest.mark.local_llm,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not local_available(), reason="the local extra is not installed"),
]

OFFLINE_TOOLS = ["calculator", "knowledge_search", "current_time"]
ENDED = {"answered", "max_steps", "stuck", "error"}


def _gone(pid: int, within: float = 15.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # a zombie whose parent has not reaped it yet counts as gone
            state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
            if state == "Z":
                return True
        except (OSError, IndexError):
            return True
        time.sleep(0.1)
    return False


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    instance = LocalServer(progress=None).start()
    pid = instance.pid
    try:
        yield instance
    finally:
        instance.stop()
    assert pid is not None and _gone(pid), "the module's server outlived the module"


def _run(server: LocalServer, question: str, tools: list[BaseTool], **options: object) -> dict:
    agent = build_graph(
        model=chat_model(server, tools),
        tools=tools,
        checkpointer=InMemorySaver(),
        protocol="text",
        max_steps=4,
        constrained_decoding="on",  # a model object is not "the embedded model" to `auto`
        answer_after=ANSWER_AFTER,
        max_tokens=STEP_TOKENS,
        quoted_answers=True,
        **options,
    )
    return agent.invoke(
        {"messages": [("user", question)]}, {"configurable": {"thread_id": "local"}}
    )


def _assert_guarantees(out: dict, tools: list[BaseTool]) -> None:
    by_name = {tool.name: tool for tool in tools}
    assert out["status"] in ENDED
    assert out["status"] != "error", out.get("error")
    kinds = [step["kind"] for step in out["steps"]]
    assert "invalid" not in kinds, out["steps"]  # every reply parsed
    actions = [step for step in out["steps"] if step["kind"] == "action"]
    for step in actions:
        assert step["tool"] in by_name, step
        assert isinstance(step["tool_input"], dict), step
        by_name[step["tool"]].args_schema.model_validate(step["tool_input"])
    assert any(step.get("usage") for step in out["steps"]), "token usage was not recorded"
    if out["status"] == "answered":
        assert out["answer"] and out["answer"].strip()


def test_the_server_serves_the_packaged_model(server: LocalServer) -> None:
    assert server.running and server.base_url.startswith("http://127.0.0.1:")
    models = httpx.get(f"{server.base_url}/models", timeout=10, trust_env=False).json()
    assert [m["id"] for m in models["data"]] == ["local"]


@pytest.mark.parametrize("names", [OFFLINE_TOOLS, TOOL_NAMES], ids=["offline", "all"])
def test_arithmetic_through_the_agent(server: LocalServer, names: list[str]) -> None:
    """With the offline tools or all six: the model chooses the calculator, and 38 * 12."""
    tools = load_tools(names)
    out = _run(server, "What is 38 * 12?", tools)
    _assert_guarantees(out, tools)
    assert out["status"] == "answered", out
    assert "456" in out["answer"], out
    calls = [s for s in out["steps"] if s["kind"] == "action"]
    assert calls and calls[0]["tool"] == "calculator" and calls[0]["observation"] == "456"


def test_a_knowledge_base_question(server: LocalServer) -> None:
    tools = load_tools(TOOL_NAMES)
    out = _run(server, "How do I resume a run that stopped? Search my notes.", tools)
    _assert_guarantees(out, tools)


def test_an_answer_after_an_observation_quotes_it(server: LocalServer) -> None:
    """The real server accepts the quote grammar, and the answer is the observation's line."""
    tools = load_tools(TOOL_NAMES)
    out = _run(server, "Which tools are switched on by default? Search my notes.", tools)
    _assert_guarantees(out, tools)
    assert out["status"] == "answered", out
    last = [s for s in out["steps"] if s["kind"] == "action"][-1]
    assert [out["answer"]] == quotable_lines([last["observation"]]), out["steps"]


def test_arithmetic_in_words_is_written_as_an_expression(server: LocalServer) -> None:
    tools = load_tools(TOOL_NAMES)
    out = _run(server, "What is thirty-six times eleven?", tools)
    _assert_guarantees(out, tools)
    assert out["status"] == "answered" and out["answer"] == "396", out["steps"]


def test_one_completion_step_under_the_grammar(server: LocalServer) -> None:
    """The agent's call as the contract says: tools bound, stop, grammar, token bound."""
    tools = load_tools(TOOL_NAMES)
    model = chat_model(server)
    bound = model.bind_tools(tools).bind(
        stop=["Observation:"], max_tokens=STEP_TOKENS, **request_options(grammar_for(tools))
    )
    reply = bound.invoke([("user", "What is 12 * 12?")])
    step = parse_react(reply.text)
    assert step.kind in ("action", "final"), reply.text
    assert reply.usage_metadata and 0 < reply.usage_metadata["output_tokens"] <= STEP_TOKENS
    answer_only = model.bind_tools([]).bind(**request_options(grammar_for([])), max_tokens=48)
    assert parse_react(answer_only.invoke([("user", "Say hi.")]).text).kind == "final"


@pytest.mark.parametrize(
    ("question", "tool", "argument_by"),
    [
        ("A crate holds 12 bottles. How many bottles do 9 crates hold?", "calculator", "model"),
        ("What time is it in Oslo?", "current_time", "model"),
        ("What is 12 * 12?", "calculator", "code"),  # the one piece that states the sum
    ],
)
def test_the_model_chooses_and_the_reply_says_so(
    server: LocalServer, question: str, tool: str, argument_by: str
) -> None:
    """The tool is the model's choice under the one-word grammar, its input the model's under
    the question's grammar unless only one input was possible; the reply's metadata says who
    decided."""
    reply = chat_model(server).bind_tools(load_tools(TOOL_NAMES)).invoke([("user", question)])
    step = parse_react(reply.text)
    assert (step.kind, step.tool) == ("action", tool), reply.text
    assert reply.response_metadata["react_decided_by"] == "model"
    assert reply.response_metadata["react_argument_by"] == argument_by


def test_a_question_needing_no_tool_gets_the_models_answer(server: LocalServer) -> None:
    reply = (
        chat_model(server)
        .bind_tools(load_tools(TOOL_NAMES))
        .invoke([("user", "What is the plural of 'goose'?")])
    )
    step = parse_react(reply.text)
    assert step.kind == "final" and step.answer, reply.text
    assert reply.response_metadata["react_decided_by"] == "model"


def test_a_stopped_server_leaves_no_process() -> None:
    with LocalServer(progress=None) as second:
        pid = second.pid
        assert pid is not None and second.running
        assert os.getpgid(pid) == pid  # its own process group
    assert not second.running
    assert _gone(pid)


def test_the_shared_model_is_started_once() -> None:
    """One model per process, in it where llama.cpp's build allows (one warm model for every
    turn of `chat`), stopped at exit or on demand."""
    from graph.models.local.engine import IN_PROCESS_URL

    first = local_server(progress=None)
    try:
        assert local_server(progress=None) is first and first.running
        assert first.base_url == IN_PROCESS_URL or first.base_url.startswith("http://127.0.0.1:")
    finally:
        stop_local_server()
    assert not first.running


OWNER = textwrap.dedent(
    """
    import sys, time
    from graph.models.local import LocalServer
    server = LocalServer(progress=None).start()
    print(server.pid, flush=True)
    time.sleep(600)
    """
)


@pytest.mark.parametrize(
    "ending", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM], ids=["kill", "ctrl-c", "term"]
)
def test_no_orphan_server_however_the_owner_ends(ending: signal.Signals) -> None:
    """Ctrl-C (atexit), SIGTERM and even SIGKILL (the watchdog sees its stdin close)."""
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER],
        stdout=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[2],
        text=True,
    )
    try:
        line = owner.stdout.readline()
        assert line.strip().isdigit(), "the owner did not start a server"
        pid = int(line)
        os.kill(owner.pid, ending)
        owner.wait(timeout=30)
        assert _gone(pid, within=20), f"server {pid} outlived its owner ({ending.name})"
    finally:
        if owner.poll() is None:
            owner.kill()


def test_a_bad_model_file_fails_clearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    not_gguf = tmp_path / "model.gguf"
    not_gguf.write_bytes(b"not a model")
    monkeypatch.setenv("REACT_AGENT_GGUF", str(not_gguf))
    with pytest.raises(LocalModelError, match="not a GGUF file"):
        LocalServer(progress=None).start()
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\x00" * 64)
    server = LocalServer(broken, progress=None, startup_timeout=60)
    with pytest.raises(LocalModelError, match="exited with status") as info:
        server.start()
    assert "log ends with" in str(info.value)
    assert not server.running


def test_progress_is_reported(tmp_path: Path) -> None:
    lines: list[str] = []
    with LocalServer(progress=lines.append) as third:
        assert third.running
    assert any(line.startswith("starting llama.cpp server") for line in lines), lines
    assert any(line.startswith("ready in") for line in lines), lines
    json.dumps(lines)


def test_the_readmes_first_command(tmp_path: Path) -> None:
    """`react-agent ask "What is 17 * 23?"` with no key and no endpoint: the embedded model is
    the default, on the text protocol with the grammar, all six tools offered. Run twice: the
    second process restores the worked records' state the first saved (or found), so each of
    its calls evaluates only the question's few tokens of a prompt of about 1,500."""
    from tests.support.cli import cli_env, run_cli

    env = cli_env("", tmp_path / "state")
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "REACT_AGENT_LOCAL"):
        env.pop(name)
    env["REACT_AGENT_LOCAL_TIMES"] = "1"
    for _ in range(2):
        done = run_cli("ask", "What is 17 * 23?", env=env, timeout=300)
        assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("Thought: ") and lines[1].startswith("Action: calculator {")
    assert any(line.startswith("Observation: ") for line in lines)
    assert lines[-1].startswith("Final Answer: ") and "391" in lines[-1]
    times = [line.removeprefix("[local model] ") for line in done.stderr.splitlines()]
    assert any(line.startswith("prefix restored: ") for line in times), done.stderr
    calls = [line.split() for line in times if line.startswith("call: ")]
    assert calls, done.stderr
    for call in calls:  # "call: 15 of 1481 prompt tokens evaluated, ..."
        evaluated, prompt = int(call[1]), int(call[3])
        assert evaluated < 40 and prompt > 1000, call


def test_a_structured_answer_is_written_under_the_schemas_grammar(server: LocalServer) -> None:
    """response_format on the embedded model: its grammar writes the schema's JSON object, so
    the answer parses as the schema whatever the 270M model would have said."""
    from pydantic import BaseModel

    class Capital(BaseModel):
        city: str
        country: str

    out = _run(server, "What is the capital of France?", [], response_format=Capital)
    assert out["status"] == "answered", out.get("error")
    assert isinstance(out["structured_response"], Capital)
    assert json.loads(out["answer"]) == out["structured_response"].model_dump()
