"""A served differential probe of user middleware and of the text protocol as a chat model: ours
(`build_graph(..., middleware=[...])`, `protocol="text"`) beside LangChain's `create_agent`
(the same middleware, `TextReAct(inner)`), in ONE `langgraph dev`, driven through
`langgraph_sdk` as Agent Chat UI drives them.

The graphs are tests/support/served_middleware_graphs.py (a pair per case, same model, same
calculator, own middleware instances): a `before_model` counter in a private key across turns,
an `after_model` that redacts an e-mail address, an `after_agent` that rewrites the answer, a
`wrap_model_call` that pauses with `interrupt()` (resumed by the client), a `wrap_tool_call`
that answers from a cache, a `before_model` hook returning `Command(update=...)`, LangChain's
`HumanInTheLoopMiddleware` (approve / edit / reject), LangChain's `PIIMiddleware`; and the text
protocol alone, with HITL, the pause, the redactions and the rewrite.

The endpoint answers from the conversation (so both agents get the same replies in any order):
the model `scripted` answers natively as in test_served_parity.py (`calc[EXPR]` asks for the
calculator, after results `Done: ...`, else an echo of the last user message); the model `text`
writes the same replies in the text protocol (`Action:` / `Final Answer:`), one call a step.

Compared: what a client reads (the messages, the middleware's public and private keys,
interrupts, thread status, stream events, history), and what the model is sent on a later turn,
with node names mapped (think plays model, act plays tools; review, observe and finish are ours
alone) and ids replaced by their order. A real defect is a strict xfail asserting the right
behaviour; a difference by design is `test_by_design_*`.

Found when it was written, and fixed (`prompts.step_as_text`: the digest of what was read covers
the words too): under the text protocol (ours and create_agent over TextReAct alike), a step an
after_model hook redacted (LangChain's PIIMiddleware) went back to the model on the next turn as
first written, the redacted address included. Pinned by design:
results reach the model in their calls' order; text steps stream as whole messages; one
`finish` checkpoint per run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk.client import LangGraphClient

from tests.integration.test_served_parity import (
    OURS_ONLY,
    Ids,
    Pair,
    ask,
    interrupt_shape,
    merged,
    node,
    pauses,
    view,
)
from tests.support import served_middleware_graphs as graphs
from tests.support.langgraph_dev import (
    LANGGRAPH,
    LangGraphDev,
    langgraph_dev,
    repo_config,
    report_failures,
)
from tests.support.openai_server import Reply, ScriptedOpenAIServer, ToolCall

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not LANGGRAPH.exists(), reason=f"{LANGGRAPH} not found (langgraph-cli)"),
]

MODULE = Path(graphs.__file__).resolve()
EMAIL, REDACTED = graphs.EMAIL, graphs.REDACTED

# --------------------------------------------------------------------------- the endpoint


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else str(content)


def native(messages: list[dict[str, Any]]) -> Reply:
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        results = []
        for message in reversed(messages):
            if message.get("role") != "tool":
                break
            results.append(_text(message))
        return Reply(content="Done: " + " | ".join(reversed(results)))
    text = _text(last)
    expressions = re.findall(r"calc\[([^\]]+)\]", text)
    if expressions:
        return Reply(tool_calls=[ToolCall("calculator", {"expression": e}) for e in expressions])
    return Reply(content=f"You said: {text}")


def text_protocol(messages: list[dict[str, Any]]) -> Reply:
    text = _text(messages[-1]) if messages else ""
    if text.startswith("Observation:"):
        observed = text.removeprefix("Observation:").strip()
        return Reply(content=f"Thought: I know it now.\nFinal Answer: Done: {observed}")
    expressions = re.findall(r"calc\[([^\]]+)\]", text)
    if expressions:
        shown = json.dumps({"expression": expressions[0]})
        return Reply(
            content=f"Thought: I need the calculator.\nAction: calculator\nAction Input: {shown}"
        )
    return Reply(content=f"Thought: I can answer.\nFinal Answer: You said: {text}")


def brain(body: dict[str, Any]) -> Reply:
    messages = [m for m in body.get("messages", []) if m.get("role") != "system"]
    return (text_protocol if body.get("model") == "text" else native)(messages)


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
    workdir = tmp_path_factory.mktemp("served-parity-middleware")
    config = repo_config(workdir)
    config["graphs"] = {
        f"{side}_{case}": f"{MODULE}:{side}_{case}"
        for case in graphs.CASES
        for side in ("ours", "ref")
    }
    env = {
        "OPENAI_BASE_URL": model_server.base_url,
        "OPENAI_API_KEY": "sk-x",
        "REACT_AGENT_MODEL": "scripted",
        "REACT_AGENT_LOCAL": "off",
    }
    with (
        langgraph_dev(env, config=config, workdir=workdir, startup_timeout=120) as server,
        report_failures(request, server),
    ):
        yield server


async def pair_of(client: LangGraphClient, case: str) -> Pair:
    return await Pair(client, f"ref_{case}", f"ours_{case}").start()


# --------------------------------------------------------------------------- what a client sees

# what each case is asked, and the middleware's public keys a client reads
FIRST = {
    "counter": "calc[17 * 23]",
    "redact": f"mail {EMAIL}",
    "pii": f"mail {EMAIL}",
    "rewrite": "calc[6 * 7]",
    "short": "calc[17 * 23]",
    "command": "hello",
    "text": "calc[17 * 23]",
    "text_redact": f"mail {EMAIL}",
    "text_pii": f"mail {EMAIL}",
    "text_rewrite": "calc[6 * 7]",
}
KEYS = {"counter": ("last_count",), "command": ("note",)}
PRIVATE = {"counter": ("model_calls",)}
PLAIN = list(FIRST)  # the cases that run without a pause


def keys_of(values: dict[str, Any], case: str) -> dict[str, Any]:
    return {k: values.get(k) for k in KEYS.get(case, ())}


def updates_view(parts: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    ids = Ids()
    return [
        (node(name), view((update or {}).get("messages") or [], ids))
        for e, data in parts
        if e == "updates"
        for name, update in data.items()
        if name not in OURS_ONLY and name != "__interrupt__"
    ]


def distinct(states: list[Any]) -> list[Any]:
    return [s for i, s in enumerate(states) if i == 0 or s != states[i - 1]]


# --------------------------------------------------------------------------- runs without a pause


@pytest.mark.parametrize("case", PLAIN)
async def test_wait_gives_the_same_conversation_and_keys(
    client: LangGraphClient, case: str
) -> None:
    pair = await pair_of(client, case)
    out = await pair.wait(input=ask(FIRST[case]))
    assert view(out["ours"]["messages"]) == view(out["theirs"]["messages"])
    assert keys_of(out["ours"], case) == keys_of(out["theirs"], case)
    for key in PRIVATE.get(case, ()):  # a private key is not in the output
        assert key not in out["theirs"] and key not in out["ours"]


@pytest.mark.parametrize("case", PLAIN)
async def test_values_stream_shows_the_same_states(client: LangGraphClient, case: str) -> None:
    pair = await pair_of(client, case)
    seen = await pair.stream(input=ask(FIRST[case]), stream_mode="values")
    shown = {
        side: distinct([(view(d["messages"]), keys_of(d, case)) for e, d in parts if e == "values"])
        for side, parts in seen.items()
    }
    assert shown["ours"] == shown["theirs"]


@pytest.mark.parametrize("case", PLAIN)
async def test_updates_stream_has_the_same_nodes_and_writes(
    client: LangGraphClient, case: str
) -> None:
    pair = await pair_of(client, case)
    seen = await pair.stream(input=ask(FIRST[case]), stream_mode="updates")
    shown = {side: updates_view(parts) for side, parts in seen.items()}
    assert shown["ours"] == shown["theirs"]


@pytest.mark.parametrize("case", [c for c in PLAIN if not c.startswith("text")])
async def test_messages_tuple_stream_is_the_same(client: LangGraphClient, case: str) -> None:
    pair = await pair_of(client, case)
    seen = await pair.stream(input=ask(FIRST[case]), stream_mode="messages-tuple")
    shown = {side: merged(parts) for side, parts in seen.items()}
    assert shown["ours"] == shown["theirs"]


@pytest.mark.parametrize("case", PLAIN)
async def test_state_and_history_agree(client: LangGraphClient, case: str) -> None:
    pair = await pair_of(client, case)
    await pair.wait(input=ask(FIRST[case]))
    states = await pair.state()
    shown = {
        side: (view(s["values"]["messages"]), keys_of(s["values"], case), s["next"], s["tasks"])
        for side, s in states.items()
    }
    assert shown["ours"] == shown["theirs"]
    private = {
        side: {k: s["values"].get(k) for k in PRIVATE.get(case, ())} for side, s in states.items()
    }
    assert private["ours"] == private["theirs"]

    async def history(side: str) -> list[Any]:
        found = await pair.client.threads.get_history(pair.threads[side], limit=100)
        return list(reversed(found))

    histories = await pair.both(history)
    for side, found in histories.items():
        assert found[0]["metadata"]["source"] == "input", side
        assert found[-1]["next"] == [], side
        assert [e["metadata"]["step"] for e in found] == list(range(-1, len(found) - 1)), side
    conversations = {
        side: distinct([view(e["values"].get("messages", [])) for e in found])
        for side, found in histories.items()
    }
    assert conversations["ours"] == conversations["theirs"]


@pytest.mark.parametrize("case", PLAIN)
async def test_a_second_turn_on_the_thread(client: LangGraphClient, case: str) -> None:
    pair = await pair_of(client, case)
    await pair.wait(input=ask(FIRST[case]))
    out = await pair.wait(input=ask(f"and again {EMAIL}" if EMAIL in FIRST[case] else "and again"))
    assert view(out["ours"]["messages"]) == view(out["theirs"]["messages"])
    states = await pair.state()
    values = {
        side: (keys_of(s["values"], case), {k: s["values"].get(k) for k in PRIVATE.get(case, ())})
        for side, s in states.items()
    }
    assert values["ours"] == values["theirs"]


async def test_the_private_counter_counts_across_turns(client: LangGraphClient) -> None:
    pair = await pair_of(client, "counter")
    await pair.wait(input=ask("calc[17 * 23]"))
    await pair.wait(input=ask("and again"))
    states = await pair.state()
    for side, s in states.items():
        assert (s["values"].get("model_calls"), s["values"].get("last_count")) == (3, 3), side


REDACTED_AS = {
    "redact": REDACTED,
    "text_redact": REDACTED,
    "pii": "[REDACTED_EMAIL]",
    "text_pii": "[REDACTED_EMAIL]",
}


@pytest.mark.parametrize("case", list(REDACTED_AS))
async def test_the_redacted_words_are_what_the_thread_keeps(
    client: LangGraphClient, case: str
) -> None:
    pair = await pair_of(client, case)
    out = await pair.wait(input=ask(f"mail {EMAIL}"))
    said = f"You said: mail {REDACTED_AS[case]}"
    for side, o in out.items():
        assert o["messages"][-1]["content"] == said, side
    assert out["ours"]["answer"] == said


@pytest.mark.parametrize("case", ["rewrite", "text_rewrite"])
async def test_the_rewritten_answer_is_the_runs_answer(client: LangGraphClient, case: str) -> None:
    pair = await pair_of(client, case)
    out = await pair.wait(input=ask("calc[6 * 7]"))
    for side, o in out.items():
        assert o["messages"][-1]["content"] == "DONE: 42", side
    assert out["ours"]["answer"] == "DONE: 42"


def assistant_words(server: ScriptedOpenAIServer, since: int) -> list[str]:
    """What the endpoint was sent as the agent's own earlier messages, since request `since`."""
    return [
        _text(m)
        for r in server.chat_requests[since:]
        for m in r.messages
        if m["role"] == "assistant" and m.get("content")
    ]


