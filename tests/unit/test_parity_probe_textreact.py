"""A differential probe of `TextReAct` as a stand-alone LangChain chat model: the same scripted
conversation run (a) through a fake model that answers with native `tool_calls` and (b) through
`TextReAct` over a fake model that writes the text protocol (`Action:` / `Action Input:` /
`Final Answer:`), in `create_agent`, LangGraph's prebuilt agent, with middleware, and called
directly (`bind_tools(...).invoke`, `stream`, `batch`, structured output, runnable wrappers).

Compared on what a user sees: the tools called and their arguments, the ToolMessages, the final
answer, the number of model calls, errors. A text step's thought is its message's content
(natively the content of a call step is whatever the model wrote beside it): the text scripts
here write no thought where the two are compared message by message.

Each test passes where the two agree; a real defect is a strict xfail that asserts the right
behaviour; a difference inherent to a text protocol is pinned as `test_by_design_*` with why.
Found when it was written, and fixed (`replies.read_text_reply`, `prompts.step_as_text`,
`TextReAct`): function-calling options (`strict`, `parallel_tool_calls`) sent to an inner model
given no tools; `stream` yielding a whole `AIMessage` instead of a chunk; a trailing prefill sent
as a finished answer; a native turn's broken call sent back as an empty answer; a call a
middleware edited sent back as the model first wrote it; `with_structured_output` losing an
object written as the Final Answer; an unknown tool, a missing argument or an incomplete
structured object ending a `create_agent` run (an invalid call no agent answers) where natively
the tool runner reports the error and the model goes on; an unlabelled question to the user
shown as nothing; prose from a model bound to no tools (a summary) read as a failed step; an
inner model wrapped by `.bind` / `.with_retry` refused; an inner reply's native calls dropped.
"""

from __future__ import annotations

import asyncio
import enum
import json
import pickle
from typing import Any, Literal

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import (
    HumanInTheLoopMiddleware,
    LLMToolSelectorMiddleware,
    ModelCallLimitMiddleware,
    ModelFallbackMiddleware,
    ModelRetryMiddleware,
    SummarizationMiddleware,
    TodoListMiddleware,
    ToolCallLimitMiddleware,
    ToolRetryMiddleware,
    after_model,
    wrap_model_call,
)
from langchain.agents.structured_output import ToolStrategy
from langchain_core.callbacks import BaseCallbackHandler, get_usage_metadata_callback
from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    GenericFakeChatModel,
)
from langchain_core.load import dumpd
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import ConfigurableField
from langchain_core.tools import BaseTool, tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command
from pydantic import BaseModel
from typing_extensions import TypedDict

from graph.messages import RAW
from graph.protocols.text.chat_model import TextReAct
from graph.protocols.text.prompts import OBSERVATION
from tests.support.openai_server import Reply, ScriptedOpenAIServer, ToolCall
from tests.support.scripted_model import ScriptedChatModel, calls, tool_call

pytestmark = [
    pytest.mark.filterwarnings("ignore:The v3 streaming protocol"),
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:create_react_agent has been moved"),
]

QUESTION = {"messages": [HumanMessage("What is 2 * 3?")]}


# -- tools ---------------------------------------------------------------------------------------


@tool
def mult(a: int, b: int) -> int:
    """Multiply two whole numbers."""
    return a * b


@tool
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


@tool
def shout(text: str) -> str:
    """Say it loudly."""
    return text.upper()


@tool
def clock() -> str:
    """The time now (no arguments)."""
    return "12:00"


def plain_add(a: int, b: int) -> int:
    """Add two numbers (a plain function)."""
    return a + b


class Lookup(BaseModel):
    """Look a word up (a pydantic class)."""

    word: str


class Lookup2(TypedDict):
    """Look a word up (a TypedDict)."""

    word: str


OPENAI_DICT = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
    },
}


class Echo(BaseTool):
    name: str = "echo"
    description: str = "Echo the text back (a BaseTool subclass)."

    def _run(self, text: str) -> str:
        return text


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: int
    y: int = 0


@tool
def paint(
    color: Color,
    at: Point,
    mode: Literal["fast", "slow"] = "fast",
    layers: list[int] | None = None,
    note: str | None = None,
) -> str:
    """Paint: enum, nested, literal, list and optional arguments."""
    return f"{color.value} {at.x},{at.y} {mode} {layers} {note}"


class Product(BaseModel):
    """A product."""

    name: str
    price: float


class ProductDict(TypedDict):
    """A product."""

    name: str
    price: float


PRODUCT_SCHEMA = {
    "title": "ProductSchema",
    "description": "A product.",
    "type": "object",
    "properties": {"name": {"type": "string"}, "price": {"type": "number"}},
    "required": ["name", "price"],
}
TEA = {"name": "tea", "price": 2.5}


# -- scripts and what a user sees ----------------------------------------------------------------


def act(name: str, args: dict[str, Any] | str, thought: str = "") -> str:
    """A text-protocol action (no thought by default, so content compares with native)."""
    shown = json.dumps(args) if isinstance(args, dict) else args
    head = f"Thought: {thought}\n" if thought else ""
    return f"{head}Action: {name}\nAction Input: {shown}"


def final(text: str) -> str:
    return f"Thought: I know it now.\nFinal Answer: {text}"


def native_act(name: str, args: dict[str, Any]) -> AIMessage:
    return calls(tool_call(name, args))


def seen(out: dict[str, Any]) -> list[tuple]:
    """What a user sees of a run: each message's kind and text, its calls (no ids), a tool
    result's name and status."""
    rows: list[tuple] = []
    for m in out["messages"]:
        row: tuple = (type(m).__name__, m.text)
        if isinstance(m, AIMessage):
            row += (
                tuple((c["name"], json.dumps(c["args"], sort_keys=True)) for c in m.tool_calls),
            )
        if isinstance(m, ToolMessage):
            row += (m.name, m.status)
        rows.append(row)
    return rows


