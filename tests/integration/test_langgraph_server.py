"""The agent served by a real `langgraph dev` (what Studio talks to), through the LangGraph SDK.

One server for the module, started from a temporary folder with the repository's graph; its
model is the scripted OpenAI-compatible server running in this process (`OPENAI_BASE_URL`).
The script is one queue shared by the module, so every test adds its own replies first and
checks that it used exactly those (`remaining == []`). The server's in-memory queue polls
every 0.5 s, so a run takes about a second however small it is.
"""

from __future__ import annotations

import itertools
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk.client import LangGraphClient

from graph import graph as local_graph
from graph.settings import AgentContext
from tests.support.langgraph_dev import (
    LANGGRAPH,
    REPO,
    LangGraphDev,
    langgraph_dev,
    repo_config,
    report_failures,
    server_env,
)
from tests.support.mcp_servers import toolbox, write_config
from tests.support.openai_server import Reply, ScriptedOpenAIServer, ToolCall

pytestmark = pytest.mark.integration

QUESTION = "What is 17 * 23?"
CALC = (
    "Thought: I should use the calculator.\n"
    'Action: calculator\nAction Input: {"expression": "17 * 23"}'
)
DONE = "Thought: The calculator says 391.\nFinal Answer: 17 * 23 = 391"
TEXT = {"protocol": "text"}  # the run's context, as Studio's form sends it
NODE_ORDER = ["think", "act", "think", "finish"]  # observe runs only with something to say
CONTEXT_FIELDS = [
    "model",
    "protocol",
    "max_steps",
    "tools",
    "system_prompt",
    "temperature",
    "approve",
]
OPERATOR_FIELDS = ["base_url", "api_key_env", "tool_timeout", "model_timeout", "mcp_config"]


def ask(question: str = QUESTION) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": question}]}


