"""`TextReAct` keeps the contract of a LangChain chat model with function calling: a call cut off
at the token limit never runs, the response cache keeps models apart, `.bind(...)` on the inner
model is the model, a fenced JSON answer is the structured output, `ProviderStrategy` works,
and the profile, token counts and built-in tools behave as an agent expects of a model."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain.agents.structured_output import ProviderStrategy
from langchain_core.caches import InMemoryCache
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from graph.protocols.text.chat_model import TextReAct
from tests.support.openai_server import Reply, ScriptedOpenAIServer
from tests.support.scripted_model import ScriptedChatModel

sent: list[str] = []


@tool
def send_email(to: str, subject: str, body: str) -> str:
    """Send an email."""
    sent.append(body)
    return "sent"


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two whole numbers."""
    return a * b


class Person(BaseModel):
    """A person."""

    name: str
    age: int


CUT = (
    'Thought: I send it.\nAction: send_email\nAction Input: {"to": "bob@x.com", '
    '"subject": "Contract", "body": "Dear Bob, we will NOT'
)
WHOLE = (
    'Thought: I send.\nAction: send_email\nAction Input: {"to": "b", "subject": "s", "body": "x"}'
)
ACTION = 'Thought: I multiply.\nAction: multiply\nAction Input: {"a": 17, "b": 23}'


def openai(server: ScriptedOpenAIServer, **settings: Any) -> ChatOpenAI:
    return ChatOpenAI(base_url=server.base_url, api_key="sk-test", **{"model": "m", **settings})


# -- 1. a reply cut off at the token limit -------------------------------------------------------


def test_a_call_cut_off_at_the_token_limit_never_runs_in_create_agent() -> None:
    sent.clear()
    with ScriptedOpenAIServer([Reply(content=CUT, finish_reason="length")]) as server:
        agent = create_agent(TextReAct(openai(server, max_tokens=40)), tools=[send_email])
        out = agent.invoke({"messages": [("user", "email bob")]})
    assert sent == []  # the repaired body ("Dear Bob, we will NOT") was never sent
    step = out["messages"][-1]
    assert not step.tool_calls
    (invalid,) = step.invalid_tool_calls
    assert invalid["name"] == "send_email" and "token limit" in invalid["error"]


@pytest.mark.parametrize(
    "meta",
    [{"finish_reason": "length"}, {"stop_reason": "max_tokens"}, {"finish_reason": "MAX_TOKENS"}],
)
@pytest.mark.parametrize(
    "text",
    [CUT, CUT.rsplit('"body"', 1)[0], 'Thought: I look.\nAction: multiply\nAction Input: {"a": 1'],
)
def test_each_providers_token_limit_makes_a_cut_call_invalid(meta: dict, text: str) -> None:
    model = TextReAct(ScriptedChatModel([AIMessage(content=text, response_metadata=meta)]))
    out = model.bind_tools([send_email, multiply]).invoke("go")
    assert not out.tool_calls and "cut off at the token limit" in out.invalid_tool_calls[0]["error"]


@pytest.mark.parametrize(
    "text",
    [WHOLE, f"{WHOLE}\nObservation: sent. Now I will tell the user th"],
)
def test_a_call_written_whole_before_the_cut_runs(text: str) -> None:
    meta = {"finish_reason": "length"}
    model = TextReAct(ScriptedChatModel([AIMessage(content=text, response_metadata=meta)]))
    out = model.bind_tools([send_email]).invoke("go")
    assert out.tool_calls[0]["args"] == {"to": "b", "subject": "s", "body": "x"}


def test_a_cut_inside_a_string_before_an_invented_observation_is_refused() -> None:
    text = f"{CUT}\nObservation: sent"
    meta = {"finish_reason": "length"}
    model = TextReAct(ScriptedChatModel([AIMessage(content=text, response_metadata=meta)]))
    out = model.bind_tools([send_email]).invoke("go")
    assert not out.tool_calls and out.invalid_tool_calls


def test_a_loose_call_that_ended_on_its_own_is_still_repaired() -> None:
    meta = {"finish_reason": "stop"}  # the model stopped: the missing brace is a slip, repaired
    text = CUT.replace("NOT", 'NOT sign"')
    model = TextReAct(ScriptedChatModel([AIMessage(content=text, response_metadata=meta)]))
    out = model.bind_tools([send_email]).invoke("go")
    assert out.tool_calls[0]["args"]["body"] == "Dear Bob, we will NOT sign"


# -- 2. the response cache -----------------------------------------------------------------------