async def sent_back(
    client: LangGraphClient, server: ScriptedOpenAIServer, case: str
) -> dict[str, list[str]]:
    """Each side's earlier words as its next turn sends them to the model (one side at a time,
    so each request is known to be that side's)."""
    pair = await pair_of(client, case)
    found = {}
    for side, graph in pair.graphs.items():
        thread = pair.threads[side]
        await client.runs.wait(thread, graph, input=ask(f"mail {EMAIL}"))
        since = len(server.chat_requests)
        await client.runs.wait(thread, graph, input=ask("and again"))
        found[side] = assistant_words(server, since)
    return found


@pytest.mark.parametrize("case", ["redact", "pii", "text_redact", "text_pii"])
async def test_a_redacted_step_is_sent_back_to_the_model_redacted(
    client: LangGraphClient, model_server: ScriptedOpenAIServer, case: str
) -> None:
    """What the model reads on the next turn is what the thread keeps: the redacted words."""
    found = await sent_back(client, model_server, case)
    for side in ("ours", "theirs"):
        (words,) = found[side]
        assert EMAIL not in words, side
        assert f"You said: mail {REDACTED_AS[case]}" in words, side


async def test_the_short_circuit_answers_in_the_tools_place(client: LangGraphClient) -> None:
    pair = await pair_of(client, "short")
    out = await pair.wait(input=ask("calc[17 * 23]"))
    for side, o in out.items():
        tool = [m for m in view(o["messages"]) if m["type"] == "tool"]
        assert [(m["content"], m["status"]) for m in tool] == [(graphs.CACHED, "success")], side
        assert o["messages"][-1]["content"] == f"Done: {graphs.CACHED}", side