def user_texts(request: Any) -> list[str]:
    return [m["content"] for m in request.messages if m["role"] == "user"]


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def dev(
    model_server: ScriptedOpenAIServer,
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[LangGraphDev]:
    mcp = write_config(tmp_path_factory.mktemp("mcp") / "mcp.json", {"box": toolbox()})
    env = {
        "OPENAI_BASE_URL": model_server.base_url,
        "OPENAI_API_KEY": "sk-langgraph-dev-test",
        "REACT_AGENT_MODEL": "scripted",
        "REACT_AGENT_MCP_CONFIG": str(mcp),  # an operator setting: the server's environment
    }
    with langgraph_dev(env) as server, report_failures(request, server):
        yield server


async def new_thread(client: LangGraphClient) -> str:
    return (await client.threads.create())["thread_id"]


async def agent_id(client: LangGraphClient) -> str:
    """The id of the assistant the server made for graph `agent` (some calls need the id)."""
    (assistant,) = await client.assistants.search(graph_id="agent")
    return assistant["assistant_id"]


# --------------------------------------------------------------------------- assistant, schemas


async def test_the_agent_assistant_is_served(client: LangGraphClient) -> None:
    found = await client.assistants.search(graph_id="agent")
    assert len(found) == 1
    assistant = await client.assistants.get(found[0]["assistant_id"])
    assert assistant["graph_id"] == "agent"
    assert assistant["name"] == "agent"  # a graph factory: named by its graph id

    drawn = await client.assistants.get_graph("agent")  # a graph id works as an assistant id
    assert {node["id"] for node in drawn["nodes"]} == {
        "__start__",
        "think",
        "review",
        "act",
        "observe",
        "finish",
        "__end__",
    }
    edges = {(e["source"], e["target"]) for e in drawn["edges"]}
    assert {("__start__", "think"), ("think", "act"), ("act", "observe"), ("act", "think")} <= edges
    assert {("observe", "think"), ("observe", "finish"), ("finish", "__end__")} <= edges


async def test_context_schema_is_the_settings_form(client: LangGraphClient) -> None:
    schemas = await client.assistants.get_schemas(await agent_id(client))
    assert schemas["graph_id"] == "agent"
    context = schemas["context_schema"]
    properties = context["properties"]
    for name in CONTEXT_FIELDS:
        description = AgentContext.model_fields[name].description
        assert description and properties[name]["description"] == description, name
    assert properties["protocol"]["enum"] == ["auto", "native", "text"]
    assert (properties["max_steps"]["minimum"], properties["max_steps"]["maximum"]) == (1, 1000)
    assert not set(OPERATOR_FIELDS) & set(properties)  # a caller cannot reach operator settings
    assert properties["model"]["default"] == "gpt-4o-mini"
    assert context.get("additionalProperties") is False  # a typo in the form is an error
    assert "api_key" not in properties  # only the *name* of the key's variable is a setting


async def test_input_and_output_schemas_are_served(client: LangGraphClient) -> None:
    schemas = await client.assistants.get_schemas(await agent_id(client))
    assert schemas["input_schema"] and schemas["output_schema"]
    assert list(schemas["input_schema"]["properties"]) == ["messages"]
    output = set(schemas["output_schema"]["properties"])
    assert {"messages", "answer", "status", "error", "steps"} <= output


# --------------------------------------------------------------------------- runs and streams


async def test_a_run_on_a_new_thread_answers(
    client: LangGraphClient, script: ScriptedOpenAIServer
) -> None:
    seen = len(script.chat_requests)
    script.add(Reply(content=CALC), Reply(content=DONE))
    thread = await new_thread(client)
    out = await client.runs.wait(thread, "agent", input=ask(), context=TEXT)
    assert out["answer"] == "17 * 23 = 391" and out["status"] == "answered"
    assert [s["kind"] for s in out["steps"]] == ["action", "answer"]
    assert out["steps"][0]["observation"] == "391"
    first, second = script.chat_requests[seen:]
    assert first.body["stop"] == ["Observation:"] and "tools" not in first.body  # text protocol
    assert first.body["model"] == "scripted"
    assert first.headers["authorization"] == "Bearer sk-langgraph-dev-test"
    assert second.messages[-1] == {"role": "user", "content": "Observation: 391"}
    assert script.remaining == []


async def test_updates_stream_follows_the_node_order(
    client: LangGraphClient, script: ScriptedOpenAIServer
) -> None:
    script.add(Reply(content=CALC), Reply(content=DONE))
    thread = await new_thread(client)
    nodes, last = [], {}
    async for part in client.runs.stream(
        thread, "agent", input=ask(), context=TEXT, stream_mode="updates"
    ):
        if part.event == "updates":
            nodes += list(part.data)
            last = part.data
    assert nodes == NODE_ORDER
    assert [s["kind"] for s in last["finish"]["steps"]] == ["action", "answer"]
    assert script.remaining == []


async def test_messages_stream_carries_standard_messages_not_raw_labels(
    client: LangGraphClient, script: ScriptedOpenAIServer
) -> None:
    """What Agent Chat UI reads (`messages-tuple`): under the text protocol a tool card (an
    AIMessage with tool_calls, its thought as text), the ToolMessage, the answer; never the
    model's raw `Thought:/Action:` labels."""
    script.add(Reply(content=CALC), Reply(content=DONE))
    thread = await new_thread(client)
    seen: list[dict[str, Any]] = []
    async for part in client.runs.stream(
        thread, "agent", input=ask(), context=TEXT, stream_mode=["values", "messages-tuple"]
    ):
        if part.event == "messages":
            seen.append(part.data[0])
    assert not any("Action:" in str(m.get("content")) for m in seen)
    step = next(m for m in seen if m.get("tool_calls"))
    assert step["content"] == "I should use the calculator."
    assert step["tool_calls"][0]["name"] == "calculator"
    assert step["tool_calls"][0]["args"] == {"expression": "17 * 23"}
    result = next(m for m in seen if m["type"] == "tool")
    assert result["tool_call_id"] == step["tool_calls"][0]["id"] and result["content"] == "391"
    assert seen[-1]["content"] == "17 * 23 = 391"
    state = await client.threads.get_state(thread)
    kinds = [m["type"] for m in state["values"]["messages"]]
    assert kinds == ["human", "ai", "tool", "ai"]  # no observation as a user message
    assert script.remaining == []


async def test_custom_stream_carries_the_step_events(
    client: LangGraphClient, script: ScriptedOpenAIServer
) -> None:
    script.add(Reply(content=CALC), Reply(content=DONE))
    thread = await new_thread(client)
    events = [
        part.data
        async for part in client.runs.stream(
            thread, "agent", input=ask(), context=TEXT, stream_mode="custom"
        )
        if part.event == "custom"
    ]
    assert [e["event"] for e in events] == [
        "thought",
        "action",
        "observation",
        "thought",
        "answer",
        "final",
    ]
    assert events[1] == {
        "event": "action",
        "tool": "calculator",
        "input": {"expression": "17 * 23"},
    }
    assert events[2] == {
        "event": "observation",
        "tool": "calculator",
        "text": "391",
        "is_error": False,
    }
    assert events[-1] == {
        "event": "final",
        "status": "answered",
        "answer": "17 * 23 = 391",
        "error": None,
    }
    assert script.remaining == []


async def test_history_has_one_checkpoint_per_super_step(
    client: LangGraphClient, script: ScriptedOpenAIServer
) -> None:
    script.add(Reply(content=CALC), Reply(content=DONE))
    thread = await new_thread(client)
    await client.runs.wait(thread, "agent", input=ask(), context=TEXT)
    history = list(reversed(await client.threads.get_history(thread, limit=100)))  # oldest first
    assert [entry["next"] for entry in history] == [["__start__"], *[[n] for n in NODE_ORDER], []]
    steps = len(NODE_ORDER) + 1  # the input's, one per node, and the last
    assert [entry["metadata"]["step"] for entry in history] == list(range(-1, steps))
    assert [entry["metadata"]["source"] for entry in history] == ["input"] + ["loop"] * steps
    for parent, child in itertools.pairwise(history):
        assert child["parent_checkpoint"]["checkpoint_id"] == parent["checkpoint"]["checkpoint_id"]
    assert history[-1]["values"]["status"] == "answered"
    assert script.remaining == []


# --------------------------------------------------------------------------- pauses, time travel


async def test_interrupt_before_act_pauses_and_resume_completes(
    client: LangGraphClient, script: ScriptedOpenAIServer
) -> None:
    script.add(Reply(content=CALC), Reply(content=DONE))
    thread = await new_thread(client)
    paused = await client.runs.wait(
        thread, "agent", input=ask(), context=TEXT, interrupt_before=["act"]
    )
    assert paused.get("answer") is None
    assert (await client.threads.get(thread))["status"] == "interrupted"
    state = await client.threads.get_state(thread)
    assert state["next"] == ["act"]
    assert [task["name"] for task in state["tasks"]] == ["act"]
    assert len(script.remaining) == 1  # the calculator has not run, the model was asked once

    done = await client.runs.wait(thread, "agent", input=None, context=TEXT)
    assert done["answer"] == "17 * 23 = 391" and done["status"] == "answered"
    assert (await client.threads.get(thread))["status"] == "idle"
    assert script.remaining == []


@pytest.mark.skipif(
    "approve" not in AgentContext.model_fields, reason="the approval setting is not in the graph"
)
async def test_approval_pause_and_resume_with_an_edit(
    client: LangGraphClient, script: ScriptedOpenAIServer
) -> None:
    script.add(Reply(content=CALC), Reply(content="Thought: ok.\nFinal Answer: 408"))
    thread = await new_thread(client)
    context = {**TEXT, "approve": ["calculator"]}
    await client.runs.wait(thread, "agent", input=ask(), context=context)
    paused = await client.threads.get(thread)
    assert paused["status"] == "interrupted"
    (pauses,) = paused["interrupts"].values()
    [request] = pauses[0]["value"]["action_requests"]
    assert request["name"] == "calculator" and request["args"] == {"expression": "17 * 23"}
    assert pauses[0]["value"]["review_configs"][0]["allowed_decisions"] == [
        "approve",
        "edit",
        "reject",
        "respond",
    ]

    edit = {
        "type": "edit",
        "edited_action": {"name": "calculator", "args": {"expression": "17 * 24"}},
    }
    done = await client.runs.wait(
        thread, "agent", command={"resume": {"decisions": [edit]}}, context=context
    )
    assert done["answer"] == "408" and done["status"] == "answered"
    told = script.chat_requests[-1].messages[-1]["content"]
    assert told.startswith("Observation: ") and told.endswith("408")  # the edit notice first
    assert "Executed instead: calculator" in told
    assert script.remaining == []
    # the stored step and every client's tool card show the call that ran
    state = await client.threads.get_state(thread)
    [step] = [m for m in state["values"]["messages"] if m["type"] == "ai" and m["tool_calls"]]
    assert step["tool_calls"][0]["args"] == {"expression": "17 * 24"}


async def test_time_travel_forks_from_an_earlier_checkpoint(
    client: LangGraphClient, script: ScriptedOpenAIServer
) -> None:
    seen = len(script.chat_requests)
    script.add(Reply(content=CALC), Reply(content=DONE), Reply(content="Final Answer: 4"))
    thread = await new_thread(client)
    first = await client.runs.wait(thread, "agent", input=ask(), context=TEXT)
    original = await client.threads.get_history(thread, limit=100)
    before_think = next(e for e in original if e["metadata"]["step"] == 0)
    assert before_think["next"] == ["think"]
    question = before_think["values"]["messages"][0]

    # edit the question in that checkpoint (same message id: replaced, not appended) ...
    edited = {"id": question["id"], "type": "human", "content": "What is 2 + 2?"}
    fork = await client.threads.update_state(
        thread, {"messages": [edited]}, checkpoint=before_think["checkpoint"]
    )
    # ... and run again from the fork
    forked = await client.runs.wait(
        thread, "agent", input=None, context=TEXT, checkpoint_id=fork["checkpoint_id"]
    )
    assert forked["answer"] == "4" and forked["status"] == "answered"
    assert [m["content"] for m in forked["messages"]] == ["What is 2 + 2?", "4"]
    assert user_texts(script.chat_requests[-1]) == ["What is 2 + 2?"]
    assert len(script.chat_requests) == seen + 3

    # the original branch is intact and still readable
    after = await client.threads.get_history(thread, limit=100)
    assert {e["checkpoint"]["checkpoint_id"] for e in original} <= {
        e["checkpoint"]["checkpoint_id"] for e in after
    }
    old_end = await client.threads.get_state(thread, checkpoint=original[0]["checkpoint"])
    assert old_end["values"]["answer"] == first["answer"] == "17 * 23 = 391"
    fork_entry = next(e for e in after if e["checkpoint"]["checkpoint_id"] == fork["checkpoint_id"])
    assert fork_entry["metadata"]["source"] == "update"
    fork_parent = fork_entry["parent_checkpoint"]["checkpoint_id"]
    assert fork_parent == before_think["checkpoint"]["checkpoint_id"]
    assert (await client.threads.get_state(thread))["values"]["answer"] == "4"
    assert script.remaining == []


async def test_a_second_question_on_the_thread_sees_the_first(
    client: LangGraphClient, script: ScriptedOpenAIServer
) -> None:
    script.add(Reply(content="Final Answer: 391"), Reply(content="Final Answer: 392"))
    thread = await new_thread(client)
    await client.runs.wait(thread, "agent", input=ask(), context=TEXT)
    out = await client.runs.wait(thread, "agent", input=ask("And plus one?"), context=TEXT)
    assert out["answer"] == "392" and out["status"] == "answered"
    assert [m["content"] for m in out["messages"]] == [QUESTION, "391", "And plus one?", "392"]
    request = script.chat_requests[-1]
    assert user_texts(request) == [QUESTION, "And plus one?"]
    assert "391" in json.dumps(request.messages)
    assert script.remaining == []


# --------------------------------------------------------------------------- packaging


def test_repo_langgraph_json_serves_the_module_graph() -> None:
    config = json.loads((REPO / "langgraph.json").read_text(encoding="utf-8"))
    assert config["graphs"] == {"agent": "./graph/agent.py:served_graph"}
    assert config["dependencies"] == ["."]
    assert config["python_version"] == "3.11"
    assert config.get("env") in (None, ".env")
    assert local_graph.checkpointer is None  # the server supplies its own


def test_langgraph_dockerfile_names_the_project(tmp_path: Path) -> None:
    config = tmp_path / "langgraph.json"
    config.write_text(json.dumps(repo_config(tmp_path, absolute=False)), encoding="utf-8")
    target = tmp_path / "Dockerfile"
    done = subprocess.run(
        [str(LANGGRAPH), "dockerfile", "-c", str(config), str(target)],
        cwd=tmp_path,
        env=server_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    dockerfile = target.read_text(encoding="utf-8")
    assert "FROM langchain/langgraph-api:3.11" in dockerfile
    package = f"/deps/{REPO.name}"
    assert f"COPY --from={REPO.name} . {package}" in dockerfile
    assert f'"agent": "{package}/graph/agent.py:served_graph"' in dockerfile
    assert "uv pip install --system" in dockerfile and "-e ." in dockerfile
    assert f"--build-context {REPO.name}={REPO}" in done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Dockerfile", "langgraph.json"]


async def test_mcp_server_tools_run_under_the_server(
    client: LangGraphClient, script: ScriptedOpenAIServer
) -> None:
    """MCP servers named by the operator start lazily inside `langgraph dev` (off its event
    loop) and their tools run like the built-ins."""
    script.add(Reply(tool_calls=[ToolCall("echo", {"text": "hi"})]), Reply(content="It said hi."))
    thread = await new_thread(client)
    done = await client.runs.wait(
        thread, "agent", input=ask("echo hi"), context={"protocol": "native"}
    )
    assert done["status"] == "answered", done.get("error")
    assert [s["observation"] for s in done["steps"] if s["kind"] == "action"] == ["echo: hi"]
    offered = {t["function"]["name"] for t in script.chat_requests[-2].body["tools"]}
    assert {"echo", "calculator"} <= offered


async def test_a_new_message_during_an_approval_pause_never_runs_the_call(
    client: LangGraphClient, script: ScriptedOpenAIServer
) -> None:
    """What Agent Chat UI sends when the user types during a pause: its stand-in result for the
    pending call (an id of its own) and the new message. The call must not run, the model must
    be told so, and the real endpoint must accept the conversation."""
    script.add(Reply(content=CALC), Reply(content="Thought: fine.\nFinal Answer: skipped it"))
    thread = await new_thread(client)
    context = {**TEXT, "approve": ["calculator"]}
    await client.runs.wait(thread, "agent", input=ask(), context=context)
    state = await client.threads.get_state(thread)
    pending = state["values"]["messages"][-1]["tool_calls"][0]["id"]
    stand_in = {
        "type": "tool",
        "tool_call_id": pending,
        "id": "do-not-render-ui-1",
        "content": "Successfully handled tool call.",
    }
    done = await client.runs.wait(
        thread,
        "agent",
        input={"messages": [stand_in, {"role": "user", "content": "never mind"}]},
        context=context,
    )
    assert done["status"] == "answered", done.get("error")
    assert done["answer"] == "skipped it"
    told = [m for m in user_texts(script.chat_requests[-1]) if "was not run" in m]
    assert len(told) == 1 and "391" not in " ".join(user_texts(script.chat_requests[-1]))
    results = [m for m in done["messages"] if m["type"] == "tool"]
    assert [r["id"] for r in results if r["id"] == "do-not-render-ui-1"] == []