def test_the_response_cache_keeps_different_inner_models_apart() -> None:
    cache = InMemoryCache()
    a = TextReAct(FakeListChatModel(responses=["Final Answer: from A"]), cache=cache)
    b = TextReAct(FakeListChatModel(responses=["Final Answer: from B"]), cache=cache)
    assert (a.invoke("hi").content, b.invoke("hi").content) == ("from A", "from B")
    replies = [Reply(content=f"Final Answer: {n}") for n in ("one", "two", "three")]
    with ScriptedOpenAIServer(replies) as server:
        cache = InMemoryCache()
        models = [
            TextReAct(openai(server, model="gpt-4o"), cache=cache),
            TextReAct(openai(server, model="deepseek-chat"), cache=cache),
            TextReAct(openai(server, model="gpt-4o"), cache=cache, temperature=1.5),
        ]
        answers = [model.invoke("hi").content for model in models]
        again = models[0].invoke("hi").content  # the same model and settings: cached
        assert len(server.chat_requests) == 3
    assert (answers, again) == (["one", "two", "three"], "one")


# -- 3. `.bind(...)` on the inner model ----------------------------------------------------------


def test_a_bound_inner_model_is_called_as_the_model_with_its_bound_arguments() -> None:
    with ScriptedOpenAIServer([Reply(content=ACTION, model="gpt-x")]) as server:
        model = TextReAct(openai(server, model="scripted").bind(stop=["END1"], temperature=0.3))
        params = model._get_ls_params()
        out = model.bind_tools([multiply]).invoke("x", stop=["END3"])
        body = server.chat_requests[-1].body
    assert (params["ls_model_name"], params["ls_temperature"]) == ("scripted", 0.3)
    assert body["stop"] == ["Observation:", "END3", "END1"] and body["temperature"] == 0.3
    assert out.response_metadata["model_name"] == "gpt-x"  # a reply of this run, not a child's


# -- 4. a fenced JSON answer under with_structured_output ---------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        'Thought: x\nFinal Answer: ```json\n{"name": "Bo", "age": 30}\n```',
        'Final Answer:\n```json\n{"name": "Bo", "age": 30}\n```',
        '```json\n{"name": "Bo", "age": 30}\n```',
    ],
)
def test_a_fenced_json_answer_is_the_structured_output(reply: str) -> None:
    structured = TextReAct(ScriptedChatModel([reply])).with_structured_output(Person)
    assert structured.invoke("who") == Person(name="Bo", age=30)


def test_a_fenced_code_answer_keeps_its_fence_for_the_user() -> None:
    code = "```python\nprint(1)\n```"
    out = TextReAct(ScriptedChatModel([f"Final Answer: {code}"])).invoke("show code")
    assert out.content == code


# -- 5. ProviderStrategy -------------------------------------------------------------------------


class Answer(BaseModel):
    """The final answer."""

    value: int
    note: str


def test_provider_strategy_is_asked_for_in_the_prompt_never_sent() -> None:
    final = 'Thought: done\nFinal Answer: ```json\n{"value": 391, "note": "ok"}\n```'
    with ScriptedOpenAIServer([Reply(content=ACTION), Reply(content=final)]) as server:
        agent = create_agent(
            TextReAct(openai(server)), tools=[multiply], response_format=ProviderStrategy(Answer)
        )
        out = agent.invoke({"messages": [("user", "17*23?")]})
        bodies = [request.body for request in server.chat_requests]
    assert out["structured_response"] == Answer(value=391, note="ok")
    assert json.loads(out["messages"][-1].content) == {"value": 391, "note": "ok"}
    assert out["messages"][1].tool_calls[0]["name"] == "multiply"  # a tool step was written
    for body in bodies:
        assert "response_format" not in body
        system = body["messages"][0]["content"]
        assert "Final Answer must be exactly one JSON object" in system and '"note"' in system


# -- 6. profile, token counts, a provider's built-in tool ---------------------------------------


def test_the_profile_is_the_inner_models_with_tool_calling() -> None:
    window = {"max_input_tokens": 1000, "tool_calling": False, "structured_output": True}
    inner = ScriptedChatModel(["Final Answer: hi"], profile=window)
    model = TextReAct(inner)
    assert model.profile is not None and model.profile["max_input_tokens"] == 1000
    assert model.profile["tool_calling"] and not model.profile["structured_output"]
    trigger = SummarizationMiddleware(model=model, trigger=("fraction", 0.8))
    create_agent(model, tools=[multiply], middleware=[trigger])  # refused without a profile


def test_tokens_are_counted_by_the_inner_model() -> None:
    inner = FakeListChatModel(responses=["x"], custom_get_token_ids=lambda text: [0] * len(text))
    model = TextReAct(inner)
    messages = [SystemMessage("Be brief."), HumanMessage("hello there")]
    assert model.get_num_tokens("hello") == 5
    assert model.get_num_tokens_from_messages(messages) == inner.get_num_tokens_from_messages(
        messages
    )
    with_tools = model.get_num_tokens_from_messages(messages, tools=[multiply])
    assert with_tools == inner.get_num_tokens_from_messages(model.request(messages, [multiply]))


def test_a_provider_builtin_tool_is_left_out_and_the_others_run() -> None:
    inner = ScriptedChatModel([ACTION])
    bound = TextReAct(inner).bind_tools([multiply, {"type": "web_search_preview"}])
    out = bound.invoke("17*23?")
    assert out.tool_calls[0]["name"] == "multiply"
    assert "web_search_preview" not in inner.requests[0].messages[0].text
