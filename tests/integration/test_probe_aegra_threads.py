"""A probe of what a client does to a thread served by AEGRA (two instances, one PostgreSQL
database, one Redis) through `langgraph_sdk`, as LangGraph Studio and Agent Chat UI drive it:
the counterpart of test_probe_served_threads.py (`langgraph dev`), with what two instances add.
Every flow starts on one instance (`a`) and continues, is read, decided or cancelled through the
other (`b`), as behind a load balancer.

One deployment per module (tests/support/aegra_probe.py: tests/support/aegra.py's `aegra()`
with a second graph) serves `agent` (the repository's graph, batched approvals by the run
setting `approve`) and `per_call` (`build_graph(approval_mode="per_call")` under served.py's
thread lock, tests/support/aegra_probe_graphs.py), with the tools of tests/support/crash_tools.py
(each execution a line in CALLS_FILE). The scripted endpoint (tests/support/aegra_probe.py)
answers from the conversation under both protocols and refuses with HTTP 400 a conversation
OpenAI's API refuses (a call with no result right after its step, a result with no call); the
last test checks no run sent one. Runs are followed by streaming (Aegra's `runs.wait` polls,
about 2 s a run), as the UIs do.

Covered: the next turn after an answer and a model error (both protocols), the step limit, a
rejection (batched, per_call), an approval left pending when a new message comes with Agent Chat
UI's stand-in (batched native and text, per_call); decisions sent to the other instance as a
command alone (respond, edit under the text protocol, and per_call approve/edit/reject/respond),
a resume sent twice, two resumes at once; `get_history` and a re-run from an earlier checkpoint,
`update_state(as_node=think | tools | act)` then a continue, `threads.copy`, a `checkpoint_id`
the thread does not hold; `runs.stream` with values/updates/messages-tuple/events (both
protocols), `runs.cancel` from the other instance mid-tool, `multitask_strategy`
reject/interrupt/rollback mid-tool; bad input (messages not a list or of an unknown role, input
not an object, unknown `as_node`, a resume with nothing paused, a 2 MB question). After each:
`get_state` holds standard message dicts (every result after its call) and the documented
`status`/`answer`/`error`.

Not repeated: test_aegra.py (wait/stream/join across instances, approve/edit/reject batched on
the other instance, enqueue, load, a killed instance), test_probe_served_threads.py's
`create_agent` comparisons, unusable replies and `stream_subgraphs`.

Defects found (strict xfails, each checked to fail on its own assertion with --runxfail):
- per_call edit: the edited call runs (once), but the stored step and the trace kept the model's
  arguments, where the docs promise the step shows what ran (batched does rewrite it). Fixed:
  observe writes the arguments that ran into the step (`approvals.steps_edited`); an ordinary
  test now, here and in tests/security/test_approval_once.py;
- (left, as under `langgraph dev`) reading a `checkpoint_id` the thread does not hold answers an
  empty state (200); runs and updates from it are refused with a sentence naming it.

Aegra's own (not the graph's), asserted as they are or worked around: a run with neither input,
command nor checkpoint is refused 422, so a paused thread is continued by naming its head
checkpoint; `threads.copy` is 404 (no copy route in 0.11); `multitask_strategy` is ignored (no
409 for reject, no interrupt or rollback: the second run waits on served.py's lock and both
succeed in order); every failed `update_state` is a 500 (an unknown `as_node`, an unknown
checkpoint; the message kept); input that is not an object gets a 422 validation list; a resume
is refused 400 "Cannot resume: thread is not in interrupted state" unless the thread is paused
by an interrupt (`interrupt_before` does not count), so the graph's own "Nothing to resume"
sentence is seen only when a second resume slips in (two at once); a cancelled run leaves the
thread `idle` (`langgraph dev`: `interrupted`); a failed run's stream `error` event says only
"<Type>: execution failed" (the sentence is in the run's record, `runs.wait`), so a streaming
UI shows no reason for a refused input, and the thread reads `error` though nothing was stored;
a per_call pause is in `get_state`'s interrupts, not `threads.get`'s.

Held: every next turn sends a valid conversation with each question once and the model never
reads the error or the stand-in; a pending call answered by a new message is "not run" and never
runs (both modes, both protocols); each decision runs the decided call once (edited arguments
for an edit) or nothing, with no run context on the resume; a resume sent again is refused and
runs nothing; two at once run the call once; re-runs from a checkpoint re-ask the model without
re-running the tool and keep the original branch; a plain answer written as `think` ends the run
`answered` without asking the model; a result written as `tools` or `act` skips the call; node
names (think, act, finish) and answer tokens stream from the other instance; cancel from the
other instance stops the tool's run, the next question is answered and the call is not started
again; bad input stores nothing and the thread answers after; a 2 MB question ends in one
sentence naming the context window and the next turn answers.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.messages import convert_to_messages
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import NotFoundError

from graph.steps import steps_of
from tests.support.aegra import Deployment, report_failures
from tests.support.aegra_probe import (
    REFUSED,
    brain,
    conversation_problem,
    deployment,
    text_of,
)
from tests.support.openai_server import ScriptedOpenAIServer
from tests.support.sentences import assert_one_sentence

pytestmark = [pytest.mark.integration, pytest.mark.aegra]

APPROVE = {"approve": ["publish"]}  # the run setting that gates publish
TEXT = {"protocol": "text"}
STAND_IN = "Successfully handled tool call."  # Agent Chat UI's (src/lib/ensure-tool-responses.ts)
MODES = ["batched", "per_call"]
GRAPH = {"batched": "agent", "per_call": "per_call"}


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(default=brain) as server:
        yield server


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("aegra-threads-files")
    (folder / "calls.txt").write_text("", encoding="utf-8")
    return {"calls": folder / "calls.txt", "release": folder / "release"}


@pytest.fixture(scope="module")
def served(
    request: pytest.FixtureRequest, model_server: ScriptedOpenAIServer, files: dict[str, Path]
) -> Iterator[Deployment]:
    env = {
        "OPENAI_BASE_URL": model_server.base_url,
        "OPENAI_API_KEY": "sk-aegra-threads",
        "REACT_AGENT_MODEL": "scripted",
        "REACT_AGENT_PROTOCOL": "native",
        "REACT_AGENT_TOOLS": "tests.support.crash_tools:TOOLS",  # an operator setting
        "REACT_AGENT_APPROVAL_MODE": "batched",
        "REACT_AGENT_MAX_RETRIES": "0",
        "REACT_AGENT_LOCAL": "off",
        "CALLS_FILE": str(files["calls"]),
        "SLEEPY_SECONDS": "10",  # a sleepy call holds until the test writes RELEASE_FILE
        "RELEASE_FILE": str(files["release"]),
    }
    with deployment(env) as two, report_failures(request, two):
        yield two


@pytest.fixture
async def a(served: Deployment) -> AsyncIterator[LangGraphClient]:
    client = get_client(url=served.urls[0], api_key=served.api_key, timeout=60)
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture
async def b(served: Deployment) -> AsyncIterator[LangGraphClient]:
    client = get_client(url=served.urls[1], api_key=served.api_key, timeout=60)
    try:
        yield client
    finally:
        await client.aclose()


# --------------------------------------------------------------------------- helpers


def ask(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def label(what: str) -> str:
    return f"{what}-{uuid.uuid4().hex[:8]}"


def ran(files: dict[str, Path], name: str) -> int:
    return Counter(files["calls"].read_text(encoding="utf-8").split())[name]


def summary(out: Any) -> dict[str, Any]:
    return {k: out.get(k) for k in ("status", "answer", "error")}


async def new_thread(client: LangGraphClient) -> str:
    return (await client.threads.create())["thread_id"]


async def messages(client: LangGraphClient, thread: str) -> list[dict[str, Any]]:
    return (await client.threads.get_state(thread))["values"].get("messages", [])


def sent_since(server: ScriptedOpenAIServer, seen: int) -> list[list[dict[str, Any]]]:
    found = []
    for request in server.chat_requests[seen:]:
        assert conversation_problem(request.messages) is None, request.messages
        found.append([m for m in request.messages if m["role"] != "system"])
    return found


def roles(conversation: list[dict[str, Any]]) -> list[str]:
    return [m["role"] for m in conversation]


def tool_texts(found: list[dict[str, Any]]) -> dict[str, str]:
    return {m["tool_call_id"]: text_of(m["content"]) for m in found if m.get("tool_call_id")}


def ui_stand_ins(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for at, message in enumerate(found):
        if message["type"] != "ai" or not message.get("tool_calls"):
            continue
        following = found[at + 1] if at + 1 < len(found) else None
        if following is not None and following["type"] == "tool":
            continue
        out += [
            {
                "type": "tool",
                "tool_call_id": call["id"],
                "id": f"do-not-render-{uuid.uuid4()}",
                "name": call["name"],
                "content": STAND_IN,
            }
            for call in message["tool_calls"]
        ]
    return out


def question(text: str) -> dict[str, Any]:
    return {"id": str(uuid.uuid4()), "type": "human", "content": [{"type": "text", "text": text}]}


async def pauses(client: LangGraphClient, thread: str) -> list[dict[str, Any]]:
    return list((await client.threads.get_state(thread)).get("interrupts") or [])


def assert_standard(values: dict[str, Any]) -> None:
    found = values.get("messages") or []
    calls: set[str] = set()
    for message in found:
        assert message["type"] in ("human", "ai", "tool", "system"), message
        assert isinstance(message.get("id"), str) and message["id"], message
        assert isinstance(message["content"], (str, list)), message
        if message["type"] == "ai":
            for call in message.get("tool_calls") or []:
                assert set(call) >= {"id", "name", "args"} and isinstance(call["args"], dict)
                calls.add(call["id"])
        if message["type"] == "tool":
            assert message["tool_call_id"] in calls, message
    if values.get("status") == "answered":
        assert values["answer"] == text_of(found[-1]["content"]), values


async def refusal(attempt: Any) -> tuple[int, str]:
    try:
        await attempt
    except httpx.HTTPStatusError as refused:
        body = getattr(refused, "body", None)
        if body is None:
            await refused.response.aread()
            try:
                body = refused.response.json()
            except ValueError:
                body = {"message": refused.response.text}
        said = body.get("message") or body.get("detail") if isinstance(body, dict) else body
        return refused.response.status_code, str(said)
    pytest.fail("not refused")


class RunFailed(Exception):
    """A run the server took and the graph ended in error: the stream's `error` event."""


