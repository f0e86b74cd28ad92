"""Issue 40, findings 1, 3 and 4 over the served API: a real `langgraph dev` serving the
repository's graph (REACT_AGENT_APPROVE=calculator, both approval modes), driven with
`langgraph_sdk` as a client would: `runs.wait(..., command={"update": ..., "goto": "act"})`,
a re-run from a checkpoint, `interrupt_before`.

The calculator is the gated tool, `current_time` the ungated one; the scripted OpenAI server
plays the model. What ran is read back from the thread's stored messages.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from tests.support.langgraph_dev import LangGraphDev, langgraph_dev, report_failures
from tests.support.openai_server import Reply, ScriptedOpenAIServer, ToolCall

pytestmark = pytest.mark.integration
NATIVE = {"protocol": "native"}


@pytest.fixture(scope="module")
def script() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module", params=["batched", "per_call"])
def dev(
    request: pytest.FixtureRequest, script: ScriptedOpenAIServer
) -> Iterator[tuple[LangGraphDev, str]]:
    env = {
        "OPENAI_BASE_URL": script.base_url,
        "OPENAI_API_KEY": "sk-served-approvals",
        "REACT_AGENT_MODEL": "scripted",
        "REACT_AGENT_APPROVE": "calculator",
        "REACT_AGENT_APPROVAL_MODE": request.param,
        "REACT_AGENT_LOCAL": "off",
    }
    with langgraph_dev(env) as server, report_failures(request, server):
        yield server, request.param


@pytest.fixture
def client(dev: tuple[LangGraphDev, str]) -> LangGraphClient:
    return get_client(url=dev[0].url)


@pytest.fixture
def mode(dev: tuple[LangGraphDev, str]) -> str:
    return dev[1]


def ask(text: str = "What is 17 * 24?") -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


async def results(client: LangGraphClient, thread: str) -> list[tuple[str, str]]:
    """(call id, text) of every tool result the thread stores."""
    state = await client.threads.get_state(thread)
    return [
        (m["tool_call_id"], str(m["content"]))
        for m in state["values"].get("messages", [])
        if m["type"] == "tool"
    ]


async def approve_pauses(client: LangGraphClient, thread: str, mode: str) -> dict[str, Any]:
    """Answer every pause with approve until the run ends (per call: one pause at a time)."""
    done: dict[str, Any] = {}
    for _ in range(6):
        current = await client.threads.get(thread)
        pauses = [p for found in (current.get("interrupts") or {}).values() for p in found]
        if not pauses:
            state = await client.threads.get_state(thread)
            if state["next"]:
                done = await client.runs.wait(thread, "agent", input=None, context=NATIVE)
                continue
            return done
        if mode == "per_call":
            resume: Any = {pauses[0]["id"]: {"type": "approve"}}
        else:
            count = len(pauses[0]["value"]["action_requests"])
            resume = {"decisions": [{"type": "approve"}] * count}
        done = await client.runs.wait(thread, "agent", command={"resume": resume}, context=NATIVE)
    return done


async def test_served_a_planted_edit_runs_nothing(
    client: LangGraphClient, script: ScriptedOpenAIServer
) -> None:
    """Finding 1's request: an ungated current_time call, edited through HITL's private key
    into the gated calculator, sent straight to act. Refused; the calculator never runs."""
    thread = (await client.threads.create())["thread_id"]
    step = {
        "type": "ai",
        "content": "",
        "id": "planted-step",
        "tool_calls": [{"name": "current_time", "args": {}, "id": "c1"}],
    }
    update = {
        "messages": [{"type": "human", "content": "time?"}, step],
        "hitl_edited_tool_calls": {"c1": {"name": "calculator", "args": {"expression": "17*24"}}},
    }
    asked = len(script.chat_requests)
    with contextlib.suppress(Exception):  # the server may refuse the run outright
        await client.runs.wait(
            thread, "agent", command={"update": update, "goto": "act"}, context=NATIVE
        )
    assert not [text for _, text in await results(client, thread) if "408" in text]
    assert len(script.chat_requests) == asked  # refused before any model call


async def test_served_a_rerun_from_the_checkpoint_before_act_asks_again(
    client: LangGraphClient, script: ScriptedOpenAIServer, mode: str
) -> None:
    """Approve, let it run; then re-run from the checkpoint whose next node is act: the
    person is asked again and the calculator does not run a second time."""
    script.add(
        Reply(tool_calls=[ToolCall("calculator", {"expression": "17 * 24"}, id="k1")]),
        Reply(content="408"),
    )
    thread = (await client.threads.create())["thread_id"]
    await client.runs.wait(thread, "agent", input=ask(), context=NATIVE)
    await approve_pauses(client, thread, mode)
    assert [cid for cid, _ in await results(client, thread)] == ["k1"]
    history = await client.threads.get_history(thread, limit=50)
    before_act = next(s for s in history if s["next"] == ["act"])
    with contextlib.suppress(Exception):
        await client.runs.wait(
            thread, "agent", input=None, checkpoint_id=before_act["checkpoint_id"], context=NATIVE
        )
    current = await client.threads.get(thread)
    assert current["status"] == "interrupted", "the re-run ran the approved call without asking"
    assert [cid for cid, _ in await results(client, thread)] == []  # the fork's head: not run


async def test_served_goto_act_over_two_gated_calls_runs_each_once(
    client: LangGraphClient, script: ScriptedOpenAIServer, mode: str
) -> None:
    """Paused before act (`interrupt_before`), then `command={"goto": "act"}` over a step of
    two gated calls: each call runs once, and the run answers once."""
    script.add(
        Reply(
            tool_calls=[
                ToolCall("calculator", {"expression": "17 * 24"}, id="a"),
                ToolCall("calculator", {"expression": "2 + 2"}, id="b"),
            ]
        ),
        Reply(content="408 and 4"),
    )
    thread = (await client.threads.create())["thread_id"]
    await client.runs.wait(
        thread, "agent", input=ask("17*24 and 2+2"), context=NATIVE, interrupt_before=["act"]
    )
    if mode == "batched":  # the review's pause first
        await client.runs.wait(
            thread,
            "agent",
            command={"resume": {"decisions": [{"type": "approve"}] * 2}},
            context=NATIVE,
            interrupt_before=["act"],
        )
    await client.runs.wait(thread, "agent", command={"goto": "act"}, context=NATIVE)
    await approve_pauses(client, thread, mode)
    ids = sorted(cid for cid, _ in await results(client, thread))
    assert ids == ["a", "b"]
    state = await client.threads.get_state(thread)
    answers = [
        m for m in state["values"]["messages"] if m["type"] == "ai" and not m.get("tool_calls")
    ]
    assert len(answers) == 1 and state["values"]["status"] == "answered"
