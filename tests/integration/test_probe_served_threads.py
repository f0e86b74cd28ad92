"""A probe of what a client does to a SERVED thread through `langgraph_sdk`, as LangGraph Studio
and Agent Chat UI drive it, beside LangChain's `create_agent` served the same way.

One `langgraph dev` serves four graphs on one scripted OpenAI-compatible endpoint and the tools
of tests/support/crash_tools.py (`tick`, `publish`, `sleepy`; each execution is a line in
CALLS_FILE, so a test counts what really ran): `agent` (the repository's graph; approvals by the
run setting `approve`, batched), `per_call` (`build_graph(approval_mode="per_call")`), `ref`
(`create_agent`) and `ref_hitl` (+ `HumanInTheLoopMiddleware` on `publish`). The endpoint
answers from the conversation (`tick X`, `publish X`, `both X` for the two at once, `sleepy X`,
`loop X` for a call every step, `fail` for an HTTP 500, `malformed` for a call whose arguments
are not JSON; a tool result is answered `Done: <results>`, anything else is echoed), under
both protocols, and refuses with HTTP 400 a conversation OpenAI's API would refuse (a call with
no result right after its step, a result with no call), so a run that sends one ends in error.

Covered: time travel through the API (a re-run from an earlier checkpoint by `checkpoint=`,
the pending step replaced by a plain answer as `model`/`think`, a result written as `tools`
to skip a call, `threads.copy` then a fork in the copy, `Command(goto="model")` with an update);
a thread's next turn after a model error (text protocol), unusable replies, the step limit, a
rejection (per_call, with a parallel call that ran), and an approval left pending when a new
message comes (Agent Chat UI's `ensureToolCallsHaveResponses` stand-ins, batched and per_call);
`runs.stream` with four modes and `stream_subgraphs=True` (node names, answer tokens);
`runs.cancel` and `multitask_strategy` interrupt/rollback while a slow tool runs; bad input
(messages that are not a list, an unknown `as_node`, a resume with nothing paused, a
`checkpoint_id` the thread does not hold).

Not repeated: test_served_parity.py (streams, multitask on a slow model, pause shapes, copy of a
finished thread), test_served_client_writes.py (client writes during a pause, one call),
test_langgraph_server.py, tests/security/test_approval_served.py, and the in-process probes
tests/unit/test_probe_thread_turns.py and test_probe_compiled_graph.py.

Found when it was written (strict xfails, each checked to fail on its assertion with
--runxfail); fixed and ordinary tests now, except the one marked "left":

- per_call, a parallel call ran and the other paused: the next message (as Agent Chat UI sends
  it: no stand-in, since a result follows the step) is lost; the step's finished results are
  stored first under the new run's `run_id`, so LangGraph takes the run for a re-entry and
  ignores its input; the run goes on from the old step, sends the model the paused call with
  no result (HTTP 400 from a real API) and ends in error;
- a thread's first run whose pending step is replaced by a plain answer ends with no `status`
  and `answer: None` (a later turn's ends `answered`);
- a plain result written as `tools` for a call waiting for approval ends the run silently: the
  continued run goes nowhere and returns no status, answer or sentence (such a write is now
  refused in one sentence: the person decides on a waiting call, `graph.thread_writes`);
- the run's `error` after unusable replies is a multi-line dump with a troubleshooting link;
- a call cut short by `multitask_strategy="interrupt"` (it started, and finished) is
  answered "was not run ... Do not assume it happened" (the call ledger's attempt record now
  names the call, and a new turn answers a started call as cut short: it may have taken
  effect);
- a `checkpoint_id` the thread does not hold: a run with input starts an empty conversation
  and replaces the thread's head, `update_state` does the same, a continue fails with
  "EmptyInputError: Received no input for __start__" (nothing about the checkpoint), and
  `get_state` answers an empty state under the unknown id (`create_agent` served does all the
  same: LangGraph's own behaviour). Runs and updates from it are refused now
  (`graph.continuing`); (left) the read still answers an empty state.

Seen early in the probe and fixed meanwhile in the working tree (`graph.loop.turn.paused_input`),
now an ordinary test: batched, a step of an ungated and a gated call paused at the review, Agent
Chat UI's "Successfully handled tool call." for the ungated call was kept as its result.

Everything else held: re-runs from a checkpoint re-ask the model without running the tool
again; a plain answer ends the run without asking the model (as `create_agent`); a result
written as `tools` reaches the model; goto `model` runs the new message; a copy forks
on its own; every other next turn sends a valid conversation with each question once; node
names and answer tokens stream; cancel and rollback leave a usable thread; bad input gets one
sentence or a 400, never a 500, and the thread answers after it. By design (LangGraph's
`add_messages`): `{"messages": "not a list"}` is one question, in both graphs.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import BadRequestError, NotFoundError

from tests.support.langgraph_dev import (
    LANGGRAPH,
    REPO,
    LangGraphDev,
    langgraph_dev,
    repo_config,
    report_failures,
)
from tests.support.openai_server import (
    HTTPError,
    Reply,
    ScriptedOpenAIServer,
    ToolCall,
    conversation_problem,
)
from tests.support.sentences import assert_one_sentence

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not LANGGRAPH.exists(), reason=f"{LANGGRAPH} not found (langgraph-cli)"),
]

GRAPHS = '''"""Graphs served beside ours by tests/integration/test_probe_served_threads.py."""

import os

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_openai import ChatOpenAI

ALL = ["approve", "edit", "reject", "respond"]


def _model():
    return ChatOpenAI(
        base_url=os.environ["OPENAI_BASE_URL"], api_key="sk-x", model="scripted", max_retries=0
    )


def _tools():
    from tests.support.crash_tools import TOOLS

    return list(TOOLS)


def ref(runtime=None):
    return create_agent(_model(), _tools())


def ref_hitl(runtime=None):
    review = HumanInTheLoopMiddleware(interrupt_on={"publish": {"allowed_decisions": ALL}})
    return create_agent(_model(), _tools(), middleware=[review])


def per_call(runtime=None):
    from graph import build_graph

    return build_graph(approval_mode="per_call")
'''

APPROVE = {"approve": ["publish"]}  # the run setting that gates publish
TEXT = {"protocol": "text"}
STAND_IN = "Successfully handled tool call."  # Agent Chat UI's (src/lib/ensure-tool-responses.ts)
ASK = re.compile(r"^(tick|publish|both|sleepy|loop|fail|malformed)(?: (\S+))?$")
INVALID: list[str] = []  # every conversation the endpoint refused, and why


# --------------------------------------------------------------------------- the endpoint


def _text(content: Any) -> str:
    if isinstance(content, list):  # content blocks, as Agent Chat UI sends a question
        return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content or "")


def brain(body: dict[str, Any]) -> Reply | HTTPError:
    """The scripted model, stateless: any number of runs, replays and forks may ask."""
    problem = conversation_problem(body.get("messages", []))
    if problem:
        INVALID.append(problem)
        return HTTPError(
            400, f"invalid conversation: {problem}", headers={"x-should-retry": "false"}
        )
    messages = [m for m in body.get("messages", []) if m.get("role") != "system"]
    native = "tools" in body
    last = messages[-1] if messages else {}
    questions = [
        _text(m.get("content")).strip()
        for m in messages
        if m.get("role") == "user" and not _text(m.get("content")).startswith("Observation:")
    ]
    asked = ASK.match(questions[-1] if questions else "")
    kind, label = asked.groups() if asked else (None, None)
    if kind == "loop":
        return Reply(tool_calls=[ToolCall("tick", {"label": label or "x"})])
    if kind == "malformed":
        return Reply(tool_calls=[ToolCall("tick", '{"label": ')])
    if native and last.get("role") == "tool":
        results = []
        for message in reversed(messages):
            if message.get("role") != "tool":
                break
            results.append(_text(message.get("content")))
        return Reply(content="Done: " + " | ".join(reversed(results)))
    if not native and _text(last.get("content")).startswith("Observation:"):
        seen = _text(last.get("content")).removeprefix("Observation:").strip()
        return Reply(content=f"Thought: done.\nFinal Answer: Done: {seen}")
    if kind == "fail":
        return HTTPError(
            500, "the endpoint broke", type="server_error", headers={"x-should-retry": "false"}
        )
    calls = {
        "tick": [("tick", {"label": label})],
        "publish": [("publish", {"text": label})],
        "both": [("tick", {"label": label}), ("publish", {"text": label})],
        "sleepy": [("sleepy", {"label": label})],
    }.get(kind or "")
    if calls and native:
        return Reply(tool_calls=[ToolCall(name, args) for name, args in calls])
    if calls:
        name, args = calls[0]
        return Reply(
            content=f"Thought: I use {name}.\nAction: {name}\nAction Input: {json.dumps(args)}"
        )
    said = f"You said: {questions[-1] if questions else ''}"
    return Reply(content=said if native else f"Thought: easy.\nFinal Answer: {said}")


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(default=brain) as server:
        yield server


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("served-threads-files")
    (folder / "calls.txt").write_text("", encoding="utf-8")
    return {"calls": folder / "calls.txt", "release": folder / "release"}


@pytest.fixture(scope="module")
def dev(
    model_server: ScriptedOpenAIServer,
    files: dict[str, Path],
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[LangGraphDev]:
    workdir = tmp_path_factory.mktemp("served-threads")
    module = workdir / "served_threads_graphs.py"
    module.write_text(GRAPHS, encoding="utf-8")
    config = repo_config(workdir)
    (ours,) = config["graphs"].values()
    config["graphs"] = {
        "agent": ours,
        **{g: f"{module}:{g}" for g in ("per_call", "ref", "ref_hitl")},
    }
    env = {
        "OPENAI_BASE_URL": model_server.base_url,
        "OPENAI_API_KEY": "sk-served-threads",
        "REACT_AGENT_MODEL": "scripted",
        "REACT_AGENT_PROTOCOL": "native",
        "REACT_AGENT_TOOLS": "tests.support.crash_tools:TOOLS",  # an operator setting
        "REACT_AGENT_APPROVAL_MODE": "batched",
        "REACT_AGENT_MAX_RETRIES": "0",
        "REACT_AGENT_LOCAL": "off",
        "CALLS_FILE": str(files["calls"]),
        "SLEEPY_SECONDS": "10",  # a sleepy call holds until the test writes RELEASE_FILE
        "RELEASE_FILE": str(files["release"]),
        "PYTHONPATH": str(REPO),
    }
    with (
        langgraph_dev(env, config=config, workdir=workdir) as server,
        report_failures(request, server),
    ):
        yield server


# --------------------------------------------------------------------------- helpers


def ask(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def label(what: str) -> str:
    """A label no other test uses, so the calls file counts this test's executions alone."""
    return f"{what}-{uuid.uuid4().hex[:8]}"


