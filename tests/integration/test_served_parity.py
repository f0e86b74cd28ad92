"""A differential probe of the SERVED graph: ours and LangChain's `create_agent`, side by side in
one `langgraph dev`, driven through `langgraph_sdk` as Agent Chat UI and Studio drive them.

The server serves five graphs on the same scripted OpenAI-compatible endpoint and the same
calculator: `ours` (the repository's `served_graph`, native protocol, approvals per run through
the `approve` run setting), `ours_per_call` (`build_graph(approval_mode="per_call")`), and the
references `ref` (`create_agent`), `ref_hitl` (+ `HumanInTheLoopMiddleware`, batched) and
`ref_per_call` (+ the middleware, `interrupt_mode="per_call"`), all allowing the four decisions.

The endpoint answers from the conversation, not from a queue, so the two graphs can run in any
order (or at once) and get the same replies: `calc[EXPR]` in the last user message asks for one
calculator call per bracket, `boom` is refused with HTTP 400, `slow[SECONDS]` answers slowly (a
run to cancel or to overlap), anything else is echoed; after tool results it answers `Done: `
and the results.

What is compared is what a client reads: the message types, contents, tool calls and results,
the interrupt's shape, the thread's status, the stream's events; ids, timestamps, run ids and
the wording each agent has of its own (an approval's description) are left out. Node names are
mapped (`think` plays `model`, `act` plays `tools`; `review`, `observe` and `finish` are ours
alone, tests/unit/test_parity_probe.py). A real difference is an `xfail(strict=True)` test; a
difference by design is `test_by_design_*`, its docstring saying why.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import ConflictError, InternalServerError, NotFoundError

from tests.support.langgraph_dev import (
    LANGGRAPH,
    LangGraphDev,
    langgraph_dev,
    repo_config,
    report_failures,
)
from tests.support.openai_server import HTTPError, Reply, ScriptedOpenAIServer, ToolCall

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not LANGGRAPH.exists(), reason=f"{LANGGRAPH} not found (langgraph-cli)"),
]

NODE = {"think": "model", "act": "tools"}  # our node -> the create_agent node it plays
OURS_ONLY = {"review", "observe", "finish"}
APPROVE = {"approve": ["calculator"]}  # our run setting that gates the calculator
DECISIONS = ["approve", "edit", "reject", "respond"]

GRAPHS = '''"""Graphs served beside ours by tests/integration/test_served_parity.py."""

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
    from tools.calculator import calculator

    return [calculator]


def ref(runtime=None):
    return create_agent(_model(), _tools())


def ref_hitl(runtime=None):
    review = HumanInTheLoopMiddleware(interrupt_on={"calculator": {"allowed_decisions": ALL}})
    return create_agent(_model(), _tools(), middleware=[review])


def ref_per_call(runtime=None):
    review = HumanInTheLoopMiddleware(
        interrupt_on={"calculator": {"allowed_decisions": ALL}}, interrupt_mode="per_call"
    )
    return create_agent(_model(), _tools(), middleware=[review])


def ours_per_call(runtime=None):
    from graph import build_graph

    return build_graph(approval_mode="per_call")
'''


# --------------------------------------------------------------------------- the endpoint


def brain(body: dict[str, Any]) -> Reply | HTTPError:
    """The scripted model: a reply computed from the conversation (see the module docstring)."""
    messages = [m for m in body.get("messages", []) if m.get("role") != "system"]
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        results = []
        for message in reversed(messages):
            if message.get("role") != "tool":
                break
            results.append(str(message.get("content")))
        return Reply(content="Done: " + " | ".join(reversed(results)))
    text = last.get("content")
    text = text if isinstance(text, str) else str(text)
    expressions = re.findall(r"calc\[([^\]]+)\]", text)
    if expressions:
        return Reply(tool_calls=[ToolCall("calculator", {"expression": e}) for e in expressions])
    if "boom" in text:
        return HTTPError(400, "the endpoint refused this request", code="refused")
    slow = re.search(r"slow\[(\d+(?:\.\d+)?)\]", text)
    if slow:
        return Reply(content="A slow answer.", delay=float(slow.group(1)))
    return Reply(content=f"You said: {text}")


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(default=brain) as server:
        yield server


@pytest.fixture(scope="module")
def dev(
    model_server: ScriptedOpenAIServer,
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[LangGraphDev]:
    workdir = tmp_path_factory.mktemp("served-parity")
    module = workdir / "parity_graphs.py"
    module.write_text(GRAPHS, encoding="utf-8")
    config = repo_config(workdir)
    (ours,) = config["graphs"].values()
    config["graphs"] = {
        "ours": ours,
        **{g: f"{module}:{g}" for g in ("ours_per_call", "ref", "ref_hitl", "ref_per_call")},
    }
    env = {
        "OPENAI_BASE_URL": model_server.base_url,
        "OPENAI_API_KEY": "sk-x",
        "REACT_AGENT_MODEL": "scripted",
        "REACT_AGENT_PROTOCOL": "native",
        "REACT_AGENT_TOOLS": "calculator",
        "REACT_AGENT_LOCAL": "off",
    }
    with (
        langgraph_dev(env, config=config, workdir=workdir) as server,
        report_failures(request, server),
    ):
        yield server


# --------------------------------------------------------------------------- what a client sees


def ask(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


class Ids:
    """Tool call ids replaced by their order of appearance (each agent's ids are its own)."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    def __call__(self, value: str | None) -> str | None:
        if not value:
            return value
        return self.seen.setdefault(value, f"call{len(self.seen)}")


def view(messages: list[dict[str, Any]], ids: Ids | None = None) -> list[dict[str, Any]]:
    """What a chat client renders of each message: type, content, tool calls, a result."""
    ids = ids or Ids()
    out = []
    for m in messages:
        content = m["content"]
        if m.get("tool_calls"):
            calls = [(c["name"], c["args"], ids(c["id"])) for c in m["tool_calls"]]
        if isinstance(content, str):  # a rejection names the call by its id
            for raw, label in ids.seen.items():
                content = content.replace(raw, label)
        row: dict[str, Any] = {"type": m["type"], "content": content}
        if m.get("tool_calls"):
            row["tool_calls"] = calls
        if m["type"] == "tool":
            row.update(name=m.get("name"), status=m.get("status"), call=ids(m["tool_call_id"]))
        out.append(row)
    return out


def node(name: str) -> str:
    return NODE.get(name, name)


class Pair:
    """One scenario on both graphs: `theirs` is the create_agent graph, `ours` ours."""

    def __init__(self, client: LangGraphClient, theirs: str, ours: str, ctx: Any = None) -> None:
        self.client = client
        self.graphs = {"theirs": theirs, "ours": ours}
        self.context = {"theirs": None, "ours": ctx}
        self.threads: dict[str, str] = {}

    async def start(self) -> Pair:
        for side in self.graphs:
            self.threads[side] = (await self.client.threads.create())["thread_id"]
        return self

    async def both(self, make: Any) -> dict[str, Any]:
        """`make(side)` for both sides at once (each on its own thread)."""
        done = await asyncio.gather(*(make(side) for side in self.graphs))
        return dict(zip(self.graphs, done, strict=True))

    async def wait(self, **kw: Any) -> dict[str, Any]:
        async def one(side: str) -> Any:
            return await self.client.runs.wait(
                self.threads[side], self.graphs[side], context=self.context[side], **kw
            )

        return await self.both(one)

    async def stream(self, **kw: Any) -> dict[str, list[tuple[str, Any]]]:
        async def one(side: str) -> list[tuple[str, Any]]:
            return [
                (part.event, part.data)
                async for part in self.client.runs.stream(
                    self.threads[side], self.graphs[side], context=self.context[side], **kw
                )
            ]

        return await self.both(one)

    async def state(self) -> dict[str, Any]:
        return await self.both(lambda side: self.client.threads.get_state(self.threads[side]))

    async def thread(self) -> dict[str, Any]:
        return await self.both(lambda side: self.client.threads.get(self.threads[side]))

    async def messages(self) -> dict[str, list[dict[str, Any]]]:
        states = await self.state()
        return {side: view(s["values"]["messages"]) for side, s in states.items()}


@pytest.fixture
async def pair(client: LangGraphClient) -> Pair:
    return await Pair(client, "ref", "ours").start()


@pytest.fixture
async def hitl(client: LangGraphClient) -> Pair:
    return await Pair(client, "ref_hitl", "ours", APPROVE).start()


@pytest.fixture
async def per_call(client: LangGraphClient) -> Pair:
    return await Pair(client, "ref_per_call", "ours_per_call", APPROVE).start()


def interrupt_shape(value: Any) -> Any:
    """An interrupt's value without the wording each agent has of its own (`description`)."""
    if isinstance(value, dict):
        return {k: interrupt_shape(v) for k, v in value.items() if k != "description"}
    if isinstance(value, list):
        return [interrupt_shape(v) for v in value]
    return value


def pauses(thread: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for found in (thread.get("interrupts") or {}).values() for p in found]


# --------------------------------------------------------------------------- streams


async def test_values_stream_shows_the_same_conversations(pair: Pair) -> None:
    seen = await pair.stream(input=ask("calc[17 * 23]"), stream_mode="values")
    shown = {}
    for side, parts in seen.items():
        assert [e for e, _ in parts if e != "values"] == ["metadata"], side
        states = [view(data["messages"]) for e, data in parts if e == "values"]
        shown[side] = [s for i, s in enumerate(states) if i == 0 or s != states[i - 1]]
    assert shown["ours"] == shown["theirs"]
    assert [m["type"] for m in shown["ours"][-1]] == ["human", "ai", "tool", "ai"]


async def test_updates_stream_has_the_same_nodes_and_writes(pair: Pair) -> None:
    seen = await pair.stream(input=ask("calc[17 * 23]"), stream_mode="updates")
    ids = {side: Ids() for side in seen}
    shown = {
        side: [
            (node(name), view((update or {}).get("messages") or [], ids[side]))
            for e, data in parts
            if e == "updates"
            for name, update in data.items()
            if name not in OURS_ONLY
        ]
        for side, parts in seen.items()
    }
    assert shown["ours"] == shown["theirs"]
    assert [n for n, _ in shown["ours"]] == ["model", "tools", "model"]


def merged(parts: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    """The `messages-tuple` stream as a client assembles it: one entry per message id."""
    out: dict[str, dict[str, Any]] = {}
    for event, data in parts:
        if event != "messages":
            continue
        chunk, meta = data
        entry = out.setdefault(
            chunk["id"],
            {
                "node": node(meta["langgraph_node"]),
                "type": chunk["type"],
                "content": "",
                "calls": [],
            },
        )
        entry["content"] += chunk["content"] if isinstance(chunk["content"], str) else ""
        for piece in chunk.get("tool_call_chunks") or []:
            if piece.get("name"):
                entry["calls"].append([piece["name"], ""])
            if piece.get("args") and entry["calls"]:
                entry["calls"][-1][1] += piece["args"]
        if chunk["type"] == "tool":
            entry.update(name=chunk["name"], status=chunk["status"])
    return list(out.values())


async def test_messages_tuple_stream_gives_the_same_tokens_and_results(pair: Pair) -> None:
    seen = await pair.stream(input=ask("calc[17 * 23]"), stream_mode="messages-tuple")
    shown = {side: merged(parts) for side, parts in seen.items()}
    assert shown["ours"] == shown["theirs"]
    assert [(m["node"], m["type"]) for m in shown["ours"]] == [
        ("model", "AIMessageChunk"),
        ("tools", "tool"),
        ("model", "AIMessageChunk"),
    ]


async def test_messages_tuple_metadata_has_what_create_agent_gives(pair: Pair) -> None:
    seen = await pair.stream(input=ask("hello"), stream_mode="messages-tuple")
    keys = {
        side: {k for e, d in parts if e == "messages" for k in d[1]} for side, parts in seen.items()
    }
    assert keys["theirs"] - keys["ours"] == set()


async def test_several_modes_at_once_give_the_same_events(pair: Pair) -> None:
    modes = ["values", "updates", "messages-tuple"]
    seen = await pair.stream(input=ask("calc[2 + 2]"), stream_mode=modes)
    events = {side: {e for e, _ in parts} for side, parts in seen.items()}
    assert events["ours"] == events["theirs"] == {"metadata", "values", "updates", "messages"}
    finals = {
        side: view([d for e, d in parts if e == "values"][-1]["messages"])
        for side, parts in seen.items()
    }
    assert finals["ours"] == finals["theirs"]


def event_view(parts: list[tuple[str, Any]]) -> list[tuple[str, str]]:
    """The `events` stream's model and tool events, as LangChain's `astream_events` names them."""
    out = []
    for event, data in parts:
        if event != "events":
            continue
        kind = data["event"]
        if kind.startswith(("on_chat_model", "on_tool")) and kind != "on_chat_model_stream":
            out.append((kind, data["name"]))
    return out


async def test_events_stream_has_the_same_model_and_tool_events(pair: Pair) -> None:
    seen = await pair.stream(input=ask("calc[17 * 23]"), stream_mode="events")
    shown = {side: event_view(parts) for side, parts in seen.items()}
    assert shown["ours"] == shown["theirs"]
    assert ("on_tool_end", "calculator") in shown["ours"]


async def test_subgraph_streaming_shows_the_same_namespaces(pair: Pair) -> None:
    seen = await pair.stream(
        input=ask("calc[1 + 1] calc[2 + 2]"), stream_mode="updates", stream_subgraphs=True
    )
    events = {side: sorted({e for e, _ in parts}) for side, parts in seen.items()}
    assert events["ours"] == events["theirs"]


async def test_by_design_our_custom_stream_carries_the_step_events(pair: Pair) -> None:
    """`create_agent` writes nothing to the `custom` stream; ours writes its step events
    (action, observation, answer, final) so a client can show progress without parsing
    messages (docs: the agent's own custom events, tests/unit/test_parity_probe.py)."""
    seen = await pair.stream(input=ask("calc[17 * 23]"), stream_mode="custom")
    custom = {side: [d for e, d in parts if e == "custom"] for side, parts in seen.items()}
    assert custom["theirs"] == []
    assert [c["event"] for c in custom["ours"]] == ["action", "observation", "answer", "final"]


# --------------------------------------------------------------------------- state and history


async def test_final_state_and_history_agree(pair: Pair) -> None:
    await pair.wait(input=ask("calc[17 * 23]"))
    states = await pair.state()
    for state in states.values():
        assert state["next"] == [] and state["tasks"] == [] and state["interrupts"] == []
    shown = await pair.messages()
    assert shown["ours"] == shown["theirs"]

    async def history(side: str) -> list[Any]:
        found = await pair.client.threads.get_history(pair.threads[side], limit=100)
        return list(reversed(found))

    histories = await pair.both(history)
    for side, found in histories.items():
        assert found[0]["metadata"]["source"] == "input", side
        assert found[0]["next"] == ["__start__"], side
        assert found[-1]["next"] == [], side
        steps = [e["metadata"]["step"] for e in found]
        assert steps == list(range(-1, len(found) - 1)), side
    conversations = {
        side: [view(e["values"].get("messages", [])) for e in found]
        for side, found in histories.items()
    }
    distinct = {
        side: [c for i, c in enumerate(found) if i == 0 or c != found[i - 1]]
        for side, found in conversations.items()
    }
    assert distinct["ours"] == distinct["theirs"]


async def test_by_design_history_has_our_own_nodes(pair: Pair) -> None:
    """Our history names `think`/`act` where create_agent's names `model`/`tools`, and has one
    more checkpoint for `finish` (it writes the run's answer, status and steps)."""
    await pair.wait(input=ask("calc[17 * 23]"))

    async def nexts(side: str) -> list[Any]:
        found = await pair.client.threads.get_history(pair.threads[side], limit=100)
        return [e["next"] for e in reversed(found)]

    shown = await pair.both(nexts)
    assert shown["theirs"] == [["__start__"], ["model"], ["tools"], ["model"], []]
    assert shown["ours"] == [["__start__"], ["think"], ["act"], ["think"], ["finish"], []]


async def test_by_design_our_output_has_the_run_summary(pair: Pair) -> None:
    """`runs.wait` returns the output schema: create_agent's is `messages`; ours adds the run's
    `answer`, `status`, `error` and `steps` (what a caller reads without parsing messages)."""
    out = await pair.wait(input=ask("calc[17 * 23]"))
    assert set(out["theirs"]) == {"messages"}
    assert {"messages", "answer", "status", "steps"} <= set(out["ours"])
    assert out["ours"]["answer"] == "Done: 391" and out["ours"]["status"] == "answered"
    assert view(out["ours"]["messages"]) == view(out["theirs"]["messages"])


# --------------------------------------------------------------------------- runs


async def test_create_and_join_give_what_wait_gives(pair: Pair) -> None:
    async def one(side: str) -> Any:
        run = await pair.client.runs.create(
            pair.threads[side], pair.graphs[side], input=ask("calc[6 * 7]")
        )
        joined = await pair.client.runs.join(pair.threads[side], run["run_id"])
        done = await pair.client.runs.get(pair.threads[side], run["run_id"])
        return view(joined["messages"]), done["status"]

    shown = await pair.both(one)
    assert shown["ours"] == shown["theirs"]
    assert shown["ours"][1] == "success"


async def test_a_second_message_on_the_thread(pair: Pair) -> None:
    await pair.wait(input=ask("calc[17 * 23]"))
    out = await pair.wait(input=ask("and again"))
    assert view(out["ours"]["messages"]) == view(out["theirs"]["messages"])
    assert [m["type"] for m in view(out["ours"]["messages"])] == [
        "human",
        "ai",
        "tool",
        "ai",
        "human",
        "ai",
    ]


async def running(client: LangGraphClient, thread: str, run: str) -> None:
    """Until the run has started (the slow reply keeps it running for some seconds)."""
    status = None
    for _ in range(100):
        status = (await client.runs.get(thread, run))["status"]
        if status == "running":
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"the run never started (status {status})")


@pytest.mark.parametrize("action", ["interrupt", "rollback"])
async def test_cancelling_a_run(pair: Pair, action: str) -> None:
    async def one(side: str) -> Any:
        thread, client = pair.threads[side], pair.client
        run = await client.runs.create(thread, pair.graphs[side], input=ask("slow[3]"))
        await running(client, thread, run["run_id"])
        await client.runs.cancel(thread, run["run_id"], wait=True, action=action)
        try:
            status = (await client.runs.get(thread, run["run_id"]))["status"]
        except NotFoundError:  # rollback deletes the run
            status = "deleted"
        state = await client.threads.get_state(thread)
        messages = view(state["values"].get("messages", []))
        return status, (await client.threads.get(thread))["status"], messages

    shown = await pair.both(one)
    assert shown["ours"] == shown["theirs"]
    expected = {"interrupt": ("interrupted", "interrupted"), "rollback": ("deleted", "idle")}
    assert shown["ours"][:2] == expected[action]


async def test_by_design_a_refused_model_call_ends_the_run_with_status_error(pair: Pair) -> None:
    """The endpoint refuses the request (HTTP 400). create_agent's run fails: the run and the
    thread are in `error` and the client gets the exception. Ours ends the run normally with
    `status: "error"` and one sentence in `error`, so the thread stays usable and a client reads
    why in the output (docs: a model error ends the run with status error)."""

    async def one(side: str) -> Any:
        thread, client = pair.threads[side], pair.client
        run = await client.runs.create(thread, pair.graphs[side], input=ask("boom"))
        out = await client.runs.join(thread, run["run_id"])
        done = await client.runs.get(thread, run["run_id"])
        return out, done["status"], (await client.threads.get(thread))["status"]

    shown = await pair.both(one)
    out, run, thread = shown["theirs"]
    assert (run, thread) == ("error", "error") and set(out) == {"__error__"}
    out, run, thread = shown["ours"]
    assert (run, thread) == ("success", "idle")
    assert out["status"] == "error" and "HTTP 400" in out["error"]


# what becomes of the first (slow) run when a second comes with each strategy
EXPECTED_FIRST = {
    "reject": "success",
    "enqueue": "success",
    "interrupt": "interrupted",
    "rollback": "deleted",
}


@pytest.mark.parametrize("strategy", list(EXPECTED_FIRST))
async def test_multitask_strategies(pair: Pair, strategy: str) -> None:
    async def one(side: str) -> Any:
        thread, client, graph = pair.threads[side], pair.client, pair.graphs[side]
        first = await client.runs.create(thread, graph, input=ask("slow[3]"))
        await running(client, thread, first["run_id"])
        try:
            second = await client.runs.create(
                thread, graph, input=ask("second"), multitask_strategy=strategy
            )
        except ConflictError:
            await client.runs.join(thread, first["run_id"])
            refused = True
        else:
            refused = False
            await client.runs.join(thread, second["run_id"])
            await client.runs.join(thread, first["run_id"])
        try:
            first_status = (await client.runs.get(thread, first["run_id"]))["status"]
        except NotFoundError:  # rollback deletes the run it interrupts
            first_status = "deleted"
        state = await client.threads.get_state(thread)
        return refused, first_status, view(state["values"]["messages"])

    shown = await pair.both(one)
    assert shown["ours"] == shown["theirs"]
    refused, first, messages = shown["ours"]
    assert refused == (strategy == "reject")
    assert first == EXPECTED_FIRST[strategy]
    assert messages[-1]["content"] == ("A slow answer." if refused else "You said: second")


@pytest.mark.parametrize("where", ["interrupt_before", "interrupt_after"])
async def test_a_run_asked_to_pause_at_the_tools_node(pair: Pair, where: str) -> None:
    """Studio's breakpoints, named as create_agent names its nodes (`tools`): the run pauses
    there, and continuing it (input None) finishes the same conversation."""
    await pair.wait(input=ask("calc[17 * 23]"), **{where: ["tools"]})
    threads = await pair.thread()
    states = await pair.state()
    paused = {
        side: (threads[side]["status"], view(states[side]["values"]["messages"]))
        for side in threads
    }
    assert paused["ours"] == paused["theirs"]
    assert paused["ours"][0] == "interrupted"
    await pair.wait(input=None)
    shown = await pair.messages()
    assert shown["ours"] == shown["theirs"]
    assert [m["type"] for m in shown["ours"]] == ["human", "ai", "tool", "ai"]


# --------------------------------------------------------------------------- approvals


async def test_batched_pause_looks_the_same(hitl: Pair) -> None:
    seen = await hitl.stream(input=ask("calc[17 * 23] calc[2 + 2]"), stream_mode="updates")
    streamed = {
        side: [interrupt_shape(d["__interrupt__"]) for e, d in parts if "__interrupt__" in d]
        for side, parts in seen.items()
    }
    for found in streamed.values():
        for pause in found:
            for p in pause:
                p.pop("id")
    assert streamed["ours"] == streamed["theirs"]
    threads = await hitl.thread()
    assert {t["status"] for t in threads.values()} == {"interrupted"}
    values = {side: [interrupt_shape(p["value"]) for p in pauses(t)] for side, t in threads.items()}
    assert values["ours"] == values["theirs"]
    (value,) = values["ours"]
    assert [a["args"] for a in value["action_requests"]] == [
        {"expression": "17 * 23"},
        {"expression": "2 + 2"},
    ]
    assert [c["allowed_decisions"] for c in value["review_configs"]] == [DECISIONS] * 2
    states = await hitl.state()
    shapes = {
        side: [interrupt_shape(i["value"]) for i in s["interrupts"]] for side, s in states.items()
    }
    assert shapes["ours"] == shapes["theirs"]


@pytest.mark.parametrize(
    "decisions",
    [
        [{"type": "approve"}, {"type": "approve"}],
        [{"type": "reject"}, {"type": "respond", "message": "it is four"}],
        [{"type": "reject", "message": "not that one"}, {"type": "approve"}],
    ],
    ids=["approve", "reject-respond", "reject-reason"],
)
async def test_batched_resume(hitl: Pair, decisions: list[dict[str, Any]]) -> None:
    paused = await hitl.wait(input=ask("calc[17 * 23] calc[2 + 2]"))
    waited = {
        side: [{**interrupt_shape(p), "id": None} for p in out["__interrupt__"]]
        for side, out in paused.items()
    }
    assert waited["ours"] == waited["theirs"] and len(waited["ours"]) == 1
    out = await hitl.wait(command={"resume": {"decisions": decisions}})
    assert view(out["ours"]["messages"]) == view(out["theirs"]["messages"])
    threads = await hitl.thread()
    assert {t["status"] for t in threads.values()} == {"idle"}


async def test_by_design_an_edit_is_stored_as_the_call_that_ran(hitl: Pair) -> None:
    """After an edit, create_agent's stored step (and so every client's tool card) keeps the
    model's arguments and its result carries LangChain's long notice; ours stores the edited
    arguments in the step (what ran is what the transcript shows) and its result carries a
    shorter notice of its own (docs/approvals-and-clients.md). Both ran the edited call."""
    await hitl.wait(input=ask("calc[17 * 23]"))
    edit = {
        "type": "edit",
        "edited_action": {"name": "calculator", "args": {"expression": "17*24"}},
    }
    out = await hitl.wait(command={"resume": {"decisions": [edit]}})
    shown = {side: view(o["messages"]) for side, o in out.items()}
    calls = {side: [m["tool_calls"] for m in s if m.get("tool_calls")] for side, s in shown.items()}
    assert calls["theirs"] == [[("calculator", {"expression": "17 * 23"}, "call0")]]
    assert calls["ours"] == [[("calculator", {"expression": "17*24"}, "call0")]]
    results = {side: [m for m in s if m["type"] == "tool"] for side, s in shown.items()}
    for side, found in results.items():
        (result,) = found
        assert result["content"].endswith('{"expression": "17*24"}.\n\nTool response:\n408'), side
        assert result["status"] == "success"
    assert results["ours"][0]["content"] != results["theirs"][0]["content"]
    assert [m["type"] for m in shown["ours"]] == [m["type"] for m in shown["theirs"]]


async def test_per_call_pause_looks_the_same(per_call: Pair) -> None:
    seen = await per_call.stream(input=ask("calc[17 * 23] calc[2 + 2]"), stream_mode="updates")
    streamed = {
        side: [p for e, d in parts if "__interrupt__" in d for p in d["__interrupt__"]]
        for side, parts in seen.items()
    }
    threads = await per_call.thread()
    assert {t["status"] for t in threads.values()} == {"interrupted"}
    stored = {side: pauses(t) for side, t in threads.items()}
    shown = {}
    for side in seen:
        ids = Ids()
        rows = []
        for where, found in (("stream", streamed[side]), ("thread", stored[side])):
            for p in sorted(found, key=lambda p: p["value"]["args"]["expression"]):
                value = interrupt_shape(p["value"])
                value["tool_call_id"] = ids(value["tool_call_id"])
                rows.append((where, value, interrupt_shape(p.get("response_schema"))))
        shown[side] = rows
    assert shown["ours"] == shown["theirs"]
    assert [(w, v["type"], v["args"]) for w, v, _ in shown["ours"]] == [
        (where, "tool_approval", {"expression": e})
        for where in ("stream", "thread")
        for e in ("17 * 23", "2 + 2")
    ]
    schema = shown["ours"][0][2]
    assert {"ApproveDecision", "EditDecision", "RejectDecision", "RespondDecision"} <= set(
        schema["$defs"]
    )


PER_CALL = {
    "approve": {"17 * 23": {"type": "approve"}, "2 + 2": {"type": "approve"}},
    "reject-respond": {
        "17 * 23": {"type": "reject", "message": "no"},
        "2 + 2": {"type": "respond", "message": "four"},
    },
    "edit": {
        "17 * 23": {
            "type": "edit",
            "edited_action": {"name": "calculator", "args": {"expression": "17 * 24"}},
        },
        "2 + 2": {"type": "approve"},
    },
}


@pytest.mark.parametrize("decide", list(PER_CALL))
async def test_per_call_resume(per_call: Pair, decide: str) -> None:
    await per_call.wait(input=ask("calc[17 * 23] calc[2 + 2]"))
    decisions = PER_CALL[decide]

    async def answer(side: str) -> Any:
        client, thread = per_call.client, per_call.threads[side]
        for _ in range(4):
            found = pauses(await client.threads.get(thread))
            if not found:
                break
            resume = {p["id"]: decisions[p["value"]["args"]["expression"]] for p in found}
            await client.runs.wait(
                thread,
                per_call.graphs[side],
                command={"resume": resume},
                context=per_call.context[side],
            )
        status = (await client.threads.get(thread))["status"]
        return status, view((await client.threads.get_state(thread))["values"]["messages"])

    shown = await per_call.both(answer)
    assert shown["ours"][0] == shown["theirs"][0] == "idle"
    if decide == "edit":  # by design (above): our stored call and notice differ
        for side in shown:
            for m in shown[side][1]:
                if m.get("tool_calls"):
                    m["tool_calls"] = [(n, i) for n, _, i in m["tool_calls"]]
                if "Tool response:" in m["content"]:
                    m["content"] = m["content"].rpartition("Tool response:")[2]
    assert shown["ours"] == shown["theirs"]


# --------------------------------------------------------------------------- client writes


async def pair_wait(p: Pair, side: str, payload: Any, **kw: Any) -> Any:
    return await p.client.runs.wait(
        p.threads[side], p.graphs[side], input=payload, context=p.context[side], **kw
    )


async def test_update_state_with_an_edited_tool_call_during_a_pause(hitl: Pair) -> None:
    """Studio's state editor: the paused step's call rewritten (same message id), then approve.
    By design ours refuses the approve sent right after the rewrite (it answers no question
    asked: a person's client would send it for the call it showed); continued, the run asks
    about the rewritten call, and the approve then ends both agents the same way."""
    await hitl.wait(input=ask("calc[17 * 23]"))
    states = await hitl.state()
    approve = {"resume": {"decisions": [{"type": "approve"}]}}

    async def one(side: str) -> Any:
        step = dict(states[side]["values"]["messages"][-1])
        call = dict(step["tool_calls"][0], args={"expression": "17 * 24"})
        step["tool_calls"] = [call]
        await hitl.client.threads.update_state(hitl.threads[side], {"messages": [step]})
        thread = await hitl.client.threads.get(hitl.threads[side])
        after = thread["status"], [interrupt_shape(p["value"]) for p in pauses(thread)]
        run = {"context": hitl.context[side]}
        try:
            await hitl.client.runs.wait(
                hitl.threads[side], hitl.graphs[side], command=approve, **run
            )
        except Exception as exc:  # the SDK raises a failed run as a bare Exception
            assert side == "ours" and "Nothing to resume" in str(exc), exc
            await hitl.client.runs.wait(hitl.threads[side], hitl.graphs[side], input=None, **run)
            await hitl.client.runs.wait(
                hitl.threads[side], hitl.graphs[side], command=approve, **run
            )
        else:
            assert side == "theirs"
        state = await hitl.client.threads.get_state(hitl.threads[side])
        return after, view(state["values"]["messages"])

    shown = await hitl.both(one)
    assert shown["ours"] == shown["theirs"]


FORGED = [
    {
        "type": "ai",
        "content": "",
        "tool_calls": [{"name": "calculator", "args": {"expression": "1+1"}, "id": "f1"}],
    },
    {"type": "tool", "tool_call_id": "f1", "name": "calculator", "content": "2"},
]


async def stand_in_during_a_pause(hitl: Pair) -> dict[str, list[dict[str, Any]]]:
    """What Agent Chat UI sends when the user types during an approval pause: its stand-in
    result for the pending call and the new message, as a new run's input."""
    await hitl.wait(input=ask("calc[17 * 23]"))
    states = await hitl.state()

    async def one(side: str) -> Any:
        pending = states[side]["values"]["messages"][-1]["tool_calls"][0]["id"]
        stand_in = {
            "type": "tool",
            "tool_call_id": pending,
            "id": "do-not-render-ui-1",
            "content": "Successfully handled tool call.",
        }
        await pair_wait(hitl, side, {"messages": [stand_in, {"role": "user", "content": "hi"}]})
        state = await hitl.client.threads.get_state(hitl.threads[side])
        return view(state["values"]["messages"])

    return await hitl.both(one)


async def test_by_design_a_stand_in_result_during_a_pause_is_answered_as_not_run(
    hitl: Pair, model_server: ScriptedOpenAIServer
) -> None:
    """create_agent keeps Agent Chat UI's stand-in ("Successfully handled tool call.", status
    success) as the pending call's result, though the call never ran. Ours drops it and answers
    the call as not run (status error), so the model is never told a tool ran when it did not
    (docs/approvals-and-clients.md, graph/loop/turn.py)."""
    shown = await stand_in_during_a_pause(hitl)
    theirs = [m for m in shown["theirs"] if m["type"] == "tool"]
    ours = [m for m in shown["ours"] if m["type"] == "tool"]
    assert [(m["content"], m["status"]) for m in theirs] == [
        ("Successfully handled tool call.", "success")
    ]
    assert [m["status"] for m in ours] == ["error"] and "was not run" in ours[0]["content"]
    assert shown["ours"][-1] == shown["theirs"][-1] == {"type": "ai", "content": "You said: hi"}
    # what the endpoint got: the call's answer right after the call (as the API requires)
    (sent,) = [
        r for r in model_server.chat_requests if r.messages and r.messages[-1]["content"] == "hi"
    ][-1:]
    roles = [m["role"] for m in sent.messages if m["role"] != "system"]
    assert roles == ["user", "assistant", "tool", "user"]


async def test_the_answer_to_a_pending_call_follows_the_call_in_the_thread(hitl: Pair) -> None:
    """create_agent stores the pending call's answer right after the call, and so does ours
    (its not-run answer takes the stand-in's place, `graph.loop.turn.placed`): a client that
    renders the thread in order, or sends `get_state`'s messages to a chat API, never gets
    [human, ai(call), human, tool], which OpenAI's API refuses."""
    shown = await stand_in_during_a_pause(hitl)
    order = {side: [m["type"] for m in found] for side, found in shown.items()}
    assert order["theirs"] == ["human", "ai", "tool", "human", "ai"]
    assert order["ours"] == order["theirs"]


async def test_a_client_written_step_and_its_result_are_kept(pair: Pair) -> None:
    """Studio's state editor writes a tool call and its result (as `tools`) into a finished
    thread: both agents keep them as history (no decision was asked for that call). A step
    written without its result is answered as not run instead
    (tests/unit/test_parity_probe.py::test_by_design_a_step_written_into_a_finished_run_is_not_run)."""
    await pair.wait(input=ask("hello"))

    async def one(side: str) -> Any:
        await pair.client.threads.update_state(
            pair.threads[side], {"messages": FORGED}, as_node="tools"
        )
        await pair_wait(pair, side, ask("and now?"))
        state = await pair.client.threads.get_state(pair.threads[side])
        return view(state["values"]["messages"])

    shown = await pair.both(one)
    results = {side: [m for m in found if m["type"] == "tool"] for side, found in shown.items()}
    assert [(m["content"], m["status"]) for m in results["theirs"]] == [("2", "success")]
    assert [(m["content"], m["status"]) for m in results["ours"]] == [("2", "success")]
    assert shown["ours"][-1] == shown["theirs"][-1]


async def test_by_design_an_update_without_as_node_is_taken(
    client: LangGraphClient, dev: LangGraphDev
) -> None:
    """`threads.update_state` without `as_node` on a finished thread, writing a step with a tool
    call: create_agent's served graph answers HTTP 500 (LangGraph routes the write as from its
    `model` node's conditional edge, which has no `model` key: KeyError). Ours takes the write
    (and answers the call as not run on the next turn, as above)."""
    ours = await Pair(client, "ref", "ours").start()
    await ours.wait(input=ask("hello"))
    await client.threads.update_state(ours.threads["ours"], {"messages": FORGED})
    state = await client.threads.get_state(ours.threads["ours"])
    assert [m["type"] for m in state["values"]["messages"]][-2:] == ["ai", "tool"]
    # a fresh client: the server closes the connection of a request that failed with 500
    other = get_client(url=dev.url, timeout=30)
    try:
        with pytest.raises(InternalServerError):
            await other.threads.update_state(ours.threads["theirs"], {"messages": FORGED})
    finally:
        await other.aclose()


async def test_copying_a_thread(pair: Pair) -> None:
    await pair.wait(input=ask("calc[17 * 23]"))

    async def one(side: str) -> Any:
        copy = await pair.client.threads.copy(pair.threads[side])
        state = await pair.client.threads.get_state(copy["thread_id"])
        await pair.client.runs.wait(
            copy["thread_id"], pair.graphs[side], input=ask("more"), context=pair.context[side]
        )
        after = await pair.client.threads.get_state(copy["thread_id"])
        original = await pair.client.threads.get_state(pair.threads[side])
        return (
            view(state["values"]["messages"]),
            view(after["values"]["messages"]),
            len(original["values"]["messages"]),
        )

    shown = await pair.both(one)
    assert shown["ours"] == shown["theirs"]


# --------------------------------------------------------------------------- assistants


async def test_an_assistant_with_config_and_context(client: LangGraphClient) -> None:
    """An assistant made by a client (Studio's "new assistant"): its `config` and `context` are
    stored alike (the server mirrors the context into `configurable`) and its runs answer."""
    context = {"max_steps": 5}

    async def one(graph: str) -> Any:
        made = await client.assistants.create(
            graph, config={"recursion_limit": 25, "tags": ["probe"]}, context=context
        )
        stored = await client.assistants.get(made["assistant_id"])
        thread = (await client.threads.create())["thread_id"]
        out = await client.runs.wait(thread, made["assistant_id"], input=ask("calc[3 * 3]"))
        return stored["config"], stored["context"], view(out["messages"])

    theirs, ours = await one("ref"), await one("ours")
    assert ours == theirs
    assert ours[1] == context and ours[0]["configurable"] == context


async def test_by_design_our_context_schema_is_the_run_settings(client: LangGraphClient) -> None:
    """create_agent without a `context_schema` publishes none; ours publishes the run settings
    (Studio's form), closed to unknown keys."""

    async def schema(graph: str) -> Any:
        found = await client.assistants.search(graph_id=graph, metadata={"created_by": "system"})
        return (await client.assistants.get_schemas(found[0]["assistant_id"]))["context_schema"]

    assert await schema("ref") is None
    ours = await schema("ours")
    assert {"model", "max_steps", "approve"} <= set(ours["properties"])
    assert ours["additionalProperties"] is False
