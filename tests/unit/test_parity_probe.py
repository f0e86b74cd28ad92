"""A differential probe: the same scripted conversation through LangChain's `create_agent` and
through `build_graph`, compared on what a user of `create_agent` observes (the final messages,
the streams, interrupts and their resumes, state edits, middleware and tools of every kind).

Each test passes where the two agree, so it guards parity. The differences it found when it
was written were fixed (a `return_direct` result beside an ordinary call, a tool's content
blocks, the order of a `wrap_model_call` Command's messages, `ToolStrategy`'s messages, the
sentence for a caller's own failing model). The differences by design are left out of the
comparisons (the state's extra keys, the `finish`
node, the agent's own `custom` events, think/act for model/tools, tool faults as observations,
a model error ending the run with status error); `test_by_design_*` pins the ones a user meets
first, so a change to them is a decision, not an accident.

The other tests' subjects are not repeated here: built-in middleware
(test_middleware_builtin.py), each hook kind (test_middleware_hooks.py), injected state, store
and runtime (test_toolnode_examples.py), the build arguments (test_build_graph_api.py), the v3
tool-call handles and subagents (test_stream_v3.py).
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable
from typing import Annotated, Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    after_model,
    before_agent,
    before_model,
    dynamic_prompt,
    hook_config,
    wrap_model_call,
    wrap_tool_call,
)
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import InjectedToolCallId, StructuredTool, ToolException, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.types import Command, interrupt
from pydantic import BaseModel

from graph import build_graph
from tests.support.scripted_model import ScriptedChatModel, action, answer, calls, tool_call

MODES = ["sync", "async"]
NODE = {"model": "think", "tools": "act"}  # create_agent's node -> the node that plays it
OURS_ONLY = {"finish"}  # nodes of ours with no create_agent counterpart
QUESTION = {"messages": [("user", "hi")]}

pytestmark = pytest.mark.filterwarnings("ignore:The v3 streaming protocol")


# -- tools ---------------------------------------------------------------------------------------


@tool
def double(number: int) -> int:
    """Double a number."""
    return number * 2


@tool(response_format="content_and_artifact")
def chart(x: int) -> tuple[str, dict[str, int]]:
    """A chart's caption, the chart itself as the artifact."""
    return f"chart of {x}", {"points": x}