async def finish(client: LangGraphClient, thread: str, graph: str, **run: Any) -> dict[str, Any]:
    """A run streamed to its end (as Agent Chat UI and Studio follow a run; Aegra's `runs.wait`
    polls, about 2 s a run): the last values, or RunFailed with the error's message."""
    values: dict[str, Any] = {}
    async for part in client.runs.stream(thread, graph, stream_mode="values", **run):
        if part.event == "error":
            raise RunFailed(str((part.data or {}).get("message")))
        if part.event == "values":
            values = part.data
    return values


async def refused_run(client: LangGraphClient, thread: str, graph: str, **run: Any) -> str:
    """A run the server accepts and the graph fails: its message, read with `runs.wait` (the
    run's record keeps it; Aegra's stream says only "<Type>: execution failed")."""
    with pytest.raises(Exception) as failed:  # the SDK raises a failed run as a bare Exception
        out = await client.runs.wait(thread, graph, **run)
        if isinstance(out, dict) and "__error__" in out:
            raise Exception(str(out["__error__"].get("message")))
    return str(failed.value).split(": ", 1)[-1]


def trace(values: dict[str, Any]) -> list[dict[str, Any]]:
    """The trace a reader rebuilds from a stored state (graph.steps.steps_of)."""
    return steps_of({**values, "messages": convert_to_messages(values["messages"])})


