"""A step leaves nothing for the cyclic garbage collector, and nothing of a finished run is
kept alive by the agent's own machinery.

A reference cycle made at every step (a closure that refers to itself, say) holds that step's
request, config and messages until the collector runs: more collections, and more objects that
live long enough to be moved to the oldest generation, whose full collections walk every object
of the process. These tests run with the collector switched off, so only reference counting
frees anything, and a cycle shows as garbage that `gc.collect()` finds.
"""

from __future__ import annotations

import asyncio
import gc
import time
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.prebuilt.tool_node import ToolCallRequest

from graph import build_graph
from graph.middleware.chain import achain_model_call, chain_model_call
from graph.support.workers import DaemonWorkers
from graph.tooling.execution import bounded
from tests.support.scripted_model import ScriptedChatModel, action, answer


@pytest.fixture
def collector_off() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


FAILURE = "disk on fire (reference cycle test)"
# what a step's data is made of: a cycle holding a step holds some of these (garbage another
# test's thread leaves meanwhile, a late tool of a deadline test, does not count)
RUN_OBJECTS = frozenset(
    {
        "AIMessage",
        "HumanMessage",
        "ToolMessage",
        "ModelRequest",
        "ModelResponse",
        "ToolCallRequest",
        "ToolRuntime",
        "Plan",
        "Task",
        "PregelScratchpad",
        "Runtime",
    }
)


class Payload:
    """Something a call holds, whose life a weak reference can watch."""


class PassThrough(AgentMiddleware):
    def wrap_model_call(self, request: ModelRequest, handler: Any) -> ModelResponse:
        return handler(request)

    async def awrap_model_call(self, request: ModelRequest, handler: Any) -> ModelResponse:
        return await handler(request)


def request() -> ModelRequest:
    return ModelRequest(model=None, messages=[], system_message=None, tools=[], state={})  # type: ignore[arg-type]


def test_a_model_call_chain_is_freed_as_soon_as_it_is_dropped(collector_off: None) -> None:
    held = Payload()
    watch = weakref.ref(held)

    def base(_request: ModelRequest, held: Payload = held) -> ModelResponse:
        return ModelResponse(result=[AIMessage(content="done")])

    chain = chain_model_call([PassThrough().wrap_model_call, PassThrough().wrap_model_call], base)
    response, commands = chain(request())
    assert response.result[0].text == "done" and commands == []
    del chain, base, held
    assert watch() is None  # a self-referencing chain would keep it until a collection


def test_the_async_chain_is_freed_as_soon_as_it_is_dropped(collector_off: None) -> None:
    held = Payload()
    watch = weakref.ref(held)

    async def base(_request: ModelRequest, held: Payload = held) -> ModelResponse:
        return ModelResponse(result=[AIMessage(content="done")])

    chain = achain_model_call(
        [PassThrough().awrap_model_call, PassThrough().awrap_model_call], base
    )
    loop = asyncio.new_event_loop()
    try:
        response, _ = loop.run_until_complete(chain(request()))
    finally:
        loop.close()
    assert response.result[0].text == "done"
    del chain, base, held
    assert watch() is None


def test_an_idle_worker_lets_go_of_its_last_job(collector_off: None) -> None:
    workers = DaemonWorkers("test-idle-worker")
    held = Payload()
    watch = weakref.ref(held)
    assert workers.submit(lambda held=held: "done").result(timeout=5) == "done"
    del held
    deadline = time.monotonic() + 5
    while watch() is not None and time.monotonic() < deadline:
        time.sleep(0.01)  # the worker drops the job right after it hands over the result
    assert watch() is None


def test_a_call_that_fails_inside_the_deadline_layer_leaves_no_cycle(collector_off: None) -> None:
    @tool
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    def execute(_request: ToolCallRequest) -> Any:
        raise RuntimeError(FAILURE)  # a plain failure: no tool's own frames in the way

    call = {"name": "echo", "args": {"text": "hi"}, "id": "call_1", "type": "tool_call"}
    request = ToolCallRequest(tool_call=call, tool=echo, state={}, runtime=None)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError):
        bounded(5.0, ["echo"])(request, execute)
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        found = [x for x in gc.garbage if isinstance(x, RuntimeError) and str(x) == FAILURE]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert found == []  # the failure, held by the future the frame kept: a cycle


@pytest.mark.parametrize("protocol", ["native", "text"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_run_leaves_no_reference_cycles(protocol: str, mode: str, collector_off: None) -> None:
    @tool
    def fetch(item: int) -> str:
        """Fetch one item."""
        return f"item {item}"

    turn = [*[action(protocol, "fetch", {"item": i}) for i in range(3)], answer(protocol, "done")]
    graph = build_graph(model=ScriptedChatModel(turn * 2), tools=[fetch], protocol=protocol)

    loop = asyncio.new_event_loop()  # not `asyncio.run`: at its end, in the main thread, it
    # formats the finished task's repr (Python 3.11's `signal.getsignal`), and pydantic's
    # repr of a message leaves cycles of its own

    def run() -> dict[str, Any]:
        given = {"messages": [("user", "Fetch three items.")]}
        if mode == "sync":
            return graph.invoke(given)
        return loop.run_until_complete(graph.ainvoke(given))

    assert run()["status"] == "answered"  # the first run fills caches and lazy imports
    gc.collect()
    out = run()  # the graph lives on, as in a program: what its runs leave is what counts
    assert out["status"] == "answered" and len(out["steps"]) == 4
    del out
    loop.close()
    gc.set_debug(gc.DEBUG_SAVEALL)  # keep what the collection finds, to name it
    try:
        gc.collect()
        found = sorted({type(x).__qualname__ for x in gc.garbage} & RUN_OBJECTS)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert found == [], f"a run left reference cycles of: {', '.join(found[:12])}"