@tool
def record(x: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Record a number (answers with a Command)."""
    return Command(update={"messages": [ToolMessage(f"recorded {x}", tool_call_id=tool_call_id)]})


@tool
def hang_up(x: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """End the conversation (a Command that goes to the end)."""
    message = ToolMessage("bye", tool_call_id=tool_call_id)
    return Command(update={"messages": [message]}, goto=END)


@tool(return_direct=True)
def verdict(x: int) -> str:
    """The final word (returned directly)."""
    return f"verdict {x}"


@tool
def ask_human(question: str) -> str:
    """Ask a person; the run pauses until they answer."""
    return f"human said {interrupt({'question': question})}"


@tool
def progress(x: int) -> str:
    """Report progress on the custom stream."""
    get_stream_writer()({"progress": x})
    return "ok"


@tool
def as_dict(x: int) -> dict[str, Any]:
    """A dict result."""
    return {"a": x, "b": [1, 2]}


@tool
def nothing(x: int) -> None:
    """No result."""


@tool
def blocks(x: int) -> list[dict[str, str]]:
    """A result in content blocks, an image among them."""
    return [
        {"type": "text", "text": "a chart"},
        {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"},
    ]


@tool
def fails(x: int) -> int:
    """Always fails."""
    raise ToolException("bad x")


def _refuse(x: int) -> int:
    """Always fails, the tool's own handler says how."""
    raise ToolException("bad x")


HANDLED = [
    StructuredTool.from_function(_refuse, name="handled_true", handle_tool_error=True),
    StructuredTool.from_function(_refuse, name="handled_text", handle_tool_error="try 3"),
    StructuredTool.from_function(
        _refuse, name="handled_fn", handle_tool_error=lambda e: f"said: {e}"
    ),
]


# -- running both --------------------------------------------------------------------------------


def pair(script: list, tools: list, **kw: Any) -> dict[str, tuple[ScriptedChatModel, Any]]:
    """`create_agent` and this graph (native), each with its own copy of the script and saver."""
    built: dict[str, tuple[ScriptedChatModel, Any]] = {}
    for name, make in (("create_agent", create_agent), ("ours", build_graph)):
        model = ScriptedChatModel(list(script))
        built[name] = (model, make(model=model, tools=tools, checkpointer=InMemorySaver(), **kw))
    return built


def config(thread: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def run(agent: Any, payload: Any, mode: str, thread: str = "t") -> dict[str, Any]:
    if mode == "sync":
        return agent.invoke(payload, config(thread))
    return asyncio.run(agent.ainvoke(payload, config(thread)))


def seen(messages: list[BaseMessage]) -> list[tuple[Any, ...]]:
    """What a user reads in the messages: type, content, tool calls, a result's status."""
    out: list[tuple[Any, ...]] = []
    for message in messages:
        row: tuple[Any, ...] = (type(message).__name__, message.content)
        if isinstance(message, AIMessage) and message.tool_calls:
            row += ([(c["name"], c["args"], c["id"]) for c in message.tool_calls],)
        if isinstance(message, ToolMessage):
            row += (message.name, message.status, message.tool_call_id)
        out.append(row)
    return out


def final(
    script: list, tools: list, mode: str = "sync", theirs: str | None = None, **kw: Any
) -> dict[str, Any]:
    """Each agent's final messages, as seen, for one run of the script (`create_agent`'s run
    in `theirs` mode when it cannot take `mode`)."""
    return {
        name: seen(
            run(agent, QUESTION, (theirs or mode) if name == "create_agent" else mode)["messages"]
        )
        for name, (_, agent) in pair(script, tools, **kw).items()
    }


def agree(
    script: list, tools: list, mode: str = "sync", theirs: str | None = None, **kw: Any
) -> list[tuple[Any, ...]]:
    found = final(script, tools, mode, theirs, **kw)
    assert found["ours"] == found["create_agent"]
    return found["ours"]


def step(*items: dict) -> AIMessage:
    return calls(*items)


# -- tools of every kind -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_tool_results_of_every_shape_read_the_same(mode: str) -> None:
    script = [
        step(
            tool_call("double", {"number": 2}, id="c1"),
            tool_call("chart", {"x": 3}, id="c2"),
            tool_call("record", {"x": 4}, id="c3"),
            tool_call("as_dict", {"x": 5}, id="c4"),
            tool_call("nothing", {"x": 6}, id="c5"),
        ),
        "done",
    ]
    got = agree(script, [double, chart, record, as_dict, nothing], mode)
    assert [row[1] for row in got if row[0] == "ToolMessage"][:3] == [
        "4",
        "chart of 3",
        "recorded 4",
    ]


def test_an_artifact_is_kept_as_create_agent_keeps_it() -> None:
    artifacts = {}
    for name, (_, agent) in pair(
        [step(tool_call("chart", {"x": 3}, id="c1")), "ok"], [chart]
    ).items():
        out = agent.invoke(QUESTION, config())
        artifacts[name] = [m.artifact for m in out["messages"] if isinstance(m, ToolMessage)]
    assert artifacts["ours"] == artifacts["create_agent"] == [{"points": 3}]


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_command_that_goes_to_the_end_is_taken_as_create_agent_takes_it(mode: str) -> None:
    """In create_agent the tools node's own edge still leads back to the model."""
    got = agree([step(tool_call("hang_up", {"x": 1}, id="c1")), "after"], [hang_up], mode)
    assert got[-2][:2] == ("ToolMessage", "bye")


@pytest.mark.parametrize("handled", HANDLED, ids=lambda t: t.name)
def test_a_tools_own_error_handler_writes_the_result(handled: StructuredTool) -> None:
    got = agree([step(tool_call(handled.name, {"x": 1}, id="c1")), "done"], [handled])
    assert got[2][3] == "error"


def test_a_return_direct_tool_alone_ends_the_run_with_its_result() -> None:
    got = agree([step(tool_call("verdict", {"x": 1}, id="c1")), "never read"], [verdict])
    assert got[-1][:2] == ("ToolMessage", "verdict 1")


def test_return_direct_beside_an_ordinary_call_goes_back_to_the_model() -> None:
    script = [
        step(tool_call("verdict", {"x": 1}, id="c1"), tool_call("double", {"number": 2}, id="c2")),
        "done",
    ]
    assert agree(script, [verdict, double])[-1] == ("AIMessage", "done")


def test_content_blocks_from_a_tool_reach_the_model_whole() -> None:
    built = pair([step(tool_call("blocks", {"x": 1}, id="c1")), "done"], [blocks])
    sent = {}
    for name, (model, agent) in built.items():
        agent.invoke(QUESTION, config())
        sent[name] = model.requests[1].messages[-1].content
    assert sent["ours"] == sent["create_agent"] == blocks.invoke({"x": 1})


@pytest.mark.parametrize("mode", MODES)
def test_a_writer_in_a_tool_reaches_the_custom_stream(mode: str) -> None:
    """Ours adds its own step events (`event` keys, docs/approvals-and-clients.md, by design);
    the tool's own writes come through the same, in order."""

    async def collect(agent: Any) -> list[Any]:
        return [c async for c in agent.astream(QUESTION, config(), stream_mode="custom")]

    script = [
        step(tool_call("progress", {"x": 1}, id="c1"), tool_call("progress", {"x": 2}, id="c2")),
        "ok",
    ]
    got = {}
    for name, (_, agent) in pair(script, [progress]).items():
        chunks = (
            list(agent.stream(QUESTION, config(), stream_mode="custom"))
            if mode == "sync"
            else asyncio.run(collect(agent))
        )
        got[name] = sorted(c["progress"] for c in chunks if "event" not in c)
    assert got["ours"] == got["create_agent"] == [1, 2]


# -- interrupts, resumes and state edits ---------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("questions", [["one"], ["one", "two"]], ids=["one", "parallel"])
def test_an_interrupt_inside_a_tool_pauses_and_resumes_the_same(mode: str, questions: list) -> None:
    script = [step(*(tool_call("ask_human", {"question": q}, id=q) for q in questions)), "done"]
    got = {}
    for name, (_, agent) in pair(script, [ask_human]).items():
        paused = run(agent, QUESTION, mode)
        asked = paused["__interrupt__"]
        state = agent.get_state(config())
        resume = {i.id: f"yes to {i.value['question']}" for i in asked}
        done = run(agent, Command(resume=resume), mode)
        nodes = [NODE.get(n, n) for n in state.next]
        got[name] = (sorted(i.value["question"] for i in asked), nodes, seen(done["messages"]))
    assert got["ours"] == got["create_agent"]
    assert got["ours"][2][-1] == ("AIMessage", "done")


def test_a_tool_call_edited_at_an_interrupt_before_the_tools_runs_as_edited() -> None:
    script = [step(tool_call("double", {"number": 2}, id="c1")), "done"]
    got = {}
    for name, node in (("create_agent", "tools"), ("ours", "act")):
        model = ScriptedChatModel(list(script))
        make = create_agent if name == "create_agent" else build_graph
        agent = make(
            model=model, tools=[double], checkpointer=InMemorySaver(), interrupt_before=[node]
        )
        agent.invoke(QUESTION, config())
        last = agent.get_state(config()).values["messages"][-1]
        edited = AIMessage("", id=last.id, tool_calls=[tool_call("double", {"number": 7}, id="c1")])
        agent.update_state(config(), {"messages": [edited]})
        got[name] = seen(agent.invoke(None, config())["messages"])
    assert got["ours"] == got["create_agent"]
    assert ("ToolMessage", "14", "double", "success", "c1") in got["ours"]


def test_a_message_added_by_update_state_is_read_by_the_next_turn() -> None:
    got = {}
    for name, (model, agent) in pair(["first", "second"], [double]).items():
        agent.invoke(QUESTION, config())
        agent.update_state(config(), {"messages": [HumanMessage("added by update")]})
        out = agent.invoke({"messages": [("user", "next")]}, config())
        got[name] = (seen(out["messages"]), [m.text for m in model.requests[1].messages][-2:])
    assert got["ours"] == got["create_agent"]


def test_by_design_a_step_written_into_a_finished_run_is_not_run() -> None:
    """`create_agent` runs the calls of a step a client writes as its model after a run ended.
    Here nothing approved them, so a finished run runs no call a client wrote (the rule for a
    client's `Command(goto="act")` too): the next turn answers each as not run, and the model
    is told so."""
    _, agent = pair(["first", "second"], [double])["ours"]
    agent.invoke(QUESTION, config())
    edit = AIMessage("", tool_calls=[tool_call("double", {"number": 5}, id="c9")])
    agent.update_state(config(), {"messages": [edit]}, as_node="think")
    out = agent.invoke({"messages": [("user", "again")]}, config())
    answers = [x for x in out["messages"] if isinstance(x, ToolMessage) and x.tool_call_id == "c9"]
    assert [(x.status, "was not run" in x.text) for x in answers] == [("error", True)]
    assert out["answer"] == "second" and "10" not in [x.text for x in out["messages"]]


def test_the_v3_stream_shows_an_interrupt_and_its_resume_the_same() -> None:
    script = [step(tool_call("ask_human", {"question": "ok?"}, id="c1")), "done"]
    got = {}
    for name, (_, agent) in pair(script, [ask_human]).items():
        first = agent.stream_events(QUESTION, config(), version="v3")
        handles = [(h.tool_name, h.input) for h in first.tool_calls]
        assert first.output is not None
        asked = (first.interrupted, [i.value for i in first.interrupts])
        second = agent.stream_events(Command(resume="yes"), config(), version="v3")
        outputs = [(h.tool_name, h.output) for h in second.tool_calls]
        texts = [m.text for m in second.output["messages"]][-2:]
        got[name] = (handles, asked, outputs, texts)
    assert got["ours"] == got["create_agent"]


# -- streams -------------------------------------------------------------------------------------


def _mapped(chunks: list[dict[str, Any]]) -> list[str]:
    return [NODE.get(n, n) for c in chunks for n in c if n not in OURS_ONLY]


def test_astream_with_two_modes_interleaves_the_same() -> None:
    async def collect(agent: Any) -> list[tuple[str, Any]]:
        out = []
        async for mode, chunk in agent.astream(
            QUESTION, config(), stream_mode=["updates", "messages"]
        ):
            if mode == "messages":
                out.append(
                    (
                        mode,
                        type(chunk[0]).__name__,
                        NODE.get(chunk[1]["langgraph_node"], chunk[1]["langgraph_node"]),
                    )
                )
            else:
                out.extend((mode, NODE.get(n, n)) for n in chunk if n not in OURS_ONLY)
        return out

    script = [step(tool_call("double", {"number": 2}, id="c1")), "four"]
    got = {name: asyncio.run(collect(agent)) for name, (_, agent) in pair(script, [double]).items()}
    assert got["ours"] == got["create_agent"]


def test_messages_metadata_has_create_agents_keys() -> None:
    got = {}
    for name, (_, agent) in pair(["hello"], [double], name="helper").items():
        _, meta = next(iter(agent.stream(QUESTION, config(), stream_mode="messages")))
        got[name] = (
            sorted(k for k in meta if not k.startswith("checkpoint")),
            meta["lc_agent_name"],
        )
    assert got["ours"][0] == got["create_agent"][0]
    assert got["ours"][1] == got["create_agent"][1] == "helper"


def test_the_agent_as_a_node_of_a_parent_graph() -> None:
    script = [step(tool_call("double", {"number": 2}, id="c1")), "four"]

    def parent(agent: Any) -> Any:
        builder = StateGraph(MessagesState)
        builder.add_node("agent", agent)
        builder.add_edge(START, "agent")
        builder.add_edge("agent", END)
        return builder.compile(checkpointer=InMemorySaver())

    got: dict[str, Any] = {}
    for name, (_, agent) in pair(script, [double]).items():
        got[name] = [seen(parent(agent).invoke(QUESTION, config())["messages"])]
    for name, (_, agent) in pair(script, [double]).items():
        chunks = parent(agent).stream(QUESTION, config(), stream_mode="updates", subgraphs=True)
        got[name].append([(bool(ns), n) for ns, c in chunks for n in _mapped([c])])
    for name, (_, agent) in pair(script, [double]).items():
        chunks = parent(agent).stream(QUESTION, config(), stream_mode="messages")
        got[name].append([(type(m).__name__, meta["langgraph_node"]) for m, meta in chunks])
    assert got["ours"] == got["create_agent"]


# -- middleware as the LangChain docs write it ---------------------------------------------------


@before_model
def keep_first_and_last(state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
    messages = state["messages"]
    if len(messages) <= 2:
        return None
    return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), messages[0], messages[-1]]}


