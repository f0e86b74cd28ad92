"""A differential probe of structured output (`response_format=`): `build_graph` against
LangChain's `create_agent` on the same scripted model, across schema kinds (pydantic models with
nested models, Optional and default fields, Literal and enum fields, lists, aliases and
validators that raise; dataclasses; TypedDicts with total=False and NotRequired; JSON-schema
dicts with `$defs`/`$ref`, with and without a title; a Union of models; `list[Model]`; a schema
named like a tool), strategies (a bare schema, `ToolStrategy` and its `handle_errors` and
`tool_message_content`, `ProviderStrategy(strict=...)`, a profile with and without provider
structured output) and behaviours (an answer first, after a tool, after a bad answer; two
answers at once; an answer beside an ordinary call; never an answer; `invoke`, `ainvoke`,
`stream` values and updates; a checkpointed second turn), natively and under
`protocol="text"` (whose typed result is compared with `create_agent`'s native one), and a few
`react-agent ask --schema FILE` runs against the scripted OpenAI-compatible server.

Compared: `structured_response`, the final messages, the status and answer ours adds, what is
raised, and the requests the model received (the tools offered and the keyword arguments bound:
`tool_choice`, `response_format`; neither agent passes `ls_structured_output_format`).
Cases covered by test_parity_probe*.py, test_probe_thread_turns.py and
tests/integration/test_structured_output.py are not repeated.

Found when it was written (each a strict xfail checked to fail on its assertion); all are fixed
and ordinary tests now:
- under the text protocol a Union (`ToolStrategy(A | B)`, a `oneOf` dict) is asked for as its
  first variant only: the system prompt shows A's schema, never B's;
- a model whose profile has structured output but is a Gemini before 3 gets the provider's
  JSON-schema mode beside its tools, where `create_agent` (knowing those cannot combine) uses
  the output tool;
- an output-tool answer off its schema beside an ordinary call: the ordinary call never ran and
  was answered with the output tool's validation error (it runs now, as in `create_agent`);
- at the step limit (`answer_on_limit`) a closing answer given with the output tool leaves its
  result in the thread without the call it answers (a conversation a chat API refuses);
- a `return_direct` tool ends a run with `response_format` as status answered with no
  `structured_response` (the docs: "a run never ends answered without its typed result"): such
  a run now goes on, and the model gives the typed answer after reading the tool's result;
- `protocol="auto"` falling back to text: a schema-matching JSON Final Answer is refused and
  the model told to call the output tool, which the next request no longer offers; a model
  that obeys gets "Unknown tool" (the fallback now wraps `StructuredAnswer`, which reads its
  retry as text);
- `answer` is the model's raw arguments, not the typed result as JSON (a coerced field differs);
- a failure whose text is a `KeyError` (here langchain-openai's, for a top-level `oneOf` schema)
  is reported as `KeyError: '[redacted]'`: the redaction takes "KeyError:" for a secret's name;
- `ask --schema` names the schema after a file stem with spaces or dots, a name OpenAI refuses.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal, NotRequired

import pytest
from langchain.agents import create_agent
from langchain.agents.structured_output import (
    MultipleStructuredOutputsError,
    ProviderStrategy,
    StructuredOutputValidationError,
    ToolStrategy,
)
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel, Field, PrivateAttr, field_validator
from pydantic_core import to_jsonable_python
from typing_extensions import TypedDict

from graph import build_graph
from tests.support.scripted_model import ScriptedChatModel, calls, tool_call
from tests.unit.test_parity_probe import MODES, NODE, QUESTION, config, double, seen, verdict

pytestmark = [
    pytest.mark.filterwarnings("ignore:The v3 streaming protocol"),
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings"),
    pytest.mark.filterwarnings("ignore:Deserializing unregistered type"),
]


# -- the models -----------------------------------------------------------------------------------


class Recording(ScriptedChatModel):
    """The scripted model, recording the keyword arguments each request was bound with."""

    _bound: list[dict[str, Any]] = PrivateAttr(default_factory=list)

    def _reply(self, messages: Any, stop: Any, **kwargs: Any) -> Any:
        self._bound.append({k: v for k, v in kwargs.items() if k != "tools"})
        return super()._reply(messages, stop, **kwargs)

    def offered(self, at: int = 0) -> list[str]:
        return [t["function"]["name"] for t in self.requests[at].tools]

    def bound(self, at: int = 0) -> dict[str, Any]:
        return self._bound[at]


class Named(Recording):
    """A scripted model with a model name (what `create_agent` reads besides the profile)."""

    model_name: str = "scripted"


def fresh(item: Any) -> Any:
    return item.model_copy(deep=True) if isinstance(item, AIMessage) else item


def pair(
    script: list,
    tools: list | None = None,
    *,
    profile: dict[str, Any] | None = None,
    model_name: str | None = None,
    saver: bool = False,
    ours_only: dict[str, Any] | None = None,
    **kw: Any,
) -> dict[str, tuple[Recording, Any]]:
    """`create_agent` and `build_graph`, each with its own model (and saver); `ours_only`:
    settings `create_agent` has no counterpart of."""
    built = {}
    for name, make in (("create_agent", create_agent), ("ours", build_graph)):
        items = [fresh(x) for x in script]
        model = Named(items, model_name=model_name) if model_name else Recording(items)
        if profile is not None:
            model.profile = profile
        extra = {"checkpointer": InMemorySaver()} if saver else {}
        if make is build_graph:
            extra.update(ours_only or {})
        agent = make(model=model, tools=[double] if tools is None else tools, **extra, **kw)
        built[name] = (model, agent)
    return built


def text_agent(script: list, rf: Any, tools: list | None = None, **kw: Any) -> Any:
    model = Recording(list(script))
    agent = build_graph(
        model=model, tools=[double] if tools is None else tools, protocol="text",
        response_format=rf, **kw,
    )  # fmt: skip
    return model, agent


def answer_with(name: str, args: dict[str, Any], id: str = "s1") -> AIMessage:
    return calls(tool_call(name, args, id=id))


def final_json(value: Any) -> str:
    return f"Thought: I know it.\nFinal Answer: {json.dumps(value)}"


def told(messages: list) -> list[str]:
    return [x.content for x in messages if isinstance(x, ToolMessage)]


def system_text(model: Recording, at: int = 0) -> str:
    return model.requests[at].messages[0].text


def run(agent: Any, mode: str, payload: Any = QUESTION, thread: str = "t") -> dict[str, Any]:
    if mode == "async":
        return asyncio.run(agent.ainvoke(payload, config(thread)))
    return agent.invoke(payload, config(thread))


# -- the schemas ----------------------------------------------------------------------------------


class Color(StrEnum):
    red = "red"
    blue = "blue"


class Inner(BaseModel):
    x: int


class Order(BaseModel):
    """An order."""

    name: str = Field(alias="Name")
    inner: Inner
    tags: list[str] = []
    note: str | None = None
    kind: Literal["a", "b"]
    color: Color

    @field_validator("name")
    @classmethod
    def not_bad(cls, value: str) -> str:
        if value == "bad":
            raise ValueError("the name must not be bad")
        return value


ORDER = {"Name": "n", "inner": {"x": 1}, "kind": "a", "color": "red"}


@dataclass
class Spot:
    """A spot."""

    city: str
    temp: int = 0
    tags: list[str] = field(default_factory=list)


class Partial(TypedDict, total=False):
    """Partial."""

    city: str
    temp: int


class Optionally(TypedDict):
    """Optionally a temperature."""

    city: str
    temp: NotRequired[int]


TRIP = {
    "title": "Trip",
    "description": "A trip.",
    "type": "object",
    "$defs": {
        "Place": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        }
    },
    "properties": {"start": {"$ref": "#/$defs/Place"}, "end": {"$ref": "#/$defs/Place"}},
    "required": ["start", "end"],
}
TRIP_ARGS = {"start": {"city": "A"}, "end": {"city": "B"}}
UNTITLED = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


class Cat(BaseModel):
    """A cat."""

    meow: int


class Dog(BaseModel):
    """A dog."""

    woof: str


class W(BaseModel):
    """Weather."""

    city: str
    temp: int


W_OK = {"city": "P", "temp": 4}

KINDS = {
    "pydantic_nested": (Order, "Order", ORDER),
    "dataclass": (Spot, "Spot", {"city": "P"}),
    "typeddict_total_false": (Partial, "Partial", {"city": "P"}),
    "typeddict_notrequired": (Optionally, "Optionally", {"city": "P"}),
    "json_defs_ref": (TRIP, "Trip", TRIP_ARGS),
    "union": (ToolStrategy(Cat | Dog), "Dog", {"woof": "w"}),
}


# == natively: schema kinds =======================================================================


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("mode", MODES)
def test_each_schema_kind_answered_first_reads_and_asks_the_same(kind: str, mode: str) -> None:
    rf, name, args = KINDS[kind]
    got = {}
    for who, (model, agent) in pair([answer_with(name, args)], response_format=rf).items():
        out = run(agent, mode)
        sent = (model.requests[0].tools, model.bound(0), len(model.requests))
        got[who] = (out["structured_response"], seen(out["messages"]), sent)
    assert got["ours"] == got["create_agent"]
    assert "ls_structured_output_format" not in got["ours"][2][1]


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_schema_kind_after_a_tool_gives_the_same_result(kind: str) -> None:
    rf, name, args = KINDS[kind]
    script = [calls(tool_call("double", {"number": 2}, id="c1")), answer_with(name, args)]
    got = {}
    for who, (model, agent) in pair(script, response_format=rf).items():
        out = agent.invoke(QUESTION)
        got[who] = (out["structured_response"], seen(out["messages"]), model.bound(1))
    assert got["ours"] == got["create_agent"]


def test_ours_adds_the_status_and_the_answer_as_json() -> None:
    (_, agent) = pair([answer_with("Order", ORDER)], response_format=Order)["ours"]
    out = agent.invoke(QUESTION)
    typed = to_jsonable_python(out["structured_response"])  # defaults filled in
    assert out["status"] == "answered" and json.loads(out["answer"]) == typed
    assert {k: typed[k] for k in ORDER} == ORDER


def test_a_validator_that_raises_is_told_and_retried_the_same() -> None:
    script = [
        answer_with("Order", {**ORDER, "Name": "bad"}, id="s1"),
        answer_with("Order", ORDER, id="s2"),
    ]
    got = {}
    for who, (model, agent) in pair(script, response_format=Order).items():
        out = agent.invoke(QUESTION)
        retry = model.requests[1].messages[-1]
        got[who] = (out["structured_response"], told(out["messages"]), retry.content)
    assert got["ours"] == got["create_agent"]
    assert "the name must not be bad" in got["ours"][2]


def test_a_json_schema_without_a_title_is_offered_and_read_the_same() -> None:
    """Both name the output tool `response_format_xxxx` (random); the model calls it by the
    name it was offered."""
    got = {}
    for who, make in (("create_agent", create_agent), ("ours", build_graph)):
        model = Recording([])
        model.script.append(
            lambda _, model=model: answer_with(model.offered(-1)[-1], {"city": "P"}, id="s1")
        )  # the name this request offered
        out = make(model=model, tools=[double], response_format=UNTITLED).invoke(QUESTION)
        name = model.offered(0)[-1]
        assert re.fullmatch(r"response_format_[0-9a-f]{4}", name)
        got[who] = (out["structured_response"], len(model.requests), model.bound(0))
    assert got["ours"] == got["create_agent"] == ({"city": "P"}, 1, {"tool_choice": "any"})


def test_a_list_of_models_is_refused_the_same_when_built() -> None:
    """`list[W]` is no schema kind LangChain takes (`ToolStrategy(list[W])` refuses itself)."""
    rf = list[W]
    said = {}
    for who, make in (("create_agent", create_agent), ("ours", build_graph)):
        with pytest.raises(ValueError, match="Unsupported schema type") as refused:
            make(model=Recording(["x"]), tools=[double], response_format=rf)
        said[who] = str(refused.value)
    assert said["ours"] == said["create_agent"]


def test_a_schema_named_like_a_tool_is_taken_the_same() -> None:
    """Both offer two tools named `double`, and a call to `double` is the typed answer."""
    collides = type("double", (BaseModel,), {"__annotations__": {"number": int}})
    got = {}
    script = [answer_with("double", {"number": 3})]
    for who, (model, agent) in pair(script, response_format=collides).items():
        out = agent.invoke(QUESTION)
        got[who] = (out["structured_response"].number, seen(out["messages"]), model.offered())
    assert got["ours"] == got["create_agent"]
    assert got["ours"][2] == ["double", "double"]


# == natively: strategies =========================================================================


@pytest.mark.parametrize(
    "handle",
    [StructuredOutputValidationError, (MultipleStructuredOutputsError, ValueError, Exception)],
    ids=["type", "tuple"],
)
def test_handle_errors_naming_the_error_type_retries_the_same(handle: Any) -> None:
    script = [answer_with("W", {"city": "P"}, id="s1"), answer_with("W", W_OK, id="s2")]
    got = {}
    for who, (_, agent) in pair(
        script, response_format=ToolStrategy(W, handle_errors=handle)
    ).items():
        out = agent.invoke(QUESTION)
        got[who] = (out["structured_response"], told(out["messages"]))
    assert got["ours"] == got["create_agent"]
    assert got["ours"][1][0].startswith("Error: Failed to parse structured output for tool 'W'")


@pytest.mark.parametrize(
    "handle", [ValueError, (MultipleStructuredOutputsError,)], ids=["type", "tuple"]
)
def test_by_design_handle_errors_of_another_type_ends_the_run_with_status_error(
    handle: Any,
) -> None:
    """As `handle_errors=False` (docs/structured-output.md): create_agent raises the validation
    error, ours ends the run with status error and says it."""
    script = [answer_with("W", {"city": "P"}, id="s1"), answer_with("W", W_OK, id="s2")]
    built = pair(script, response_format=ToolStrategy(W, handle_errors=handle))
    with pytest.raises(StructuredOutputValidationError):
        built["create_agent"][1].invoke(QUESTION)
    model, agent = built["ours"]
    out = agent.invoke(QUESTION)
    assert out["status"] == "error" and out.get("structured_response") is None
    assert "did not match its schema" in out["error"] and "temp" in out["error"]
    assert len(model.requests) == 1


def test_tool_message_content_is_written_the_same() -> None:
    rf = ToolStrategy(W, tool_message_content="Got it.")
    got = {}
    for who, (_, agent) in pair([answer_with("W", W_OK)], response_format=rf).items():
        out = agent.invoke(QUESTION)
        got[who] = (out["structured_response"], seen(out["messages"]))
    assert got["ours"] == got["create_agent"]
    assert got["ours"][1][-1][1] == "Got it."


@pytest.mark.parametrize("strict", [True, False, None])
@pytest.mark.parametrize("mode", MODES)
def test_provider_strategy_binds_and_reads_the_same(strict: bool | None, mode: str) -> None:
    rf = ProviderStrategy(Order, strict=strict)
    got = {}
    for who, (model, agent) in pair([json.dumps(ORDER)], response_format=rf).items():
        out = run(agent, mode)
        got[who] = (
            out["structured_response"],
            seen(out["messages"]),
            model.offered(),
            model.bound(),
        )
    assert got["ours"] == got["create_agent"]
    assert ("strict" in got["ours"][3]["response_format"]["json_schema"]) is bool(strict)


@pytest.mark.parametrize(
    ("profile", "rf", "provider"),
    [
        ({"structured_output": False, "tool_calling": True}, W, False),
        ({"structured_output": True}, W, True),
        ({"structured_output": True}, ToolStrategy(W), False),
        ({"structured_output": True}, Spot, True),
    ],
    ids=["profile_without", "profile_with", "tool_strategy_over_profile", "dataclass_provider"],
)
def test_the_profile_picks_the_same_strategy(profile: dict, rf: Any, provider: bool) -> None:
    args = {"city": "P", "temp": 4}
    schema = rf.schema if isinstance(rf, ToolStrategy) else rf
    reply = json.dumps(args) if provider else answer_with(schema.__name__, args)
    got = {}
    for who, (model, agent) in pair([reply], profile=profile, response_format=rf).items():
        out = agent.invoke(QUESTION)
        got[who] = (out["structured_response"], model.offered(), model.bound())
    assert got["ours"] == got["create_agent"]
    assert ("response_format" in got["ours"][2]) is provider


def test_by_design_a_model_name_without_a_profile_takes_the_output_tool() -> None:
    """docs/structured-output.md: the model's profile decides ("where the model's profile says
    it has one, else the tool"); create_agent also guesses from the name (`gpt-4o`...). The tool
    works on those models too, and the typed result is the same."""
    script = [json.dumps(W_OK), answer_with("W", W_OK)]
    built = pair(script, model_name="openrouter/gpt-4o-mini", response_format=W)
    (theirs, their_agent), (ours, our_agent) = built["create_agent"], built["ours"]
    assert their_agent.invoke(QUESTION)["structured_response"] == W(**W_OK)
    assert our_agent.invoke(QUESTION)["structured_response"] == W(**W_OK)
    assert "response_format" in theirs.bound() and "W" not in theirs.offered()
    assert ours.bound() == {"tool_choice": "any"} and ours.offered() == ["double", "W"]


def test_a_gemini_2_with_tools_takes_the_output_tool_as_create_agent_does() -> None:
    script = [answer_with("W", W_OK), answer_with("W", W_OK)]
    sent = {}
    profile = {"structured_output": True, "tool_calling": True}
    for who, (model, agent) in pair(
        script, profile=profile, model_name="gemini-2.5-flash", response_format=W
    ).items():
        agent.invoke(QUESTION)
        sent[who] = (model.offered(), model.bound())
    assert sent["create_agent"] == (["double", "W"], {"tool_choice": "any"})
    assert sent["ours"] == sent["create_agent"]


# == natively: behaviours =========================================================================


def test_two_answers_of_one_schema_at_once_are_refused_and_retried_the_same() -> None:
    script = [
        calls(tool_call("W", W_OK, id="a"), tool_call("W", {"city": "Q", "temp": 2}, id="b")),
        answer_with("W", {"city": "R", "temp": 3}, id="c"),
    ]
    got = {}
    for who, (model, agent) in pair(script, response_format=W).items():
        out = agent.invoke(QUESTION)
        retry = [x.content for x in model.requests[1].messages[-2:]]
        got[who] = (out["structured_response"], told(out["messages"]), retry)
    assert got["ours"] == got["create_agent"]
    assert "multiple structured responses (W, W)" in got["ours"][2][0]


def test_an_answer_off_its_schema_beside_an_ordinary_call_runs_that_call() -> None:
    script = [
        calls(tool_call("double", {"number": 2}, id="c1"), tool_call("W", {"city": "P"}, id="s1")),
        answer_with("W", W_OK, id="s2"),
    ]
    built = pair(script, response_format=W)
    theirs = built["create_agent"][1].invoke(QUESTION)["messages"]
    assert [x.content for x in theirs if getattr(x, "tool_call_id", None) == "c1"] == ["4"]
    out = built["ours"][1].invoke(QUESTION)
    assert out["structured_response"] == W(**W_OK)
    result = next(
        x for x in out["messages"] if isinstance(x, ToolMessage) and x.tool_call_id == "c1"
    )
    assert "Failed to parse structured output for tool 'W'" not in result.content


def test_a_structured_call_with_unreadable_arguments_is_retried() -> None:
    """Ours is right: create_agent ends the run with no typed result and the broken call
    unanswered; ours answers the call with why and asks again."""
    broken = AIMessage(
        content="",
        invalid_tool_calls=[
            {"name": "W", "args": '{"city": "P", "te', "id": "s1", "error": "bad json",
             "type": "invalid_tool_call"}
        ],
    )  # fmt: skip
    built = pair([broken, answer_with("W", W_OK, id="s2")], response_format=W)
    theirs = built["create_agent"][1].invoke(QUESTION)
    assert theirs.get("structured_response") is None and not told(theirs["messages"])
    model, agent = built["ours"]
    out = agent.invoke(QUESTION)
    assert out["structured_response"] == W(**W_OK) and out["status"] == "answered"
    assert "not valid JSON" in model.requests[1].messages[-1].content


@pytest.mark.parametrize("rf", [W, ProviderStrategy(W)], ids=["tool", "provider"])
def test_by_design_never_a_structured_answer_ends_in_error_after_max_invalid(rf: Any) -> None:
    """docs/structured-output.md: create_agent ends on the plain reply with no typed result;
    ours tells the model why and asks again, and after `max_invalid` ends with status error."""
    built = pair(["it is sunny"] * 3, response_format=rf, ours_only={"max_invalid": 2})
    theirs = built["create_agent"][1]
    if isinstance(rf, ProviderStrategy):
        with pytest.raises(StructuredOutputValidationError):
            theirs.invoke(QUESTION)
    else:
        assert theirs.invoke(QUESTION).get("structured_response") is None
    model, agent = built["ours"]
    out = agent.invoke(QUESTION)
    assert out["status"] == "error" and out.get("structured_response") is None
    assert len(model.requests) == 2 and "could not be used" in model.requests[1].messages[-1].text
    assert "schema" in out["error"] or "`W` tool" in out["error"]


def test_by_design_a_json_schema_answer_off_its_schema_is_retried() -> None:
    """graph/policies/answer_schema.py: LangChain returns a JSON-schema dict's value unchecked
    (create_agent ends with it); ours checks it and asks again, naming where it is wrong."""
    bad = {"start": {"city": 3}, "end": {"city": "B"}}
    built = pair([answer_with("Trip", bad, id="s1"), answer_with("Trip", TRIP_ARGS, id="s2")],
                 response_format=TRIP)  # fmt: skip
    assert built["create_agent"][1].invoke(QUESTION)["structured_response"] == bad
    model, agent = built["ours"]
    assert agent.invoke(QUESTION)["structured_response"] == TRIP_ARGS
    assert "On instance['start']['city']" in model.requests[1].messages[-1].content


def test_a_closing_answer_by_the_output_tool_leaves_a_valid_conversation() -> None:
    model = Recording([calls(tool_call("double", {"number": 1}, id="c1")), answer_with("W", W_OK)])
    agent = build_graph(
        model=model, tools=[double], response_format=W, max_steps=1, answer_on_limit=True
    )
    out = agent.invoke(QUESTION)
    assert out["structured_response"] == W(**W_OK)
    asked: set[str] = set()
    for message in out["messages"]:
        if isinstance(message, AIMessage):
            asked |= {c["id"] for c in message.tool_calls}
        if isinstance(message, ToolMessage):
            assert message.tool_call_id in asked, f"{message.tool_call_id} answers no call"


@pytest.mark.parametrize("rf", [W, ProviderStrategy(W)], ids=["tool", "provider"])
def test_a_return_direct_tool_never_ends_answered_without_the_typed_result(rf: Any) -> None:
    last = json.dumps(W_OK) if isinstance(rf, ProviderStrategy) else answer_with("W", W_OK)
    script = [calls(tool_call("verdict", {"x": 1}, id="v1")), last]
    built = pair(script, tools=[verdict], response_format=rf)
    assert built["create_agent"][1].invoke(QUESTION).get("structured_response") is None
    out = built["ours"][1].invoke(QUESTION)
    assert not (out["status"] == "answered" and out.get("structured_response") is None), out
    assert out["structured_response"] == W(**W_OK)  # the model gave it after reading the result


def test_the_answer_is_the_typed_result_as_json() -> None:
    model = Recording([answer_with("W", {"city": "P", "temp": "4"})])
    out = build_graph(model=model, tools=[double], response_format=W).invoke(QUESTION)
    assert out["structured_response"] == W(city="P", temp=4)
    assert json.loads(out["answer"]) == {"city": "P", "temp": 4}


# == natively: how the result is read ============================================================


@pytest.mark.parametrize("rf", [W, ProviderStrategy(W)], ids=["tool", "provider"])
def test_stream_values_and_updates_carry_the_same_result(rf: Any) -> None:
    last = json.dumps(W_OK) if isinstance(rf, ProviderStrategy) else answer_with("W", W_OK)
    script = [calls(tool_call("double", {"number": 2}, id="c1")), last]
    got = {}
    for who, (_, agent) in pair(script, response_format=rf).items():
        values = list(agent.stream(QUESTION, stream_mode="values"))
        got[who] = [values[-1]["structured_response"]]
    for who, (_, agent) in pair(script, response_format=rf).items():
        rows = []
        for update in agent.stream(QUESTION, stream_mode="updates"):
            for node, written in update.items():
                if node != "finish":
                    rows.append((NODE.get(node, node), (written or {}).get("structured_response")))
        got[who].append(rows)
    assert got["ours"][0] == got["create_agent"][0] == W(**W_OK)
    assert got["ours"][1] == got["create_agent"][1]


@pytest.mark.parametrize(
    "rf", [ProviderStrategy(W), ToolStrategy(Cat | Dog)], ids=["provider", "union"]
)
def test_a_second_turn_on_a_thread_reads_and_sends_the_same(rf: Any) -> None:
    if isinstance(rf, ProviderStrategy):
        script = [json.dumps(W_OK), json.dumps({"city": "Q", "temp": 2})]
    else:
        script = [
            answer_with("Cat", {"meow": 1}, id="s1"),
            answer_with("Dog", {"woof": "w"}, id="s2"),
        ]
    got = {}
    for who, (model, agent) in pair(script, saver=True, response_format=rf).items():
        first = agent.invoke(QUESTION, config())["structured_response"]
        out = agent.invoke({"messages": [("user", "again")]}, config())
        sent = [
            (type(x).__name__, x.content) for x in model.requests[1].messages if x.type != "system"
        ]
        got[who] = (first, out["structured_response"], seen(out["messages"]), sent)
    assert got["ours"] == got["create_agent"]


# == the text protocol (ours), against create_agent native =======================================


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("mode", MODES)
def test_text_protocol_gives_create_agents_native_result(kind: str, mode: str) -> None:
    rf, name, args = KINDS[kind]
    _, theirs = pair([answer_with(name, args)], response_format=rf)["create_agent"]
    model, agent = text_agent([final_json(args)], rf)
    out = run(agent, mode)
    assert out["structured_response"] == theirs.invoke(QUESTION)["structured_response"]
    typed = to_jsonable_python(out["structured_response"])  # defaults filled in
    assert out["status"] == "answered" and json.loads(out["answer"]) == typed
    assert model.requests[0].tools == [] and model.bound() == {}  # no output tool, no mode


@pytest.mark.parametrize(
    "rf",
    [
        ToolStrategy(Cat | Dog),
        ToolStrategy({"oneOf": [Cat.model_json_schema(), Dog.model_json_schema()], "title": "Pet"}),
    ],
    ids=["union", "oneOf"],
)
def test_text_protocol_asks_for_every_variant_of_a_union(rf: Any) -> None:
    model, agent = text_agent([final_json({"woof": "w"})], rf)
    out = agent.invoke(QUESTION)
    assert out["structured_response"] in (Dog(woof="w"), {"woof": "w"})
    prompt = system_text(model)
    assert '"meow"' in prompt and '"woof"' in prompt  # create_agent offers both as tools


def test_text_protocol_with_provider_strategy_gives_the_same_result() -> None:
    _, theirs = pair([json.dumps(ORDER)], response_format=ProviderStrategy(Order))["create_agent"]
    model, agent = text_agent([final_json(ORDER)], ProviderStrategy(Order))
    assert (
        agent.invoke(QUESTION)["structured_response"]
        == (theirs.invoke(QUESTION)["structured_response"])
    )
    assert "response_format" not in model.bound()  # the text protocol asks in its prompt
    assert '"Name"' in system_text(model)  # the schema as the model must write it (aliases)


def test_text_protocol_tells_a_validators_error_and_gets_the_same_result() -> None:
    model, agent = text_agent([final_json({**ORDER, "Name": "bad"}), final_json(ORDER)], Order)
    out = agent.invoke(QUESTION)
    _, theirs = pair(
        [answer_with("Order", {**ORDER, "Name": "bad"}), answer_with("Order", ORDER, id="s2")],
        response_format=Order,
    )["create_agent"]
    assert out["structured_response"] == theirs.invoke(QUESTION)["structured_response"]
    retry = model.requests[1].messages[-1].content
    assert "the name must not be bad" in retry and "JSON object matching the schema" in retry


@pytest.mark.parametrize("handle", [False, "FIX IT"], ids=["false", "text"])
def test_by_design_text_protocol_tells_its_own_correction_whatever_handle_errors_says(
    handle: Any,
) -> None:
    """docs/structured-output.md, the text protocol: an answer that does not match "is an
    unusable reply: the model is told what was wrong and asked again" (`handle_errors` is the
    native output tool's)."""
    rf = ToolStrategy(W, handle_errors=handle)
    model, agent = text_agent([final_json({"city": "P"}), final_json(W_OK)], rf)
    assert agent.invoke(QUESTION)["structured_response"] == W(**W_OK)
    retry = model.requests[1].messages[-1].content
    assert "temp: Field required" in retry and "FIX IT" not in retry


