"""The native-to-text fallback is a swap of the model: the retried request carries
`TextReAct(model)`, which a user's `wrap_model_call` middleware sees as it would in
`create_agent`, and the step still says why the run switched."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents.middleware import wrap_model_call
from langchain_core.tools import tool

from graph import build_graph
from graph.protocols.text.chat_model import TextReAct
from tests.support.scripted_model import ScriptedChatModel, action, answer


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return f"echo: {text}"


class ToolsRejected(Exception):
    status_code = 400


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_retry_after_refused_tools_swaps_in_text_react(mode: str) -> None:
    seen: list[Any] = []

    def record(request, handler):
        seen.append(request.model)
        return handler(request)

    async def arecord(request, handler):
        seen.append(request.model)
        return await handler(request)

    spy = wrap_model_call(arecord if mode == "async" else record)
    model = ScriptedChatModel(
        [ToolsRejected("This model does not support tools"), answer("text", "done")]
    )
    agent = build_graph(model=model, tools=[echo], protocol="auto", middleware=[spy])
    payload = {"messages": [("user", "hi")]}
    out = asyncio.run(agent.ainvoke(payload)) if mode == "async" else agent.invoke(payload)
    assert out["status"] == "answered" and out["answer"] == "done"
    assert seen[0] is model
    assert isinstance(seen[1], TextReAct) and seen[1].inner is model
    assert [s["kind"] for s in out["steps"]] == ["fallback", "answer"]
    assert model.requests[1].stop == ["Observation:"] and not model.requests[1].tools


def test_a_later_step_keeps_the_text_protocol_with_the_plain_model() -> None:
    model = ScriptedChatModel(
        [
            ToolsRejected("This model does not support tools"),
            action("text", "echo", {"text": "a"}),
            answer("text", "done"),
        ]
    )
    out = build_graph(model=model, tools=[echo], protocol="auto").invoke(
        {"messages": [("user", "hi")]}
    )
    assert [s["kind"] for s in out["steps"]] == ["fallback", "action", "answer"]
    assert all(r.stop == ["Observation:"] for r in model.requests[1:])