async def test_the_hooks_command_is_applied(client: LangGraphClient) -> None:
    pair = await pair_of(client, "command")
    out = await pair.wait(input=ask("hello"))
    for side, o in out.items():
        assert [m["content"] for m in o["messages"]] == [
            "hello",
            graphs.HOOK_MESSAGE,
            f"You said: {graphs.HOOK_MESSAGE}",
        ], side
    states = await pair.state()
    assert {side: s["values"].get("note") for side, s in states.items()} == {
        "ours": graphs.HOOK_NOTE,
        "theirs": graphs.HOOK_NOTE,
    }


# --------------------------------------------------------------------------- a pause in a wrap


@pytest.mark.parametrize("case", ["pause", "text_pause"])
async def test_a_pause_in_a_model_wrap_is_seen_the_same(client: LangGraphClient, case: str) -> None:
    pair = await pair_of(client, case)
    out = await pair.wait(input=ask("hello"))
    asked = {
        side: [interrupt_shape(p["value"]) for p in o.get("__interrupt__", [])]
        for side, o in out.items()
    }
    assert asked["ours"] == asked["theirs"] == [{"question": "may I call the model?"}]
    threads = await pair.thread()
    stored = {side: (t["status"], [p["value"] for p in pauses(t)]) for side, t in threads.items()}
    assert stored["ours"] == stored["theirs"]
    assert stored["ours"][0] == "interrupted"
    states = await pair.state()
    shown = {
        side: (
            view(s["values"]["messages"]),
            [node(n) for n in s["next"]],
            [i["value"] for i in s["interrupts"]],
        )
        for side, s in states.items()
    }
    assert shown["ours"] == shown["theirs"]