@pytest.mark.parametrize("mode", ["values", "updates", "async"])
def test_text_protocol_result_after_a_tool_in_every_way_of_reading(mode: str) -> None:
    script = ['Thought: t\nAction: double\nAction Input: {"number": 2}', final_json(W_OK)]
    _, agent = text_agent(script, W)
    if mode == "async":
        result = asyncio.run(agent.ainvoke(QUESTION))["structured_response"]
    elif mode == "values":
        result = list(agent.stream(QUESTION, stream_mode="values"))[-1]["structured_response"]
    else:
        written = [
            v.get("structured_response")
            for u in agent.stream(QUESTION, stream_mode="updates")
            for v in u.values()
            if v
        ]
        result = [x for x in written if x is not None][-1]
    assert result == W(**W_OK)


def test_text_protocol_never_a_matching_answer_ends_in_error() -> None:
    model, agent = text_agent([final_json({"city": "P"})] * 2, W, max_invalid=2)
    out = agent.invoke(QUESTION)
    assert out["status"] == "error" and out.get("structured_response") is None
    assert "temp: Field required" in out["error"] and len(model.requests) == 2


def test_text_protocol_an_action_naming_the_schema_is_corrected_to_the_answer() -> None:
    """A text model that writes the schema's name as an Action (as create_agent's output tool
    would have it) is told the tool is unknown, and its JSON Final Answer then ends the run."""
    script = [f"Thought: t\nAction: W\nAction Input: {json.dumps(W_OK)}", final_json(W_OK)]
    model, agent = text_agent(script, W)
    out = agent.invoke(QUESTION)
    assert out["structured_response"] == W(**W_OK) and len(model.requests) == 2
    assert "Unknown tool 'W'" in model.requests[1].messages[-1].content