async def sleepy_started(files: dict[str, Path], name: str) -> None:
    deadline = time.monotonic() + 15
    while not ran(files, f"sleepy-start:{name}"):
        assert time.monotonic() < deadline, "the sleepy call never started"
        await asyncio.sleep(0.05)


# =========================================================================== 1. the next turn


@pytest.mark.parametrize("context", [None, TEXT], ids=["native", "text"])
async def test_next_turn_after_an_answer_on_the_other_instance(
    a: LangGraphClient,
    b: LangGraphClient,
    model_server: ScriptedOpenAIServer,
    files: dict[str, Path],
    context: Any,
) -> None:
    name = label("answer")
    thread = await new_thread(a)
    out = await finish(a, thread, "agent", input=ask(f"tick {name}"), context=context)
    assert summary(out) == {"status": "answered", "answer": f"Done: ticked {name}", "error": None}
    seen = len(model_server.chat_requests)
    out = await finish(b, thread, "agent", input=ask("hello"), context=context)
    assert summary(out) == {"status": "answered", "answer": "You said: hello", "error": None}
    [conversation] = sent_since(model_server, seen)
    questions = [text_of(m["content"]) for m in conversation if m["role"] == "user"]
    assert questions.count("hello") == 1 and questions.count(f"tick {name}") == 1
    state = await a.threads.get_state(thread)
    assert_standard(state["values"])
    assert [m["type"] for m in state["values"]["messages"]] == [
        "human",
        "ai",
        "tool",
        "ai",
        "human",
        "ai",
    ]
    assert ran(files, f"tick:{name}") == 1


@pytest.mark.parametrize("context", [None, TEXT], ids=["native", "text"])
async def test_next_turn_after_a_model_error(
    a: LangGraphClient, b: LangGraphClient, model_server: ScriptedOpenAIServer, context: Any
) -> None:
    """HTTP 500 (not retried): the run ends `error` with one sentence; the next question, on
    the other instance, is answered, and the model gets both questions once, not the error."""
    thread = await new_thread(a)
    out = await finish(a, thread, "agent", input=ask("fail"), context=context)
    assert out["status"] == "error" and out["answer"] is None
    assert_one_sentence(out["error"], "HTTP 500")
    stored = (await b.threads.get_state(thread))["values"]
    assert (stored["status"], stored["answer"], stored["error"]) == ("error", None, out["error"])
    assert_standard(stored)
    seen = len(model_server.chat_requests)
    out = await finish(b, thread, "agent", input=ask("hello"), context=context)
    assert summary(out) == {"status": "answered", "answer": "You said: hello", "error": None}
    [conversation] = sent_since(model_server, seen)
    assert [(m["role"], text_of(m["content"])) for m in conversation] == [
        ("user", "fail"),
        ("user", "hello"),
    ]


async def test_next_turn_after_the_step_limit(
    a: LangGraphClient,
    b: LangGraphClient,
    model_server: ScriptedOpenAIServer,
    files: dict[str, Path],
) -> None:
    name = label("limit")
    thread = await new_thread(a)
    context = {"max_steps": 1}
    out = await finish(a, thread, "agent", input=ask(f"loop {name}"), context=context)
    assert out["status"] == "max_steps" and "max_steps=1" in out["answer"]
    stored = (await b.threads.get_state(thread))["values"]
    assert (stored["status"], stored["answer"]) == ("max_steps", out["answer"])
    assert_standard(stored)
    seen = len(model_server.chat_requests)
    out = await finish(b, thread, "agent", input=ask("hello"), context=context)
    assert summary(out) == {"status": "answered", "answer": "You said: hello", "error": None}
    [conversation] = sent_since(model_server, seen)
    assert roles(conversation) == ["user", "assistant", "tool", "assistant", "user"]
    assert ran(files, f"tick:{name}") == 1


