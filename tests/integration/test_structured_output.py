"""`build_graph(response_format=...)`: a typed result in `structured_response`, under both
protocols, with the real ChatOpenAI against the scripted OpenAI-compatible server."""

from __future__ import annotations

import json

import pytest
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel
from typing_extensions import TypedDict

from graph import build_graph
from tests.support.openai_server import Reply, ScriptedOpenAIServer, ToolCall

pytestmark = pytest.mark.integration


class Weather(BaseModel):
    city: str
    celsius: float


class WeatherDict(TypedDict):
    city: str
    celsius: float


@tool
def lookup(city: str) -> str:
    """Look up the weather of a city."""
    return f"{city}: 21.5 C"


def model(server: ScriptedOpenAIServer) -> ChatOpenAI:
    return ChatOpenAI(model="m", base_url=server.base_url, api_key="sk", max_retries=0)


def ask(agent) -> dict:
    return agent.invoke({"messages": [("user", "Weather in Oslo?")]})


@pytest.mark.parametrize("schema", [Weather, ToolStrategy(Weather)], ids=["auto", "tool"])
def test_native_tool_strategy(schema) -> None:
    script = [
        Reply(tool_calls=[ToolCall("lookup", {"city": "Oslo"})]),
        Reply(tool_calls=[ToolCall("Weather", {"city": "Oslo", "celsius": 21.5})]),
    ]
    with ScriptedOpenAIServer(script) as server:
        out = ask(build_graph(model=model(server), tools=[lookup], response_format=schema))
        bodies = [r.body for r in server.chat_requests]
    assert out["structured_response"] == Weather(city="Oslo", celsius=21.5)
    assert out["status"] == "answered" and json.loads(out["answer"])["city"] == "Oslo"
    assert {t["function"]["name"] for t in bodies[0]["tools"]} == {"lookup", "Weather"}
    assert bodies[0]["tool_choice"] == "required"


def test_native_provider_strategy() -> None:
    with ScriptedOpenAIServer([Reply(content='{"city": "Oslo", "celsius": 21.5}')]) as server:
        out = ask(
            build_graph(model=model(server), tools=[], response_format=ProviderStrategy(Weather))
        )
        body = server.chat_requests[0].body
    assert out["structured_response"] == Weather(city="Oslo", celsius=21.5)
    assert body["response_format"]["type"] == "json_schema"


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (Weather, Weather(city="Oslo", celsius=21.5)),
        (WeatherDict, {"city": "Oslo", "celsius": 21.5}),
        (
            {
                "title": "weather",
                "type": "object",
                "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
                "required": ["city", "celsius"],
            },
            {"city": "Oslo", "celsius": 21.5},
        ),
    ],
    ids=["pydantic", "typeddict", "json-schema"],
)
def test_text_protocol_checks_the_json_answer_and_corrects_a_mismatch(schema, expected) -> None:
    script = [
        Reply(content="Thought: I know\nFinal Answer: It is warm in Oslo."),
        Reply(content='Thought: as JSON\nFinal Answer: {"city": "Oslo", "celsius": 21.5}'),
    ]
    with ScriptedOpenAIServer(script) as server:
        agent = build_graph(model=model(server), tools=[], protocol="text", response_format=schema)
        out = ask(agent)
        requests = server.chat_requests
    assert out["structured_response"] == expected
    assert "matching this JSON schema" in requests[0].messages[0]["content"]
    told = requests[1].messages[-1]["content"]
    assert "must be one JSON object matching the schema" in told
    assert [s["kind"] for s in out["steps"]][:1] == ["invalid"]


def test_a_tool_answer_that_does_not_match_is_told_back_and_corrected() -> None:
    script = [
        Reply(tool_calls=[ToolCall("Weather", {"city": "Oslo"}, id="w1")]),
        Reply(tool_calls=[ToolCall("Weather", {"city": "Oslo", "celsius": 3})]),
    ]
    with ScriptedOpenAIServer(script) as server:
        out = ask(build_graph(model=model(server), tools=[], response_format=ToolStrategy(Weather)))
        second = server.chat_requests[1].messages
    assert out["structured_response"] == Weather(city="Oslo", celsius=3)
    told = [x for x in second if x.get("role") == "tool"]
    assert told and "celsius" in told[0]["content"]