class Pair:
    """The same conversation through a native fake and through TextReAct over a text fake."""

    def __init__(self, native: list[Any], text: list[Any]) -> None:
        self.native = ScriptedChatModel(native)
        self.text = ScriptedChatModel(text)

    def agents(self, tools: list[Any], **kwargs: Any) -> tuple[Any, Any]:
        middleware = kwargs.pop("middleware", lambda: [])
        return (
            create_agent(self.native, tools=tools, middleware=middleware(), **kwargs),
            create_agent(TextReAct(self.text), tools=tools, middleware=middleware(), **kwargs),
        )

    def run(self, tools: list[Any], inputs: Any = None, **kwargs: Any) -> tuple[dict, dict]:
        native, text = self.agents(tools, **kwargs)
        inputs = inputs or QUESTION
        return native.invoke(inputs), text.invoke(inputs)

    @property
    def counts(self) -> tuple[int, int]:
        return len(self.native.requests), len(self.text.requests)


def sent(model: ScriptedChatModel, index: int = -1) -> list[str]:
    """The texts of a request's messages after the system prompt."""
    return [m.text for m in model.requests[index].messages[1:]]


# == bind_tools: every tool form, every option ===================================================

TOOL_FORMS = {
    "tool": (mult, {"a": 2, "b": 3}),
    "plain_function": (plain_add, {"a": 2, "b": 3}),
    "pydantic": (Lookup, {"word": "tea"}),
    "typeddict": (Lookup2, {"word": "tea"}),
    "openai_dict": (OPENAI_DICT, {"query": "tea"}),
    "convert_to_openai_tool": (convert_to_openai_tool(mult), {"a": 2, "b": 3}),
    "basetool_subclass": (Echo(), {"text": "tea"}),
    "no_args": (clock, {}),
    "enum_nested_optional_list": (paint, {"color": "red", "at": {"x": 1}, "layers": [1, 2]}),
}


@pytest.mark.parametrize("form", list(TOOL_FORMS))
def test_every_tool_form_is_offered_and_called_as_written(form: str) -> None:
    spec, args = TOOL_FORMS[form]
    function = convert_to_openai_tool(spec)["function"]
    inner = ScriptedChatModel([act(function["name"], args)])
    reply = TextReAct(inner).bind_tools([spec]).invoke("go")
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [(function["name"], args)]
    system = inner.requests[0].messages[0].text
    assert f"- {function['name']}:" in system
    params = function["parameters"]
    assert json.dumps(params, separators=(", ", ": ")) in system or not params.get("properties")


@pytest.mark.parametrize(
    "choice",
    ["auto", "any", "required", "mult", {"type": "function", "function": {"name": "mult"}}],
)
def test_every_tool_choice_is_accepted(choice: Any) -> None:
    reply = (
        TextReAct(ScriptedChatModel([act("mult", {"a": 2, "b": 3})]))
        .bind_tools([mult], tool_choice=choice)
        .invoke("go")
    )
    assert reply.tool_calls[0]["args"] == {"a": 2, "b": 3}


def test_tool_choice_none_offers_no_tools_and_gets_an_answer() -> None:
    """Natively `tool_choice="none"` means no call comes back: the text prompt offers no
    tools, and whatever the model writes is its answer."""
    inner = ScriptedChatModel([final("6")])
    reply = TextReAct(inner).bind_tools([mult], tool_choice="none").invoke("go")
    assert reply.content == "6" and reply.tool_calls == []
    assert "- mult:" not in inner.requests[0].messages[0].text


def test_by_design_tool_choice_is_not_enforced() -> None:
    """A text reply cannot be forced to be a call: with `tool_choice="any"` a Final Answer is
    still an answer (chat_model.py: "accepted and not sent")."""
    reply = (
        TextReAct(ScriptedChatModel([final("6")]))
        .bind_tools([mult], tool_choice="any")
        .invoke("go")
    )
    assert reply.content == "6" and reply.tool_calls == []


@pytest.mark.parametrize("option", [{"strict": True}, {"parallel_tool_calls": False}])
def test_function_calling_options_are_not_sent_to_an_inner_model_without_tools(
    option: dict[str, Any],
) -> None:
    with ScriptedOpenAIServer([Reply(content=final("6"))]) as server:
        from langchain_openai import ChatOpenAI

        llm = ChatOpenAI(base_url=server.base_url, api_key="sk-test", model="scripted")
        reply = TextReAct(llm).bind_tools([mult], **option).invoke("go")
        body = server.requests[0].body
    assert reply.content == "6"
    assert not set(option) & set(body)


# == direct use ==================================================================================


def test_a_string_and_a_message_list_give_the_same_reply() -> None:
    inner = ScriptedChatModel([act("mult", {"a": 2, "b": 3})] * 2)
    model = TextReAct(inner).bind_tools([mult])
    a, b = model.invoke("What is 2 * 3?"), model.invoke([HumanMessage("What is 2 * 3?")])
    assert a.tool_calls[0]["args"] == b.tool_calls[0]["args"] == {"a": 2, "b": 3}
    assert sent(inner, 0) == sent(inner, 1)


def test_batch_and_ainvoke_answer_each_input() -> None:
    model = TextReAct(ScriptedChatModel([final("one"), final("two"), final("three")]))
    bound = model.bind_tools([mult])
    assert sorted(r.content for r in bound.batch(["a", "b"])) == ["one", "two"]
    assert asyncio.run(bound.ainvoke("c")).content == "three"


def test_astream_gives_the_parsed_step() -> None:
    model = TextReAct(ScriptedChatModel([act("mult", {"a": 2, "b": 3})])).bind_tools([mult])

    async def collect() -> list[BaseMessage]:
        return [chunk async for chunk in model.astream("go")]

    [chunk] = asyncio.run(collect())
    assert chunk.tool_calls[0]["args"] == {"a": 2, "b": 3}
    assert "Action Input" not in chunk.text