@pytest.mark.parametrize("mode", MODES)
async def test_next_turn_after_a_rejection_decided_on_the_other_instance(
    a: LangGraphClient,
    b: LangGraphClient,
    model_server: ScriptedOpenAIServer,
    files: dict[str, Path],
    mode: str,
) -> None:
    name = label("reject")
    graph = GRAPH[mode]
    thread = await new_thread(a)
    await finish(a, thread, graph, input=ask(f"publish {name}"), context=APPROVE)
    out = await finish(
        b,
        thread,
        graph,
        command={
            "resume": resume_with(
                mode, await pauses(b, thread), {"type": "reject", "message": "Not now."}
            )
        },
    )
    assert out["status"] == "answered" and out["answer"].endswith("Not now."), out
    seen = len(model_server.chat_requests)
    out = await finish(a, thread, graph, input=ask("hello"), context=APPROVE)
    assert summary(out) == {"status": "answered", "answer": "You said: hello", "error": None}
    [conversation] = sent_since(model_server, seen)
    assert roles(conversation) == ["user", "assistant", "tool", "assistant", "user"]
    [result] = tool_texts(conversation).values()
    assert result.endswith("Not now.")
    assert ran(files, f"publish:{name}") == 0
    assert_standard((await b.threads.get_state(thread))["values"])


@pytest.mark.parametrize(
    ("mode", "context"),
    [("batched", None), ("batched", TEXT), ("per_call", None)],
    ids=["batched", "batched-text", "per_call"],
)
async def test_a_new_message_while_an_approval_waits(
    a: LangGraphClient,
    b: LangGraphClient,
    model_server: ScriptedOpenAIServer,
    files: dict[str, Path],
    mode: str,
    context: Any,
) -> None:
    """Paused on `publish` (started on one instance); the user types on the other, and Agent
    Chat UI sends its stand-in result for the waiting call with the question. The question is
    answered, the call is answered as not run and never runs, the thread is idle."""
    name = label("pending")
    graph = GRAPH[mode]
    thread = await new_thread(a)
    run_context = {**APPROVE, **(context or {})}
    await finish(a, thread, graph, input=ask(f"publish {name}"), context=run_context)
    held = await messages(b, thread)
    seen = len(model_server.chat_requests)
    sent = {"messages": [*ui_stand_ins(held), question("never mind")]}
    out = await finish(b, thread, graph, input=sent, context=run_context)
    assert summary(out) == {"status": "answered", "answer": "You said: never mind", "error": None}
    [conversation] = sent_since(model_server, seen)
    texts = [text_of(m.get("content")) for m in conversation]
    assert not any(STAND_IN in text for text in texts), texts
    if context is None:
        [result] = tool_texts(conversation).values()
        assert "was not run" in result, result
    else:  # the text protocol reads a result as an `Observation:` message
        assert any(t.startswith("Observation:") and "was not run" in t for t in texts), texts
    assert ran(files, f"publish:{name}") == 0
    assert (await a.threads.get(thread))["status"] == "idle"
    state = await a.threads.get_state(thread)
    assert state["interrupts"] == [] and state["next"] == []
    assert_standard(state["values"])


# =========================================================================== 2. decisions


def resume_with(mode: str, found: list[dict[str, Any]], decision: dict[str, Any]) -> Any:
    """The resume value for one waiting call: batched `{"decisions": [...]}`, per_call
    `{interrupt id: decision}` (LangChain's per-call shape)."""
    [pause] = found
    if mode == "batched":
        return {"decisions": [decision]}
    return {pause["id"]: decision}


DECISIONS = {  # the decision; what runs (None: nothing); the answer's end
    "approve": ({"type": "approve"}, "{}", "published '{}'"),
    "edit": (
        {"type": "edit", "edited_action": {"name": "publish", "args": {"text": "{}-edited"}}},
        "{}-edited",
        "published '{}-edited'",
    ),
    "reject": ({"type": "reject", "message": "Not today."}, None, "Not today."),
    "respond": ({"type": "respond", "message": "Published by hand."}, None, "Published by hand."),
}
CASES = [  # test_aegra.py decides approve, edit and reject (batched) on the other instance
    pytest.param("batched", "respond", None, id="batched-respond"),
    pytest.param("batched", "edit", TEXT, id="batched-edit-text"),
    *[
        pytest.param("per_call", decision, None, id=f"per_call-{decision}")
        for decision in DECISIONS
    ],
]


