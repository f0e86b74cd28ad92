"""The agent with the real ChatOpenAI client against the scripted OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver

from graph import build_graph
from graph.persistence.resume import resume_config
from tests.support.openai_server import HTTPError, Reply, ScriptedOpenAIServer, ToolCall

KEY = "sk-test-0123456789abcdef-secret"
FAST_RETRY = {"retry-after-ms": "1"}

executions: list[str] = []


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    executions.append(city)
    return f"{city}: 23.4°C"


@pytest.fixture(autouse=True)
def endpoint(openai_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("REACT_AGENT_MODEL", "deepseek-v3")
    executions.clear()


def ask(agent, question: str, config: dict | None = None) -> dict:
    return agent.invoke({"messages": [("user", question)]}, config)


def test_text_protocol_sends_stop_and_parses_the_seed_reply(
    openai_server: ScriptedOpenAIServer,
) -> None:
    openai_server.add(
        Reply(
            content='Thought: I need the weather of Beijing first.\n\nAction:\n```\n{\n "action":'
            ' "lookup",\n "action_input": {\n "city": "北京"\n }\n}\n```\nObservation: fake'
        ),
        Reply(content="Thought: I have it.\nFinal Answer: 北京 23.4°C"),
    )
    out = ask(build_graph(tools=[lookup], protocol="text"), "北京天气怎么样?")
    assert out["status"] == "answered" and out["answer"] == "北京 23.4°C"
    first, second = openai_server.chat_requests
    assert first.body["stop"] == ["Observation:"]
    assert "tools" not in first.body
    assert first.body["model"] == "deepseek-v3"
    assert "lookup" in first.body["messages"][0]["content"]
    # the server honours stop, so the made-up observation never came back
    assert second.body["messages"][-2]["content"].endswith("```")
    assert second.body["messages"][-1] == {"role": "user", "content": "Observation: 北京: 23.4°C"}


def test_native_protocol_sends_tools_and_tool_results(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.add(
        Reply(
            tool_calls=[
                ToolCall("lookup", {"city": "Beijing"}, id="call_1"),
                ToolCall("lookup", {"city": "Guangzhou"}, id="call_2"),
            ]
        ),
        Reply(content="Beijing and Guangzhou are both about 23°C."),
    )
    out = ask(build_graph(tools=[lookup], protocol="native"), "Weather in Beijing and Guangzhou?")
    assert out["status"] == "answered"
    first, second = openai_server.chat_requests
    assert [t["function"]["name"] for t in first.body["tools"]] == ["lookup"]
    assert "stop" not in first.body
    tool_results = [m for m in second.body["messages"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tool_results] == [
        ("call_1", "Beijing: 23.4°C"),
        ("call_2", "Guangzhou: 23.4°C"),
    ]
    assert sorted(executions) == ["Beijing", "Guangzhou"]


def test_auto_falls_back_to_text_when_tools_are_rejected(
    openai_server: ScriptedOpenAIServer,
) -> None:
    openai_server.add(
        HTTPError(400, "tools are not supported by this model", code="unsupported_tools"),
        Reply(content='Thought: look it up\nAction: lookup\nAction Input: {"city": "Paris"}'),
        Reply(content="Thought: done\nFinal Answer: Paris is 23.4°C"),
    )
    out = ask(build_graph(tools=[lookup], protocol="auto"), "Paris?")
    assert out["status"] == "answered" and out["answer"] == "Paris is 23.4°C"
    bodies = [r.body for r in openai_server.chat_requests]
    assert "tools" in bodies[0]
    assert all("tools" not in b and b["stop"] == ["Observation:"] for b in bodies[1:])
    assert out["steps"][0]["kind"] == "fallback"
    assert "tools are not supported" in out["steps"][0]["observation"]


def test_message_tokens_stream_from_think(openai_server: ScriptedOpenAIServer) -> None:
    """Native replies stream token by token; text-protocol replies are raw labels, so clients
    get the parsed answer as one message instead (never `Thought:` / `Final Answer:` text), and
    the text request is read whole (`TextReAct` calls the model's `_generate`: no token of it is
    for a client, and a refusal a stream would drop survives)."""
    openai_server.add(Reply(content="The capital is Paris."))
    openai_server.add(Reply(content="Thought: easy.\nFinal Answer: The capital is Paris."))
    seen: dict[str, list[str]] = {"native": [], "text": []}
    for protocol in ("native", "text"):
        agent = build_graph(tools=[lookup], protocol=protocol)
        for message, meta in agent.stream(
            {"messages": [("user", "Capital of France?")]}, stream_mode="messages"
        ):
            if meta["langgraph_node"] == "think" and message.content:
                seen[protocol].append(message.content)
    assert len(seen["native"]) > 3 and "".join(seen["native"]) == "The capital is Paris."
    assert seen["text"] == ["The capital is Paris."]
    native, text = openai_server.chat_requests
    assert native.body["stream"] is True and not text.body.get("stream")


def test_endpoint_down_is_one_sentence_and_the_run_resumes(
    openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    openai_server.add(
        Reply(tool_calls=[ToolCall("lookup", {"city": "Oslo"})]),
        *[HTTPError(503, "upstream overloaded", type="server_error", headers=FAST_RETRY)] * 3,
    )
    with SqliteSaver.from_conn_string(str(tmp_path / "state.sqlite")) as saver:
        agent = build_graph(tools=[lookup], protocol="native", checkpointer=saver)
        config = {"configurable": {"thread_id": "down"}}
        out = ask(agent, "Oslo?", config)
        assert out["status"] == "error"
        assert out["error"] == (
            f"The model endpoint {openai_server.base_url} (model 'deepseek-v3') kept failing "
            "with HTTP 503 after 2 retries (upstream overloaded); resume the run once the "
            "endpoint is healthy."
        )
        assert len(openai_server.chat_requests) == 4  # 1 + the first try and 2 retries
        assert executions == ["Oslo"]

        openai_server.add(Reply(content="Oslo is 23.4°C."))  # the endpoint is back
        target = resume_config(agent, config)
        assert target is not None
        resumed = agent.invoke(None, target)
        assert resumed["status"] == "answered" and resumed["answer"] == "Oslo is 23.4°C."
        assert executions == ["Oslo"]  # the finished tool call was not run again
        assert [s["kind"] for s in resumed["steps"]] == ["action", "answer"]


def test_unreachable_endpoint_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("REACT_AGENT_MAX_RETRIES", "0")
    out = ask(build_graph(tools=[lookup]), "hi")
    assert out["status"] == "error"
    assert out["error"].startswith(
        "Could not reach the model endpoint http://127.0.0.1:9/v1 (model 'deepseek-v3')"
    )
    assert out["error"].endswith("and that the server is running.")
    assert "OPENAI_BASE_URL, --base-url" in out["error"]


def test_rejected_key_is_explained_without_the_key(
    openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    openai_server.add(
        HTTPError(401, f"Incorrect API key provided: {KEY}", type="authentication_error")
    )
    path = tmp_path / "state.sqlite"
    with SqliteSaver.from_conn_string(str(path)) as saver:
        agent = build_graph(tools=[lookup], checkpointer=saver)
        out = ask(agent, "hi", {"configurable": {"thread_id": "key"}})
    assert out["status"] == "error"
    assert "rejected the API key (HTTP 401); check OPENAI_API_KEY" in out["error"]
    assert KEY not in json.dumps(out, default=str)
    assert KEY.encode() not in path.read_bytes()
    assert openai_server.chat_requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_key_never_enters_checkpoints(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    openai_server.add(
        Reply(tool_calls=[ToolCall("lookup", {"city": "Rome"})]),
        Reply(content="Rome is 23.4°C."),
    )
    path = tmp_path / "state.sqlite"
    with SqliteSaver.from_conn_string(str(path)) as saver:
        out = ask(
            build_graph(tools=[lookup], checkpointer=saver),
            "Rome?",
            {"configurable": {"thread_id": "k"}},
        )
    assert out["status"] == "answered"
    assert KEY.encode() not in path.read_bytes()


def test_async_runs_share_one_endpoint(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.add(*[Reply(content=f"Answer {i}", delay=0.1) for i in range(10)])
    agent = build_graph(tools=[lookup], protocol="native")

    async def main() -> list[dict]:
        return await asyncio.gather(
            *(agent.ainvoke({"messages": [("user", f"q{i}")]}) for i in range(10))
        )

    results = asyncio.run(main())
    assert sorted(r["answer"] for r in results) == sorted(f"Answer {i}" for i in range(10))
    assert all(r["status"] == "answered" for r in results)