def test_stream_yields_message_chunks_that_add_up_to_the_invoke_reply() -> None:
    script = [act("mult", {"a": 2, "b": 3})]
    native = GenericFakeChatModel(messages=iter(["six"]))
    assert all(isinstance(c, AIMessageChunk) for c in native.stream("go"))  # the native norm
    model = TextReAct(GenericFakeChatModel(messages=iter(script))).bind_tools([mult])
    chunks = list(model.stream("go"))
    assert all(isinstance(c, AIMessageChunk) for c in chunks)
    total = chunks[0]
    for chunk in chunks[1:]:
        total += chunk
    assert [c["name"] for c in total.tool_call_chunks] == ["mult"]
    assert total.tool_calls[0]["args"] == {"a": 2, "b": 3}


def test_runnable_wrappers_work_around_a_bound_model() -> None:
    retried = TextReAct(ScriptedChatModel([RuntimeError("down"), final("ok")])).bind_tools([mult])
    assert (
        retried.with_retry(stop_after_attempt=2, wait_exponential_jitter=False).invoke("go").content
        == "ok"
    )
    broken = TextReAct(ScriptedChatModel([RuntimeError("down")])).bind_tools([mult])
    backup = TextReAct(ScriptedChatModel([final("backup")])).bind_tools([mult])
    assert broken.with_fallbacks([backup]).invoke("go").content == "backup"
    tagged = TextReAct(ScriptedChatModel([final("ok")])).with_config(tags=["mine"])
    assert tagged.invoke("go").content == "ok"


def test_with_fallbacks_then_bind_tools_binds_every_model() -> None:
    broken = TextReAct(ScriptedChatModel([RuntimeError("down")]))
    backup_inner = ScriptedChatModel([act("mult", {"a": 2, "b": 3})])
    model = broken.with_fallbacks([TextReAct(backup_inner)]).bind_tools([mult])
    assert model.invoke("go").tool_calls[0]["name"] == "mult"
    assert "- mult:" in backup_inner.requests[0].messages[0].text


def test_configurable_alternatives_and_fields() -> None:
    model = TextReAct(ScriptedChatModel([final("a")])).configurable_alternatives(
        ConfigurableField(id="model"), default_key="a", b=TextReAct(ScriptedChatModel([final("b")]))
    )
    assert model.bind_tools([mult]).invoke("go").content == "a"
    assert model.with_config(configurable={"model": "b"}).invoke("go").content == "b"
    fields = TextReAct(ScriptedChatModel([final("c")])).configurable_fields(
        grammar=ConfigurableField(id="grammar")
    )
    assert fields.with_config(configurable={"grammar": False}).invoke("go").content == "c"


def test_usage_is_counted_once_and_metadata_and_id_are_the_inner_replys() -> None:
    usage = {"input_tokens": 12, "output_tokens": 5, "total_tokens": 17}
    reply = AIMessage(
        final("x"), id="r-1", usage_metadata=usage, response_metadata={"model_name": "m1", "k": 1}
    )
    with get_usage_metadata_callback() as counter:
        out = TextReAct(ScriptedChatModel([reply])).invoke("go")
    assert counter.usage_metadata == {"m1": usage}
    assert out.id == "r-1" and out.usage_metadata == usage and out.response_metadata["k"] == 1


def test_one_call_is_one_chat_model_run() -> None:
    """The inner model is called inside TextReAct's own run (as `ChatHuggingFace` calls the
    model it wraps): a callback sees one chat-model run per call, so tracers and usage counters
    count its tokens once; a runnable around the model (`with_retry`) runs as a child run."""

    class Starts(BaseCallbackHandler):
        def __init__(self) -> None:
            self.names: list[str] = []

        def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
            self.names.append(kwargs.get("name") or "")

    handler = Starts()
    TextReAct(ScriptedChatModel([final("x")])).invoke("go", {"callbacks": [handler]})
    assert len(handler.names) == 1
    TextReAct(ScriptedChatModel([final("x")]).with_retry()).invoke("go", {"callbacks": [handler]})
    assert len(handler.names) == 3

    async def events() -> list[tuple[str, str]]:
        model = TextReAct(ScriptedChatModel([final("x")])).bind_tools([mult])
        return [(e["event"], e["name"]) async for e in model.astream_events("go", version="v2")]

    assert asyncio.run(events()) == [
        ("on_chat_model_start", "TextReAct"),
        ("on_chat_model_stream", "TextReAct"),
        ("on_chat_model_end", "TextReAct"),
    ]


def test_by_design_default_instructions_are_written_when_the_caller_gives_none() -> None:
    """The text protocol lives in the system prompt, so there always is one: with no caller
    instructions the project's default ones lead it (a native model would get none)."""
    inner = ScriptedChatModel([final("x")])
    TextReAct(inner).bind_tools([mult]).invoke("go")
    system = inner.requests[0].messages[0]
    assert isinstance(system, SystemMessage) and "- mult:" in system.text


# == history as the inner model reads it =========================================================


def test_a_native_turn_with_parallel_calls_reaches_the_model_call_by_call() -> None:
    history = [
        HumanMessage("2*3 and 4*5?"),
        calls(tool_call("mult", {"a": 2, "b": 3}, "c1"), tool_call("mult", {"a": 4, "b": 5}, "c2")),
        ToolMessage("6", tool_call_id="c1"),
        ToolMessage("20", tool_call_id="c2"),
    ]
    inner = ScriptedChatModel([final("6 and 20")])
    assert TextReAct(inner).bind_tools([mult]).invoke(history).content == "6 and 20"
    texts = sent(inner)
    assert texts[1].count("Action: mult") == 2
    assert texts[2:] == [f"{OBSERVATION} 6", f"{OBSERVATION} 20"]