@pytest.mark.parametrize(("mode", "decision", "context"), CASES)
async def test_a_decision_made_on_the_other_instance(
    a: LangGraphClient,
    b: LangGraphClient,
    files: dict[str, Path],
    mode: str,
    decision: str,
    context: Any,
) -> None:
    """The pause shows the call; the decision, sent to the other instance as a command alone
    (no run context, as Agent Chat UI resumes), runs the decided call once (an edit: the edited
    arguments, and the stored step shows them) or nothing, and the answer says so."""
    name = label(decision)
    graph = GRAPH[mode]
    run_context = {**APPROVE, **(context or {})}
    thread = await new_thread(a)
    await finish(a, thread, graph, input=ask(f"publish {name}"), context=run_context)
    found = await pauses(b, thread)
    [pause] = found
    request = pause["value"]["action_requests"][0] if mode == "batched" else pause["value"]
    assert request["name"] == "publish" and request["args"] == {"text": name}
    sent, runs, answer = DECISIONS[decision]
    sent = json.loads(json.dumps(sent).replace("{}", name))
    out = await finish(b, thread, graph, command={"resume": resume_with(mode, found, sent)})
    assert out["status"] == "answered" and out["answer"].startswith("Done: "), out
    assert answer.format(name) in out["answer"]
    published = {
        k: n
        for k, n in Counter(files["calls"].read_text(encoding="utf-8").split()).items()
        if k.startswith("publish:") and name in k
    }
    assert published == ({} if runs is None else {f"publish:{runs.format(name)}": 1})
    state = await a.threads.get_state(thread)
    assert_standard(state["values"])
    step = next(m for m in state["values"]["messages"] if m.get("tool_calls"))
    shown = {"text": runs.format(name)} if runs is not None else {"text": name}
    assert step["tool_calls"][0]["args"] == shown
    [action] = [entry for entry in trace(state["values"]) if entry["kind"] == "action"]
    assert action["tool_input"] == shown
    assert (await a.threads.get(thread))["status"] == "idle"


@pytest.mark.parametrize("mode", MODES)
async def test_a_resume_sent_twice_runs_the_call_once(
    a: LangGraphClient, b: LangGraphClient, files: dict[str, Path], mode: str
) -> None:
    """The same approval sent again (a retry) after the first finished: refused in one
    sentence with a 4xx, the call not run again, the thread as the first resume left it."""
    name = label("twice")
    graph = GRAPH[mode]
    thread = await new_thread(a)
    await finish(a, thread, graph, input=ask(f"publish {name}"), context=APPROVE)
    resume = resume_with(mode, await pauses(a, thread), {"type": "approve"})
    out = await finish(b, thread, graph, command={"resume": resume})
    assert out["status"] == "answered"
    before = await a.threads.get_history(thread, limit=100)
    status, said = await refusal(finish(a, thread, graph, command={"resume": resume}))
    assert status == 400 and "resume" in said.lower(), said
    assert ran(files, f"publish:{name}") == 1
    after = await b.threads.get_history(thread, limit=100)
    assert [h["checkpoint"] for h in after] == [h["checkpoint"] for h in before]


async def test_two_resumes_at_once_run_the_call_once(
    a: LangGraphClient, b: LangGraphClient, files: dict[str, Path]
) -> None:
    """A double click that lands on both instances: each resume is either refused with a 4xx
    (Aegra: the thread is busy by then) or runs under the thread's lock; the call runs once, the
    thread holds one answer, and a run that ends does not end silently."""
    name = label("double")
    thread = await new_thread(a)
    await finish(a, thread, "agent", input=ask(f"publish {name}"), context=APPROVE)
    command = {"resume": {"decisions": [{"type": "approve"}]}}
    outcomes = await asyncio.gather(
        a.runs.create(thread, "agent", command=command),
        b.runs.create(thread, "agent", command=command),
        return_exceptions=True,
    )
    accepted = [o for o in outcomes if isinstance(o, dict)]
    refused = [o for o in outcomes if not isinstance(o, dict)]
    assert accepted, outcomes
    for error in refused:
        assert isinstance(error, httpx.HTTPStatusError), error
        assert 400 <= error.response.status_code < 500
    for run in accepted:  # one answers; a second is refused by the graph in one sentence
        out = await b.runs.join(thread, run["run_id"])
        if "__error__" in out:
            assert_one_sentence(out["__error__"]["message"], "Nothing to resume")
        else:
            assert out["status"] == "answered", out
    assert ran(files, f"publish:{name}") == 1
    found = await messages(a, thread)
    assert [m["type"] for m in found] == ["human", "ai", "tool", "ai"]
    assert found[-1]["content"] == f"Done: published '{name}'"


# =========================================================================== 3. time travel


async def head(client: LangGraphClient, thread: str) -> str:
    """The thread's latest checkpoint id: Aegra refuses a run with neither input, command nor
    checkpoint (HTTP 422), so a client continues a paused thread by naming its head."""
    return (await client.threads.get_state(thread))["checkpoint"]["checkpoint_id"]


