"""The state writes of `test_state_writes.py`, and the run context, through a real `langgraph dev`
and the SDK (issue 40, findings 1, 5 and 8).

An API caller cannot set a key only the agent's own steps write (`threads.update_state` as
each node, a run's `command={"update": ...}`): refused with one sentence, the thread's history
unchanged. A refused command update leaves a thread that reads and answers. A run context (or,
from an older client, a `configurable`) holding a key that is not a run setting is refused with
one sentence naming it, before any model call: the server would otherwise drop it unseen.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import APIStatusError

from tests.support.langgraph_dev import LangGraphDev, langgraph_dev, report_failures
from tests.support.openai_server import Reply, ScriptedOpenAIServer
from tests.support.sentences import assert_one_sentence

pytestmark = pytest.mark.integration

EDIT = {"c1": {"name": "calculator", "args": {"expression": "6 * 7"}}}
GUARDED = {
    "run": {"started_at": 0.0},
    "approvals": {"c1": "0" * 64},
    "jump_to": "end",
    "hitl_edited_tool_calls": EDIT,
}
NODES = ["think", "review", "act", "observe", "finish"]


def ask(question: str = "What is 17 * 23?") -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": question}]}


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def dev(
    model_server: ScriptedOpenAIServer, request: pytest.FixtureRequest
) -> Iterator[LangGraphDev]:
    env = {
        "OPENAI_BASE_URL": model_server.base_url,
        "OPENAI_API_KEY": "sk-writes-test-123456",
        "REACT_AGENT_MODEL": "scripted",
        "REACT_AGENT_APPROVE": "calculator",
        "REACT_AGENT_LOCAL": "off",
    }
    with langgraph_dev(env) as server, report_failures(request, server):
        yield server


async def answered_thread(client: LangGraphClient, script: ScriptedOpenAIServer) -> str:
    script.add(Reply(content="17 * 23 = 391"))
    thread = (await client.threads.create())["thread_id"]
    out = await client.runs.wait(thread, "agent", input=ask())
    assert out["status"] == "answered", out
    return thread


async def still_answers(client: LangGraphClient, script: ScriptedOpenAIServer, thread: str) -> None:
    script.add(Reply(content="Still here."))
    out = await client.runs.wait(thread, "agent", input=ask("Are you still there?"))
    assert out["status"] == "answered" and out["answer"] == "Still here.", out


async def run_error(client: LangGraphClient, thread: str, **run: Any) -> str:
    """The error of a run the graph refuses before it starts (the SDK raises it, or hands it
    back under `__error__`)."""
    try:
        out = await client.runs.wait(thread, "agent", **run)
    except Exception as exc:
        return str(exc)
    assert "__error__" in out, out
    return str(out["__error__"].get("message"))


@pytest.mark.parametrize("key", sorted(GUARDED))
async def test_an_api_state_update_as_any_node_cannot_write_a_guarded_key(
    client: LangGraphClient, script: ScriptedOpenAIServer, key: str
) -> None:
    thread = await answered_thread(client, script)
    before = await client.threads.get_history(thread, limit=100)
    for as_node in NODES:
        with pytest.raises(APIStatusError) as refused:
            await client.threads.update_state(thread, {key: GUARDED[key]}, as_node=as_node)
        assert 400 <= refused.value.response.status_code < 500
        assert_one_sentence(str(refused.value), repr(key), "State update refused")
    assert await client.threads.get_history(thread, limit=100) == before
    await still_answers(client, script, thread)


@pytest.mark.parametrize("key", sorted(GUARDED))
async def test_an_api_command_update_cannot_write_a_guarded_key(
    client: LangGraphClient, script: ScriptedOpenAIServer, key: str
) -> None:
    thread = await answered_thread(client, script)
    before = await client.threads.get_history(thread, limit=100)
    for goto in (None, "act"):
        command = {"update": {key: GUARDED[key]}, **({"goto": goto} if goto else {})}
        error = await run_error(client, thread, command=command)
        assert "State update refused" in error and repr(key) in error, error
    history = await client.threads.get_history(thread, limit=100)
    assert [h["checkpoint"] for h in history] == [h["checkpoint"] for h in before]
    await still_answers(client, script, thread)


async def test_the_planted_edit_over_the_api_runs_nothing(
    client: LangGraphClient, script: ScriptedOpenAIServer
) -> None:
    """Finding 1 as it was reproduced: an ungated `current_time` call edited into the gated
    calculator, sent to act on a fresh thread."""
    planted = {
        "type": "ai",
        "content": "",
        "id": "planted",
        "tool_calls": [{"name": "current_time", "args": {}, "id": "c1"}],
    }
    thread = (await client.threads.create())["thread_id"]
    command = {"update": {"messages": [planted], "hitl_edited_tool_calls": EDIT}, "goto": "act"}
    error = await run_error(client, thread, command=command)
    assert "'hitl_edited_tool_calls'" in error, error
    state = await client.threads.get_state(thread)
    assert not state["values"], state["values"]


@pytest.mark.parametrize(
    "update",
    [{"status": "weird"}, {"answer": 5}],
    ids=["status", "answer"],
)
async def test_a_refused_api_command_update_leaves_a_thread_that_reads_and_answers(
    client: LangGraphClient, script: ScriptedOpenAIServer, update: dict[str, Any]
) -> None:
    thread = await answered_thread(client, script)
    before = await client.threads.get_state(thread)
    error = await run_error(client, thread, command={"update": update})
    assert "must be" in error, error
    assert (await client.threads.get_state(thread))["values"] == before["values"]
    await still_answers(client, script, thread)


CONTEXTS = [
    ({"tool_timeout": 1}, "tool_timeout cannot be set by a run"),
    ({"foo": 1}, "unknown setting(s) foo"),
    ({"base_url": "http://127.0.0.1:9/v1"}, "base_url cannot be set by a run"),
    ({"protocol": "native", "max_retries": 0}, "max_retries cannot be set by a run"),
]


@pytest.mark.parametrize("where", ["context", "configurable"])
@pytest.mark.parametrize(
    ("context", "sentence"), CONTEXTS, ids=[json.dumps(c) for c, _ in CONTEXTS]
)
async def test_a_served_run_context_key_that_is_no_run_setting_is_refused(
    client: LangGraphClient,
    script: ScriptedOpenAIServer,
    dev: LangGraphDev,
    context: dict[str, Any],
    sentence: str,
    where: str,
) -> None:
    asked = len(script.chat_requests)
    thread = (await client.threads.create())["thread_id"]
    settings = {"context": context} if where == "context" else {"config": {"configurable": context}}
    out = await client.runs.wait(thread, "agent", input=ask(), **settings)
    assert out["status"] == "error", out
    assert_one_sentence(out["error"], "Refused run context", sentence)
    assert len(script.chat_requests) == asked, "the model was called despite the refusal"


@pytest.mark.parametrize("where", ["context", "configurable"])
async def test_a_served_run_with_run_settings_only_still_runs(
    client: LangGraphClient, script: ScriptedOpenAIServer, where: str
) -> None:
    script.add(Reply(content="Fine."))
    thread = (await client.threads.create())["thread_id"]
    context = {"protocol": "native", "max_steps": 3}
    settings = {"context": context} if where == "context" else {"config": {"configurable": context}}
    out = await client.runs.wait(thread, "agent", input=ask(), **settings)
    assert out["status"] == "answered" and out["answer"] == "Fine.", out
