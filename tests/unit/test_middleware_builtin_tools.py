"""LangChain's built-in tool-side middleware (and the refusal check) through `build_graph`, both
protocols, each checked by its effect: which tools ran, what the model was told, the state.

The model-side middleware, the shared helpers and the table of middleware left out are in
`test_middleware_builtin.py`.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from langchain.agents.middleware import (
    AutoModeMiddleware,
    FilesystemFileSearchMiddleware,
    HostExecutionPolicy,
    HumanInTheLoopMiddleware,
    LLMToolEmulator,
    ModelFallbackMiddleware,
    ModelRefusalMiddleware,
    ShellToolMiddleware,
    TodoListMiddleware,
    ToolCallLimitMiddleware,
    ToolErrorMiddleware,
    ToolRetryMiddleware,
)
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from graph import build_graph
from tests.support.scripted_model import ScriptedChatModel, action, answer, calls, tool_call
from tests.unit.test_middleware_builtin import (
    PROTOCOLS,
    TOOLS,
    ScriptedDecisions,
    add,
    observations,
    offered,
    run,
    sent_text,
)


class Counted:
    """Tools that count their runs, so a test can tell a run from a skip."""

    def __init__(self, failures: int = 0) -> None:
        self.runs = 0
        self.failures = failures

        @tool
        def echo(text: str) -> str:
            """Repeat the text back."""
            self.runs += 1
            return f"echo: {text}"

        @tool
        def flaky(text: str) -> str:
            """Fails the first times it is called, then works."""
            self.runs += 1
            if self.runs <= self.failures:
                raise ConnectionError(f"flaky failure {self.runs}")
            return f"flaky: {text}"

        self.tools = [echo, flaky]


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


# --- ToolCallLimitMiddleware ----------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_global_tool_limit_blocks_further_calls(protocol: str, mode: str) -> None:
    counted = Counted()
    model = ScriptedChatModel(
        [
            action(protocol, "echo", {"text": "one"}),
            action(protocol, "echo", {"text": "two"}),
            answer(protocol, "stopped calling"),
        ]
    )
    limit = ToolCallLimitMiddleware(run_limit=1)  # exit_behavior="continue"
    agent = build_graph(model=model, tools=counted.tools, protocol=protocol, middleware=[limit])
    out = run(agent, "echo twice", mode)
    assert out["status"] == "answered" and out["answer"] == "stopped calling"
    assert counted.runs == 1  # the second call was blocked, not run
    blocked = "Tool call limit exceeded. Do not make additional tool calls."
    assert observations(out) == ["echo: one", blocked]
    assert blocked in sent_text(model.requests[-1])  # the model was told


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_per_tool_limit_ends_the_run(protocol: str, mode: str) -> None:
    counted = Counted()
    model = ScriptedChatModel(
        [
            action(protocol, "flaky", {"text": "a"}),
            action(protocol, "echo", {"text": "one"}),
            action(protocol, "echo", {"text": "two"}),
            answer(protocol, "never asked for"),
        ]
    )
    limit = ToolCallLimitMiddleware(tool_name="echo", run_limit=1, exit_behavior="end")
    agent = build_graph(model=model, tools=counted.tools, protocol=protocol, middleware=[limit])
    out = run(agent, "go", mode)
    assert out["status"] == "max_steps"
    assert out["answer"] == "'echo' tool call limit reached: run limit exceeded (2/1 calls)."
    assert counted.runs == 2  # flaky once, echo once: the second echo never ran
    assert len(model.requests) == 3 and model.remaining == 1
    assert "run_tool_call_count" not in out  # the middleware's private state stays private


# --- ToolRetryMiddleware and ToolErrorMiddleware --------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("layer", ["retry", "error"])
def test_tool_failures_reach_the_tool_wrappers(protocol: str, layer: str, mode: str) -> None:
    """ToolRetryMiddleware runs a failed tool again; ToolErrorMiddleware's handler writes the
    observation of the exceptions it chooses to handle (None lets the others propagate)."""
    counted = Counted(failures=1 if layer == "retry" else 5)
    if layer == "retry":
        wrapper: Any = ToolRetryMiddleware(initial_delay=0, backoff_factor=0, jitter=False)
    else:
        wrapper = ToolErrorMiddleware(
            lambda exc, req: "flaky is unreachable." if isinstance(exc, ConnectionError) else None
        )
    model = ScriptedChatModel([action(protocol, "flaky", {"text": "x"}), answer(protocol, "ok")])
    agent = build_graph(model=model, tools=counted.tools, protocol=protocol, middleware=[wrapper])
    out = run(agent, "try", mode)
    assert counted.runs == (2 if layer == "retry" else 1)
    assert observations(out) == ["flaky: x" if layer == "retry" else "flaky is unreachable."]
    assert out["steps"][0]["is_error"] is (layer == "error")


# --- LLMToolEmulator ------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_emulator_answers_instead_of_the_tool(protocol: str, mode: str) -> None:
    counted = Counted()
    emulator = ScriptedChatModel(["emulated: hello"])
    model = ScriptedChatModel([action(protocol, "echo", {"text": "hi"}), answer(protocol, "ok")])
    middleware = LLMToolEmulator(tools=["echo"], model=emulator)
    agent = build_graph(
        model=model, tools=counted.tools, protocol=protocol, middleware=[middleware]
    )
    out = run(agent, "echo hi", mode)
    assert counted.runs == 0
    assert observations(out) == ["emulated: hello"]
    assert "emulated: hello" in sent_text(model.requests[1])
    assert "Tool: echo" in emulator.requests[0].messages[0].content


# --- TodoListMiddleware ---------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_todo_list_tool_is_offered_and_writes_state(protocol: str, mode: str) -> None:
    todos = [
        {"content": "look it up", "status": "in_progress"},
        {"content": "answer", "status": "pending"},
    ]
    model = ScriptedChatModel(
        [action(protocol, "write_todos", {"todos": todos}), answer(protocol, "planned")]
    )
    agent = build_graph(
        model=model, tools=Counted().tools, protocol=protocol, middleware=[TodoListMiddleware()]
    )
    out = run(agent, "plan it", mode)
    assert out["status"] == "answered"
    assert out["todos"] == todos
    assert "write_todos" in offered(protocol, model.requests[0])
    system = model.requests[0].messages[0].text  # content blocks, as the middleware made them
    assert "You have access to the `write_todos` tool" in system  # its prompt was added
    assert observations(out) == [f"Updated todo list to {todos}"]


# --- AutoModeMiddleware ---------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("risk", [0.9, 0.1])
def test_auto_mode_blocks_risky_calls(protocol: str, risk: float, mode: str) -> None:
    counted = Counted()
    classifier = ScriptedDecisions(answer={"type": "noul", "noul": risk})
    model = ScriptedChatModel([action(protocol, "echo", {"text": "hi"}), answer(protocol, "ok")])
    guard = AutoModeMiddleware(tools=["echo"], classifier=classifier)
    agent = build_graph(model=model, tools=counted.tools, protocol=protocol, middleware=[guard])
    out = run(agent, "echo hi", mode)
    assert classifier.seen[0]["tool_call"]["name"] == "echo"
    assert classifier.seen[0]["tool_call"]["args"] == {"text": "hi"}
    if risk > 0.5:
        assert counted.runs == 0
        assert observations(out)[0].startswith("The tool call `echo` was blocked")
        assert out["steps"][0]["is_error"] is True
    else:
        assert counted.runs == 1 and observations(out) == ["echo: hi"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_auto_mode_classifier_sees_the_conversation(protocol: str) -> None:
    classifier = ScriptedDecisions(answer={"type": "noul", "noul": 0.1})
    model = ScriptedChatModel([action(protocol, "echo", {"text": "hi"}), answer(protocol, "ok")])
    guard = AutoModeMiddleware(tools=["echo"], classifier=classifier)
    agent = build_graph(model=model, tools=Counted().tools, protocol=protocol, middleware=[guard])
    run(agent, "please echo hi")
    seen = [m.text for m in classifier.seen[0]["messages"]]
    assert "please echo hi" in seen  # only the user's messages can authorize a call


# --- HumanInTheLoopMiddleware given by the user ---------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_users_own_approval_middleware(protocol: str, decision: str) -> None:
    """The user's HumanInTheLoopMiddleware for echo, beside the agent's own approvals for add."""
    counted = Counted()
    echo, plus = action(protocol, "echo", {"text": "hi"}), action(protocol, "add", {"a": 1, "b": 2})
    script = (
        [echo, plus, answer(protocol, "ok")]
        if decision == "approve"
        else [echo, answer(protocol, "ok")]
    )
    model = ScriptedChatModel(script)
    agent = build_graph(
        model=model,
        tools=[*counted.tools, add],
        protocol=protocol,
        approve=["add"],
        middleware=[HumanInTheLoopMiddleware({"echo": True})],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": f"hitl-{protocol}-{decision}"}}
    paused = run(agent, "echo hi", config=config)
    [request] = paused["__interrupt__"][0].value["action_requests"]
    assert request["name"] == "echo" and request["args"] == {"text": "hi"}
    assert counted.runs == 0  # nothing ran before the decision
    reply = {"type": "approve"} if decision == "approve" else {"type": "reject", "message": "no"}
    out = run(agent, Command(resume={"decisions": [reply]}), config=config)
    if decision == "approve":
        [request] = out["__interrupt__"][0].value["action_requests"]  # the agent's own pause
        assert request["name"] == "add" and counted.runs == 1
        out = run(agent, Command(resume={"decisions": [{"type": "approve"}]}), config=config)
        assert observations(out) == ["echo: hi", "3"]
    else:
        [told] = observations(out)
        assert counted.runs == 0 and told.endswith("with reason: no")
        assert out["steps"][0]["is_error"] is True
    assert out["status"] == "answered" and out["answer"] == "ok"
    assert len(model.requests) == len(script)  # no resume repeated a model call


# --- FilesystemFileSearchMiddleware ---------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_file_search_tools_work_on_a_folder(protocol: str, tmp_path: Path, mode: str) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("the needle is here\n")
    (tmp_path / "notes" / "b.txt").write_text("only hay\n")
    (tmp_path / "c.md").write_text("a needle in markdown\n")
    model = ScriptedChatModel(
        [
            action(protocol, "glob_search", {"pattern": "**/*.txt"}),
            action(protocol, "grep_search", {"pattern": "needle", "include": "*.txt"}),
            answer(protocol, "found it"),
        ]
    )
    search = FilesystemFileSearchMiddleware(root_path=str(tmp_path), use_ripgrep=False)
    agent = build_graph(model=model, tools=[], protocol=protocol, middleware=[search])
    out = run(agent, "find the needle", mode)
    found, grepped = observations(out)
    assert sorted(found.splitlines()) == ["/notes/a.txt", "/notes/b.txt"]
    assert grepped.splitlines() == ["/notes/a.txt"]
    listed = offered(protocol, model.requests[0])
    assert "glob_search" in listed and "grep_search" in listed


# --- ShellToolMiddleware --------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash on this machine")
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_shell_session_persists_between_calls(protocol: str, tmp_path: Path) -> None:
    model = ScriptedChatModel(
        [
            action(protocol, "shell", {"command": "export GREETING=ahoy; cd sub"}),
            action(protocol, "shell", {"command": 'echo "$GREETING from $(basename $PWD)"'}),
            answer(protocol, "done"),
        ]
    )
    (tmp_path / "sub").mkdir()
    policy = HostExecutionPolicy(command_timeout=5, startup_timeout=5, termination_timeout=2)
    shell = ShellToolMiddleware(workspace_root=tmp_path, execution_policy=policy)
    agent = build_graph(model=model, tools=[], protocol=protocol, middleware=[shell])
    out = run(agent, "greet")
    assert observations(out)[1].strip() == "ahoy from sub"


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash on this machine")
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_shell_runs_a_command_in_the_workspace(protocol: str, tmp_path: Path) -> None:
    (tmp_path / "marker.txt").write_text("x")
    script = [action(protocol, "shell", {"command": "ls"}), answer(protocol, "ok")]
    model = ScriptedChatModel(script)
    policy = HostExecutionPolicy(command_timeout=5, startup_timeout=5, termination_timeout=2)
    shell = ShellToolMiddleware(workspace_root=tmp_path, execution_policy=policy)
    agent = build_graph(model=model, tools=[], protocol=protocol, middleware=[shell])
    out = run(agent, "list")
    assert "marker.txt" in observations(out)[0]
    assert "shell" in offered(protocol, model.requests[0])


def test_native_parallel_calls_share_the_tool_limit() -> None:
    """Two calls in one step against a limit of one: the first runs, the second is blocked."""
    counted = Counted()
    step = calls(tool_call("echo", {"text": "a"}), tool_call("echo", {"text": "b"}))
    model = ScriptedChatModel([step, "done"])
    limit = ToolCallLimitMiddleware(tool_name="echo", run_limit=1)
    agent = build_graph(model=model, tools=counted.tools, protocol="native", middleware=[limit])
    out = run(agent, "both")
    assert counted.runs == 1
    last = model.requests[-1].messages
    results = [m.content for m in last if isinstance(m, ToolMessage)]
    assert results == ["echo: a", "Tool call limit exceeded. Do not call 'echo' again."]
    assert isinstance(out["messages"][-1], AIMessage)


# --- ModelRefusalMiddleware -----------------------------------------------------------------


REFUSAL = AIMessage(content=[{"type": "refusal", "refusal": "I will not help with that."}])


@pytest.mark.parametrize("protocol", ["native", "text"])
def test_refusal_is_an_error_a_fallback_catches(protocol: str) -> None:
    primary = ScriptedChatModel([REFUSAL])
    fallback = ScriptedChatModel([answer(protocol, "the fallback helps")])
    middleware = [ModelFallbackMiddleware(fallback), ModelRefusalMiddleware()]
    agent = build_graph(model=primary, tools=TOOLS, protocol=protocol, middleware=middleware)
    out = run(agent, "please")
    assert out["answer"] == "the fallback helps"
    assert len(primary.requests) == 1 and len(fallback.requests) == 1


@pytest.mark.parametrize("protocol", ["native", "text"])
def test_refusal_alone_ends_the_run_with_an_error(protocol: str) -> None:
    model = ScriptedChatModel([REFUSAL])
    agent = build_graph(
        model=model, tools=TOOLS, protocol=protocol, middleware=[ModelRefusalMiddleware()]
    )
    out = run(agent, "please")
    assert out["status"] == "error"
    assert "I will not help with that." in out["error"]
    assert len(model.requests) == 1