async def test_a_rerun_from_an_earlier_checkpoint_on_the_other_instance(
    a: LangGraphClient,
    b: LangGraphClient,
    model_server: ScriptedOpenAIServer,
    files: dict[str, Path],
) -> None:
    """`get_history` on the other instance lists one checkpoint per step; a run from the model
    step after the tool (`checkpoint_id`) asks the model again, does not run the tool again,
    and forks: the original checkpoints stay."""
    name = label("rerun")
    thread = await new_thread(a)
    await finish(a, thread, "agent", input=ask(f"tick {name}"))
    history = await b.threads.get_history(thread, limit=100)
    assert [h["next"] for h in reversed(history)] == [
        ["__start__"],
        ["think"],
        ["act"],
        ["think"],
        ["finish"],
        [],
    ]
    after_tool = history[2]["checkpoint"]["checkpoint_id"]
    seen = len(model_server.chat_requests)
    out = await finish(b, thread, "agent", input=None, checkpoint_id=after_tool)
    assert summary(out) == {"status": "answered", "answer": f"Done: ticked {name}", "error": None}
    [conversation] = sent_since(model_server, seen)
    assert roles(conversation) == ["user", "assistant", "tool"]
    assert ran(files, f"tick:{name}") == 1
    state = await a.threads.get_state(thread)
    assert [m["type"] for m in state["values"]["messages"]] == ["human", "ai", "tool", "ai"]
    assert_standard(state["values"])
    after = {h["checkpoint"]["checkpoint_id"] for h in await a.threads.get_history(thread)}
    assert {h["checkpoint"]["checkpoint_id"] for h in history} <= after


async def test_a_plain_answer_written_during_an_approval_pause_then_continued(
    a: LangGraphClient,
    b: LangGraphClient,
    model_server: ScriptedOpenAIServer,
    files: dict[str, Path],
) -> None:
    """Studio's editor on the other instance: the waiting step replaced by a plain answer as
    `think`, then continued on the first: the run ends `answered` on it, nothing runs."""
    name = label("plain")
    thread = await new_thread(a)
    await finish(a, thread, "agent", input=ask(f"publish {name}"), context=APPROVE)
    step = (await messages(b, thread))[-1]
    plain = {"type": "ai", "content": "No need to publish.", "id": step["id"]}
    await b.threads.update_state(thread, {"messages": [plain]}, as_node="think")
    seen = len(model_server.chat_requests)
    out = await finish(a, thread, "agent", input=None, checkpoint_id=await head(a, thread))
    assert len(model_server.chat_requests) == seen and ran(files, f"publish:{name}") == 0
    assert (out.get("status"), out.get("answer")) == ("answered", "No need to publish.")
    assert (await b.threads.get(thread))["status"] == "idle"
    assert_standard((await b.threads.get_state(thread))["values"])


@pytest.mark.parametrize("as_node", ["tools", "act"])
async def test_a_result_written_as_the_tools_node_skips_the_call(
    a: LangGraphClient,
    b: LangGraphClient,
    model_server: ScriptedOpenAIServer,
    files: dict[str, Path],
    as_node: str,
) -> None:
    """LangGraph's "skip the tool" across instances: paused before the tools on one, the
    result written on the other (create_agent's node name, or ours), continued on the first."""
    name = label("skip")
    thread = await new_thread(a)
    await finish(a, thread, "agent", input=ask(f"tick {name}"), interrupt_before=["tools"])
    assert (await b.threads.get_state(thread))["next"] == ["act"]
    [call] = (await messages(b, thread))[-1]["tool_calls"]
    written = {"type": "tool", "tool_call_id": call["id"], "name": "tick", "content": "skipped"}
    await b.threads.update_state(thread, {"messages": [written]}, as_node=as_node)
    seen = len(model_server.chat_requests)
    out = await finish(a, thread, "agent", input=None, checkpoint_id=await head(a, thread))
    [conversation] = sent_since(model_server, seen)
    assert tool_texts(conversation) == {call["id"]: "skipped"}
    assert summary(out) == {"status": "answered", "answer": "Done: skipped", "error": None}
    assert ran(files, f"tick:{name}") == 0
    assert_standard((await b.threads.get_state(thread))["values"])


async def test_threads_copy_is_not_served_and_leaves_the_thread(
    a: LangGraphClient, b: LangGraphClient
) -> None:
    """Aegra 0.11 has no `POST /threads/{id}/copy` (404, where `langgraph dev` copies the
    history): a fork there is a run from an earlier checkpoint of the same thread (above). The
    thread asked to be copied is untouched and answers."""
    thread = await transcript_thread(a)
    before = await a.threads.get_history(thread, limit=100)
    with pytest.raises(NotFoundError):
        await b.threads.copy(thread)
    after = await b.threads.get_history(thread, limit=100)
    assert [h["checkpoint"] for h in after] == [h["checkpoint"] for h in before]
    out = await finish(a, thread, "agent", input=ask("hello"))
    assert summary(out) == {"status": "answered", "answer": "You said: hello", "error": None}


async def transcript_thread(client: LangGraphClient) -> str:
    """A thread of `agent` holding one answered exchange, written without a run."""
    thread = (await client.threads.create(graph_id="agent"))["thread_id"]
    answered = [{"type": "human", "content": "first"}, {"type": "ai", "content": "You said: first"}]
    await client.threads.update_state(thread, {"messages": answered}, as_node="finish")
    return thread