def test_by_design_parallel_calls_in_history_are_several_actions_in_one_reply() -> None:
    """A native step with two calls can only be written as two actions in one assistant
    message, though the prompt asks for one Action per reply; the results follow in order."""
    history = [
        HumanMessage("q"),
        calls(tool_call("mult", {"a": 2, "b": 3}, "c1"), tool_call("add", {"a": 4, "b": 5}, "c2")),
        ToolMessage("6", tool_call_id="c1"),
        ToolMessage("9", tool_call_id="c2"),
    ]
    inner = ScriptedChatModel([final("ok")])
    TextReAct(inner).bind_tools([mult, add]).invoke(history)
    assert sent(inner)[1] == (
        'Action: mult\nAction Input: {"a": 2, "b": 3}\nAction: add\nAction Input: {"a": 4, "b": 5}'
    )


@pytest.mark.parametrize(
    ("result", "shown"),
    [
        (ToolMessage("boom", tool_call_id="c1", status="error"), "boom"),
        (ToolMessage("res", artifact={"rows": 3}, tool_call_id="c1"), "res"),
        (ToolMessage([{"type": "text", "text": "six"}], tool_call_id="c1"), "six"),
        (
            ToolMessage(
                [
                    {"type": "text", "text": "chart"},
                    {"type": "image", "base64": "AAAA", "mime_type": "image/png"},
                ],
                tool_call_id="c1",
            ),
            "chart\n[image/png, 3 bytes, not shown]",
        ),
    ],
    ids=["error_status", "artifact", "text_blocks", "image_block"],
)
def test_tool_results_of_every_shape_are_observations(result: ToolMessage, shown: str) -> None:
    history = [HumanMessage("q"), calls(tool_call("mult", {"a": 2, "b": 3}, "c1")), result]
    inner = ScriptedChatModel([final("ok")])
    TextReAct(inner).bind_tools([mult]).invoke(history)
    assert sent(inner)[-1] == f"{OBSERVATION} {shown}"


def test_an_answer_stored_as_content_blocks_goes_back_as_a_final_answer() -> None:
    history = [
        HumanMessage("q"),
        AIMessage([{"type": "text", "text": "Six"}, {"type": "text", "text": "."}]),
        HumanMessage("and again?"),
    ]
    inner = ScriptedChatModel([final("ok")])
    TextReAct(inner).bind_tools([mult]).invoke(history)
    assert sent(inner) == ["q", "Final Answer: Six.", "and again?"]


def test_every_system_message_reaches_the_system_prompt() -> None:
    history = [SystemMessage("Be brief."), HumanMessage("q"), SystemMessage("Use metric.")]
    inner = ScriptedChatModel([final("ok")])
    TextReAct(inner).bind_tools([mult]).invoke(history)
    system = inner.requests[0].messages[0].text
    assert system.startswith("Be brief.\n\nUse metric.") and sent(inner) == ["q"]


def test_a_lone_system_message_is_answered() -> None:
    inner = ScriptedChatModel([final("hello")])
    assert TextReAct(inner).invoke([SystemMessage("Greet the user.")]).content == "hello"
    assert sent(inner) == []


def test_a_trailing_assistant_prefill_is_sent_as_written() -> None:
    inner = ScriptedChatModel([final("ok")])
    TextReAct(inner).bind_tools([mult]).invoke([HumanMessage("q"), AIMessage("Thought: I should")])
    assert sent(inner)[-1] == "Thought: I should"


def test_a_native_invalid_call_in_history_is_sent_as_the_call_written() -> None:
    broken = AIMessage(
        "",
        invalid_tool_calls=[
            {
                "name": "mult",
                "args": '{"a": 2,',
                "id": "c1",
                "error": "bad JSON",
                "type": "invalid_tool_call",
            }
        ],
    )
    inner = ScriptedChatModel([final("ok")])
    TextReAct(inner).bind_tools([mult]).invoke([HumanMessage("q"), broken, HumanMessage("again")])
    step = sent(inner)[1]
    assert "mult" in step and not step.startswith("Final Answer:")


