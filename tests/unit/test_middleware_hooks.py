"""Every kind of LangChain middleware hook on the agent, per protocol, in sync and async runs:
what each hook sees (standard messages, tools, the parsed step) and what its change does to what
is sent to the model, what runs, and how the run ends."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, NotRequired

import pytest
from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
    after_agent,
    after_model,
    before_agent,
    before_model,
    dynamic_prompt,
    hook_config,
    wrap_model_call,
    wrap_tool_call,
)
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from graph import build_graph
from tests.support.scripted_model import ScriptedChatModel, action, answer, calls, tool_call

PROTOCOLS = ["native", "text"]
MODES = ["sync", "async"]


@tool
def double(number: int) -> int:
    """Double a number."""
    return number * 2


@tool
def shout(text: str) -> str:
    """Say a text loudly."""
    return text.upper()


def run(agent: Any, question: str, mode: str, thread: str = "t") -> dict[str, Any]:
    config = {"configurable": {"thread_id": thread}}
    payload = {"messages": [("user", question)]}
    if mode == "sync":
        return agent.invoke(payload, config)
    return asyncio.run(agent.ainvoke(payload, config))


def agent_for(protocol: str, script: list, middleware: list, **kw: Any) -> tuple[Any, Any]:
    model = ScriptedChatModel(script)
    agent = build_graph(
        model=model,
        tools=kw.pop("tools", [double, shout]),
        protocol=protocol,
        middleware=middleware,
        checkpointer=InMemorySaver(),
        **kw,
    )
    return model, agent


def sent_text(request: Any) -> str:
    return "\n".join(m.text for m in request.messages)


# -- before_agent / after_agent ----------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_before_and_after_agent_run_once_per_run(protocol: str, mode: str) -> None:
    seen: list[str] = []

    class Bracket(AgentMiddleware):
        def before_agent(self, state, runtime):
            seen.append(f"start:{len(state['messages'])}")
            return {"messages": [HumanMessage("Always answer in one word.", id="rule")]}

        async def abefore_agent(self, state, runtime):
            seen.append(f"astart:{len(state['messages'])}")
            return {"messages": [HumanMessage("Always answer in one word.", id="rule")]}

        def after_agent(self, state, runtime):
            seen.append(f"end:{state['status']}")

        async def aafter_agent(self, state, runtime):
            seen.append(f"aend:{state['status']}")

    script = [action(protocol, "double", {"number": 4}), answer(protocol, "eight")]
    model, agent = agent_for(protocol, script, [Bracket()])
    out = run(agent, "double 4", mode)
    prefix = "" if mode == "sync" else "a"
    assert seen == [f"{prefix}start:1", f"{prefix}end:answered"]
    assert out["answer"] == "eight"
    assert all("Always answer in one word." in sent_text(r) for r in model.requests)


# -- before_model / after_model ------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_before_model_changes_what_the_model_reads(protocol: str, mode: str) -> None:
    @before_model
    def note_the_count(state: AgentState, runtime: Any) -> dict[str, Any]:
        tools_done = sum(isinstance(m, ToolMessage) for m in state["messages"])
        return {"messages": [HumanMessage(f"(tool results so far: {tools_done})")]}

    script = [action(protocol, "double", {"number": 2}), answer(protocol, "4")]
    model, agent = agent_for(protocol, script, [note_the_count])
    run(agent, "double 2", mode)
    assert "(tool results so far: 0)" in sent_text(model.requests[0])
    assert "(tool results so far: 1)" in sent_text(model.requests[1])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_after_model_sees_the_parsed_step_and_can_drop_a_call(protocol: str, mode: str) -> None:
    seen: list[list[str]] = []

    @after_model
    def no_shouting(state: AgentState, runtime: Any) -> dict[str, Any] | None:
        last = state["messages"][-1]
        assert isinstance(last, AIMessage)
        seen.append([c["name"] for c in last.tool_calls])
        if any(c["name"] == "shout" for c in last.tool_calls):
            call = last.tool_calls[0]
            refused = ToolMessage("Shouting is not allowed.", tool_call_id=call["id"])
            return {"messages": [refused]}
        return None

    script = [action(protocol, "shout", {"text": "hi"}), answer(protocol, "no shouting then")]
    _, agent = agent_for(protocol, script, [no_shouting])
    out = run(agent, "shout hi", mode)
    assert seen == [["shout"], []]  # the text protocol's step arrives as tool_calls too
    assert out["answer"] == "no shouting then"
    assert all(s["observation"] != "HI" for s in out["steps"])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_jump_to_end_from_before_model_ends_the_run_with_its_reason(protocol: str) -> None:
    class Budget(AgentMiddleware):
        @hook_config(can_jump_to=["end"])
        def before_model(self, state, runtime):
            if sum(isinstance(m, ToolMessage) for m in state["messages"]) >= 1:
                return {"jump_to": "end", "messages": [AIMessage("Budget spent; stopping.")]}
            return None

    script = [action(protocol, "double", {"number": 1}), answer(protocol, "never read")]
    model, agent = agent_for(protocol, script, [Budget()])
    out = run(agent, "double 1", "sync")
    assert len(model.requests) == 1
    assert out["status"] == "stopped"
    assert out["answer"] == "Budget spent; stopping."
    assert out["steps"][0]["observation"] == "2"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_jump_to_model_from_after_model_asks_again(protocol: str) -> None:
    class Insist(AgentMiddleware):
        @hook_config(can_jump_to=["model"])
        def after_model(self, state, runtime):
            last = state["messages"][-1]
            if not last.tool_calls and "please" not in last.text:
                return {"jump_to": "model", "messages": [HumanMessage("Say please.")]}
            return None

    script = [answer(protocol, "no"), answer(protocol, "yes please")]
    model, agent = agent_for(protocol, script, [Insist()])
    out = run(agent, "ask", "sync")
    assert out["status"] == "answered" and out["answer"] == "yes please"
    assert "Say please." in sent_text(model.requests[1])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_jump_to_tools_runs_the_calls_of_the_last_step(protocol: str) -> None:
    class Inject(AgentMiddleware):
        @hook_config(can_jump_to=["tools"])
        def before_model(self, state, runtime):
            if not any(isinstance(m, AIMessage) for m in state["messages"]):
                step = AIMessage("", tool_calls=[tool_call("double", {"number": 21}, id="pre")])
                return {"jump_to": "tools", "messages": [step]}
            return None

    model, agent = agent_for(protocol, [answer(protocol, "42")], [Inject()])
    out = run(agent, "go", "sync")
    assert out["answer"] == "42"
    assert [s["observation"] for s in out["steps"] if s["kind"] == "action"] == ["42"]
    assert len(model.requests) == 1


def test_a_jump_not_declared_is_ignored() -> None:
    @before_model
    def undeclared(state: AgentState, runtime: Any) -> dict[str, Any]:
        return {"jump_to": "end"}

    _, agent = agent_for("native", ["fine"], [undeclared])
    out = run(agent, "hi", "sync")
    assert out["status"] == "answered" and out["answer"] == "fine"


# -- wrap_model_call ----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_wrap_model_call_changes_tools_and_prompt_that_are_sent(protocol: str, mode: str) -> None:
    seen: list[ModelRequest] = []

    class OnlyDouble(AgentMiddleware):
        def wrap_model_call(self, request, handler):
            seen.append(request)
            tools = [t for t in request.tools if t.name == "double"]
            return handler(request.override(tools=tools, system_prompt="Be terse."))

        async def awrap_model_call(self, request, handler):
            seen.append(request)
            tools = [t for t in request.tools if t.name == "double"]
            return await handler(request.override(tools=tools, system_prompt="Be terse."))

    model, agent = agent_for(protocol, [answer(protocol, "ok")], [OnlyDouble()])
    run(agent, "hi", mode)
    [request] = seen
    assert {t.name for t in request.tools} == {"double", "shout"}
    assert all(m.type in ("human", "ai", "tool") for m in request.messages)  # standard messages
    [sent] = model.requests
    assert sent.messages[0].type == "system" and sent.messages[0].text.startswith("Be terse.")
    if protocol == "native":
        assert [t["function"]["name"] for t in sent.tools] == ["double"]
    else:
        assert "- double:" in sent.messages[0].text and "- shout:" not in sent.messages[0].text


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_wrap_model_call_sees_the_parsed_step_as_tool_calls(protocol: str) -> None:
    seen: list[AIMessage] = []

    @wrap_model_call
    def watch(request: ModelRequest, handler: Any) -> ModelResponse:
        response = handler(request)
        seen.append(response.result[-1])
        return response

    script = [action(protocol, "double", {"number": 5}), answer(protocol, "10")]
    _, agent = agent_for(protocol, script, [watch])
    run(agent, "double 5", "sync")
    assert seen[0].tool_calls[0]["name"] == "double"
    assert seen[0].tool_calls[0]["args"] == {"number": 5}
    assert not seen[1].tool_calls and seen[1].text == "10"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_wrap_model_call_can_answer_without_the_model(protocol: str) -> None:
    @wrap_model_call
    def canned(request: ModelRequest, handler: Any) -> AIMessage:
        return AIMessage("From the cache.")

    model, agent = agent_for(protocol, [], [canned])
    out = run(agent, "hi", "sync")
    assert out["status"] == "answered" and out["answer"] == "From the cache."
    assert model.requests == []


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_dynamic_prompt_replaces_the_system_prompt(protocol: str) -> None:
    @dynamic_prompt
    def by_user(request: ModelRequest) -> str:
        return "You speak like a pirate."

    model, agent = agent_for(protocol, [answer(protocol, "arr")], [by_user])
    run(agent, "hi", "sync")
    assert model.requests[0].messages[0].text.startswith("You speak like a pirate.")


def test_wrap_model_call_layers_nest_first_outermost() -> None:
    order: list[str] = []

    def layer(name: str) -> Any:
        @wrap_model_call(name=name)
        def wrapped(request: ModelRequest, handler: Any) -> ModelResponse:
            order.append(f"{name}>")
            response = handler(request)
            order.append(f"<{name}")
            return response

        return wrapped

    _, agent = agent_for("native", ["ok"], [layer("outer"), layer("inner")])
    run(agent, "hi", "sync")
    assert order == ["outer>", "inner>", "<inner", "<outer"]


# -- wrap_tool_call -------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_wrap_tool_call_changes_arguments_and_results(protocol: str, mode: str) -> None:
    class TenTimes(AgentMiddleware):
        def wrap_tool_call(self, request, handler):
            args = {"number": request.tool_call["args"]["number"] * 10}
            result = handler(request.override(tool_call={**request.tool_call, "args": args}))
            return result.model_copy(update={"content": f"{result.text} (x10)"})

        async def awrap_tool_call(self, request, handler):
            args = {"number": request.tool_call["args"]["number"] * 10}
            result = await handler(request.override(tool_call={**request.tool_call, "args": args}))
            return result.model_copy(update={"content": f"{result.text} (x10)"})

    script = [action(protocol, "double", {"number": 3}), answer(protocol, "60")]
    model, agent = agent_for(protocol, script, [TenTimes()])
    out = run(agent, "double 3", mode)
    assert out["steps"][0]["observation"] == "60 (x10)"
    assert "60 (x10)" in sent_text(model.requests[1])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_wrap_tool_call_can_answer_instead_of_the_tool(protocol: str) -> None:
    ran: list[str] = []

    @wrap_tool_call
    def blocked(request: Any, handler: Any) -> ToolMessage:
        ran.append(request.tool_call["name"])
        return ToolMessage("blocked by policy", tool_call_id=request.tool_call["id"])

    script = [action(protocol, "shout", {"text": "x"}), answer(protocol, "ok")]
    _, agent = agent_for(protocol, script, [blocked])
    out = run(agent, "shout x", "sync")
    assert ran == ["shout"]
    assert out["steps"][0]["observation"] == "blocked by policy"


# -- state schemas and tools --------------------------------------------------------------------


class CountState(AgentState):
    model_calls: NotRequired[Annotated[int, PrivateStateAttr]]
    visible_note: NotRequired[str]


class Counter(AgentMiddleware):
    state_schema = CountState

    def after_model(self, state, runtime):
        return {"model_calls": state.get("model_calls", 0) + 1, "visible_note": "counted"}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_state_schema_keys_are_channels_and_private_ones_stay_out_of_output(
    protocol: str,
) -> None:
    script = [action(protocol, "double", {"number": 1}), answer(protocol, "2")]
    _, agent = agent_for(protocol, script, [Counter()])
    out = run(agent, "double 1", "sync", thread="counted")
    assert out["visible_note"] == "counted"
    assert "model_calls" not in out
    stored = agent.get_state({"configurable": {"thread_id": "counted"}}).values
    assert stored["model_calls"] == 2
    assert "model_calls" not in agent.get_input_jsonschema()["properties"]
    assert "visible_note" in agent.get_input_jsonschema()["properties"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_middlewares_tools_are_offered_and_run(protocol: str) -> None:
    @tool
    def secret_word() -> str:
        """The secret word."""
        return "swordfish"

    class WithTool(AgentMiddleware):
        tools = (secret_word,)

    script = [action(protocol, "secret_word", {}), answer(protocol, "swordfish")]
    model, agent = agent_for(protocol, script, [WithTool()])
    out = run(agent, "what is the secret word", "sync")
    assert out["steps"][0]["observation"] == "swordfish"
    if protocol == "native":
        assert "secret_word" in [t["function"]["name"] for t in model.requests[0].tools]
    else:
        assert "- secret_word:" in model.requests[0].messages[0].text


def test_hook_nodes_are_named_like_create_agents() -> None:
    _, agent = agent_for("native", ["ok"], [Counter()])
    nodes = set(agent.get_graph().nodes)
    assert {"think", "review", "act", "observe", "finish", "Counter.after_model"} <= nodes


def test_the_same_middleware_twice_is_refused_in_one_sentence() -> None:
    from graph.settings import ConfigError

    with pytest.raises(ConfigError, match="given twice"):
        agent_for("native", ["ok"], [Counter(), Counter()])


def test_many_hooks_still_reach_the_graceful_step_limit() -> None:
    """The recursion limit derived from max_steps counts the hook nodes, so a run that never
    answers still ends through finish with `max_steps`, not GraphRecursionError."""

    def noop(i: int) -> Any:
        @before_model(name=f"b{i}")
        def hook(state: AgentState, runtime: Any) -> None:
            return None

        return hook

    loop = [calls(tool_call("double", {"number": i})) for i in range(10)]
    _, agent = agent_for("native", [*loop, "best guess"], [noop(i) for i in range(3)], max_steps=3)
    out = run(agent, "go on forever", "sync")
    assert out["status"] == "max_steps"


# -- loading by import path ----------------------------------------------------------------


def test_middleware_by_import_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_MIDDLEWARE", "tests.unit.test_middleware_hooks:Counter")
    model = ScriptedChatModel(["ok"])
    agent = build_graph(model=model, tools=[double], checkpointer=InMemorySaver())
    out = agent.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "p"}})
    assert out["visible_note"] == "counted"


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("no_colon", "not an import path"),
        ("tests.unit.nowhere:x", "cannot be imported"),
        ("tests.unit.test_middleware_hooks:PROTOCOLS", "not LangChain AgentMiddleware"),
    ],
)
def test_a_bad_middleware_path_is_one_sentence(
    monkeypatch: pytest.MonkeyPatch, path: str, why: str
) -> None:
    from graph.settings import ConfigError

    monkeypatch.setenv("REACT_AGENT_MIDDLEWARE", path)
    with pytest.raises(ConfigError, match=why):
        build_graph(model=ScriptedChatModel([]), tools=[double])


@before_agent
def _unused(state: AgentState, runtime: Any) -> None:  # the decorator form, importable
    return None


@after_agent
def _also_unused(state: AgentState, runtime: Any) -> None:
    return None
