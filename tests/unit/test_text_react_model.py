"""`TextReAct`: the text protocol as a chat model that any agent runs, LangChain's `create_agent`
included, over a model that has no function calling."""

from __future__ import annotations

import asyncio
import json

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from pydantic import BaseModel, Field

from graph.messages import RAW
from graph.protocols.text.chat_model import TextReAct
from graph.protocols.text.prompts import OBSERVATION
from tests.support.scripted_model import ScriptedChatModel


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two whole numbers."""
    return a * b


ACTION = 'Thought: I multiply.\nAction: multiply\nAction Input: {"a": 17, "b": 23}'
ANSWER = "Thought: The tool said 391.\nFinal Answer: 17 * 23 = 391"


def test_create_agent_runs_a_model_without_function_calling() -> None:
    inner = ScriptedChatModel([ACTION, ANSWER])
    agent = create_agent(TextReAct(inner), tools=[multiply], system_prompt="Be brief.")
    out = agent.invoke({"messages": [HumanMessage("What is 17 * 23?")]})
    step, result, answer = out["messages"][1:]
    assert step.tool_calls[0]["name"] == "multiply"
    assert step.tool_calls[0]["args"] == {"a": 17, "b": 23}
    assert step.content == "I multiply."
    assert step.response_metadata[RAW] == ACTION  # the model's own text, kept
    assert isinstance(result, ToolMessage) and result.content == "391"
    assert answer.content == "17 * 23 = 391" and not answer.tool_calls
    # the inner model read the text protocol: the tools and format in its system prompt, the
    # earlier step as it wrote it, the result as an observation, and the stop sequence
    first, second = inner.requests
    system = first.messages[0]
    assert isinstance(system, SystemMessage)
    assert system.text.startswith("Be brief.") and "- multiply:" in system.text
    assert "Action Input" in system.text
    assert first.stop == [OBSERVATION] and first.tools == []  # no native tools are sent
    assert [m.text for m in second.messages[-2:]] == [ACTION, f"{OBSERVATION} 391"]


def test_an_unusable_reply_is_an_invalid_tool_call_with_the_reason() -> None:
    model = TextReAct(ScriptedChatModel(["Action: multiply\nAction Input: {oops"]))
    reply = model.bind_tools([multiply]).invoke([HumanMessage("x")])
    assert reply.tool_calls == []
    [bad] = reply.invalid_tool_calls
    assert "Action Input" in bad["error"] or "JSON" in bad["error"]
    assert reply.response_metadata[RAW].startswith("Action: multiply")


def test_usage_and_id_are_the_inner_replys() -> None:
    usage = {"input_tokens": 12, "output_tokens": 5, "total_tokens": 17}
    inner = ScriptedChatModel([AIMessage(ANSWER, id="r-1", usage_metadata=usage)])
    reply = TextReAct(inner).invoke([HumanMessage("x")])
    assert reply.id == "r-1" and reply.usage_metadata == usage


def test_async_and_sync_give_the_same_message() -> None:
    sync = TextReAct(ScriptedChatModel([ACTION])).bind_tools([multiply])
    asyn = TextReAct(ScriptedChatModel([ACTION])).bind_tools([multiply])
    a = sync.invoke([HumanMessage("x")])
    b = asyncio.run(asyn.ainvoke([HumanMessage("x")]))
    strip = [{k: v for k, v in c.items() if k != "id"} for c in a.tool_calls]
    assert strip == [{k: v for k, v in c.items() if k != "id"} for c in b.tool_calls]


class OptionsSeen(ScriptedChatModel):
    """Records the request options (the scripted model keeps only messages, stop, tools)."""

    seen: list[dict] = Field(default_factory=list)

    def _reply(self, messages, stop, **kwargs):  # type: ignore[no-untyped-def]
        self.seen.append(kwargs)
        return super()._reply(messages, stop, **kwargs)


def test_grammar_goes_in_the_request_body_only_when_asked() -> None:
    plain = OptionsSeen([ANSWER])
    TextReAct(plain).bind_tools([multiply]).invoke([HumanMessage("x")])
    assert "extra_body" not in plain.seen[0]
    constrained = OptionsSeen([ANSWER])
    TextReAct(constrained, grammar=True).bind_tools([multiply]).invoke([HumanMessage("x")])
    grammar = constrained.seen[0]["extra_body"]["grammar"]
    assert "root" in grammar and "multiply" in grammar


def test_structured_output_through_the_text_protocol() -> None:
    class Product(BaseModel):
        name: str
        price: float

    written = json.dumps({"name": "tea", "price": 2.5})
    inner = ScriptedChatModel([f"Thought: fill it.\nAction: Product\nAction Input: {written}"])
    out = TextReAct(inner).with_structured_output(Product).invoke([HumanMessage("tea, 2.5")])
    assert out == Product(name="tea", price=2.5)


def test_raw_text_is_not_streamed_to_a_client_the_parsed_step_is() -> None:
    inner = ScriptedChatModel([ACTION, ANSWER])
    agent = create_agent(TextReAct(inner), tools=[multiply])
    streamed = [
        chunk
        for chunk, _ in agent.stream(
            {"messages": [HumanMessage("What is 17 * 23?")]}, stream_mode="messages"
        )
    ]
    texts = [c.text for c in streamed if isinstance(c, AIMessage)]
    assert not any("Action Input" in t for t in texts), texts
    assert any(getattr(c, "tool_calls", None) for c in streamed)


def test_a_plain_input_is_passed_as_the_single_argument() -> None:
    @tool
    def shout(text: str) -> str:
        """Say it loudly."""
        return text.upper()

    inner = ScriptedChatModel(["Action: shout\nAction Input: hello there"])
    reply = TextReAct(inner).bind_tools([shout]).invoke([HumanMessage("x")])
    [call] = reply.tool_calls
    assert call["name"] == "shout" and list(call["args"].values()) == ["hello there"]


def test_standard_call_settings_go_with_each_call_and_client_ones_are_named() -> None:
    """`temperature`, `max_tokens` and `stop`, LangChain's standard parameters, reach the
    inner model with every call; a client setting (`api_key`, `timeout`) belongs to the
    inner model and is said to; anything else is refused in one sentence."""
    import pytest

    inner = ScriptedChatModel([ANSWER])
    model = TextReAct(inner, temperature=0, max_tokens=50, stop=["END"])
    model.invoke("go")
    [request] = inner.requests
    assert request.stop == [OBSERVATION, "END"]
    with pytest.warns(UserWarning, match="TextReAct ignores api_key: set it on the model"):
        TextReAct(inner, api_key="sk-x")
    with pytest.raises(TypeError, match="TextReAct takes no top_k: set it on the model"):
        TextReAct(inner, top_k=3)


def test_a_forced_tool_is_named_in_the_prompt_and_prebuilt_agents_keep_it() -> None:
    """`tool_choice="<name>"` asks for that tool by name, and the binding names its tools, so
    LangGraph's prebuilt agent takes the model as bound instead of binding it again."""
    from langgraph.prebuilt import create_react_agent

    @tool
    def add(a: int, b: int) -> int:
        """Add two whole numbers."""
        return a + b

    inner = ScriptedChatModel([ACTION, ANSWER])
    bound = TextReAct(inner).bind_tools([add, multiply], tool_choice="multiply")
    agent = create_react_agent(bound, tools=[add, multiply])
    out = agent.invoke({"messages": [HumanMessage("What is 17 * 23?")]})
    assert out["messages"][-1].content == "17 * 23 = 391"
    assert "You must use the tool multiply" in inner.requests[0].messages[0].text


def test_binding_tools_keeps_one_model_and_each_binding_its_own_tools() -> None:
    """As a provider's `bind_tools`: the tools ride on the binding, so an agent that binds at
    every call (`create_agent`) reuses one model, and two bindings of it do not mix tools."""

    @tool
    def add(a: int, b: int) -> int:
        """Add two whole numbers."""
        return a + b

    inner = ScriptedChatModel([ACTION, "Final Answer: 5"])
    model = TextReAct(inner)
    with_multiply = model.bind_tools([multiply])
    with_add = model.bind_tools([add], tool_choice="add")
    assert with_multiply.bound is model and with_add.bound is model
    assert with_multiply.invoke("17 * 23?").tool_calls[0]["name"] == "multiply"
    assert with_add.invoke("2 + 3?").content == "5"
    first, second = (request.messages[0].text for request in inner.requests)
    assert "- multiply:" in first and "- add:" not in first
    assert "- add:" in second and "- multiply:" not in second
    assert "You must use the tool add" in second and "You must use" not in first
    assert model.tools == []  # the model itself offers nothing