def test_a_call_edited_after_the_model_replied_is_sent_back_as_edited() -> None:
    @after_model
    def clamp(state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        last = state["messages"][-1]
        if not last.tool_calls:
            return None
        edited = [{**c, "args": {**c["args"], "b": 5}} for c in last.tool_calls]
        return {"messages": [last.model_copy(update={"tool_calls": edited})]}

    pair = Pair(
        [native_act("mult", {"a": 2, "b": 3}), "10"], [act("mult", {"a": 2, "b": 3}), final("10")]
    )
    native, text = pair.run([mult], middleware=lambda: [clamp])
    assert seen(native)[2] == seen(text)[2] == ("ToolMessage", "10", "mult", "success")
    assert '"b": 5' in sent(pair.text)[1]


# == structured output ===========================================================================


@pytest.mark.parametrize(
    ("schema", "name", "expected"),
    [
        (Product, "Product", Product(**TEA)),
        (ProductDict, "ProductDict", TEA),
        (PRODUCT_SCHEMA, "ProductSchema", TEA),
    ],
    ids=["pydantic", "typeddict", "json_schema"],
)
def test_with_structured_output_of_every_schema_kind(schema: Any, name: str, expected: Any) -> None:
    model = TextReAct(ScriptedChatModel([act(name, TEA)] * 2))
    assert model.with_structured_output(schema).invoke("tea, 2.5") == expected
    raw = model.with_structured_output(schema, include_raw=True).invoke("tea, 2.5")
    assert raw["parsed"] == expected and raw["parsing_error"] is None
    assert raw["raw"].tool_calls[0]["name"] == name


@pytest.mark.parametrize("method", ["function_calling", "json_mode", "json_schema"])
def test_with_structured_output_accepts_every_method(method: str) -> None:
    model = TextReAct(ScriptedChatModel([act("Product", TEA)]))
    assert model.with_structured_output(Product, method=method).invoke("tea") == Product(**TEA)


def test_with_structured_output_reads_an_object_written_as_the_final_answer() -> None:
    model = TextReAct(ScriptedChatModel([f"Final Answer: {json.dumps(TEA)}"]))
    assert model.with_structured_output(Product).invoke("tea, 2.5") == Product(**TEA)


@pytest.mark.parametrize("form", ["tool_strategy", "schema", "typeddict"])
def test_create_agent_response_format_matches_native(form: str) -> None:
    schema = ProductDict if form == "typeddict" else Product
    response_format = ToolStrategy(Product) if form == "tool_strategy" else schema
    name = schema.__name__
    pair = Pair([native_act(name, TEA)], [act(name, TEA)])
    native, text = pair.run([mult], response_format=response_format)
    assert native["structured_response"] == text["structured_response"]
    assert seen(native) == seen(text) and pair.counts == (1, 1)


def test_tool_strategy_retries_an_incomplete_object_like_native() -> None:
    pair = Pair(
        [native_act("Product", {"name": "tea"}), native_act("Product", TEA)],
        [act("Product", {"name": "tea"}), act("Product", TEA)],
    )
    native, text = pair.run([mult], response_format=ToolStrategy(Product))
    assert native["structured_response"] == Product(**TEA)
    assert text.get("structured_response") == Product(**TEA) and pair.counts == (2, 2)


# == create_agent: reply forms ===================================================================


@pytest.mark.parametrize(
    "written",
    [
        act("mult", {"a": 2, "b": 3}),
        'Action: mult\nAction Input: ```json\n{"a": 2, "b": 3}\n```',
        'Thought: I multiply.\nAction: mult[{"a": 2, "b": 3}]',
        'Action: mult\nAction Input: {"a": 2, "b": 3}\nObservation: 6\nFinal Answer: 6',
    ],
    ids=["canonical", "fenced_json", "brackets", "answer_after_action"],
)
def test_a_call_in_any_common_form_runs_as_the_native_call(written: str) -> None:
    pair = Pair([native_act("mult", {"a": 2, "b": 3}), "6"], [written, final("6")])
    native, text = pair.run([mult])

    def strip(rows: list[tuple]) -> list[tuple]:  # a written thought is the step's content
        return [r[:1] + r[2:] for r in rows]

    assert strip(seen(native)) == strip(seen(text)) and pair.counts == (2, 2)


def test_a_plain_string_input_fills_a_one_argument_tool() -> None:
    pair = Pair(
        [native_act("shout", {"text": "hi"}), "HI"],
        ["Action: shout\nAction Input: hi", final("HI")],
    )
    native, text = pair.run([shout])
    assert seen(native) == seen(text)


def test_a_tool_without_arguments_runs_with_no_input() -> None:
    pair = Pair([native_act("clock", {}), "noon"], ["Action: clock", final("noon")])
    native, text = pair.run([clock])
    assert seen(native) == seen(text)


def test_a_plain_answer_and_an_empty_reply_end_the_run_alike() -> None:
    pair = Pair(["It is 6.", ""], ["It is 6.", ""])
    for _ in range(2):
        native, text = pair.run([mult])
        assert [r[:2] for r in seen(native)] == [r[:2] for r in seen(text)]


def test_wrong_arguments_are_a_tool_error_both_ways() -> None:
    pair = Pair(
        [native_act("mult", {"a": "x", "b": 3}), "sorry"],
        [act("mult", {"a": "x", "b": 3}), final("sorry")],
    )
    native, text = pair.run([mult])
    assert seen(native) == seen(text) and pair.counts == (2, 2)


def test_a_broken_call_ends_the_run_both_ways() -> None:
    broken = AIMessage(
        "",
        invalid_tool_calls=[
            {
                "name": "mult",
                "args": "{oops",
                "id": "c1",
                "error": "bad",
                "type": "invalid_tool_call",
            }
        ],
    )
    pair = Pair([broken], ["Action: mult\nAction Input: {oops"])
    native, text = pair.run([mult])
    assert (
        [r[0] for r in seen(native)] == [r[0] for r in seen(text)] == ["HumanMessage", "AIMessage"]
    )
    assert text["messages"][-1].invalid_tool_calls and pair.counts == (1, 1)


def test_an_unknown_tool_is_reported_to_the_model_and_the_run_goes_on() -> None:
    pair = Pair(
        [native_act("divide", {"a": 6, "b": 3}), "done"],
        [act("divide", {"a": 6, "b": 3}), final("done")],
    )
    native, text = pair.run([mult])
    for out in (native, text):
        assert [m.status for m in out["messages"] if isinstance(m, ToolMessage)] == ["error"]
        assert out["messages"][-1].text == "done"
    assert pair.counts == (2, 2)


def test_a_missing_argument_is_reported_to_the_model_and_the_run_goes_on() -> None:
    pair = Pair([native_act("mult", {"a": 2}), "done"], [act("mult", {"a": 2}), final("done")])
    native, text = pair.run([mult])
    for out in (native, text):
        assert [m.status for m in out["messages"] if isinstance(m, ToolMessage)] == ["error"]
        assert out["messages"][-1].text == "done"
    assert pair.counts == (2, 2)


@pytest.mark.parametrize(
    "question",
    [
        "I need to know which city you mean. Could you tell me?",
        "Sure, I can run `mult` for you. Which two numbers?",
        "Which numbers? For example:",
    ],
    ids=["announces", "names_the_tool", "ends_with_colon"],
)
def test_an_unlabelled_question_to_the_user_reaches_the_user(question: str) -> None:
    pair = Pair([question], [question, final(question)])
    native, text = pair.run([mult])
    assert native["messages"][-1].text == question
    assert text["messages"][-1].text == question


def test_by_design_only_the_first_of_several_actions_runs() -> None:
    """The protocol is one Action per reply: the rest are dropped with a note, where a native
    model's parallel calls all run."""
    two = act("mult", {"a": 2, "b": 3}) + "\n" + act("mult", {"a": 4, "b": 5})
    pair = Pair(
        [calls(tool_call("mult", {"a": 2, "b": 3}), tool_call("mult", {"a": 4, "b": 5})), "6, 20"],
        [two, final("6, 20")],
    )
    native, text = pair.run([mult])
    assert [m.text for m in native["messages"] if isinstance(m, ToolMessage)] == ["6", "20"]
    assert [m.text for m in text["messages"] if isinstance(m, ToolMessage)] == ["6"]
    assert "ignored" in text["messages"][1].response_metadata["react_note"]


def test_by_design_a_tool_name_in_another_case_is_resolved() -> None:
    """The reader resolves a written name to a listed tool (toolset.resolve); natively a
    wrong-case name is an unknown tool."""
    pair = Pair(
        [native_act("Mult", {"a": 2, "b": 3}), "6"], [act("Mult", {"a": 2, "b": 3}), final("6")]
    )
    native, text = pair.run([mult])
    assert [m.status for m in native["messages"] if isinstance(m, ToolMessage)] == ["error"]
    assert [(m.name, m.status) for m in text["messages"] if isinstance(m, ToolMessage)] == [
        ("mult", "success")
    ]


def test_by_design_an_action_line_after_the_final_answer_is_not_part_of_it() -> None:
    """reader.py: an action written after an answer is noise, so an answer line that reads as
    an Action label ends the answer; natively the whole text is the answer."""
    written = "Final Answer: Steps:\n- first\nAction: buy milk"
    reply = TextReAct(ScriptedChatModel([written])).bind_tools([mult]).invoke("go")
    assert reply.content == "Steps:\n- first"


def test_by_design_observation_ends_the_reply() -> None:
    """`Observation:` is the stop sequence, so an answer quoting it is cut there."""
    inner = ScriptedChatModel(["Final Answer: The log said\nObservation: all good"])
    assert TextReAct(inner).invoke("go").content == "The log said"
    assert inner.requests[0].stop == [OBSERVATION]


# == create_agent: middleware ====================================================================

BASIC = ([native_act("mult", {"a": 2, "b": 3}), "6"], [act("mult", {"a": 2, "b": 3}), final("6")])
TWICE = (
    [native_act("mult", {"a": 2, "b": 3}), native_act("mult", {"a": 6, "b": 2}), "12"],
    [act("mult", {"a": 2, "b": 3}), act("mult", {"a": 6, "b": 2}), final("12")],
)


@pytest.mark.parametrize(
    ("script", "middleware"),
    [
        (TWICE, lambda: [ToolCallLimitMiddleware(run_limit=1)]),
        (TWICE, lambda: [ToolCallLimitMiddleware(run_limit=1, exit_behavior="end")]),
        (TWICE, lambda: [ModelCallLimitMiddleware(run_limit=1, exit_behavior="end")]),
        (BASIC, lambda: [ToolRetryMiddleware(max_retries=2, initial_delay=0)]),
        (
            ([RuntimeError("flaky"), *BASIC[0]], [RuntimeError("flaky"), *BASIC[1]]),
            lambda: [ModelRetryMiddleware(max_retries=2, initial_delay=0)],
        ),
    ],
    ids=["tool_call_limit", "tool_call_limit_end", "model_call_limit", "tool_retry", "model_retry"],
)
def test_limit_and_retry_middleware_behave_alike(script: tuple, middleware: Any) -> None:
    pair = Pair(*script)
    native, text = pair.run([mult], middleware=middleware)
    assert seen(native) == seen(text) and pair.counts[0] == pair.counts[1]


DECISIONS = [
    {"type": "approve"},
    {"type": "edit", "edited_action": {"name": "mult", "args": {"a": 5, "b": 5}}},
    {"type": "reject", "message": "no"},
    {"type": "respond", "message": "it is 7"},
]


@pytest.mark.parametrize("mode", ["batched", "per_call"])
@pytest.mark.parametrize("decision", DECISIONS, ids=lambda d: d["type"])
def test_human_in_the_loop_behaves_alike(mode: str, decision: dict[str, Any]) -> None:
    pair = Pair(*BASIC)
    outs = []
    for thread, agent in enumerate(
        pair.agents(
            [mult],
            checkpointer=InMemorySaver(),
            middleware=lambda: [
                HumanInTheLoopMiddleware(interrupt_on={"mult": True}, interrupt_mode=mode)
            ],
        )
    ):
        config = {"configurable": {"thread_id": str(thread)}}
        paused = agent.invoke(QUESTION, config)
        assert paused["__interrupt__"]
        resume = {"decisions": [decision]} if mode == "batched" else decision
        outs.append(agent.invoke(Command(resume=resume), config))
    assert seen(outs[0]) == seen(outs[1]) and pair.counts == (2, 2)


def test_todo_list_middleware_tool_and_prompt_reach_the_text_model() -> None:
    todos = {"todos": [{"content": "multiply", "status": "pending"}]}
    pair = Pair([native_act("write_todos", todos), "6"], [act("write_todos", todos), final("6")])
    native, text = pair.run([mult], middleware=lambda: [TodoListMiddleware()])
    assert seen(native) == seen(text)
    system = pair.text.requests[0].messages[0].text
    assert "write_todos" in system and "- write_todos:" in system
    assert native["todos"] == text["todos"]


def test_a_wrap_model_call_that_edits_tools_and_system_message_is_honoured() -> None:
    @wrap_model_call
    def only_add(request: Any, handler: Any) -> Any:
        tools = [t for t in request.tools if t.name == "add"]
        return handler(request.override(tools=tools, system_message=SystemMessage("Be brief.")))

    pair = Pair(
        [native_act("add", {"a": 2, "b": 3}), "5"], [act("add", {"a": 2, "b": 3}), final("5")]
    )
    native, text = pair.run([mult, add], middleware=lambda: [only_add])
    assert seen(native) == seen(text)
    assert [t["function"]["name"] for t in pair.native.requests[0].tools] == ["add"]
    system = pair.text.requests[0].messages[0].text
    assert system.startswith("Be brief.") and "- add:" in system and "- mult:" not in system


def test_summarization_middleware_behaves_alike() -> None:
    def summarize() -> list[Any]:
        model = ScriptedChatModel(["SUMMARY"], cycle=True)
        return [SummarizationMiddleware(model=model, trigger=("messages", 3), keep=("messages", 1))]

    pair = Pair(*BASIC)
    native, text = pair.run([mult], middleware=summarize)
    assert seen(native) == seen(text)
    assert "SUMMARY" in sent(pair.text)[0]


def test_textreact_as_the_summarization_model_keeps_the_summary() -> None:
    summary = "Let me summarize: the user asked for 2 * 3 and mult gave 6."

    def middleware() -> list[Any]:
        model = TextReAct(ScriptedChatModel([summary], cycle=True))
        return [SummarizationMiddleware(model=model, trigger=("messages", 3), keep=("messages", 1))]

    _, text = Pair(*BASIC).run([mult], middleware=middleware)
    assert summary in text["messages"][0].text


@pytest.mark.parametrize(
    "prose", ["I need to point out that 2 * 3 is 6.", "Summary:"], ids=["announces", "colon"]
)
def test_without_tools_any_prose_reply_is_the_answer(prose: str) -> None:
    reply = TextReAct(ScriptedChatModel([prose])).invoke("go")
    assert reply.content == prose and reply.invalid_tool_calls == []


def test_textreact_as_the_fallback_model() -> None:
    def down() -> ScriptedChatModel:
        return ScriptedChatModel([RuntimeError("down")], cycle=True)

    inner = ScriptedChatModel(BASIC[1])
    native = create_agent(
        down(), tools=[mult], middleware=[ModelFallbackMiddleware(ScriptedChatModel(BASIC[0]))]
    ).invoke(QUESTION)
    text = create_agent(
        down(), tools=[mult], middleware=[ModelFallbackMiddleware(TextReAct(inner))]
    ).invoke(QUESTION)
    assert seen(native) == seen(text) and len(inner.requests) == 2


@pytest.mark.parametrize("selector", ["own_model", "agents_model"])
def test_llm_tool_selector_behaves_alike(selector: str) -> None:
    pick = {"tools": ["add"]}
    if selector == "own_model":
        n_sel = ScriptedChatModel([native_act("ToolSelectionResponse", pick)], cycle=True)
        t_sel = TextReAct(ScriptedChatModel([act("ToolSelectionResponse", pick)], cycle=True))
        pair = Pair(
            [native_act("add", {"a": 2, "b": 3}), "5"], [act("add", {"a": 2, "b": 3}), final("5")]
        )
        outs = [
            create_agent(
                model,
                tools=[mult, add],
                middleware=[LLMToolSelectorMiddleware(model=sel, max_tools=1)],
            ).invoke(QUESTION)
            for model, sel in ((pair.native, n_sel), (TextReAct(pair.text), t_sel))
        ]
        system = pair.text.requests[0].messages[0].text
    else:
        pair = Pair(
            [
                native_act("ToolSelectionResponse", pick),
                native_act("add", {"a": 2, "b": 3}),
                native_act("ToolSelectionResponse", pick),
                "5",
            ],
            [
                act("ToolSelectionResponse", pick),
                act("add", {"a": 2, "b": 3}),
                act("ToolSelectionResponse", pick),
                final("5"),
            ],
        )
        outs = pair.run([mult, add], middleware=lambda: [LLMToolSelectorMiddleware(max_tools=1)])
        system = pair.text.requests[1].messages[0].text
    assert seen(outs[0]) == seen(outs[1])
    assert "- add:" in system and "- mult:" not in system


def test_langgraph_prebuilt_agent_behaves_alike() -> None:
    from langgraph.prebuilt import create_react_agent

    pair = Pair(*BASIC)
    native = create_react_agent(pair.native, tools=[mult], prompt="Be brief.").invoke(QUESTION)
    text = create_react_agent(TextReAct(pair.text), tools=[mult], prompt="Be brief.").invoke(
        QUESTION
    )
    assert seen(native) == seen(text)
    assert pair.text.requests[0].messages[0].text.startswith("Be brief.")


def test_async_create_agent_behaves_alike() -> None:
    pair = Pair(*BASIC)
    native, text = pair.agents([mult])
    outs = [asyncio.run(agent.ainvoke(QUESTION)) for agent in (native, text)]
    assert seen(outs[0]) == seen(outs[1]) and pair.counts == (2, 2)


# == inner models ================================================================================


@pytest.mark.parametrize("kind", ["generic_fake", "fake_list"])
def test_langchain_fake_models_as_the_inner_model(kind: str) -> None:
    script = [act("mult", {"a": 2, "b": 3}), final("6")]
    inner = (
        GenericFakeChatModel(messages=iter(script))
        if kind == "generic_fake"
        else FakeListChatModel(responses=script)
    )
    native = create_agent(ScriptedChatModel(BASIC[0]), tools=[mult]).invoke(QUESTION)
    text = create_agent(TextReAct(inner), tools=[mult]).invoke(QUESTION)
    assert seen(native) == seen(text)


@pytest.mark.parametrize("streaming", [False, True])
def test_chat_openai_as_the_inner_model(streaming: bool) -> None:
    from langchain_openai import ChatOpenAI

    def run(script: list[Reply], text: bool) -> tuple[dict, dict, list]:
        with ScriptedOpenAIServer(script) as server:
            llm = ChatOpenAI(
                base_url=server.base_url,
                api_key="sk-test",
                model="scripted",
                streaming=streaming,
                stream_usage=True,
            )
            with get_usage_metadata_callback() as counter:
                out = create_agent(TextReAct(llm) if text else llm, tools=[mult]).invoke(QUESTION)
            return out, counter.usage_metadata, server.requests

    native, n_usage, _ = run(
        [
            Reply(tool_calls=[ToolCall("mult", {"a": 2, "b": 3})], usage=(10, 5)),
            Reply(content="6", usage=(20, 3)),
        ],
        False,
    )
    text, t_usage, requests = run(
        [
            Reply(content=act("mult", {"a": 2, "b": 3}), usage=(10, 5)),
            Reply(content=final("6"), usage=(20, 3)),
        ],
        True,
    )
    assert seen(native) == seen(text) and n_usage == t_usage
    assert requests[0].body["stop"] == [OBSERVATION] and "tools" not in requests[0].body


@pytest.mark.parametrize("wrap", ["bind", "with_retry"])
def test_a_wrapped_chat_model_is_accepted_as_the_inner_model(wrap: str) -> None:
    base = ScriptedChatModel([act("mult", {"a": 2, "b": 3})])
    inner = base.bind(temperature=0) if wrap == "bind" else base.with_retry(stop_after_attempt=2)
    reply = TextReAct(inner).bind_tools([mult]).invoke("go")  # type: ignore[arg-type]
    assert reply.tool_calls[0]["args"] == {"a": 2, "b": 3}


@pytest.mark.parametrize(
    "reply",
    [
        AIMessage(
            [
                {"type": "reasoning", "reasoning": "hmm"},
                {"type": "text", "text": act("mult", {"a": 2, "b": 3})},
            ],
            response_metadata={"model_provider": "anthropic"},
        ),
        AIMessage("<think>hmm</think>\n" + act("mult", {"a": 2, "b": 3})),
    ],
    ids=["content_blocks", "think_block"],
)
def test_an_inner_reply_with_reasoning_is_read(reply: AIMessage) -> None:
    out = TextReAct(ScriptedChatModel([reply])).bind_tools([mult]).invoke("go")
    assert [(c["name"], c["args"]) for c in out.tool_calls] == [("mult", {"a": 2, "b": 3})]


def test_an_inner_native_tool_call_is_kept() -> None:
    out = (
        TextReAct(ScriptedChatModel([native_act("mult", {"a": 2, "b": 3})]))
        .bind_tools([mult])
        .invoke("go")
    )
    assert [(c["name"], c["args"]) for c in out.tool_calls] == [("mult", {"a": 2, "b": 3})]


def test_a_user_image_reaches_the_inner_model_as_sent() -> None:
    image = HumanMessage(
        [
            {"type": "text", "text": "What is this?"},
            {"type": "image", "base64": "AAAA", "mime_type": "image/png"},
        ]
    )
    inner = ScriptedChatModel([final("a dot")])
    TextReAct(inner).bind_tools([mult]).invoke([image])
    assert inner.requests[0].messages[1].content == image.content


def test_braces_in_instructions_and_descriptions_are_kept() -> None:
    @tool(description="Uses {braces} and %s.")
    def odd(x: int) -> int:
        return x

    inner = ScriptedChatModel([final("ok")])
    TextReAct(inner).bind_tools([odd]).invoke(
        [SystemMessage("Use {curly} {0}."), HumanMessage("q")]
    )
    system = inner.requests[0].messages[0].text
    assert system.startswith("Use {curly} {0}.") and "Uses {braces} and %s." in system


def test_a_streaming_inner_model_streams_the_parsed_steps_only() -> None:
    inner = GenericFakeChatModel(messages=iter([act("mult", {"a": 2, "b": 3}), final("six")]))
    chunks = [
        chunk
        for chunk, _ in create_agent(TextReAct(inner), tools=[mult]).stream(
            QUESTION, stream_mode="messages"
        )
    ]
    assert [(type(c).__name__, c.text) for c in chunks] == [
        ("AIMessageChunk", ""),
        ("ToolMessage", "6"),
        ("AIMessageChunk", "six"),
    ]
    assert chunks[0].tool_calls[0]["args"] == {"a": 2, "b": 3}


def test_an_inner_error_and_a_refusal_pass_through() -> None:
    with pytest.raises(ValueError, match="boom"):
        TextReAct(ScriptedChatModel([ValueError("boom")])).bind_tools([mult]).invoke("go")
    refusal = AIMessage(
        [{"type": "refusal", "refusal": "no"}], response_metadata={"model_provider": "openai"}
    )
    reply = TextReAct(ScriptedChatModel([refusal])).bind_tools([mult]).invoke("go")
    assert reply.content == refusal.content and reply.tool_calls == []


# == serialization ===============================================================================


def thread_twice(checkpointer: Any) -> tuple[dict, ScriptedChatModel]:
    inner = ScriptedChatModel(
        [act("mult", {"a": 2, "b": 3}), final("6"), act("mult", {"a": 6, "b": 2}), final("12")]
    )
    agent = create_agent(TextReAct(inner), tools=[mult], checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "1"}}
    agent.invoke(QUESTION, config)
    return agent.invoke({"messages": [HumanMessage("And times 2?")]}, config), inner


@pytest.mark.parametrize("saver", ["memory", "sqlite"])
def test_a_checkpointed_thread_resumes_with_the_steps_as_written(saver: str, tmp_path: Any) -> None:
    if saver == "memory":
        out, inner = thread_twice(InMemorySaver())
    else:
        with SqliteSaver.from_conn_string(str(tmp_path / "threads.db")) as checkpointer:
            out, inner = thread_twice(checkpointer)
    assert out["messages"][-1].text == "12"
    assert out["messages"][1].response_metadata[RAW] == act("mult", {"a": 2, "b": 3})
    assert sent(inner, 2) == [
        "What is 2 * 3?",
        act("mult", {"a": 2, "b": 3}),
        f"{OBSERVATION} 6",
        final("6"),
        "And times 2?",
    ]


def test_pickle_copy_repr_and_dumpd() -> None:
    model = TextReAct(FakeListChatModel(responses=[final("x")]))
    bound = model.bind_tools([mult])
    assert pickle.loads(pickle.dumps(bound)).invoke("go").content == "x"
    assert model.model_copy().invoke("go").content == "x"
    assert "FakeListChatModel" in repr(model)
    assert dumpd(model)["id"][-1] == "TextReAct"