@pytest.mark.parametrize("protocol", ["native", "text"])
def test_ask_with_a_schema_file(tmp_path, protocol: str) -> None:
    from tests.support.cli import cli_env, run_cli

    schema = tmp_path / "weather.json"
    schema.write_text(
        json.dumps(
            {
                "type": "object",
                "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
                "required": ["city", "celsius"],
            }
        )
    )
    if protocol == "native":  # gpt-4o-mini's profile has JSON-schema mode: the provider's
        reply = Reply(content='{"city": "Oslo", "celsius": 21.5}')
    else:
        reply = Reply(content='Final Answer: {"city": "Oslo", "celsius": 21.5}')
    with ScriptedOpenAIServer([reply]) as server:
        env = cli_env(server.base_url, tmp_path / "state")
        args = ["ask", "Weather in Oslo?", "--schema", str(schema), "--protocol", protocol]
        done = run_cli(*args, "--tools", "calculator", "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["structured_response"] == {"city": "Oslo", "celsius": 21.5}
    if protocol == "native":
        assert server.chat_requests[0].body["response_format"]["type"] == "json_schema"


def test_a_schema_file_that_is_not_json_is_one_sentence(tmp_path) -> None:
    from tests.support.cli import cli_env, run_cli

    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    env = cli_env("http://127.0.0.1:9/v1", tmp_path / "state")
    done = run_cli("ask", "hi", "--schema", str(bad), env=env)
    assert done.returncode == 2
    assert done.stderr.startswith("error: --schema") and "cannot read a JSON schema" in done.stderr


def test_a_plain_text_reply_that_ignores_tool_choice_is_not_an_answer() -> None:
    """A model that ignores `tool_choice` and answers in text gave no typed result: the reply is
    unusable (the model is told and asked again), and the run ends with status error, never
    `answered` with no `structured_response`."""
    script = [Reply(content="It is 21.5 C in Oslo.")] * 3
    with ScriptedOpenAIServer(script) as server:
        out = ask(build_graph(model=model(server), tools=[lookup], response_format=Weather))
        told = server.chat_requests[1].body["messages"][-1]["content"]
    assert out["status"] == "error" and out.get("structured_response") is None
    assert "by calling the `Weather` tool, not as plain text" in out["error"]
    assert "`Weather` tool" in told


def test_a_corrected_plain_text_reply_still_ends_answered() -> None:
    script = [
        Reply(content="It is 21.5 C in Oslo."),
        Reply(tool_calls=[ToolCall("Weather", {"city": "Oslo", "celsius": 21.5})]),
    ]
    with ScriptedOpenAIServer(script) as server:
        out = ask(build_graph(model=model(server), tools=[lookup], response_format=Weather))
    assert out["status"] == "answered"
    assert out["structured_response"] == Weather(city="Oslo", celsius=21.5)


def nested(levels: int) -> dict:
    schema: dict = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return {"title": "deep", **schema}


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (nested(300), "response_format: the schema nests more than 64 levels"),
        ({"title": "t", "type": "nonsense"}, "response_format: not a valid JSON Schema at type"),
    ],
    ids=["300-deep", "bad-type"],
)
def test_a_schema_that_cannot_work_is_refused_when_the_graph_is_built(schema, expected) -> None:
    """Refused up front in one sentence, not mid-run as a failed call to an endpoint and model
    the run never used."""
    with pytest.raises(ValueError, match=expected) as refused:
        build_graph(model="m", base_url="http://127.0.0.1:9/v1", tools=[], response_format=schema)
    assert "\n" not in str(refused.value)


def test_a_schema_of_ordinary_depth_is_taken() -> None:
    build_graph(model="m", base_url="http://127.0.0.1:9/v1", tools=[], response_format=nested(20))