@pytest.mark.parametrize("case", ["pause", "text_pause"])
async def test_a_pause_in_a_model_wrap_streams_the_same(client: LangGraphClient, case: str) -> None:
    pair = await pair_of(client, case)
    seen = await pair.stream(input=ask("hello"), stream_mode="updates")
    streamed = {
        side: [
            [interrupt_shape(p["value"]) for p in d["__interrupt__"]]
            for e, d in parts
            if e == "updates" and "__interrupt__" in d
        ]
        for side, parts in seen.items()
    }
    assert streamed["ours"] == streamed["theirs"] == [[{"question": "may I call the model?"}]]


@pytest.mark.parametrize("case", ["pause", "text_pause"])
async def test_a_resumed_model_wrap_answers_the_same(client: LangGraphClient, case: str) -> None:
    pair = await pair_of(client, case)
    await pair.wait(input=ask("hello"))
    out = await pair.wait(command={"resume": "ada"})
    shown = {side: view(o["messages"]) for side, o in out.items()}
    assert shown["ours"] == shown["theirs"]
    assert shown["ours"][-1]["content"] == "You said: approved by ada"
    threads = await pair.thread()
    assert {side: t["status"] for side, t in threads.items()} == {"ours": "idle", "theirs": "idle"}
    again = await pair.wait(input=ask("and again"))  # the second turn does not pause
    assert view(again["ours"]["messages"]) == view(again["theirs"]["messages"])
    assert "__interrupt__" not in again["ours"] and "__interrupt__" not in again["theirs"]


