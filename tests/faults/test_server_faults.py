"""Issues 17.5 and 17.6: malformed run settings, resumes and state edits sent to the served
graph end with one clear sentence, and never leave a thread that cannot run again.

A real `langgraph dev` serves the repository's graph against the scripted OpenAI-compatible
server. A bad `max_steps` ends the run with one sentence (no validation dump); a resume with
nothing pending, in every shape a caller can send it, is a clear error (LangGraph alone answers
with UnboundLocalError or TypeError text, or quietly returns the old state); poisoned state
updates are refused with an HTTP error and the thread keeps working; a well-formed edit, as
Studio's edit-and-fork sends it, still works. A hypothesis test then throws arbitrary JSON-ish
updates at `update_state` in process: each is refused with a ValueError or leaves the thread
able to answer the next question.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.memory import InMemorySaver
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import APIStatusError

from graph import build_graph
from graph.state import STATUSES, Run
from tests.support.langgraph_dev import LangGraphDev, langgraph_dev, report_failures
from tests.support.openai_server import Reply, ScriptedOpenAIServer, ToolCall
from tests.support.scripted_model import ScriptedChatModel
from tests.support.sentences import assert_one_sentence as one_sentence

pytestmark = pytest.mark.integration

NOT_CLEAR = ("UnboundLocalError", "TypeError", "NoneType", "Traceback", "EmptyInputError")


def ask(question: str = "What is 17 * 23?") -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": question}]}


def assert_one_sentence(text: str | None, *names: str) -> None:
    one_sentence(text, *names, banned=NOT_CLEAR)


# --------------------------------------------------------------------------- fixtures


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
        "OPENAI_API_KEY": "sk-faults-test-123456",
        "REACT_AGENT_MODEL": "scripted",
        "REACT_AGENT_LOCAL": "off",
    }
    with langgraph_dev(env) as server, report_failures(request, server):
        yield server


async def answered_thread(client: LangGraphClient, script: ScriptedOpenAIServer) -> str:
    """A thread whose one run answered."""
    script.add(Reply(content="17 * 23 = 391"))
    thread = (await client.threads.create())["thread_id"]
    out = await client.runs.wait(thread, "agent", input=ask())
    assert out["status"] == "answered", out
    return thread


async def assert_thread_still_answers(
    client: LangGraphClient, script: ScriptedOpenAIServer, thread: str
) -> None:
    script.add(Reply(content="Still here."))
    out = await client.runs.wait(thread, "agent", input=ask("Are you still there?"))
    assert out["status"] == "answered" and out["answer"] == "Still here.", out


# --------------------------------------------------------------------------- run settings


@pytest.mark.parametrize(
    "context",
    [
        {"max_steps": "abc"},
        {"max_steps": 2.5},
        {"max_steps": [3]},
        {"max_steps": 0},
        {"temperature": "hot"},
        {"protocol": "smoke-signals"},
    ],
    ids=lambda context: json.dumps(context),
)
async def test_a_malformed_setting_ends_the_run_with_one_sentence(
    client: LangGraphClient, script: ScriptedOpenAIServer, context: dict[str, Any]
) -> None:
    thread = (await client.threads.create())["thread_id"]
    asked = len(script.chat_requests)
    out = await client.runs.wait(thread, "agent", input=ask(), context=context)
    assert out["status"] == "error", out
    (name,) = context
    assert_one_sentence(out["error"], "Refused run context", name)
    assert len(script.chat_requests) == asked  # refused before any model call
    await assert_thread_still_answers(client, script, thread)


# --------------------------------------------------------------------------- resumes


async def resume_error(
    client: LangGraphClient, dev: LangGraphDev, thread: str, shape: str
) -> str | None:
    """Send a resume in one of the shapes a caller can; the run's error text, or None when
    the run ended without one."""
    if shape == "raw-null":  # what the SDK cannot send: it drops None values
        response = httpx.post(
            f"{dev.url}/threads/{thread}/runs/wait",
            json={"assistant_id": "agent", "command": {"resume": None}},
            timeout=30,
        )
        body = response.json()
        return json.dumps(body["__error__"]) if "__error__" in body else None
    resume = None if shape == "sdk-none" else {"decisions": [{"type": "approve"}]}
    try:
        await client.runs.wait(thread, "agent", command={"resume": resume})
    except Exception as exc:  # the SDK raises the run's error as a plain Exception
        return str(exc)
    return None


@pytest.mark.parametrize("shape", ["sdk-none", "sdk-decisions", "raw-null"])
@pytest.mark.parametrize("history", ["new", "answered"])
async def test_a_resume_with_nothing_pending_is_a_clear_error(
    client: LangGraphClient,
    script: ScriptedOpenAIServer,
    dev: LangGraphDev,
    history: str,
    shape: str,
) -> None:
    if history == "new":
        thread = (await client.threads.create())["thread_id"]
    else:
        thread = await answered_thread(client, script)
    before = (await client.threads.get_state(thread))["values"]
    asked = len(script.chat_requests)

    error = await resume_error(client, dev, thread, shape)
    assert error is not None, "the resume ended without an error"
    assert not any(marker in error for marker in NOT_CLEAR), error
    assert "Nothing to resume" in error or "The command carries nothing" in error, error
    assert len(script.chat_requests) == asked
    assert (await client.threads.get_state(thread))["values"] == before
    await assert_thread_still_answers(client, script, thread)


async def test_a_resume_without_a_decision_keeps_the_approval_pending(
    client: LangGraphClient, script: ScriptedOpenAIServer, dev: LangGraphDev
) -> None:
    """On a paused thread an empty resume runs nothing: the same approval is still asked
    (SDK: a plain continue), or the run is refused (raw null); a real decision still works."""
    script.add(Reply(tool_calls=[ToolCall("calculator", {"expression": "17 * 23"})]))
    thread = (await client.threads.create())["thread_id"]
    context = {"approve": ["calculator"], "protocol": "native"}
    await client.runs.wait(thread, "agent", input=ask(), context=context)
    for shape in ("sdk-none", "raw-null"):
        error = await resume_error(client, dev, thread, shape)
        assert error is None or "The command carries nothing" in error, error
        state = await client.threads.get_state(thread)
        assert state["next"] == ["review"], state["next"]
        assert [m["type"] for m in state["values"]["messages"]] == ["human", "ai"]
    script.add(Reply(content="17 * 23 = 391"))
    approve = {"decisions": [{"type": "approve"}]}
    done = await client.runs.wait(thread, "agent", command={"resume": approve}, context=context)
    assert done["status"] == "answered" and done["steps"][0]["observation"] == "391", done


# --------------------------------------------------------------------------- state updates

POISON = [
    ({"run": "zz"}, "'run' must be an object"),
    ({"steps": 5}, "'steps' must be a list"),
    ({"status": "weird"}, "'status' must be one of"),
    ({"messages": [{"role": "robot", "content": "x"}]}, "'messages' update refused"),
    ({"messages": [{"role": "user", "content": {"a": 1}}]}, "'messages' update refused"),
    ({"messages": [{"type": "ai", "content": "x", "tool_calls": "zz"}]}, "'messages' update"),
]


@pytest.mark.parametrize(("update", "sentence"), POISON, ids=[json.dumps(u) for u, _ in POISON])
async def test_a_poisoning_update_is_refused_and_the_thread_keeps_working(
    client: LangGraphClient, script: ScriptedOpenAIServer, update: dict, sentence: str
) -> None:
    thread = await answered_thread(client, script)
    before = await client.threads.get_history(thread, limit=100)
    with pytest.raises(APIStatusError) as refused:
        await client.threads.update_state(thread, update)
    assert 400 <= refused.value.response.status_code < 500
    assert sentence in str(refused.value)
    assert_one_sentence(str(refused.value))
    assert len(await client.threads.get_history(thread, limit=100)) == len(before)
    await assert_thread_still_answers(client, script, thread)


async def test_a_well_formed_edit_and_fork_still_works(
    client: LangGraphClient, script: ScriptedOpenAIServer
) -> None:
    """Studio's edit-and-fork: replace the question by its id at the checkpoint before the
    first think, run from the fork; and an edit of the answer at the head of the thread."""
    thread = await answered_thread(client, script)
    history = await client.threads.get_history(thread, limit=100)
    before_think = next(e for e in history if e["next"] == ["think"])
    question = before_think["values"]["messages"][0]
    edited = {"id": question["id"], "type": "human", "content": "What is 2 + 2?"}
    fork = await client.threads.update_state(
        thread, {"messages": [edited]}, checkpoint=before_think["checkpoint"]
    )
    script.add(Reply(content="4"))
    out = await client.runs.wait(thread, "agent", input=None, checkpoint_id=fork["checkpoint_id"])
    assert out["status"] == "answered" and out["answer"] == "4", out
    assert [m["content"] for m in out["messages"]] == ["What is 2 + 2?", "4"]

    answer = (await client.threads.get_state(thread))["values"]["messages"][-1]
    await client.threads.update_state(
        thread, {"messages": [{"id": answer["id"], "type": "ai", "content": "Four."}]}
    )
    assert (await client.threads.get_state(thread))["values"]["messages"][-1]["content"] == "Four."
    await assert_thread_still_answers(client, script, thread)


# ------------------------------------------------------------------------- calculator bombs (17.1)

BOMBS = [
    "round(1, -10**9)",
    "round(1.5, 10**9)",
    "9**9**9",
    "10**10**10 % 7",
    "(10**300)**(10**300)",
    "factorial(10**6)",
    "(" * 200 + "1" + ")" * 200,
]


async def test_calculator_bombs_never_stall_the_server(
    client: LangGraphClient, script: ScriptedOpenAIServer, dev: LangGraphDev
) -> None:
    """Huge expressions run inside the server's process while `/ok` is polled every 0.2 s:
    every poll is answered promptly (the event loop is never held) and every call gets an
    observation, a result or a refusal."""
    calls = [ToolCall("calculator", {"expression": expression}) for expression in BOMBS]
    script.add(Reply(tool_calls=calls), Reply(content="Done."))
    thread = (await client.threads.create())["thread_id"]
    polls: list[float | str] = []
    stop = asyncio.Event()

    async def poll() -> None:
        async with httpx.AsyncClient(timeout=5) as http:
            while not stop.is_set():
                started = time.monotonic()
                try:
                    response = await http.get(f"{dev.url}/ok")
                    took = time.monotonic() - started
                    polls.append(took if response.status_code == 200 else response.text)
                except httpx.HTTPError as exc:
                    polls.append(repr(exc))
                await asyncio.sleep(0.2)

    poller = asyncio.create_task(poll())
    try:
        out = await client.runs.wait(
            thread, "agent", input=ask("Compute these."), context={"protocol": "native"}
        )
    finally:
        stop.set()
        await poller
    assert out["status"] == "answered", out
    observations = [s["observation"] for s in out["steps"] if s["kind"] == "action"]
    assert len(observations) == len(BOMBS) and all(observations), observations
    assert len(polls) >= 3, polls
    assert all(isinstance(p, float) and p < 1.0 for p in polls), polls


# --------------------------------------------------------------------------- any update, in process

SCALARS = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=12)
JSONISH = st.recursive(
    SCALARS | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=8,
)
ROLES = ["user", "human", "assistant", "ai", "tool", "system", "robot", "function", ""]
MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(ROLES), "content": st.text(max_size=20) | JSONISH},
    optional={
        "id": st.text(max_size=8),
        "tool_call_id": st.text(max_size=8),
        "tool_calls": st.lists(
            st.fixed_dictionaries(
                {"name": st.text(max_size=8), "args": JSONISH, "id": st.text(max_size=8)}
            ),
            max_size=2,
        )
        | JSONISH,
    },
)
RUN_FIELDS = sorted(Run.__annotations__)
VALUES = {
    "messages": st.lists(MESSAGE | st.text(max_size=8) | JSONISH, max_size=3) | JSONISH,
    "run": st.dictionaries(st.sampled_from([*RUN_FIELDS, "zz"]), JSONISH, max_size=3) | JSONISH,
    "steps": st.lists(st.dictionaries(st.text(max_size=8), JSONISH), max_size=2) | JSONISH,
    "status": st.sampled_from([*sorted(STATUSES), "weird"]) | JSONISH,
    "answer": JSONISH,
    "error": JSONISH,
    "remaining_steps": JSONISH,
    "zz": JSONISH,
}
UPDATES = st.lists(st.sampled_from(sorted(VALUES)), min_size=1, max_size=3, unique=True).flatmap(
    lambda keys: st.fixed_dictionaries({key: VALUES[key] for key in keys})
)
AGENT = build_graph(
    model=ScriptedChatModel(["All done."], cycle=True),
    tools=[],
    checkpointer=InMemorySaver(),
    protocol="native",
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(update=UPDATES, as_node=st.sampled_from([None, "think", "review", "act", "observe"]))
def test_any_update_is_refused_or_leaves_the_thread_runnable(
    update: dict[str, Any], as_node: str | None
) -> None:
    """Any JSON-ish update, written as any node, after an answered run: refused with a
    one-line ValueError, or the next question is still answered."""
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    AGENT.invoke({"messages": [("user", "hi")]}, config)
    try:
        AGENT.update_state(config, update, as_node=as_node)
    except ValueError as exc:  # refused: one line, and the thread is as it was
        assert "\n" not in str(exc), str(exc)
    out = AGENT.invoke({"messages": [("user", "And now?")]}, config)
    assert out["status"] == "answered" and out["answer"] == "All done.", out