def test_auto_fallback_to_text_takes_the_answer_it_asked_for() -> None:
    script = [
        NotImplementedError("tools not supported"),
        final_json(W_OK),
        f"Thought: as I was told\nAction: W\nAction Input: {json.dumps(W_OK)}",
    ]
    model = Recording(script)
    out = build_graph(model=model, tools=[double], protocol="auto", response_format=W).invoke(
        QUESTION
    )
    assert out.get("structured_response") == W(**W_OK), out.get("error")


def test_a_failure_binding_the_schema_is_said_in_words() -> None:
    """langchain-openai cannot bind a top-level `oneOf` schema beside tools (create_agent raises
    KeyError: 'parameters'); ours ends with status error, and the sentence should say so."""
    from langchain_openai import ChatOpenAI

    pet = {"title": "pet", "oneOf": [Cat.model_json_schema(), Dog.model_json_schema()]}
    chat = ChatOpenAI(model="gpt-4o-mini", base_url="http://127.0.0.1:9/v1", api_key="sk-x")
    with pytest.raises(KeyError, match="parameters"):
        create_agent(model=chat, tools=[double], response_format=pet).invoke(QUESTION)
    out = build_graph(model=chat, tools=[double], response_format=pet).invoke(QUESTION)
    assert out["status"] == "error"
    assert "[redacted]" not in out["error"], out["error"]