async def test_a_resume_streamed_gives_the_same_events(client: LangGraphClient) -> None:
    pair = await pair_of(client, "pause")
    await pair.wait(input=ask("hello"))
    seen = await pair.stream(command={"resume": "ada"}, stream_mode=["values", "updates"])
    shown = {
        side: (
            updates_view(parts),
            view([d for e, d in parts if e == "values"][-1]["messages"]),
        )
        for side, parts in seen.items()
    }
    assert shown["ours"] == shown["theirs"]


# --------------------------------------------------------------------------- HITL middleware

HITL_DECISIONS = {
    "approve": {"type": "approve"},
    "edit": {
        "type": "edit",
        "edited_action": {"name": "calculator", "args": {"expression": "17 * 24"}},
    },
    "reject": {"type": "reject", "message": "not that one"},
}


@pytest.mark.parametrize("case", ["hitl", "text_hitl"])
async def test_the_hitl_pause_looks_the_same(client: LangGraphClient, case: str) -> None:
    pair = await pair_of(client, case)
    seen = await pair.stream(input=ask("calc[17 * 23]"), stream_mode="updates")
    streamed = {
        side: [
            [{**interrupt_shape(p["value"]), "id": None} for p in d["__interrupt__"]]
            for e, d in parts
            if e == "updates" and "__interrupt__" in d
        ]
        for side, parts in seen.items()
    }
    assert streamed["ours"] == streamed["theirs"]
    assert len(streamed["ours"]) == 1
    threads = await pair.thread()
    stored = {
        side: (t["status"], [interrupt_shape(p["value"]) for p in pauses(t)])
        for side, t in threads.items()
    }
    assert stored["ours"] == stored["theirs"]
    status, (value,) = stored["ours"]
    assert status == "interrupted"
    assert [a["args"] for a in value["action_requests"]] == [{"expression": "17 * 23"}]
    assert [c["allowed_decisions"] for c in value["review_configs"]] == [graphs.DECISIONS]


@pytest.mark.parametrize("decision", list(HITL_DECISIONS))
@pytest.mark.parametrize("case", ["hitl", "text_hitl"])
async def test_a_hitl_decision_through_the_sdk(
    client: LangGraphClient, case: str, decision: str
) -> None:
    pair = await pair_of(client, case)
    await pair.wait(input=ask("calc[17 * 23]"))
    out = await pair.wait(command={"resume": {"decisions": [HITL_DECISIONS[decision]]}})
    shown = {side: view(o["messages"]) for side, o in out.items()}
    assert shown["ours"] == shown["theirs"]
    threads = await pair.thread()
    assert {side: (t["status"], pauses(t)) for side, t in threads.items()} == {
        "ours": ("idle", []),
        "theirs": ("idle", []),
    }
    again = await pair.wait(input=ask("and again"))
    assert view(again["ours"]["messages"]) == view(again["theirs"]["messages"])


async def test_by_design_results_reach_the_model_in_the_order_of_their_calls(
    client: LangGraphClient,
) -> None:
    """HumanInTheLoopMiddleware stores a rejection's answer before the results of the calls
    that ran; create_agent sends the results to the model as stored, ours in the order of the
    step's calls (`graph.protocols.conversation` places each result right after the step
    that asked for it). The thread both keep is the same; only the model's reading order, and
    so this echoing model's answer, differs."""
    pair = await pair_of(client, "hitl")
    await pair.wait(input=ask("calc[1 + 1] calc[2 + 2]"))
    edit = {
        "type": "edit",
        "edited_action": {"name": "calculator", "args": {"expression": "3 + 3"}},
    }
    out = await pair.wait(
        command={"resume": {"decisions": [edit, {"type": "reject", "message": "no"}]}}
    )
    shown = {side: view(o["messages"]) for side, o in out.items()}
    assert shown["ours"][:-1] == shown["theirs"][:-1]
    assert [m.get("call") for m in shown["ours"] if m["type"] == "tool"] == ["call1", "call0"]
    answers = {side: s[-1]["content"] for side, s in shown.items()}
    assert answers["theirs"].startswith("Done: User rejected the tool call")
    assert answers["ours"].startswith("Done: Note: a human reviewer replaced this tool call")
    assert answers["ours"].endswith(
        "| User rejected the tool call for `calculator` with reason: no"
    )