def ran(files: dict[str, Path], name: str) -> int:
    """How often `tick:L`, `publish:L`, `sleepy-start:L` ... was recorded by the tools."""
    return Counter(files["calls"].read_text(encoding="utf-8").split())[name]


def summary(out: Any) -> dict[str, Any]:
    return {k: out.get(k) for k in ("status", "answer", "error")}


async def new_thread(client: LangGraphClient) -> str:
    return (await client.threads.create())["thread_id"]


async def messages(client: LangGraphClient, thread: str) -> list[dict[str, Any]]:
    return (await client.threads.get_state(thread))["values"].get("messages", [])


def sent_since(server: ScriptedOpenAIServer, seen: int) -> list[list[dict[str, Any]]]:
    """The conversations (system prompt aside) the model got since `seen` requests, each
    checked to be one a chat API takes."""
    found = []
    for request in server.chat_requests[seen:]:
        assert conversation_problem(request.messages) is None, request.messages
        found.append([m for m in request.messages if m["role"] != "system"])
    return found


def roles(conversation: list[dict[str, Any]]) -> list[str]:
    return [m["role"] for m in conversation]


def tool_texts(found: list[dict[str, Any]]) -> dict[str, str]:
    """Tool call id -> result text, for the stored messages or a request's."""
    return {m["tool_call_id"]: _text(m["content"]) for m in found if m.get("tool_call_id")}