# == the command line =============================================================================


def ask_with_schema(tmp_path: Path, name: str, schema: dict, replies: list, *args: str) -> Any:
    from tests.support.cli import cli_env, run_cli
    from tests.support.openai_server import ScriptedOpenAIServer

    path = tmp_path / name
    path.write_text(json.dumps(schema))
    with ScriptedOpenAIServer(replies) as server:
        env = cli_env(server.base_url, tmp_path / "state")
        done = run_cli("ask", "q?", "--schema", str(path), *args, "--json", env=env)
        bodies = [r.body for r in server.chat_requests]
    return done, bodies


def test_cli_a_schema_with_defs_is_checked_and_corrected(tmp_path: Path) -> None:
    from tests.support.openai_server import Reply

    schema = {k: v for k, v in TRIP.items() if k != "title"}
    bad, good = {"start": {"city": 3}, "end": {"city": "B"}}, TRIP_ARGS
    replies = [Reply(content=json.dumps(bad)), Reply(content=json.dumps(good))]
    done, bodies = ask_with_schema(tmp_path, "trip.json", schema, replies, "--protocol", "native")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["structured_response"] == good
    assert bodies[0]["response_format"]["json_schema"]["name"] == "trip"
    assert "$defs" in bodies[0]["response_format"]["json_schema"]["schema"]
    assert "start/city" in bodies[1]["messages"][-1]["content"]


def test_cli_text_protocol_after_a_tool_with_an_untitled_partial_schema(tmp_path: Path) -> None:
    from tests.support.openai_server import Reply

    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "n": {"type": "integer"}},
    }
    replies = [
        Reply(content='Thought: t\nAction: calculator\nAction Input: {"expression": "2*2"}'),
        Reply(content=final_json({"n": 4})),
    ]
    done, bodies = ask_with_schema(
        tmp_path, "partial.json", schema, replies, "--protocol", "text", "--tools", "calculator"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["structured_response"] == {"n": 4}
    assert "matching this JSON schema" in bodies[0]["messages"][0]["content"]
    assert "4" in bodies[1]["messages"][-1]["content"]  # the calculator's result came back


def test_cli_names_the_schema_as_openai_accepts(tmp_path: Path) -> None:
    from tests.support.openai_server import Reply

    replies = [Reply(content='{"city": "Oslo"}')]
    done, bodies = ask_with_schema(
        tmp_path, "weather report.v2.json", UNTITLED, replies, "--protocol", "native"
    )
    assert done.returncode == 0, done.stderr
    name = bodies[0]["response_format"]["json_schema"]["name"]
    assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name), name
