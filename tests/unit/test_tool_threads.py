"""Which code a tool call runs and on which thread (`graph.nodes.act`,
`graph.tooling.execution`): one path per call, ToolNode's, as `create_agent` runs it. A sync run
calls the tool's sync code (a coroutine-only tool is run to its end), on a worker it waits for
with the deadline; an async run awaits the tool's coroutine, and a tool with only a function
runs it on a daemon worker, not on the caller's loop's executor. Either way a call stuck past
its deadline is abandoned and the run goes on."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
import time
from typing import Any

import pytest
from langchain.agents.middleware import AgentMiddleware
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, tool
from langgraph.checkpoint.memory import InMemorySaver

from graph import build_graph
from tests.support.scripted_model import ScriptedChatModel, action, answer, calls, tool_call

PROTOCOLS = ["native", "text"]


def agent_for(protocol: str, tools: list[BaseTool], script: list, **kw: Any) -> Any:
    return build_graph(model=ScriptedChatModel(script), tools=tools, protocol=protocol, **kw)


def observation(out: dict[str, Any]) -> str:
    return out["steps"][0]["observation"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("caller", ["main thread", "other thread"])
def test_a_sync_tool_in_a_sync_run_runs_its_function_on_a_daemon_worker(
    protocol: str, caller: str
) -> None:
    """Never in the run's own thread: the run waits for it with the deadline."""
    seen: list[tuple[bool, bool]] = []

    @tool
    def where(text: str) -> str:
        """Say where it ran."""
        here = threading.current_thread()
        seen.append((here.daemon, here is threading.main_thread()))
        return f"ran {text}"

    script = [action(protocol, "where", {"text": str(i)}) for i in range(3)]
    agent = agent_for(protocol, [where], [*script, answer(protocol, "ok")])
    question = {"messages": [("user", "go")]}
    if caller == "main thread":
        out = agent.invoke(question)
    else:
        runs: list[dict[str, Any]] = []
        other = threading.Thread(target=lambda: runs.append(agent.invoke(question)))
        other.start()
        other.join(60)
        out = runs[0]
    assert out["status"] == "answered"
    assert [s["observation"] for s in out["steps"][:3]] == ["ran 0", "ran 1", "ran 2"]
    assert seen == [(True, False)] * 3


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_async_only_tool_in_a_sync_run_is_run_to_its_end(protocol: str) -> None:
    async def note(text: str) -> str:
        await asyncio.sleep(0)
        return f"noted {text}"

    noting = StructuredTool.from_function(coroutine=note, name="note", description="Note it.")
    script = [action(protocol, "note", {"text": "a"}), action(protocol, "note", {"text": "b"})]
    agent = agent_for(protocol, [noting], [*script, answer(protocol, "ok")])
    out = agent.invoke({"messages": [("user", "go")]})
    assert [s["observation"] for s in out["steps"][:2]] == ["noted a", "noted b"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_tool_with_a_function_and_a_coroutine_runs_the_runs_own_form(
    mode: str,
) -> None:
    def shout_sync(text: str) -> str:
        assert threading.current_thread().daemon  # a worker the run waits for
        return f"sync {text}"

    async def shout_async(text: str) -> str:
        return f"async {text}"

    shout = StructuredTool.from_function(
        func=shout_sync, coroutine=shout_async, name="shout", description="Shout."
    )
    agent = agent_for("native", [shout], [action("native", "shout", {"text": "hi"}), "ok"])
    question = {"messages": [("user", "go")]}
    out = agent.invoke(question) if mode == "sync" else asyncio.run(agent.ainvoke(question))
    assert observation(out) == f"{mode} hi"


def test_a_tool_class_with_its_own_async_code_runs_its_sync_code_in_a_sync_run() -> None:
    class Shout(BaseTool):
        name: str = "shout"
        description: str = "Shout."

        def _run(self, text: str) -> str:
            return f"sync {text}"

        async def _arun(self, text: str) -> str:
            return f"async {text}"

    agent = agent_for("native", [Shout()], [action("native", "shout", {"text": "hi"}), "ok"])
    assert observation(agent.invoke({"messages": [("user", "go")]})) == "sync hi"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_users_tool_wrapper_runs_its_sync_form_in_a_sync_run(protocol: str) -> None:
    forms: list[str] = []

    class Both(AgentMiddleware):
        def wrap_tool_call(self, request: Any, handler: Any) -> Any:
            forms.append("sync")
            return handler(request)

        async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
            forms.append("async")
            return await handler(request)

    @tool
    def echo(text: str) -> str:
        """Repeat it."""
        return text

    script = [action(protocol, "echo", {"text": "x"}), answer(protocol, "ok")]
    agent = agent_for(protocol, [echo], script, middleware=[Both()])
    assert observation(agent.invoke({"messages": [("user", "go")]})) == "x"
    assert forms == ["sync"]


def test_a_sync_run_called_from_a_running_loop_still_runs_its_tools() -> None:
    @tool
    def echo(text: str) -> str:
        """Repeat it."""
        return f"echo {text}"

    async def note(text: str) -> str:
        return f"noted {text}"

    noting = StructuredTool.from_function(coroutine=note, name="note", description="Note it.")
    script = [
        calls(tool_call("echo", {"text": "a"})),
        calls(tool_call("note", {"text": "b"})),
        "ok",
    ]
    agent = agent_for("native", [echo, noting], script)

    async def inside_a_loop() -> dict[str, Any]:
        return agent.invoke({"messages": [("user", "go")]})  # sync code under a running loop

    out = asyncio.run(inside_a_loop())
    assert [s["observation"] for s in out["steps"][:2]] == ["echo a", "noted b"]


def test_a_sync_tool_stuck_past_its_deadline_does_not_hold_up_the_exit() -> None:
    script = textwrap.dedent(
        """
        import time
        from langchain_core.tools import tool
        from graph import build_graph
        from tests.support.scripted_model import ScriptedChatModel, calls, tool_call

        @tool
        def stuck(text: str) -> str:
            \"\"\"Never returns.\"\"\"
            time.sleep(3600)
            return text

        model = ScriptedChatModel([calls(tool_call("stuck", {"text": "x"})), "gave up"])
        agent = build_graph(model=model, tools=[stuck], tool_timeout=0.3)
        out = agent.invoke({"messages": [("user", "go")]})
        print(out["steps"][0]["observation"], "|", out["answer"])
        """
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Tool 'stuck' timed out after 0.3 s. | gave up"
    assert time.monotonic() - started < 30


def test_a_sync_function_in_an_async_run_runs_on_a_daemon_worker_with_its_config() -> None:
    seen: list[tuple[bool, str]] = []

    @tool
    def where(text: str, config: RunnableConfig) -> str:
        """Say where it ran."""
        seen.append((threading.current_thread().daemon, config["configurable"]["thread_id"]))
        return f"ran {text}"

    agent = agent_for(
        "native", [where], [action("native", "where", {"text": "a"}), "ok"],
        checkpointer=InMemorySaver(),
    )  # fmt: skip
    config = {"configurable": {"thread_id": "t-async"}}
    out = asyncio.run(agent.ainvoke({"messages": [("user", "go")]}, config))
    assert observation(out) == "ran a"
    assert seen == [(True, "t-async")]


def test_a_sync_function_stuck_in_an_async_run_does_not_hold_up_asyncio_run() -> None:
    release = threading.Event()

    def stuck(text: str) -> str:
        release.wait(60)
        return text

    stuck_tool = StructuredTool.from_function(func=stuck, name="stuck", description="Hang.")
    agent = agent_for(
        "native", [stuck_tool], [action("native", "stuck", {"text": "x"}), "gave up"],
        tool_timeout=0.3,
    )  # fmt: skip
    started = time.monotonic()
    try:
        out = asyncio.run(agent.ainvoke({"messages": [("user", "go")]}))
        took = time.monotonic() - started
    finally:
        release.set()
    assert observation(out) == "Tool 'stuck' timed out after 0.3 s."
    assert took < 20  # asyncio.run did not wait for the call it gave up on


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_function_taking_callbacks_still_gets_them(mode: str) -> None:
    def reports(text: str, callbacks: Any = None) -> str:
        return f"{text} with {type(callbacks).__name__}"  # a sync function's: the sync kind

    reporting = StructuredTool.from_function(func=reports, name="reports", description="R.")
    agent = agent_for("native", [reporting], [action("native", "reports", {"text": "a"}), "ok"])
    question = {"messages": [("user", "go")]}
    out = agent.invoke(question) if mode == "sync" else asyncio.run(agent.ainvoke(question))
    assert observation(out) == "a with CallbackManager"