def ui_stand_ins(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Agent Chat UI's `ensureToolCallsHaveResponses`: a stand-in result for every call of an
    AI message that no tool message directly follows."""
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
    """A question as Agent Chat UI sends it (content blocks, an id of its own)."""
    return {"id": str(uuid.uuid4()), "type": "human", "content": [{"type": "text", "text": text}]}


async def pauses(client: LangGraphClient, thread: str) -> list[dict[str, Any]]:
    current = await client.threads.get(thread)
    return [p for found in (current.get("interrupts") or {}).values() for p in found]


async def transcript_thread(client: LangGraphClient) -> str:
    """A thread of `agent` holding one answered exchange, written without a run."""
    thread = (await client.threads.create(graph_id="agent"))["thread_id"]
    answered = [{"type": "human", "content": "first"}, {"type": "ai", "content": "You said: first"}]
    await client.threads.update_state(thread, {"messages": answered}, as_node="finish")
    return thread


async def refused_run(client: LangGraphClient, thread: str, graph: str, **run: Any) -> str:
    """A run the server accepts and the graph fails: the SDK raises `<Type>: <message>`."""
    with pytest.raises(Exception) as failed:  # the SDK raises a failed run as a bare Exception
        out = await client.runs.wait(thread, graph, **run)
        if isinstance(out, dict) and "__error__" in out:
            raise Exception(str(out["__error__"].get("message")))
    return str(failed.value).split(": ", 1)[-1]


async def sleepy_started(files: dict[str, Path], name: str) -> None:
    deadline = time.monotonic() + 15
    while not ran(files, f"sleepy-start:{name}"):
        assert time.monotonic() < deadline, "the sleepy call never started"
        await asyncio.sleep(0.05)


# =========================================================================== 1. time travel


async def test_a_rerun_from_an_earlier_checkpoint_asks_the_model_again_not_the_tool(
    client: LangGraphClient, model_server: ScriptedOpenAIServer, files: dict[str, Path]
) -> None:
    """Studio's "re-run from here" at the model step after the tool (`checkpoint=` as the
    history gives it): the model is asked once more, the tool does not run again, the fork's
    head holds one answer, and the original branch is still in the history."""
    name = label("rerun")
    thread = await new_thread(client)
    await client.runs.wait(thread, "agent", input=ask(f"tick {name}"))
    history = await client.threads.get_history(thread, limit=100)
    assert [h["next"] for h in reversed(history)] == [
        ["__start__"],
        ["think"],
        ["act"],
        ["think"],
        ["finish"],
        [],
    ]
    after_tool = history[2]  # newest first: [], finish, think (after act), ...
    assert after_tool["next"] == ["think"]
    seen = len(model_server.chat_requests)
    out = await client.runs.wait(thread, "agent", input=None, checkpoint=after_tool["checkpoint"])
    assert summary(out) == {"status": "answered", "answer": f"Done: ticked {name}", "error": None}
    [conversation] = sent_since(model_server, seen)
    assert roles(conversation) == ["user", "assistant", "tool"]
    assert ran(files, f"tick:{name}") == 1
    assert [m["type"] for m in await messages(client, thread)] == ["human", "ai", "tool", "ai"]
    after = {h["checkpoint"]["checkpoint_id"] for h in await client.threads.get_history(thread)}
    assert {h["checkpoint"]["checkpoint_id"] for h in history} <= after


@pytest.mark.parametrize("graph", ["agent", "ref"])
async def test_a_pending_step_replaced_by_a_plain_answer_ends_the_run(
    client: LangGraphClient, model_server: ScriptedOpenAIServer, files: dict[str, Path], graph: str
) -> None:
    """Paused before the tools (`interrupt_before=["tools"]`, create_agent's name); the step
    replaced under its own id by a plain answer as `model`, then `input=None`: the run ends
    on that answer, the model is not asked again, nothing runs, the thread is idle."""
    name = label("plain")
    thread = await new_thread(client)
    await client.runs.wait(thread, graph, input=ask(f"tick {name}"), interrupt_before=["tools"])
    step = (await messages(client, thread))[-1]
    plain = {"type": "ai", "content": "I answer this myself.", "id": step["id"]}
    await client.threads.update_state(thread, {"messages": [plain]}, as_node="model")
    seen = len(model_server.chat_requests)
    await client.runs.wait(thread, graph, input=None)
    assert len(model_server.chat_requests) == seen
    found = await messages(client, thread)
    assert [(m["type"], m["content"]) for m in found] == [
        ("human", f"tick {name}"),
        ("ai", "I answer this myself."),
    ]
    assert ran(files, f"tick:{name}") == 0
    assert (await client.threads.get(thread))["status"] == "idle"


async def test_a_plain_answer_written_during_an_approval_pause_is_the_runs_answer(
    client: LangGraphClient, model_server: ScriptedOpenAIServer, files: dict[str, Path]
) -> None:
    """Batched approval pause; the step replaced by a plain answer as `think` (Studio's
    editor), then continued: the output must say what a caller reads, `answered` and the
    answer, as a later turn's does."""
    name = label("plain")
    thread = await new_thread(client)
    await client.runs.wait(thread, "agent", input=ask(f"publish {name}"), context=APPROVE)
    step = (await messages(client, thread))[-1]
    plain = {"type": "ai", "content": "No need to publish.", "id": step["id"]}
    await client.threads.update_state(thread, {"messages": [plain]}, as_node="think")
    seen = len(model_server.chat_requests)
    out = await client.runs.wait(thread, "agent", input=None, context=APPROVE)
    assert len(model_server.chat_requests) == seen and ran(files, f"publish:{name}") == 0
    assert (await client.threads.get(thread))["status"] == "idle"
    assert (out.get("status"), out.get("answer")) == ("answered", "No need to publish.")


@pytest.mark.parametrize("graph", ["agent", "ref"])
async def test_a_result_written_as_tools_skips_the_call(
    client: LangGraphClient, model_server: ScriptedOpenAIServer, files: dict[str, Path], graph: str
) -> None:
    """LangGraph's "skip the tool": paused before the tools, the call's result written as
    `tools`, then `input=None`: the model reads the written result, the tool never runs."""
    name = label("skip")
    thread = await new_thread(client)
    await client.runs.wait(thread, graph, input=ask(f"tick {name}"), interrupt_before=["tools"])
    [call] = (await messages(client, thread))[-1]["tool_calls"]
    written = {"type": "tool", "tool_call_id": call["id"], "name": "tick", "content": "skipped"}
    await client.threads.update_state(thread, {"messages": [written]}, as_node="tools")
    seen = len(model_server.chat_requests)
    await client.runs.wait(thread, graph, input=None)
    [conversation] = sent_since(model_server, seen)
    assert tool_texts(conversation) == {call["id"]: "skipped"}
    found = await messages(client, thread)
    assert found[-1]["content"] == "Done: skipped"
    assert ran(files, f"tick:{name}") == 0


async def test_a_result_written_for_a_call_waiting_for_approval_is_answered(
    client: LangGraphClient, model_server: ScriptedOpenAIServer, files: dict[str, Path]
) -> None:
    """The same skip on a call paused for approval: either the write is refused in one
    sentence, or the run goes on (the call counted as not run, as the docs say of any answer
    but a decision) and ends with a status a caller reads. Never a run that stops unsaid."""
    name = label("waiting")
    thread = await new_thread(client)
    await client.runs.wait(thread, "agent", input=ask(f"publish {name}"), context=APPROVE)
    [call] = (await messages(client, thread))[-1]["tool_calls"]
    written = {"type": "tool", "tool_call_id": call["id"], "name": "publish", "content": "skipped"}
    try:
        await client.threads.update_state(thread, {"messages": [written]}, as_node="tools")
    except BadRequestError as refused:
        assert_one_sentence(str(refused.body.get("detail")))  # type: ignore[union-attr]
        return
    seen = len(model_server.chat_requests)
    out = await client.runs.wait(thread, "agent", input=None, context=APPROVE)
    assert ran(files, f"publish:{name}") == 0
    sent_since(model_server, seen)
    assert out.get("status") in ("answered", "error") and (out.get("answer") or out.get("error"))


@pytest.mark.parametrize("graph", ["agent", "ref"])
async def test_command_goto_model_with_a_new_message(
    client: LangGraphClient, model_server: ScriptedOpenAIServer, graph: str
) -> None:
    """`command={"goto": "model", "update": {messages}}` on an answered thread: the model
    reads the new message once and answers it."""
    thread = await new_thread(client)
    await client.runs.wait(thread, graph, input=ask("first"))
    seen = len(model_server.chat_requests)
    update = {"messages": [{"role": "user", "content": "second"}]}
    await client.runs.wait(thread, graph, command={"goto": "model", "update": update})
    [conversation] = sent_since(model_server, seen)
    assert [_text(m["content"]) for m in conversation] == ["first", "You said: first", "second"]
    found = await messages(client, thread)
    assert [m["content"] for m in found] == [
        "first",
        "You said: first",
        "second",
        "You said: second",
    ]


async def test_a_copy_has_the_history_and_forks_on_its_own(
    client: LangGraphClient, files: dict[str, Path]
) -> None:
    """`threads.copy`: the copy's history has the original's checkpoints; a re-run of the copy
    from the model step after the tool leaves the original as it was."""
    name = label("copy")
    thread = await new_thread(client)
    await client.runs.wait(thread, "agent", input=ask(f"tick {name}"))
    original = await messages(client, thread)
    copy = (await client.threads.copy(thread))["thread_id"]
    mine = await client.threads.get_history(copy, limit=100)
    theirs = await client.threads.get_history(thread, limit=100)
    ids = [h["checkpoint"]["checkpoint_id"] for h in mine]
    assert ids == [h["checkpoint"]["checkpoint_id"] for h in theirs]
    out = await client.runs.wait(copy, "agent", input=None, checkpoint_id=ids[2])
    assert out["status"] == "answered" and ran(files, f"tick:{name}") == 1
    assert await messages(client, thread) == original
    assert len(await client.threads.get_history(copy, limit=100)) > len(mine)
    assert len(await client.threads.get_history(thread, limit=100)) == len(theirs)


# =========================================================================== 2. the next turn


async def test_next_turn_after_a_model_error_text_protocol(
    client: LangGraphClient, model_server: ScriptedOpenAIServer
) -> None:
    """HTTP 500 (not retried): the run ends `error` with one sentence; the next question is
    answered, and the model gets both questions once and not the error."""
    thread = await new_thread(client)
    out = await client.runs.wait(thread, "agent", input=ask("fail"), context=TEXT)
    assert out["status"] == "error"
    assert_one_sentence(out["error"], "HTTP 500")
    seen = len(model_server.chat_requests)
    out = await client.runs.wait(thread, "agent", input=ask("hello"), context=TEXT)
    assert summary(out) == {"status": "answered", "answer": "You said: hello", "error": None}
    [conversation] = sent_since(model_server, seen)
    assert [(m["role"], m["content"]) for m in conversation] == [
        ("user", "fail"),
        ("user", "hello"),
    ]


async def test_next_turn_after_unusable_replies(
    client: LangGraphClient, model_server: ScriptedOpenAIServer
) -> None:
    """Three replies whose call cannot be read end the run in error; every broken call is
    answered, so the next question goes to the model as a valid conversation."""
    thread = await new_thread(client)
    out = await client.runs.wait(thread, "agent", input=ask("malformed"))
    assert out["status"] == "error"
    seen = len(model_server.chat_requests)
    out = await client.runs.wait(thread, "agent", input=ask("hello"))
    assert summary(out) == {"status": "answered", "answer": "You said: hello", "error": None}
    [conversation] = sent_since(model_server, seen)
    assert roles(conversation) == ["user", *["assistant", "tool"] * 3, "user"]


async def test_the_error_after_unusable_replies_is_one_sentence(client: LangGraphClient) -> None:
    thread = await new_thread(client)
    out = await client.runs.wait(thread, "agent", input=ask("malformed"))
    assert out["status"] == "error"
    assert_one_sentence(out["error"], banned=("For troubleshooting",))


async def test_next_turn_after_the_step_limit(
    client: LangGraphClient, model_server: ScriptedOpenAIServer, files: dict[str, Path]
) -> None:
    name = label("limit")
    thread = await new_thread(client)
    context = {"max_steps": 1}
    out = await client.runs.wait(thread, "agent", input=ask(f"loop {name}"), context=context)
    assert out["status"] == "max_steps" and "max_steps=1" in out["answer"]
    seen = len(model_server.chat_requests)
    out = await client.runs.wait(thread, "agent", input=ask("hello"), context=context)
    assert summary(out) == {"status": "answered", "answer": "You said: hello", "error": None}
    [conversation] = sent_since(model_server, seen)
    assert roles(conversation) == ["user", "assistant", "tool", "assistant", "user"]
    assert ran(files, f"tick:{name}") == 1


async def test_next_turn_after_a_per_call_rejection_beside_a_call_that_ran(
    client: LangGraphClient, model_server: ScriptedOpenAIServer, files: dict[str, Path]
) -> None:
    name = label("reject")
    thread = await new_thread(client)
    await client.runs.wait(thread, "per_call", input=ask(f"both {name}"), context=APPROVE)
    [pause] = await pauses(client, thread)
    resume = {pause["id"]: {"type": "reject", "message": "Not now."}}
    out = await client.runs.wait(thread, "per_call", command={"resume": resume}, context=APPROVE)
    assert out["status"] == "answered" and out["answer"].endswith("Not now."), out
    seen = len(model_server.chat_requests)
    out = await client.runs.wait(thread, "per_call", input=ask("hello"), context=APPROVE)
    assert summary(out) == {"status": "answered", "answer": "You said: hello", "error": None}
    [conversation] = sent_since(model_server, seen)
    assert roles(conversation) == ["user", "assistant", "tool", "tool", "assistant", "user"]
    results = sorted(tool_texts(conversation).values())
    assert results[0].endswith("Not now.") and results[1] == f"ticked {name}"
    assert (ran(files, f"tick:{name}"), ran(files, f"publish:{name}")) == (1, 0)


async def test_a_new_message_during_a_per_call_pause_after_a_parallel_call_ran(
    client: LangGraphClient, model_server: ScriptedOpenAIServer, files: dict[str, Path]
) -> None:
    """`tick` ran, `publish` waits (per_call); the user types. Agent Chat UI sends no stand-in
    (a tool message follows the step) and the question. The question is answered, tick's
    result kept, publish answered as not run and never run."""
    name = label("parallel")
    thread = await new_thread(client)
    await client.runs.wait(thread, "per_call", input=ask(f"both {name}"), context=APPROVE)
    held = await messages(client, thread)
    step = held[1]
    seen = len(model_server.chat_requests)
    sent = {"messages": [*ui_stand_ins(held), question("never mind")]}
    out = await client.runs.wait(thread, "per_call", input=sent, context=APPROVE)
    assert (ran(files, f"tick:{name}"), ran(files, f"publish:{name}")) == (1, 0)
    stored = [_text(m["content"]) for m in await messages(client, thread)]
    assert "never mind" in stored, stored
    assert summary(out) == {"status": "answered", "answer": "You said: never mind", "error": None}
    [conversation] = sent_since(model_server, seen)
    results = tool_texts(conversation)
    assert results[step["tool_calls"][0]["id"]] == f"ticked {name}"
    assert "was not run" in results[step["tool_calls"][1]["id"]]


async def test_a_new_message_during_a_batched_pause_of_a_mixed_step(
    client: LangGraphClient, model_server: ScriptedOpenAIServer, files: dict[str, Path]
) -> None:
    """One step: `tick` (ungated) and `publish` (gated); the review pauses the step, nothing
    runs. The user types; Agent Chat UI sends a stand-in for both calls and the question.
    Neither call ran, so the model must not read "Successfully handled tool call." for either."""
    name = label("mixed")
    thread = await new_thread(client)
    await client.runs.wait(thread, "agent", input=ask(f"both {name}"), context=APPROVE)
    held = await messages(client, thread)
    seen = len(model_server.chat_requests)
    sent = {"messages": [*ui_stand_ins(held), question("never mind")]}
    out = await client.runs.wait(thread, "agent", input=sent, context=APPROVE)
    assert summary(out) == {"status": "answered", "answer": "You said: never mind", "error": None}
    assert (ran(files, f"tick:{name}"), ran(files, f"publish:{name}")) == (0, 0)
    [conversation] = sent_since(model_server, seen)
    results = tool_texts(conversation)
    assert len(results) == 2
    assert all("was not run" in text for text in results.values()), results


# =========================================================================== 3. streams


@pytest.mark.parametrize(
    ("graph", "context", "text"),
    [("agent", None, "both"), ("ref", None, "both"), ("agent", TEXT, "tick")],
    ids=["ours", "create_agent", "ours-text"],
)
async def test_stream_four_modes_with_subgraphs(
    client: LangGraphClient, graph: str, context: Any, text: str
) -> None:
    """`messages-tuple`, `values`, `updates`, `custom` with `stream_subgraphs=True`: the model's
    messages come from the node playing `model` (ours: think), the results from the one
    playing `tools` (ours: act); the answer's tokens (a whole message under the text protocol)
    make the answer; ours ends with the `final` custom event."""
    name = label("stream")
    thread = await new_thread(client)
    modes = ["messages-tuple", "values", "updates", "custom"]
    parts = [
        (part.event, part.data)
        async for part in client.runs.stream(
            thread,
            graph,
            input=ask(f"{text} {name}"),
            context=context,
            stream_mode=modes,
            stream_subgraphs=True,
        )
    ]
    events = {e for e, _ in parts}
    assert events == {"metadata", "messages", "values", "updates"} | (
        {"custom"} if graph == "agent" else set()
    )
    model, tools = ("think", "act") if graph == "agent" else ("model", "tools")
    by_node: dict[str, set[str]] = {}
    answer: dict[str, str] = {}
    for event, data in parts:
        if event != "messages":
            continue
        chunk, meta = data
        by_node.setdefault(meta["langgraph_node"], set()).add(chunk["type"])
        if meta["langgraph_node"] == model and chunk["type"] in ("AIMessageChunk", "ai"):
            answer[chunk["id"]] = answer.get(chunk["id"], "") + _text(chunk["content"])
    assert set(by_node) == {model, tools}
    assert by_node[tools] == {"tool"}
    final = [d for e, d in parts if e == "values"][-1]
    assert list(answer.values())[-1] == final["messages"][-1]["content"]
    assert final["messages"][-1]["content"].startswith("Done: ticked")
    updated = {node for e, d in parts if e == "updates" for node in d}
    assert {model, tools} <= updated
    if graph == "agent":
        custom = [d for e, d in parts if e == "custom"]
        assert custom[-1]["event"] == "final" and custom[-1]["status"] == "answered"


# =========================================================================== 4. cancel, multitask


async def test_cancel_while_a_tool_runs_then_the_next_question(
    client: LangGraphClient, model_server: ScriptedOpenAIServer, files: dict[str, Path]
) -> None:
    """`runs.cancel(action="interrupt")` while `sleepy` runs: the run and the thread are
    interrupted before act; the next question is answered with the cut call answered, and the
    call is not started again."""
    files["release"].unlink(missing_ok=True)
    name = label("cancel")
    thread = await new_thread(client)
    run = await client.runs.create(thread, "agent", input=ask(f"sleepy {name}"))
    await sleepy_started(files, name)
    await client.runs.cancel(thread, run["run_id"], wait=True, action="interrupt")
    files["release"].write_text("go", encoding="utf-8")
    assert (await client.runs.get(thread, run["run_id"]))["status"] == "interrupted"
    assert (await client.threads.get(thread))["status"] == "interrupted"
    assert (await client.threads.get_state(thread))["next"] == ["act"]
    seen = len(model_server.chat_requests)
    out = await client.runs.wait(thread, "agent", input=ask("hello"))
    assert summary(out) == {"status": "answered", "answer": "You said: hello", "error": None}
    [conversation] = sent_since(model_server, seen)
    assert roles(conversation) == ["user", "assistant", "tool", "user"]
    assert ran(files, f"sleepy-start:{name}") == 1


async def test_multitask_rollback_while_a_tool_runs(
    client: LangGraphClient, model_server: ScriptedOpenAIServer, files: dict[str, Path]
) -> None:
    """A second run with `multitask_strategy="rollback"` on a thread busy in a tool: the first
    run is deleted with everything it wrote; the second answers on a clean thread."""
    files["release"].unlink(missing_ok=True)
    name = label("rollback")
    thread = await new_thread(client)
    first = await client.runs.create(thread, "agent", input=ask(f"sleepy {name}"))
    await sleepy_started(files, name)
    second = await client.runs.create(
        thread, "agent", input=ask("second"), multitask_strategy="rollback"
    )
    files["release"].write_text("go", encoding="utf-8")
    out = await client.runs.join(thread, second["run_id"])
    assert summary(out) == {"status": "answered", "answer": "You said: second", "error": None}
    with pytest.raises(NotFoundError):
        await client.runs.get(thread, first["run_id"])
    assert [m["content"] for m in await messages(client, thread)] == ["second", "You said: second"]
    assert (await client.threads.get(thread))["status"] == "idle"


async def test_multitask_interrupt_while_a_tool_runs(
    client: LangGraphClient, model_server: ScriptedOpenAIServer, files: dict[str, Path]
) -> None:
    """`multitask_strategy="interrupt"`: the first run is interrupted mid-call, the second
    answers and the thread is idle. The cut call had started (its start is recorded), so the
    model must not be told it was not run."""
    files["release"].unlink(missing_ok=True)
    name = label("interrupt")
    thread = await new_thread(client)
    first = await client.runs.create(thread, "agent", input=ask(f"sleepy {name}"))
    await sleepy_started(files, name)
    seen = len(model_server.chat_requests)
    second = await client.runs.create(
        thread, "agent", input=ask("second"), multitask_strategy="interrupt"
    )
    files["release"].write_text("go", encoding="utf-8")
    out = await client.runs.join(thread, second["run_id"])
    assert summary(out) == {"status": "answered", "answer": "You said: second", "error": None}
    assert (await client.runs.get(thread, first["run_id"]))["status"] == "interrupted"
    assert (await client.threads.get(thread))["status"] == "idle"
    assert ran(files, f"sleepy-start:{name}") == 1
    [conversation] = sent_since(model_server, seen)
    [result] = tool_texts(conversation).values()
    assert "was not run" not in result and "Do not assume it happened" not in result, result


# =========================================================================== 5. bad input


async def test_bad_input_gets_one_sentence_and_the_thread_answers_after(
    client: LangGraphClient, model_server: ScriptedOpenAIServer
) -> None:
    """Messages that cannot be messages, an unknown `as_node` and a resume with nothing paused:
    each one sentence (a failed run, or a 400), never a 500; nothing stored; the thread then
    answers with its conversation intact."""
    thread = await transcript_thread(client)
    before = await client.threads.get_history(thread, limit=100)
    said = await refused_run(client, thread, "agent", input={"messages": 42})
    assert_one_sentence(said, "'messages'")
    said = await refused_run(
        client, thread, "agent", input={"messages": [{"role": "bogus", "content": "x"}]}
    )
    assert_one_sentence(said, "bogus")
    with pytest.raises(BadRequestError) as refused:
        await client.threads.update_state(thread, ask("x"), as_node="nope")
    assert refused.value.response.status_code == 400
    assert "nope" in str(refused.value.body)  # type: ignore[attr-defined]
    said = await refused_run(
        client, thread, "agent", command={"resume": {"decisions": [{"type": "approve"}]}}
    )
    assert_one_sentence(said, "Nothing to resume")
    after = await client.threads.get_history(thread, limit=100)
    assert [h["checkpoint"] for h in after] == [h["checkpoint"] for h in before]
    out = await client.runs.wait(thread, "agent", input=ask("still there?"))
    assert out["answer"] == "You said: still there?"
    assert [m["content"] for m in out["messages"]][:2] == ["first", "You said: first"]


@pytest.mark.parametrize("graph", ["agent", "ref"])
async def test_by_design_messages_as_a_string_are_one_question(
    client: LangGraphClient, graph: str
) -> None:
    """`{"messages": "not a list"}`: LangGraph's `add_messages` takes a bare string as one
    human message, in both graphs (a question, not an error)."""
    thread = await new_thread(client)
    await client.runs.wait(thread, graph, input={"messages": "not a list"})
    found = await messages(client, thread)
    assert [(m["type"], m["content"]) for m in found] == [
        ("human", "not a list"),
        ("ai", "You said: not a list"),
    ]


READ_UNKNOWN = pytest.mark.xfail(
    strict=True,
    reason="reading a checkpoint_id the thread does not hold gives an empty state (200), as "
    "LangGraph and create_agent do: only runs and updates are refused (graph/continuing.py)",
)


@pytest.mark.parametrize(
    "how", ["run", "continue", "update", pytest.param("read", marks=READ_UNKNOWN)]
)
async def test_a_checkpoint_id_the_thread_does_not_hold_is_refused(
    client: LangGraphClient, how: str
) -> None:
    """A stale or mistyped checkpoint id: one sentence naming the checkpoint (a failed run or
    a 4xx), and the thread as it was: its conversation, its head, usable."""
    thread = await transcript_thread(client)
    before = await client.threads.get_history(thread, limit=100)
    unknown = str(uuid.uuid4())
    said = None
    try:
        if how == "run":
            said = await refused_run(client, thread, "agent", input=ask("x"), checkpoint_id=unknown)
        elif how == "continue":
            said = await refused_run(client, thread, "agent", input=None, checkpoint_id=unknown)
        elif how == "update":
            await client.threads.update_state(thread, ask("x"), checkpoint_id=unknown)
        else:
            await client.threads.get_state(thread, checkpoint_id=unknown)
    except BadRequestError as refused:
        said = str(refused.body.get("detail"))  # type: ignore[union-attr]
    except NotFoundError:
        said = "checkpoint not found."
    except pytest.fail.Exception:  # refused_run: the run was not refused
        said = None
    after = await client.threads.get_history(thread, limit=100)
    assert after[0]["values"]["messages"] == before[0]["values"]["messages"]
    assert said is not None and "checkpoint" in said.lower(), said