READ_UNKNOWN = pytest.mark.xfail(
    strict=True,
    reason="reading a checkpoint_id the thread does not hold gives an empty state (200), as "
    "under langgraph dev (left there too): only runs and updates are refused (graph/checked.py)",
)


@pytest.mark.parametrize(
    "how", ["run", "continue", "update", pytest.param("read", marks=READ_UNKNOWN)]
)
async def test_a_checkpoint_id_the_thread_does_not_hold_is_refused(
    a: LangGraphClient, b: LangGraphClient, how: str
) -> None:
    """A stale or mistyped checkpoint id sent to the other instance: a sentence naming it (a
    failed run, or a refused update: Aegra answers every failed update with a 500), and the
    thread as it was."""
    thread = await transcript_thread(a)
    before = await a.threads.get_history(thread, limit=100)
    unknown = str(uuid.uuid4())
    said = ""
    if how == "run":
        said = await refused_run(b, thread, "agent", input=ask("x"), checkpoint_id=unknown)
    elif how == "continue":
        said = await refused_run(b, thread, "agent", input=None, checkpoint_id=unknown)
    elif how == "update":
        status, said = await refusal(
            b.threads.update_state(thread, ask("x"), checkpoint_id=unknown)
        )
        assert status >= 400
        said = said.removeprefix("Failed to update thread state: ")  # Aegra's prefix
    else:
        try:
            await b.threads.get_state(thread, checkpoint_id=unknown)
        except httpx.HTTPStatusError as refused:
            said = f"{refused.response.status_code}: no checkpoint {unknown}."
    assert_one_sentence(said, unknown, "checkpoint")
    after = await a.threads.get_history(thread, limit=100)
    assert [h["checkpoint"] for h in after] == [h["checkpoint"] for h in before]


# =========================================================================== 4. streams


@pytest.mark.parametrize("context", [None, TEXT], ids=["native", "text"])
async def test_stream_four_modes_from_the_other_instance(
    a: LangGraphClient, b: LangGraphClient, context: Any
) -> None:
    """`values`, `updates`, `messages-tuple`, `events` from the instance the thread was not
    created on: the nodes a consumer sees are think, act, finish; the model's messages come
    from think and the results from act; the answer's tokens make the stored answer."""
    name = label("stream")
    thread = await new_thread(a)
    parts = [
        (part.event, part.data)
        async for part in b.runs.stream(
            thread,
            "agent",
            input=ask(f"tick {name}"),
            context=context,
            stream_mode=["values", "updates", "messages-tuple", "events"],
        )
    ]
    events = {e for e, _ in parts}
    assert {"metadata", "values", "updates", "messages", "events"} <= events, events
    updated = [node for e, d in parts if e == "updates" for node in d]
    assert updated[0] == "think" and "act" in updated and updated[-1] == "finish", updated
    by_node: dict[str, set[str]] = {}
    answer: dict[str, str] = {}
    for event, data in parts:
        if event != "messages":
            continue
        chunk, meta = data
        by_node.setdefault(meta["langgraph_node"], set()).add(chunk["type"])
        if meta["langgraph_node"] == "think" and chunk["type"] in ("AIMessageChunk", "ai"):
            answer[chunk["id"]] = answer.get(chunk["id"], "") + text_of(chunk["content"])
    assert set(by_node) == {"think", "act"}, by_node
    final = [d for e, d in parts if e == "values"][-1]
    assert list(answer.values())[-1] == final["messages"][-1]["content"] == f"Done: ticked {name}"
    assert final["status"] == "answered" and final["answer"] == f"Done: ticked {name}"
    seen = {
        (d.get("event"), d.get("metadata", {}).get("langgraph_node"))
        for e, d in parts
        if e == "events"
    }
    assert {node for event, node in seen if event.startswith("on_chat_model")} == {"think"}
    assert {node for event, node in seen if event.startswith("on_tool")} == {"act"}
    if context is None:  # tokens under the native protocol (the text protocol's: parsed whole)
        assert ("on_chat_model_stream", "think") in seen, seen
    assert_standard((await a.threads.get_state(thread))["values"])


# =========================================================================== 5. cancel, multitask


async def test_cancel_on_the_other_instance_while_a_tool_runs(
    a: LangGraphClient,
    b: LangGraphClient,
    model_server: ScriptedOpenAIServer,
    files: dict[str, Path],
) -> None:
    """`runs.cancel(action="interrupt")` sent to the instance not running the run: the run is
    interrupted before act finishes; the next question is answered with the cut call answered
    (a valid conversation), and the call is not started again."""
    files["release"].unlink(missing_ok=True)
    name = label("cancel")
    thread = await new_thread(a)
    run = await a.runs.create(thread, "agent", input=ask(f"sleepy {name}"))
    await sleepy_started(files, name)
    await b.runs.cancel(thread, run["run_id"], wait=True, action="interrupt")
    files["release"].write_text("go", encoding="utf-8")
    assert (await a.runs.get(thread, run["run_id"]))["status"] == "interrupted"
    assert (await b.threads.get_state(thread))["next"] == ["act"]
    seen = len(model_server.chat_requests)
    out = await finish(a, thread, "agent", input=ask("hello"))
    assert summary(out) == {"status": "answered", "answer": "You said: hello", "error": None}
    [conversation] = sent_since(model_server, seen)
    assert roles(conversation) == ["user", "assistant", "tool", "user"]
    assert ran(files, f"sleepy-start:{name}") == 1
    assert (await b.threads.get(thread))["status"] == "idle"
    assert_standard((await b.threads.get_state(thread))["values"])


