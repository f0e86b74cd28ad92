"""A user's middleware is traced as `create_agent` traces it (`graph.middleware.spans`,
`graph.middleware.hooks.add_hook_nodes`): each node hook's run records only what the
middleware's `TracePolicy` (else the process default) lets tracers record, and each
`wrap_model_call` / `wrap_tool_call` call is a LangSmith span of its own. Every check runs the
same middleware through `create_agent` and `build_graph` and compares what a tracer saw."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any
from unittest.mock import MagicMock

import langsmith
import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    TracePolicy,
    configure_trace_policy,
    wrap_model_call,
)
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tools import tool
from langchain_core.tracers.base import BaseTracer
from langgraph.types import omit_payload

from graph.agent import build_graph
from tests.support.scripted_model import ScriptedChatModel, calls, tool_call

QUESTION = {"messages": [("user", "Echo a, please.")]}


class Recorder(BaseTracer):
    """A tracer (what LangSmith's and OpenTelemetry's tracers are): gets what the policy keeps."""

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[tuple[str, str, Any]] = []

    def _persist_run(self, run: Any) -> None:
        pass

    def _on_chain_start(self, run: Any) -> None:
        self.runs.append(("start", run.name, run.inputs))

    def _on_chain_end(self, run: Any) -> None:
        self.runs.append(("end", run.name, run.outputs))

    def of(self, name: str) -> list[tuple[str, Any]]:
        return [(kind, payload) for kind, run, payload in self.runs if run == name]


class Listener(BaseCallbackHandler):
    """A callback handler that is not a tracer (a client's event stream): sees every input."""

    def __init__(self) -> None:
        self.inputs: dict[str, Any] = {}

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        self.inputs[kwargs.get("name") or ""] = inputs


class Quiet(AgentMiddleware):
    trace_policy = TracePolicy(process_inputs=omit_payload, process_outputs=omit_payload)

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return None


class Plain(AgentMiddleware):
    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return None


class Wraps(AgentMiddleware):
    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return handler(request)

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return await handler(request)

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        return handler(request)

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        return await handler(request)


@wrap_model_call
def sync_only(request: Any, handler: Any) -> Any:
    return handler(request)


@tool
def echo(text: str) -> str:
    """Say the text back."""
    return text


def _script() -> ScriptedChatModel:
    return ScriptedChatModel([calls(tool_call("echo", {"text": "a"}, id="c1")), "a"])


def _agents(middleware: list[Any]) -> Iterator[tuple[str, Any]]:
    yield "create_agent", create_agent(_script(), [echo], middleware=middleware)
    yield "ours", build_graph(_script(), [echo], middleware=middleware)


@pytest.fixture
def default_policy() -> Iterator[None]:
    configure_trace_policy(TracePolicy(process_inputs=lambda _: {"kept": "out"}))
    try:
        yield
    finally:
        configure_trace_policy(None)


def test_a_hook_nodes_run_records_what_its_trace_policy_keeps() -> None:
    seen = {}
    for name, agent in _agents([Quiet(), Plain()]):
        tracer, listener = Recorder(), Listener()
        agent.invoke(QUESTION, {"callbacks": [tracer, listener]})
        seen[name] = (tracer.of("Quiet.before_model"), tracer.of("Plain.after_model"))
        assert "messages" in listener.inputs["Quiet.before_model"]  # not a tracer: all of it
    assert seen["ours"][0] == seen["create_agent"][0] == [("start", {}), ("end", {})] * 2
    plain_start = seen["ours"][1][0]
    assert plain_start[0] == "start" and "messages" in plain_start[1]  # no policy: as it is


def test_the_process_default_applies_where_a_middleware_sets_none(default_policy: None) -> None:
    seen = {}
    for name, agent in _agents([Plain(), Quiet()]):
        tracer = Recorder()
        agent.invoke(QUESTION, {"callbacks": [tracer]})
        seen[name] = tracer.of("Plain.after_model")[0], tracer.of("Quiet.before_model")[0]
    assert seen["ours"] == seen["create_agent"]
    assert seen["ours"] == (("start", {"kept": "out"}), ("start", {}))  # its own policy wins


def _span_names(agent: Any, *, asynchronous: bool = False) -> list[str]:
    client = MagicMock(spec=langsmith.Client)
    with langsmith.tracing_context(enabled=True, client=client, project_name="spans"):
        if asynchronous:
            asyncio.run(agent.ainvoke(QUESTION))
        else:
            agent.invoke(QUESTION)
    names = [call.kwargs.get("name") for call in client.create_run.call_args_list]
    return [n for n in names if n and "wrap_" in n]


def test_each_wrap_call_is_a_span_named_as_create_agent_names_it() -> None:
    spans = {name: _span_names(agent) for name, agent in _agents([Wraps(), sync_only])}
    assert spans["ours"] == spans["create_agent"]
    assert spans["ours"].count("Wraps.wrap_tool_call") == 1
    assert spans["ours"].count("sync_only.wrap_model_call") == 2  # one per model call
    assert not [n for n in spans["ours"] if n.split(".")[0] in {"StepLimit", "RepeatGuard"}]


def test_async_runs_trace_the_async_forms_a_sync_only_one_included() -> None:
    agent = build_graph(_script(), [echo], middleware=[Wraps(), sync_only])
    spans = _span_names(agent, asynchronous=True)
    assert spans.count("Wraps.awrap_model_call") == 2
    assert spans.count("Wraps.awrap_tool_call") == 1
    assert spans.count("sync_only.awrap_model_call") == 2  # create_agent refuses this one
