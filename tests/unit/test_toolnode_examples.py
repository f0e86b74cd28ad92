"""LangGraph's documented ToolNode examples with injected arguments, unchanged, through
build_graph, under both protocols: injected state (whole and one key), the store, the call id,
`ToolRuntime`, a tool that returns a `Command` updating the caller's own state key, and
`return_direct`. The caller's state and context schemas extend the agent's."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any, NotRequired

import pytest
from langchain.agents import AgentState
from langchain_core.messages import ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import InjectedState, InjectedStore, ToolRuntime
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command

from graph import build_graph
from tests.support.scripted_model import ScriptedChatModel, calls, tool_call

PROTOCOLS = ["native", "text"]


# -- the examples, as LangGraph documents them --------------------------------------------------


@tool
def context_tool(query: str, state: Annotated[dict, InjectedState]) -> str:
    """Some tool that uses state."""
    if state["messages"]:
        return "there are messages in state"
    return "no messages"


@tool
def foo_tool(x: int, foo: Annotated[str, InjectedState("foo")]) -> str:
    """Do something with foo."""
    return foo + str(x + 1)


@tool
def save_preference(key: str, value: str, store: Annotated[Any, InjectedStore()]) -> str:
    """Save user preference to persistent storage."""
    # LangGraph's docstring puts the bare string, which a store refuses (under ToolNode too):
    # store values are dicts
    store.put(("preferences",), key, {"value": value})
    return f"Saved {key} = {value}"


@tool
def get_preference(key: str, store: Annotated[Any, InjectedStore()]) -> str:
    """Retrieve user preference from persistent storage."""
    result = store.get(("preferences",), key)
    return result.value["value"] if result else "Not found"


@tool
def my_tool(x: int, runtime: ToolRuntime) -> str:
    """Tool that uses the runtime."""
    messages = runtime.state["messages"]
    return f"{len(messages) > 0} {bool(runtime.tool_call_id)} {x} {runtime.context.user_id}"


@tool
def update_user_info(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Look up and update user info."""
    user_info = {"name": "Bob", "location": "San Francisco"}
    return Command(
        update={
            "user_info": user_info,
            "messages": [
                ToolMessage("Successfully looked up user information", tool_call_id=tool_call_id)
            ],
        }
    )


@tool(return_direct=True)
def final_lookup(city: str) -> str:
    """Look a city up and answer with it directly."""
    return f"{city} is sunny"


class CustomState(AgentState):
    foo: NotRequired[str]
    user_info: NotRequired[dict]


@dataclass
class Context:
    user_id: str


# -- the runs -----------------------------------------------------------------------------------


def step(protocol: str, name: str, args: dict[str, Any], call_id: str = "c1") -> Any:
    if protocol == "native":
        return calls(tool_call(name, args, id=call_id))
    return f"Thought: use it\nAction: {name}\nAction Input: {json.dumps(args)}"


def done(protocol: str) -> str:
    return "ok" if protocol == "native" else "Thought: done\nFinal Answer: ok"


def run(protocol: str, script: list, tools: list, payload: dict | None = None, **kw: Any):
    agent = build_graph(
        model=ScriptedChatModel(script),
        tools=tools,
        protocol=protocol,
        checkpointer=InMemorySaver(),
        state_schema=CustomState,
        context_schema=Context,
        **kw,
    )
    config = {"configurable": {"thread_id": "t"}}
    question = {"messages": [("user", "go")], **(payload or {})}
    return agent, agent.invoke(question, config, context=kw.pop("context", Context("u1")))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_injected_state_whole_and_by_key(protocol: str) -> None:
    script = [
        step(protocol, "context_tool", {"query": "q"}),
        step(protocol, "foo_tool", {"x": 1}, "c2"),
        done(protocol),
    ]
    _, out = run(protocol, script, [context_tool, foo_tool], {"foo": "bar"})
    assert [s["observation"] for s in out["steps"][:2]] == ["there are messages in state", "bar2"]
    assert out["foo"] == "bar"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_injected_store(protocol: str) -> None:
    store = InMemoryStore()
    script = [
        step(protocol, "save_preference", {"key": "color", "value": "blue"}),
        step(protocol, "get_preference", {"key": "color"}, "c2"),
        done(protocol),
    ]
    _, out = run(protocol, script, [save_preference, get_preference], store=store)
    assert [s["observation"] for s in out["steps"][:2]] == ["Saved color = blue", "blue"]
    assert store.get(("preferences",), "color").value == {"value": "blue"}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_tool_runtime_with_the_callers_context(protocol: str) -> None:
    _, out = run(protocol, [step(protocol, "my_tool", {"x": 3}), done(protocol)], [my_tool])
    assert out["steps"][0]["observation"] == "True True 3 u1"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_command_updates_the_callers_state_key(protocol: str) -> None:
    script = [step(protocol, "update_user_info", {}), done(protocol)]
    _, out = run(protocol, script, [update_user_info])
    assert out["user_info"] == {"name": "Bob", "location": "San Francisco"}
    assert out["steps"][0]["observation"] == "Successfully looked up user information"
    assert out["status"] == "answered"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_return_direct_ends_the_run_with_the_tools_result(protocol: str) -> None:
    model_calls = [step(protocol, "final_lookup", {"city": "Oslo"})]
    _, out = run(protocol, model_calls, [final_lookup])
    assert (out["status"], out["answer"]) == ("answered", "Oslo is sunny")


def test_a_context_field_named_like_a_setting_is_refused() -> None:
    from graph.settings import ConfigError

    @dataclass
    class Sneaky:
        base_url: str

    with pytest.raises(ConfigError, match="base_url"):
        build_graph(model=ScriptedChatModel([]), tools=[], context_schema=Sneaky)