@pytest.mark.parametrize("strategy", ["reject", "interrupt", "rollback"])
async def test_multitask_while_a_tool_runs_waits_for_the_first_run(
    a: LangGraphClient, b: LangGraphClient, files: dict[str, Path], strategy: str
) -> None:
    """Aegra 0.11 takes a second run on a busy thread whatever its `multitask_strategy` (no
    409 for reject, no interrupt or rollback of the first); served.py's lock makes it wait.
    What a client gets: both runs succeed in order, nothing lost, the call ran once."""
    files["release"].unlink(missing_ok=True)
    name = label(strategy)
    thread = await new_thread(a)
    first = await a.runs.create(thread, "agent", input=ask(f"sleepy {name}"))
    await sleepy_started(files, name)
    second = await b.runs.create(thread, "agent", input=ask("second"), multitask_strategy=strategy)
    files["release"].write_text("go", encoding="utf-8")
    out = await a.runs.join(thread, second["run_id"])
    assert summary(out) == {"status": "answered", "answer": "You said: second", "error": None}
    assert (await b.runs.get(thread, first["run_id"]))["status"] == "success"
    found = await messages(a, thread)
    assert [(m["type"], text_of(m["content"])) for m in found] == [
        ("human", f"sleepy {name}"),
        ("ai", ""),
        ("tool", f"slept {name}"),
        ("ai", f"Done: slept {name}"),
        ("human", "second"),
        ("ai", "You said: second"),
    ]
    assert ran(files, f"sleepy-start:{name}") == 1
    assert (await b.threads.get(thread))["status"] == "idle"


# =========================================================================== 6. bad input


async def test_bad_input_is_refused_and_the_thread_answers_after(
    a: LangGraphClient, b: LangGraphClient
) -> None:
    """Sent to the other instance: messages that cannot be messages (a failed run, one
    sentence), input that is not an object (Aegra's 422), an unknown `as_node` (Aegra's 500
    naming it), a resume with nothing paused (Aegra's 400); nothing stored, and the thread then
    answers with its conversation intact."""
    thread = await transcript_thread(a)
    before = await a.threads.get_history(thread, limit=100)
    said = await refused_run(b, thread, "agent", input={"messages": 42})
    assert_one_sentence(said, "'messages'")
    assert (await a.threads.get(thread))["status"] == "error"  # Aegra's, nothing was stored
    said = await refused_run(
        b, thread, "agent", input={"messages": [{"role": "bogus", "content": "x"}]}
    )
    assert_one_sentence(said, "bogus")
    for not_an_object in (["not", "an", "object"], "hello"):
        status, said = await refusal(finish(b, thread, "agent", input=not_an_object))
        assert status == 422 and "dictionary" in said, said
    status, said = await refusal(b.threads.update_state(thread, ask("x"), as_node="nope"))
    assert status >= 400 and "nope" in said, said
    command = {"resume": {"decisions": [{"type": "approve"}]}}
    status, said = await refusal(finish(b, thread, "agent", command=command))
    assert status == 400 and "Cannot resume" in said, said
    after = await a.threads.get_history(thread, limit=100)
    assert [h["checkpoint"] for h in after] == [h["checkpoint"] for h in before]
    out = await finish(a, thread, "agent", input=ask("still there?"))
    assert out["answer"] == "You said: still there?"
    assert [m["content"] for m in out["messages"]][:2] == ["first", "You said: first"]


async def test_a_huge_message_ends_the_run_in_one_sentence_and_the_next_turn_answers(
    a: LangGraphClient, b: LangGraphClient, model_server: ScriptedOpenAIServer
) -> None:
    """A 2 MB question: no request is sent, the run ends `error` with one sentence naming the
    context window; the next question on the other instance is answered (the huge turn left out
    of the request, kept in the thread)."""
    thread = await transcript_thread(a)
    seen = len(model_server.chat_requests)
    out = await finish(b, thread, "agent", input=ask("x" * 2_000_000))
    assert out["status"] == "error" and len(model_server.chat_requests) == seen
    assert_one_sentence(out["error"], "context window")
    assert_standard((await a.threads.get_state(thread))["values"])
    out = await finish(a, thread, "agent", input=ask("hello"))
    assert summary(out) == {"status": "answered", "answer": "You said: hello", "error": None}
    [conversation] = sent_since(model_server, seen)
    assert all(len(text_of(m["content"])) < 1000 for m in conversation)


def test_no_conversation_was_refused_by_the_endpoint() -> None:
    """Every request any run of this module sent was one OpenAI's API takes (module order:
    this runs last)."""
    assert REFUSED == []