def streamed_steps(parts: list[tuple[str, Any]]) -> list[tuple[str, str, str, list[Any]]]:
    """The `messages-tuple` stream, one row per message id: node, type, text, calls (from the
    chunks' `tool_call_chunks` or a whole message's `tool_calls`)."""
    rows: dict[str, list[Any]] = {}
    for event, data in parts:
        if event != "messages":
            continue
        chunk, meta = data
        row = rows.setdefault(chunk["id"], [node(meta["langgraph_node"]), chunk["type"], "", []])
        row[2] += chunk["content"] if isinstance(chunk["content"], str) else ""
        for piece in chunk.get("tool_call_chunks") or []:
            if piece.get("name"):
                row[3].append([piece["name"], ""])
            if piece.get("args") and row[3]:
                row[3][-1][1] += piece["args"]
        for call in chunk.get("tool_calls") or []:
            if not chunk.get("tool_call_chunks"):
                row[3].append([call["name"], json.dumps(call["args"])])
    return [tuple(r) for r in rows.values()]  # type: ignore[misc]


@pytest.mark.parametrize("case", ["text", "text_redact"])
async def test_by_design_text_steps_stream_as_whole_messages(
    client: LangGraphClient, case: str
) -> None:
    """Under the text protocol ours streams each parsed step as one whole message (`ai`, its
    calls as `tool_calls`) from think and act: TextReAct is bound with `disable_streaming`
    (docs/approvals-and-clients.md "Streams"); create_agent streams TextReAct's one chunk
    (`AIMessageChunk`, its calls as `tool_call_chunks`). Nodes, texts, calls and results agree;
    the raw Thought/Action text reaches neither client."""
    pair = await pair_of(client, case)
    seen = await pair.stream(input=ask(FIRST[case]), stream_mode="messages-tuple")
    shown = {side: streamed_steps(parts) for side, parts in seen.items()}
    same = {side: [(n, t, c) for n, _, t, c in rows] for side, rows in shown.items()}
    assert same["ours"] == same["theirs"]
    types = {side: {k for _, k, _, _ in rows if k != "tool"} for side, rows in shown.items()}
    assert types == {"ours": {"ai"}, "theirs": {"AIMessageChunk"}}
    for rows in shown.values():
        assert not any("Action:" in t or "Final Answer" in t for _, _, t, _ in rows)


async def test_by_design_history_has_a_finish_checkpoint_per_run(client: LangGraphClient) -> None:
    """Ours writes the run's answer, status and usage in its own `finish` node, before the
    after_agent hooks (create_agent runs them right after the model): one more checkpoint per
    run. Without it the checkpoints' next nodes are create_agent's, hook nodes by their names."""
    pair = await pair_of(client, "rewrite")
    await pair.wait(input=ask("calc[6 * 7]"))
    await pair.wait(input=ask("and again"))

    async def nexts(side: str) -> list[list[str]]:
        found = await pair.client.threads.get_history(pair.threads[side], limit=100)
        return [[node(n) for n in e["next"]] for e in reversed(found)]

    shown = await pair.both(nexts)
    assert len(shown["ours"]) == len(shown["theirs"]) + 2
    assert [n for n in shown["ours"] if n != ["finish"]] == shown["theirs"]
    assert shown["theirs"][:6] == [
        ["__start__"],
        ["model"],
        ["tools"],
        ["model"],
        ["Rewrite.after_agent"],
        [],
    ]