@after_model
def forget_the_question(state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
    messages = state["messages"]
    return {"messages": [RemoveMessage(id=messages[0].id)]} if len(messages) > 3 else None


@before_agent(can_jump_to=["end"])
def closed_today(state: dict[str, Any], runtime: Any) -> dict[str, Any]:
    return {"jump_to": "end", "messages": [AIMessage("closed today")]}


@after_model(can_jump_to=["end"])
def no_tools_today(state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
    return {"jump_to": "end"} if state["messages"][-1].tool_calls else None


@wrap_tool_call
def canned_result(request: Any, handler: Callable) -> ToolMessage:
    call = request.tool_call
    return ToolMessage("canned", tool_call_id=call["id"], name=call["name"])


@wrap_tool_call
def result_by_command(request: Any, handler: Callable) -> Command:
    message = ToolMessage("by command", tool_call_id=request.tool_call["id"])
    return Command(update={"messages": [message]})


@wrap_tool_call
def result_and_end(request: Any, handler: Callable) -> Command:
    message = ToolMessage("and the end", tool_call_id=request.tool_call["id"])
    return Command(update={"messages": [message]}, goto=END)


@wrap_model_call
def another_model(request: ModelRequest, handler: Callable) -> ModelResponse:
    return handler(request.override(model=ScriptedChatModel(["from the other model"])))


@wrap_model_call
def canned_reply(request: ModelRequest, handler: Callable) -> AIMessage:
    return AIMessage("canned reply")


@wrap_model_call
def settings_and_choice(request: ModelRequest, handler: Callable) -> ModelResponse:
    return handler(request.override(model_settings={"temperature": 0.1}, tool_choice="any"))


@wrap_model_call
def note_before(request: ModelRequest, handler: Callable) -> ModelResponse:
    return ModelResponse(result=[HumanMessage("a note"), *handler(request).result])


@wrap_model_call
def note_by_command(request: ModelRequest, handler: Callable) -> ExtendedModelResponse:
    update = {"messages": [HumanMessage("a note by command")]}
    return ExtendedModelResponse(model_response=handler(request), command=Command(update=update))


class AsyncOnlyBeforeModel(AgentMiddleware):
    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any]:
        return {"messages": [HumanMessage("added")]}


TOOL_STEP = [step(tool_call("double", {"number": 2}, id="c1")), "done"]
MIDDLEWARE_CASES = {
    "remove_all_messages": (keep_first_and_last, TOOL_STEP),
    "remove_one_message": (forget_the_question, TOOL_STEP),
    "before_agent_jumps_to_end": (closed_today, ["never read"]),
    "after_model_jumps_to_end_over_calls": (no_tools_today, TOOL_STEP),
    "wrap_tool_call_answers_itself": (canned_result, TOOL_STEP),
    "wrap_tool_call_returns_a_command": (result_by_command, TOOL_STEP),
    "wrap_tool_call_command_goes_to_end": (result_and_end, TOOL_STEP),
    "wrap_model_call_swaps_the_model": (another_model, ["never read"]),
    "wrap_model_call_answers_itself": (canned_reply, ["never read"]),
    "wrap_model_call_settings_and_tool_choice": (settings_and_choice, ["done"]),
    "wrap_model_call_adds_a_message": (note_before, ["done"]),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(MIDDLEWARE_CASES))
def test_middleware_from_the_docs_changes_the_run_the_same(case: str, mode: str) -> None:
    """create_agent refuses a sync-only wrap hook in an async run, which ours runs
    (docs/middleware.md): there ours runs async against create_agent's sync run."""
    ware, script = MIDDLEWARE_CASES[case]
    theirs = "sync" if case.startswith("wrap_") else None
    agree(script, [double], mode, theirs, middleware=[ware])


class Both(AgentMiddleware):
    """The class form with both the sync and the async hooks, as the docs write it: the first
    step of calls is sent back to the model (a jump), every tool result is tagged."""

    @hook_config(can_jump_to=["model"])
    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        messages = state["messages"]
        again = any(m.type == "human" and m.text == "think again" for m in messages)
        if isinstance(messages[-1], AIMessage) and messages[-1].tool_calls and not again:
            return {"jump_to": "model", "messages": [HumanMessage("think again")]}
        return None

    @hook_config(can_jump_to=["model"])
    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.after_model(state, runtime)

    def wrap_tool_call(self, request: Any, handler: Callable) -> Any:
        result = handler(request)
        return result.model_copy(update={"content": f"[tagged] {result.content}"})

    async def awrap_tool_call(self, request: Any, handler: Callable) -> Any:
        result = await handler(request)
        return result.model_copy(update={"content": f"[tagged] {result.content}"})


class AsyncOnlyWraps(AgentMiddleware):
    """Only the async wrap hooks: an async run of either agent uses them."""

    async def awrap_model_call(self, request: ModelRequest, handler: Callable) -> Any:
        return await handler(request.override(system_message=SystemMessage("async prompt")))

    async def awrap_tool_call(self, request: Any, handler: Callable) -> Any:
        call = {**request.tool_call, "args": {"number": 10}}
        return await handler(request.override(tool_call=call))


@pytest.mark.parametrize("mode", MODES)
def test_a_class_middleware_with_both_forms_jumps_and_wraps_the_same(mode: str) -> None:
    """By design ours answers the calls a jump left behind (`graph/loop/turn.py`
    sent_back), so the conversation stays one a chat API takes; create_agent leaves them
    unanswered. Apart from that answer, the same."""
    script = [
        step(tool_call("double", {"number": 2}, id="c1")),
        step(tool_call("double", {"number": 3}, id="c2")),
        "done",
    ]
    got = {}
    for name, (_, agent) in pair(script, [double], middleware=[Both()]).items():
        got[name] = seen(run(agent, QUESTION, mode)["messages"])
    closed = [r for r in got["ours"] if r[0] == "ToolMessage" and r[4] == "c1"]
    assert [r[3] for r in closed] == ["error"]
    assert [r for r in got["ours"] if r not in closed] == got["create_agent"]
    assert ("HumanMessage", "think again") in got["ours"]


def test_async_only_wrap_hooks_in_an_async_run_the_same() -> None:
    got = {}
    for name, (model, agent) in pair(TOOL_STEP, [double], middleware=[AsyncOnlyWraps()]).items():
        out = run(agent, QUESTION, "async")
        got[name] = (seen(out["messages"]), model.requests[0].messages[0].content)
    assert got["ours"] == got["create_agent"]
    assert ("ToolMessage", "20", "double", "success", "c1") in got["ours"][0]


def test_an_async_only_before_model_runs_in_an_async_run_the_same() -> None:
    agree(["done"], [double], "async", middleware=[AsyncOnlyBeforeModel()])


def test_what_the_model_is_sent_after_messages_are_removed() -> None:
    sent = {}
    for name, (model, agent) in pair(TOOL_STEP, [double], middleware=[keep_first_and_last]).items():
        agent.invoke(QUESTION, config())
        sent[name] = [type(m).__name__ for m in model.requests[-1].messages if m.type != "system"]
    assert sent["ours"] == sent["create_agent"] == ["HumanMessage", "ToolMessage"]


def test_a_wrap_model_call_commands_messages_follow_the_reply() -> None:
    assert agree(["done"], [double], middleware=[note_by_command])[-1] == (
        "HumanMessage",
        "a note by command",
    )


@dynamic_prompt
def dynamic(request: ModelRequest) -> str:
    return "dynamic"


@pytest.mark.parametrize("system", ["static", SystemMessage("static")], ids=["str", "message"])
def test_what_the_model_is_sent_with_a_system_prompt_and_a_dynamic_prompt(system: Any) -> None:
    for middleware in ([], [dynamic]):
        sent = {}
        for name, (model, agent) in pair(
            ["done"], [double], system_prompt=system, middleware=middleware
        ).items():
            agent.invoke(QUESTION, config())
            sent[name] = [(type(m).__name__, m.content) for m in model.requests[0].messages]
        assert sent["ours"] == sent["create_agent"]


def test_a_wrap_model_call_reads_the_same_request() -> None:
    found: dict[str, Any] = {}

    def recorder(name: str) -> Any:
        @wrap_model_call
        def record_request(request: ModelRequest, handler: Callable) -> ModelResponse:
            found[name] = (
                request.system_prompt,
                type(request.system_message).__name__,
                [type(m).__name__ for m in request.messages],
                [t.name for t in request.tools],
                request.tool_choice,
            )
            return handler(request)

        return record_request

    for name, make in (("create_agent", create_agent), ("ours", build_graph)):
        agent = make(
            model=ScriptedChatModel(["done"]),
            tools=[double],
            system_prompt="static",
            middleware=[recorder(name)],
        )
        agent.invoke(QUESTION)
    assert found["ours"] == found["create_agent"]


# -- structured output ---------------------------------------------------------------------------


class Weather(BaseModel):
    city: str
    temp: int


def test_provider_strategy_gives_the_same_messages_and_result() -> None:
    got = {}
    for name, (_, agent) in pair(
        ['{"city": "Paris", "temp": 20}'], [double], response_format=ProviderStrategy(Weather)
    ).items():
        out = agent.invoke(QUESTION, config())
        got[name] = (seen(out["messages"]), out["structured_response"])
    assert got["ours"] == got["create_agent"]


@pytest.mark.parametrize(
    "response_format", [ToolStrategy(Weather), Weather], ids=["ToolStrategy", "schema"]
)
def test_tool_strategy_gives_the_same_result(response_format: Any) -> None:
    script = [step(tool_call("Weather", {"city": "Paris", "temp": 20}, id="s1"))]
    got = {}
    for name, (_, agent) in pair(script, [double], response_format=response_format).items():
        got[name] = agent.invoke(QUESTION, config())["structured_response"]
    assert got["ours"] == got["create_agent"] == Weather(city="Paris", temp=20)


def test_tool_strategy_leaves_the_same_messages() -> None:
    script = [step(tool_call("Weather", {"city": "Paris", "temp": 20}, id="s1"))]
    agree(script, [double], response_format=ToolStrategy(Weather))


# -- the text protocol, where it applies ---------------------------------------------------------


def loose(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Rows without what the text protocol makes its own: call ids, a step's thought."""
    out: list[tuple[Any, ...]] = []
    for r in rows:
        if r[0] == "AIMessage" and len(r) > 2:
            out.append((r[0], [c[:2] for c in r[2]]))
        else:
            out.append(r[:4] if r[0] == "ToolMessage" else r[:2])
    return out


TEXT_CASES: dict[str, tuple[str, dict[str, Any], list, list]] = {
    "plain": ("double", {"number": 2}, [double], []),
    "artifact": ("chart", {"x": 3}, [chart], []),
    "command": ("record", {"x": 4}, [record], []),
    "handled_error": ("handled_text", {"x": 1}, HANDLED, []),
    "wrap_tool_call_answers_itself": ("double", {"number": 2}, [double], [canned_result]),
    "wrap_tool_call_returns_a_command": ("double", {"number": 2}, [double], [result_by_command]),
    "remove_all_messages": ("double", {"number": 2}, [double], [keep_first_and_last]),
    "after_model_jumps_to_end_over_calls": ("double", {"number": 2}, [double], [no_tools_today]),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(TEXT_CASES))
def test_the_text_protocol_leaves_the_messages_native_calling_leaves(mode: str, case: str) -> None:
    name, args, tools, middleware = TEXT_CASES[case]
    native_script = [step(tool_call(name, args, id="c1")), "done"]
    native = final(native_script, tools, "sync", middleware=middleware)["create_agent"]
    text_script = [action("text", name, args), answer("text", "done")]
    agent = build_graph(
        model=ScriptedChatModel(text_script), tools=tools, protocol="text", middleware=middleware
    )
    assert loose(seen(run(agent, QUESTION, mode)["messages"])) == loose(native)


@pytest.mark.parametrize("mode", MODES)
def test_an_interrupt_inside_a_tool_under_the_text_protocol(mode: str) -> None:
    native = [step(tool_call("ask_human", {"question": "ok?"}, id="c1")), "done"]
    _, theirs = pair(native, [ask_human])["create_agent"]
    text = [action("text", "ask_human", {"question": "ok?"}), answer("text", "done")]
    ours = build_graph(
        model=ScriptedChatModel(text),
        tools=[ask_human],
        protocol="text",
        checkpointer=InMemorySaver(),
    )
    got = {}
    for name, agent in (("create_agent", theirs), ("ours", ours)):
        asked = [i.value for i in run(agent, QUESTION, mode)["__interrupt__"]]
        got[name] = (asked, loose(seen(run(agent, Command(resume="yes"), mode)["messages"])))
    assert got["ours"] == got["create_agent"]


# -- differences by design, pinned ---------------------------------------------------------------


def test_by_design_a_raising_tool_is_an_error_observation_where_create_agent_raises() -> None:
    """docs/tools-and-mcp.md: faults are observations. create_agent's ToolNode re-raises."""
    built = pair(
        [
            step(
                tool_call("fails", {"x": 1}, id="c1"), tool_call("double", {"number": 2}, id="c2")
            ),
            "done",
        ],
        [fails, double],
    )
    with pytest.raises(ToolException):
        built["create_agent"][1].invoke(QUESTION, config())
    out = built["ours"][1].invoke(QUESTION, config())
    assert [r[3] for r in seen(out["messages"]) if r[0] == "ToolMessage"] == ["error", "success"]
    assert out["status"] == "answered"


def test_a_failing_model_of_the_callers_is_not_described_as_another() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = build_graph(model=ScriptedChatModel([RuntimeError("quota gone")]), tools=[double])
        out = agent.invoke(QUESTION)
    assert out["status"] == "error"
    assert "quota gone" in out["error"]
    assert "embedded local model" not in out["error"]
    assert "model endpoint" not in out["error"]
