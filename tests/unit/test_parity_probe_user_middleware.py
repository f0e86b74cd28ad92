"""A differential probe of middleware a user writes: a zoo of small custom middleware (the
decorators, sync and async-only, with jumps, `state_schema=` and `name=`; `AgentMiddleware`
subclasses with private and omitted state, counters across turns, tools of their own,
trimming, retries, canned replies, request overrides, commands; tool wrappers that answer,
edit, retry and read the runtime; middleware that raise; ordering across several middleware;
the caller's context and store), each run through `create_agent` and through `build_graph`
with the same scripted model, compared on what a user sees: the final messages, the keys the
middleware wrote (in what `invoke` returns and in `get_state`), the model and tool calls that
ran, the requests the model received (messages, tools, system message, settings) and the
errors raised.

Each comparison passes where the two agree; a real defect is a strict xfail asserting the
right behaviour; a difference by design is `test_by_design_*` with why. Each agent gets its
own middleware made anew (`ware(log)`), its own scripted model and saver; every agent is given
`system_prompt="base"` so the system message compares (ours sends its default instructions
without one, pinned in test_parity_probe3.py). The text protocol is compared with
`create_agent`'s native run on the gist: tool calls and arguments, results, the answer, the
middleware's state and log, never message-by-message content.

Found when it was written, and fixed: an after_model hook that turns the step into an answer did
not end the run (graph/loop/tasks.py `hooks_answered`); a request offering a tool the agent
lacks was not refused (graph/loop/request.py, create_agent's rule); a system message a wrap
removes was sent anyway (the default instructions); an `interrupt()` inside a wrap_model_call
ended the run with status error (graph/nodes/think.py); an after_agent rewrite of the answer
left `answer` stale (graph/middleware/hooks.py); a hook returning a Command was refused (it is
applied, its `goto` in our node names). Pinned by design: arguments a tool wrap edits in place
reach the tool, not the stored step; a message written between a call and its result is sent
after the result; async-only node hooks run in a sync run; an async-only wrap in a sync run, and
an error raised in a wrap, is a fault (status error or an error observation), not raised; a
sync-only wrap runs in an async run; two wraps' Commands on one key keep the outermost; a
middleware key named like the agent's own is the agent's.
"""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, NotRequired

import pytest
from langchain.agents import AgentState, create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ExtendedModelResponse,
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
from langchain.agents.middleware.types import OmitFromInput, OmitFromOutput, PrivateStateAttr
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command
from pydantic import BaseModel, PrivateAttr
from typing_extensions import TypedDict

from graph import build_graph
from tests.support.scripted_model import ScriptedChatModel, action, answer, calls, tool_call

pytestmark = [
    pytest.mark.filterwarnings("ignore:The v3 streaming protocol"),
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings"),
    pytest.mark.filterwarnings("ignore:Deserializing unregistered type"),
]

QUESTION = {"messages": [("user", "hi")]}
AGENTS = ("create_agent", "ours")
Ware = Callable[[list], list[AgentMiddleware]]


# -- a model that records its settings, tools that record their runs ----------------------------


class Recording(ScriptedChatModel):
    """The scripted model, also recording the settings each request was sent with."""

    _settings: list[dict[str, Any]] = PrivateAttr(default_factory=list)

    def _reply(self, messages: list[BaseMessage], stop: Any, **kwargs: Any) -> ChatResult:
        self._settings.append({k: v for k, v in kwargs.items() if k != "tools" and v is not None})
        return super()._reply(messages, stop, **kwargs)


RAN: list[tuple[str, Any]] = []
FLAKY: dict[str, int] = {}


@tool
def double(number: int) -> int:
    """Double a number."""
    RAN.append(("double", number))
    return number * 2


@tool
def shout(text: str) -> str:
    """Shout a text."""
    RAN.append(("shout", text))
    return text.upper()


@tool
def flaky(x: int) -> str:
    """Fails on its first call of a run, then works."""
    RAN.append(("flaky", x))
    FLAKY["n"] = FLAKY.get("n", 0) + 1
    if FLAKY["n"] == 1:
        raise ValueError("flaky first time")
    return f"flaky ok {x}"


@tool
def note_tool(text: str) -> str:
    """A middleware's own tool: note a text."""
    RAN.append(("note_tool", text))
    return f"noted {text}"


# -- scripts in either protocol -----------------------------------------------------------------


def call(name: str, args: dict[str, Any], id: str) -> tuple[str, dict[str, Any], str]:
    return (name, args, id)


def script_for(steps: list[Any], protocol: str) -> list[Any]:
    """A tuple is one tool call, a string the answer, anything else (an exception, a message)
    goes as it is."""
    out: list[Any] = []
    for item in steps:
        if isinstance(item, tuple):
            name, args, id = item
            out.append(
                calls(tool_call(name, args, id=id))
                if protocol == "native"
                else action(protocol, name, args)
            )
        elif isinstance(item, str):
            out.append(answer(protocol, item))
        else:
            out.append(item)
    return out


# -- running one agent, what a user sees --------------------------------------------------------


def cfg(thread: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def invoke(
    agent: Any,
    payload: Any,
    mode: str,
    context: Any = None,
    thread: str = "t",
    durability: str | None = None,
) -> Any:
    extra: dict[str, Any] = {} if context is None else {"context": context}
    if durability:
        extra["durability"] = durability
    if mode == "sync":
        return agent.invoke(payload, cfg(thread), **extra)
    if mode == "async":
        return asyncio.run(agent.ainvoke(payload, cfg(thread), **extra))
    if mode == "stream":
        last = None
        for chunk in agent.stream(payload, cfg(thread), stream_mode="values", **extra):
            last = chunk
        return last

    async def collect() -> Any:
        last = None
        async for chunk in agent.astream(payload, cfg(thread), stream_mode="values", **extra):
            last = chunk
        return last

    return asyncio.run(collect())


def seen(messages: list[BaseMessage]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for message in messages:
        row: tuple[Any, ...] = (type(message).__name__, message.content)
        if isinstance(message, AIMessage) and message.tool_calls:
            row += ([(c["name"], c["args"], c["id"]) for c in message.tool_calls],)
        if isinstance(message, ToolMessage):
            row += (message.name, message.status, message.tool_call_id)
        out.append(row)
    return out


def gist(messages: list[BaseMessage]) -> dict[str, Any]:
    """What the text protocol is compared on: the calls, their results, the answer."""
    last = messages[-1] if messages else None
    return {
        "calls": [
            (c["name"], c["args"])
            for m in messages
            if isinstance(m, AIMessage)
            for c in m.tool_calls
        ],
        "results": [(m.name, m.text, m.status) for m in messages if isinstance(m, ToolMessage)],
        "humans": [m.text for m in messages if isinstance(m, HumanMessage)],
        "answer": last.text if isinstance(last, AIMessage) and not last.tool_calls else None,
    }


def requests(model: Recording) -> list[dict[str, Any]]:
    out = []
    for request, settings in zip(model.requests, model._settings, strict=True):
        system = [m.content for m in request.messages if isinstance(m, SystemMessage)]
        out.append(
            {
                "messages": [
                    (type(m).__name__, m.content) for m in request.messages if m.type != "system"
                ],
                "tools": sorted(t["function"]["name"] for t in request.tools),
                "system": system,
                "settings": settings,
            }
        )
    return out


def outcome(thunk: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return ("ok", thunk())
    except Exception as error:  # which error reaches the caller is the subject
        return ("raised", type(error).__name__)


@dataclass
class Run:
    """One agent's run of a case, as a user sees it."""

    outs: list[tuple[str, Any]]
    state: dict[str, Any]
    model_calls: int
    tool_runs: list[tuple[str, Any]]
    requests: list[dict[str, Any]]
    log: list[Any]
    model: Recording
    agent: Any


def go(
    name: str,
    steps: list[Any],
    ware: Ware,
    *,
    tools: tuple = (double,),
    mode: str = "sync",
    protocol: str = "native",
    payloads: tuple = (QUESTION,),
    context: Any = None,
    durability: str | None = None,
    **kw: Any,
) -> Run:
    RAN.clear()
    FLAKY.clear()
    log: list[Any] = []
    model = Recording(script_for(steps, "native" if name == "create_agent" else protocol))
    kw.setdefault("system_prompt", "base")
    if name == "create_agent":
        agent = create_agent(
            model=model, tools=list(tools), middleware=ware(log), checkpointer=InMemorySaver(), **kw
        )
    else:
        agent = build_graph(
            model=model,
            tools=list(tools),
            middleware=ware(log),
            checkpointer=InMemorySaver(),
            protocol=protocol,
            **kw,
        )
    outs = [
        outcome(lambda p=p: invoke(agent, p, mode, context, durability=durability))
        for p in payloads
    ]
    read = outcome(lambda: dict(agent.get_state(cfg()).values))
    state = read[1] if read[0] == "ok" else {"get_state raised": read[1]}
    return Run(outs, state, len(model.requests), list(RAN), requests(model), log, model, agent)


def view(run: Run, keys: tuple = (), text: bool = False) -> dict[str, Any]:
    """What is compared: per invoke, the messages (or their gist) and the keys the middleware
    wrote as returned; the messages and the same keys in `get_state`; the model and tool
    calls; the requests (for the text protocol, their settings only); the middleware's log."""
    shown = []
    for status, out in run.outs:
        if status == "raised":
            shown.append(("raised", out))
            continue
        messages = gist(out["messages"]) if text else seen(out["messages"])
        shown.append((messages, {k: out[k] for k in keys if k in out}))
    stored = run.state.get("messages", [])
    return {
        "outs": shown,
        "stored_messages": gist(stored) if text else seen(stored),
        "state": {k: v for k, v in run.state.items() if k in keys or k == "get_state raised"},
        "model_calls": run.model_calls,
        "tool_runs": run.tool_runs,
        # under the text protocol the settings only (tool_choice is not enforced there, pinned
        # in test_parity_probe_textreact.py)
        "requests": [
            {k: v for k, v in r["settings"].items() if k != "tool_choice"} for r in run.requests
        ]
        if text
        else run.requests,
        "log": run.log,
    }


def compare(
    steps: list[Any], ware: Ware, keys: tuple = (), theirs: str | None = None, **kw: Any
) -> dict[str, Any]:
    """Both agents' views of one case (create_agent's run in `theirs` mode when it cannot
    take ours); asserts they agree and returns ours."""
    got = {
        name: view(
            go(
                name,
                steps,
                ware,
                **{**kw, **({"mode": theirs} if theirs and name == AGENTS[0] else {})},
            ),
            keys,
        )
        for name in AGENTS
    }
    assert got["ours"] == got["create_agent"]
    return got["ours"]


def compare_text(steps: list[Any], ware: Ware, keys: tuple = (), **kw: Any) -> dict[str, Any]:
    """create_agent native against ours under the text protocol, on the gist."""
    theirs = view(go("create_agent", steps, ware, **kw), keys, text=True)
    ours = view(go("ours", steps, ware, protocol="text", **kw), keys, text=True)
    assert ours == theirs
    return ours


# -- state schemas a user declares --------------------------------------------------------------


class Counted(AgentState):
    model_calls_seen: NotRequired[int]


class Trail(AgentState):
    trail: NotRequired[Annotated[list[str], operator.add]]


class Kept(AgentState):
    public: NotRequired[str]
    secret: NotRequired[Annotated[int, PrivateStateAttr]]
    not_in: NotRequired[Annotated[str, OmitFromInput]]
    not_out: NotRequired[Annotated[str, OmitFromOutput]]


class Turns(AgentState):
    turns: NotRequired[Annotated[int, PrivateStateAttr]]
    last_turn: NotRequired[int]


KEPT = ("public", "secret", "not_in", "not_out")
TOOL_THEN_DONE = [call("double", {"number": 2}, "c1"), "done"]
TWO_TOOLS_THEN_DONE = [
    call("double", {"number": 2}, "c1"),
    call("double", {"number": 3}, "c2"),
    "done",
]


def last_ai(state: dict[str, Any]) -> AIMessage:
    return next(m for m in reversed(state["messages"]) if isinstance(m, AIMessage))


# -- the zoo: each a factory `ware(log) -> [middleware]`, made anew for each agent ---------------


def w_before_agent_note(log: list) -> list:
    @before_agent
    def house_rule(state: AgentState, runtime: Any) -> dict[str, Any]:
        log.append(("before_agent", len(state["messages"])))
        return {"messages": [HumanMessage("House rule: be brief.")]}

    return [house_rule]


def w_before_model_counter(log: list) -> list:
    @before_model(state_schema=Counted)
    def count_calls(state: Counted, runtime: Any) -> dict[str, Any]:
        seen_so_far = state.get("model_calls_seen", 0) + 1
        log.append(seen_so_far)
        return {"model_calls_seen": seen_so_far}

    return [count_calls]


def w_after_model_log(log: list) -> list:
    @after_model
    def log_step(state: AgentState, runtime: Any) -> None:
        step = state["messages"][-1]
        # a step's own words are left out: under the text protocol they are the thought
        log.append((type(step).__name__, [c["name"] for c in step.tool_calls]))
        if not step.tool_calls:
            log.append(step.text)

    return [log_step]


def w_after_agent_rewrite(log: list) -> list:
    @after_agent
    def shout_answer(state: AgentState, runtime: Any) -> dict[str, Any]:
        last = state["messages"][-1]
        log.append(last.text)
        return {"messages": [AIMessage(last.text.upper(), id=last.id)]}

    return [shout_answer]


def w_after_agent_append(log: list) -> list:
    @after_agent
    def sign_off(state: AgentState, runtime: Any) -> dict[str, Any]:
        return {"messages": [AIMessage("-- signed, the agent")]}

    return [sign_off]


def w_dynamic_prompt(log: list) -> list:
    @dynamic_prompt
    def count_prompt(request: ModelRequest) -> str:
        log.append(len(request.messages))
        return f"You have read {len(request.messages)} messages."

    return [count_prompt]


def w_wrap_model_retry_bad(log: list) -> list:
    @wrap_model_call
    def redo_bad(request: ModelRequest, handler: Callable) -> ModelResponse:
        response = handler(request)
        log.append(response.result[-1].text)
        if response.result[-1].text == "bad":
            response = handler(request)
            log.append(response.result[-1].text)
        return response

    return [redo_bad]


def w_wrap_model_retry_error(log: list) -> list:
    @wrap_model_call
    def retry_once(request: ModelRequest, handler: Callable) -> ModelResponse:
        try:
            return handler(request)
        except RuntimeError as error:
            log.append(str(error))
            return handler(request)

    return [retry_once]


def w_wrap_tool_short(log: list) -> list:
    @wrap_tool_call
    def cached(request: Any, handler: Callable) -> ToolMessage:
        log.append(request.tool_call["name"])
        return ToolMessage("cached 42", tool_call_id=request.tool_call["id"], name="double")

    return [cached]


def w_before_model_jump_end(log: list) -> list:
    @before_model(can_jump_to=["end"])
    def one_result_is_enough(state: AgentState, runtime: Any) -> dict[str, Any] | None:
        if any(isinstance(m, ToolMessage) for m in state["messages"]):
            return {"messages": [AIMessage("Enough for today.")], "jump_to": "end"}
        return None

    return [one_result_is_enough]


def w_after_model_jump_model(log: list) -> list:
    @after_model(can_jump_to=["model"])
    def no_drafts(state: AgentState, runtime: Any) -> dict[str, Any] | None:
        if state["messages"][-1].text == "draft":
            log.append("redo")
            return {"messages": [HumanMessage("Not a draft, please.")], "jump_to": "model"}
        return None

    return [no_drafts]


def w_after_model_jump_end(log: list) -> list:
    @after_model(can_jump_to=["end"])
    def stop_on_tools(state: AgentState, runtime: Any) -> dict[str, Any] | None:
        if state["messages"][-1].tool_calls:
            return {"jump_to": "end"}
        return None

    return [stop_on_tools]


def w_before_model_jump_tools(log: list) -> list:
    @before_model(can_jump_to=["tools"])
    def decide_first(state: AgentState, runtime: Any) -> dict[str, Any] | None:
        if len(state["messages"]) == 1:
            step = AIMessage("", tool_calls=[tool_call("double", {"number": 5}, id="h1")])
            return {"messages": [step], "jump_to": "tools"}
        return None

    return [decide_first]


def w_before_agent_jump_end(log: list) -> list:
    @before_agent(can_jump_to=["end"])
    def closed(state: AgentState, runtime: Any) -> dict[str, Any]:
        return {"messages": [AIMessage("We are closed.")], "jump_to": "end"}

    return [closed]


def w_undeclared_jump(log: list) -> list:
    @before_model
    def jumps_without_leave(state: AgentState, runtime: Any) -> dict[str, Any]:
        return {"jump_to": "end"}

    return [jumps_without_leave]


def w_named(log: list) -> list:
    @before_model(name="Guard")
    def guard(state: AgentState, runtime: Any) -> None:
        log.append("guard")

    return [guard]


class Keeper(AgentMiddleware):
    state_schema = Kept

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any]:
        return {"public": "p", "secret": 7, "not_in": "i", "not_out": "o"}


def w_kept(log: list) -> list:
    return [Keeper()]


class Closer(AgentMiddleware):
    state_schema = Kept

    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any]:
        return {"public": f"closed after {len(state['messages'])}", "secret": 1, "not_out": "x"}


def w_closer(log: list) -> list:
    return [Closer()]


class TurnCounter(AgentMiddleware):
    state_schema = Turns

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any]:
        turn = state.get("turns", 0) + 1
        return {"turns": turn, "last_turn": turn}


def w_turns(log: list) -> list:
    return [TurnCounter()]


class Noter(AgentMiddleware):
    tools = [note_tool]  # noqa: RUF012 - as a user writes it


def w_tools(log: list) -> list:
    return [Noter()]


def w_trim(log: list) -> list:
    @before_model
    def keep_last_two(state: AgentState, runtime: Any) -> dict[str, Any] | None:
        messages = state["messages"]
        if len(messages) <= 2:
            return None
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages[-2:]]}

    return [keep_last_two]


class Canned(AgentMiddleware):
    def __init__(self, as_message: bool) -> None:
        super().__init__()
        self.as_message = as_message

    def wrap_model_call(self, request: ModelRequest, handler: Callable) -> Any:
        reply = AIMessage("canned reply")
        return reply if self.as_message else ModelResponse(result=[reply])


def w_canned_response(log: list) -> list:
    return [Canned(as_message=False)]


def w_canned_message(log: list) -> list:
    return [Canned(as_message=True)]


def w_override_model(log: list) -> list:
    other = Recording(["from the other model"])

    @wrap_model_call
    def switch(request: ModelRequest, handler: Callable) -> ModelResponse:
        response = handler(request.override(model=other))
        log.append([[type(m).__name__ for m in r.messages] for r in other.requests])
        return response

    return [switch]


def w_override_tools(log: list) -> list:
    @wrap_model_call
    def shout_only(request: ModelRequest, handler: Callable) -> ModelResponse:
        log.append(sorted(t.name for t in request.tools))
        return handler(request.override(tools=[t for t in request.tools if t.name == "shout"]))

    return [shout_only]


def w_override_no_tools(log: list) -> list:
    @wrap_model_call
    def no_tools(request: ModelRequest, handler: Callable) -> ModelResponse:
        return handler(request.override(tools=[]))

    return [no_tools]


def w_override_tool_choice(log: list) -> list:
    @wrap_model_call
    def must_call(request: ModelRequest, handler: Callable) -> ModelResponse:
        return handler(request.override(tool_choice="any"))

    return [must_call]


def w_override_system(log: list) -> list:
    @wrap_model_call
    def other_prompt(request: ModelRequest, handler: Callable) -> ModelResponse:
        log.append(request.system_message.text if request.system_message else None)
        return handler(request.override(system_message=SystemMessage("other prompt")))

    return [other_prompt]


def w_override_settings(log: list) -> list:
    @wrap_model_call
    def cool(request: ModelRequest, handler: Callable) -> ModelResponse:
        log.append(dict(request.model_settings))
        return handler(request.override(model_settings={"temperature": 0.1}))

    return [cool]


def w_override_messages(log: list) -> list:
    @wrap_model_call
    def last_only(request: ModelRequest, handler: Callable) -> ModelResponse:
        return handler(request.override(messages=request.messages[-1:]))

    return [last_only]


class Stamper(AgentMiddleware):
    state_schema = Kept

    def wrap_model_call(self, request: ModelRequest, handler: Callable) -> Any:
        response = handler(request)
        update = {"public": f"stamped {len(request.messages)}"}
        return ExtendedModelResponse(model_response=response, command=Command(update=update))


def w_extended(log: list) -> list:
    return [Stamper()]


def w_extended_messages(log: list) -> list:
    @wrap_model_call
    def with_note(request: ModelRequest, handler: Callable) -> ExtendedModelResponse:
        response = handler(request)
        note = HumanMessage("a note from the wrap")
        return ExtendedModelResponse(
            model_response=response, command=Command(update={"messages": [note]})
        )

    return [with_note]


def w_wrap_tool_edit_args(log: list) -> list:
    @wrap_tool_call
    def ten(request: Any, handler: Callable) -> Any:
        request.tool_call["args"]["number"] = 10
        return handler(request)

    return [ten]


def w_wrap_tool_override_args(log: list) -> list:
    @wrap_tool_call
    def eleven(request: Any, handler: Callable) -> Any:
        new_call = {**request.tool_call, "args": {"number": 11}}
        return handler(request.override(tool_call=new_call))

    return [eleven]


def w_wrap_tool_result_edit(log: list) -> list:
    @wrap_tool_call
    def annotate(request: Any, handler: Callable) -> Any:
        result = handler(request)
        log.append((result.content, result.status))
        return ToolMessage(
            f"[{result.content}]", tool_call_id=result.tool_call_id, name=result.name
        )

    return [annotate]


class ToolCommander(AgentMiddleware):
    state_schema = Kept

    def wrap_tool_call(self, request: Any, handler: Callable) -> Any:
        result = handler(request)
        return Command(update={"messages": [result], "public": f"saw {result.content}"})


def w_wrap_tool_command(log: list) -> list:
    return [ToolCommander()]


def w_wrap_tool_retry(log: list) -> list:
    @wrap_tool_call
    def retry(request: Any, handler: Callable) -> Any:
        try:
            return handler(request)
        except ValueError as error:
            log.append(str(error))
            return handler(request)

    return [retry]


def w_wrap_tool_reads_state(log: list) -> list:
    @wrap_tool_call
    def reader(request: Any, handler: Callable) -> Any:
        log.append(
            (
                [type(m).__name__ for m in request.state["messages"]],
                request.tool.name if request.tool else None,
                request.runtime.context,
            )
        )
        return handler(request)

    return [reader]


def w_after_model_edit_calls(log: list) -> list:
    @after_model
    def seven(state: AgentState, runtime: Any) -> dict[str, Any] | None:
        last = state["messages"][-1]
        if not last.tool_calls:
            return None
        edited = [{**c, "args": {"number": 7}} for c in last.tool_calls]
        return {"messages": [AIMessage(last.content, id=last.id, tool_calls=edited)]}

    return [seven]


def w_after_model_drop_calls(log: list) -> list:
    @after_model
    def no_calls(state: AgentState, runtime: Any) -> dict[str, Any] | None:
        last = state["messages"][-1]
        if not last.tool_calls:
            return None
        return {"messages": [AIMessage("I will not use tools.", id=last.id)]}

    return [no_calls]


def w_after_model_append(log: list) -> list:
    @after_model
    def remark(state: AgentState, runtime: Any) -> dict[str, Any]:
        return {"messages": [HumanMessage(f"remark after {len(state['messages'])}")]}

    return [remark]


def w_multi_hook_class(log: list) -> list:
    class Everything(AgentMiddleware):
        state_schema = Counted

        def before_agent(self, state: Any, runtime: Any) -> None:
            log.append("before_agent")

        def before_model(self, state: Any, runtime: Any) -> dict[str, Any]:
            log.append("before_model")
            return {"model_calls_seen": state.get("model_calls_seen", 0) + 1}

        def after_model(self, state: Any, runtime: Any) -> None:
            log.append("after_model")

        def after_agent(self, state: Any, runtime: Any) -> None:
            log.append("after_agent")

        def wrap_model_call(self, request: ModelRequest, handler: Callable) -> Any:
            log.append("wrap_model_call")
            return handler(request)

        def wrap_tool_call(self, request: Any, handler: Callable) -> Any:
            log.append("wrap_tool_call")
            return handler(request)

    return [Everything()]


def w_hook_config_class(log: list) -> list:
    class Stopper(AgentMiddleware):
        @hook_config(can_jump_to=["end"])
        def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
            if state["messages"][-1].tool_calls:
                return {"messages": [AIMessage("Stopped before tools.")], "jump_to": "end"}
            return None

    return [Stopper()]


def w_undeclared_key(log: list) -> list:
    @before_model
    def writes_stray(state: AgentState, runtime: Any) -> dict[str, Any]:
        return {"stray_key": 1}

    return [writes_stray]


# name -> (steps, ware, keys, tools)
CASES: dict[str, tuple[list[Any], Ware, tuple, tuple]] = {
    "before_agent_note": (TOOL_THEN_DONE, w_before_agent_note, (), (double,)),
    "before_model_state_schema_counter": (
        TOOL_THEN_DONE,
        w_before_model_counter,
        ("model_calls_seen",),
        (double,),
    ),
    "after_model_log": (TOOL_THEN_DONE, w_after_model_log, (), (double,)),
    "after_agent_rewrites_answer": (TOOL_THEN_DONE, w_after_agent_rewrite, (), (double,)),
    "after_agent_appends": (["done"], w_after_agent_append, (), (double,)),
    "dynamic_prompt": (TOOL_THEN_DONE, w_dynamic_prompt, (), (double,)),
    "wrap_model_retry_on_bad_reply": (["bad", "good"], w_wrap_model_retry_bad, (), (double,)),
    "wrap_model_retry_on_error": (
        [RuntimeError("flaky model"), "good"],
        w_wrap_model_retry_error,
        (),
        (double,),
    ),
    "wrap_tool_short_circuit": (TOOL_THEN_DONE, w_wrap_tool_short, (), (double,)),
    "before_model_jump_end": (TWO_TOOLS_THEN_DONE, w_before_model_jump_end, (), (double,)),
    "after_model_jump_model": (["draft", "final"], w_after_model_jump_model, (), (double,)),
    "after_model_jump_end": (TOOL_THEN_DONE, w_after_model_jump_end, (), (double,)),
    "before_model_jump_tools": (["done"], w_before_model_jump_tools, (), (double,)),
    "before_agent_jump_end": (["never"], w_before_agent_jump_end, (), (double,)),
    "undeclared_jump_ignored": (["done"], w_undeclared_jump, (), (double,)),
    "named_decorator": (["done"], w_named, (), (double,)),
    "private_and_omitted_state": (["done"], w_kept, KEPT, (double,)),
    "after_agent_writes_state": (TOOL_THEN_DONE, w_closer, KEPT, (double,)),
    "middleware_tools": ([call("note_tool", {"text": "a"}, "c1"), "done"], w_tools, (), (double,)),
    "trim_with_remove_all": (TWO_TOOLS_THEN_DONE, w_trim, (), (double,)),
    "wrap_model_canned_response": (["never"], w_canned_response, (), (double,)),
    "wrap_model_canned_message": (["never"], w_canned_message, (), (double,)),
    "override_model": (["never"], w_override_model, (), (double,)),
    "override_tools_subset": (
        [call("shout", {"text": "a"}, "c1"), "done"],
        w_override_tools,
        (),
        (double, shout),
    ),
    "override_tools_empty": (["done"], w_override_no_tools, (), (double,)),
    "override_tool_choice": (TOOL_THEN_DONE, w_override_tool_choice, (), (double,)),
    "override_system_message": (TOOL_THEN_DONE, w_override_system, (), (double,)),
    "override_model_settings": (TOOL_THEN_DONE, w_override_settings, (), (double,)),
    "override_messages": (TOOL_THEN_DONE, w_override_messages, (), (double,)),
    "extended_response_state": (TOOL_THEN_DONE, w_extended, KEPT, (double,)),
    "wrap_tool_override_args": (TOOL_THEN_DONE, w_wrap_tool_override_args, (), (double,)),
    "wrap_tool_edits_result": (TOOL_THEN_DONE, w_wrap_tool_result_edit, (), (double,)),
    "wrap_tool_command": (TOOL_THEN_DONE, w_wrap_tool_command, KEPT, (double,)),
    "wrap_tool_retry_on_error": (
        [call("flaky", {"x": 1}, "c1"), "done"],
        w_wrap_tool_retry,
        (),
        (flaky,),
    ),
    "wrap_tool_reads_state": (TOOL_THEN_DONE, w_wrap_tool_reads_state, (), (double,)),
    "after_model_edits_calls": (TOOL_THEN_DONE, w_after_model_edit_calls, (), (double,)),
    "multi_hook_class": (TOOL_THEN_DONE, w_multi_hook_class, ("model_calls_seen",), (double,)),
    "hook_config_class_jump": (TOOL_THEN_DONE, w_hook_config_class, (), (double,)),
}

MODES = ["sync", "async", "stream", "astream"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_user_middleware_is_seen_the_same(case: str, mode: str) -> None:
    """Sync-only wraps in an async run: create_agent raises NotImplementedError (pinned in
    test_by_design_a_sync_only_wrap_runs_in_an_async_run), so its sync run is the reference."""
    steps, ware, keys, tools = CASES[case]
    theirs = None
    if mode in ("async", "astream") and any(sync_only_wrap(m) for m in ware([])):
        theirs = {"async": "sync", "astream": "stream"}[mode]
    compare(steps, ware, keys, theirs, tools=tools, mode=mode)


def sync_only_wrap(ware: AgentMiddleware) -> bool:
    kind = type(ware)
    return any(
        getattr(kind, hook) is not getattr(AgentMiddleware, hook)
        and getattr(kind, f"a{hook}") is getattr(AgentMiddleware, f"a{hook}")
        for hook in ("wrap_model_call", "wrap_tool_call")
    )


# -- after_model rewriting the step --------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("protocol", ["native", "text"])
def test_an_after_model_that_drops_every_call_ends_the_run_with_its_message(
    protocol: str, mode: str
) -> None:
    """The run should end with the hook's message as the answer, after one model call."""
    if protocol == "native":
        got = compare(TOOL_THEN_DONE, w_after_model_drop_calls, mode=mode)
        assert got["outs"][0][0][-1] == ("AIMessage", "I will not use tools.")
    else:
        got = compare_text(TOOL_THEN_DONE, w_after_model_drop_calls, mode=mode)
        assert got["outs"][0][0]["answer"] == "I will not use tools."
    assert got["model_calls"] == 1


@pytest.mark.parametrize("protocol", ["native", "text"])
def test_an_after_model_that_edits_the_calls_runs_them_as_edited(protocol: str) -> None:
    if protocol == "native":
        got = compare(TOOL_THEN_DONE, w_after_model_edit_calls)
    else:
        got = compare_text(TOOL_THEN_DONE, w_after_model_edit_calls)
    assert got["tool_runs"] == [("double", 7)]


WRITES_BETWEEN = {
    "after_model_appends": w_after_model_append,
    "extended_response_messages": w_extended_messages,
}


@pytest.mark.parametrize("case", sorted(WRITES_BETWEEN))
def test_by_design_a_message_written_between_a_call_and_its_result_is_sent_after_the_result(
    case: str,
) -> None:
    """A middleware that writes a message after a step with tool calls (an after_model hook,
    an ExtendedModelResponse's Command) puts it between the call and its result in the
    state, in both agents alike. create_agent sends that order to the model; ours sends each
    result right after its call, as chat APIs require (graph/protocols/conversation.py,
    tests/unit/test_conversation_order.py), the message after it. Not listed as by design in
    the brief: pinned so the lead decides."""
    runs = {name: go(name, TOOL_THEN_DONE, WRITES_BETWEEN[case]) for name in AGENTS}
    views = {name: view(run) for name, run in runs.items()}
    for part in ("outs", "state", "model_calls", "tool_runs", "log"):
        assert views["ours"][part] == views["create_agent"][part], part
    second = {name: [t for t, _ in run.requests[1]["messages"]] for name, run in runs.items()}
    assert second == {
        "create_agent": ["HumanMessage", "AIMessage", "HumanMessage", "ToolMessage"],
        "ours": ["HumanMessage", "AIMessage", "ToolMessage", "HumanMessage"],
    }


# -- sync-only wraps in async runs, async-only middleware ----------------------------------------


def w_async_only(log: list) -> list:
    @before_agent
    async def a_before_agent(state: AgentState, runtime: Any) -> dict[str, Any]:
        log.append("before_agent")
        return {"messages": [HumanMessage("async rule")]}

    @before_model(state_schema=Counted)
    async def a_before_model(state: Counted, runtime: Any) -> dict[str, Any]:
        log.append("before_model")
        return {"model_calls_seen": state.get("model_calls_seen", 0) + 1}

    @after_model(can_jump_to=["model"])
    async def a_after_model(state: AgentState, runtime: Any) -> dict[str, Any] | None:
        log.append("after_model")
        if state["messages"][-1].text == "draft":
            return {"messages": [HumanMessage("again")], "jump_to": "model"}
        return None

    @after_agent
    async def a_after_agent(state: AgentState, runtime: Any) -> dict[str, Any]:
        log.append("after_agent")
        last = state["messages"][-1]
        return {"messages": [AIMessage(last.text + "!", id=last.id)]}

    @dynamic_prompt
    async def a_prompt(request: ModelRequest) -> str:
        return f"async prompt {len(request.messages)}"

    @wrap_model_call
    async def a_wrap_model(request: ModelRequest, handler: Callable) -> ModelResponse:
        log.append("wrap_model_call")
        response = await handler(request.override(model_settings={"temperature": 0.2}))
        return response

    @wrap_tool_call
    async def a_wrap_tool(request: Any, handler: Callable) -> Any:
        log.append(("wrap_tool_call", request.tool_call["args"]))
        new_call = {
            **request.tool_call,
            "args": {"number": request.tool_call["args"]["number"] + 1},
        }
        result = await handler(request.override(tool_call=new_call))
        return ToolMessage(
            f"<{result.content}>", tool_call_id=result.tool_call_id, name=result.name
        )

    return [
        a_before_agent,
        a_before_model,
        a_after_model,
        a_after_agent,
        a_prompt,
        a_wrap_model,
        a_wrap_tool,
    ]


ASYNC_STEPS = [call("double", {"number": 2}, "c1"), "draft", "done"]


@pytest.mark.parametrize("mode", ["async", "astream"])
def test_async_only_decorators_are_seen_the_same(mode: str) -> None:
    got = compare(ASYNC_STEPS, w_async_only, ("model_calls_seen",), mode=mode)
    assert got["tool_runs"] == [("double", 3)]
    assert got["outs"][0][0][-1] == ("AIMessage", "done!")


def test_async_only_decorators_under_the_text_protocol_call_and_answer_the_same() -> None:
    got = compare_text(ASYNC_STEPS, w_async_only, ("model_calls_seen",), mode="async")
    assert got["outs"][0][0]["answer"] == "done!"


ASYNC_HOOKS = {0: "before_agent", 1: "before_model", 2: "after_model", 3: "after_agent"}
ASYNC_WRAPS = {4: "dynamic_prompt", 5: "wrap_model_call", 6: "wrap_tool_call"}


def test_by_design_async_only_node_hooks_run_in_a_sync_run() -> None:
    """create_agent cannot run an async-only node hook in a sync run (LangGraph raises
    TypeError); ours runs its coroutine to the end (graph/middleware/hooks.py `hook_node`,
    `run_sync`), as it runs an async-only tool (pinned in test_parity_probe3.py), and is seen
    as create_agent's async run. Not listed as by design in the brief: pinned so the lead
    decides."""
    ware = lambda log: [w_async_only(log)[i] for i in ASYNC_HOOKS]  # noqa: E731
    assert go("create_agent", ASYNC_STEPS, ware).outs == [("raised", "TypeError")]
    compare(ASYNC_STEPS, ware, ("model_calls_seen",), theirs="async")


@pytest.mark.parametrize("index", sorted(ASYNC_WRAPS), ids=ASYNC_WRAPS.get)
def test_by_design_an_async_only_wrap_in_a_sync_run_is_a_fault_not_raised(index: int) -> None:
    """An async-only wrap in a sync run: create_agent raises LangChain's NotImplementedError.
    Ours does not raise: around the model call it ends the run with status error and that
    sentence (as every failed model call ends), around a tool call the sentence is the call's
    error observation (faults are observations, docs/tools-and-mcp.md)."""
    ware = lambda log: [w_async_only(log)[index]]  # noqa: E731
    assert go("create_agent", ASYNC_STEPS, ware).outs == [("raised", "NotImplementedError")]
    out = go("ours", ASYNC_STEPS, ware).outs[0][1]
    if index == 6:
        assert out["status"] == "answered"
        results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
        assert [m.status for m in results] == ["error"]
        assert "NotImplementedError" in results[0].text
    else:
        assert out["status"] == "error"
        assert "NotImplementedError" in out["error"]


def w_sync_wraps(log: list) -> list:
    @wrap_model_call
    def model_wrap(request: ModelRequest, handler: Callable) -> ModelResponse:
        log.append("wrap_model_call")
        return handler(request)

    @wrap_tool_call
    def tool_wrap(request: Any, handler: Callable) -> Any:
        log.append("wrap_tool_call")
        return handler(request)

    return [model_wrap, tool_wrap]


@pytest.mark.parametrize("which", [0, 1], ids=["wrap_model_call", "wrap_tool_call"])
def test_by_design_a_sync_only_wrap_runs_in_an_async_run(which: int) -> None:
    """docs/middleware.md and graph/middleware/chain.py: a wrap written only in its sync form
    (as LangChain's docs show it) runs in an async run on a worker thread; create_agent raises
    NotImplementedError. Ours runs as create_agent's sync run does."""
    ware = lambda log: [w_sync_wraps(log)[which]]  # noqa: E731
    theirs = go("create_agent", TOOL_THEN_DONE, ware, mode="async")
    assert theirs.outs == [("raised", "NotImplementedError")]
    got = compare(TOOL_THEN_DONE, ware, theirs="sync", mode="async")
    assert got["log"] == [["wrap_model_call"] * 2, ["wrap_tool_call"]][which]


# -- ordering across several middleware ----------------------------------------------------------


def w_ordered(log: list) -> list:
    """Three middleware, each noting its name from every hook, in the state (`trail`) and in
    the log (with the wrap chain's entries and exits)."""

    def make(tag: str) -> AgentMiddleware:
        def note(hook: str) -> dict[str, Any]:
            log.append(f"{tag}.{hook}")
            return {"trail": [f"{tag}.{hook}"]}

        class Ordered(AgentMiddleware):
            state_schema = Trail
            name = tag

            def before_agent(self, state: Any, runtime: Any) -> dict[str, Any]:
                return note("before_agent")

            def before_model(self, state: Any, runtime: Any) -> dict[str, Any]:
                return note("before_model")

            def after_model(self, state: Any, runtime: Any) -> dict[str, Any]:
                return note("after_model")

            def after_agent(self, state: Any, runtime: Any) -> dict[str, Any]:
                return note("after_agent")

            def wrap_model_call(self, request: ModelRequest, handler: Callable) -> Any:
                log.append(f"{tag}.wrap_model_call>")
                response = handler(request)
                log.append(f"<{tag}.wrap_model_call")
                return response

            async def awrap_model_call(self, request: ModelRequest, handler: Callable) -> Any:
                log.append(f"{tag}.wrap_model_call>")
                response = await handler(request)
                log.append(f"<{tag}.wrap_model_call")
                return response

            def wrap_tool_call(self, request: Any, handler: Callable) -> Any:
                log.append(f"{tag}.wrap_tool_call>")
                result = handler(request)
                log.append(f"<{tag}.wrap_tool_call")
                return result

            async def awrap_tool_call(self, request: Any, handler: Callable) -> Any:
                log.append(f"{tag}.wrap_tool_call>")
                result = await handler(request)
                log.append(f"<{tag}.wrap_tool_call")
                return result

        return Ordered()

    return [make("A"), make("B"), make("C")]


@pytest.mark.parametrize("mode", MODES)
def test_three_middleware_run_their_hooks_in_create_agents_order(mode: str) -> None:
    got = compare(TOOL_THEN_DONE, w_ordered, ("trail",), mode=mode)
    step = ["A.before_model", "B.before_model", "C.before_model"]
    wraps = ["A.wrap_model_call>", "B.wrap_model_call>", "C.wrap_model_call>"]
    wraps += ["<C.wrap_model_call", "<B.wrap_model_call", "<A.wrap_model_call"]
    after = ["C.after_model", "B.after_model", "A.after_model"]
    tools = ["A.wrap_tool_call>", "B.wrap_tool_call>", "C.wrap_tool_call>"]
    tools += ["<C.wrap_tool_call", "<B.wrap_tool_call", "<A.wrap_tool_call"]
    assert got["log"] == [
        "A.before_agent", "B.before_agent", "C.before_agent",
        *step, *wraps, *after, *tools, *step, *wraps, *after,
        "C.after_agent", "B.after_agent", "A.after_agent",
    ]  # fmt: skip
    assert got["state"]["trail"] == [x for x in got["log"] if "wrap" not in x]


def test_three_middleware_under_the_text_protocol_run_in_the_same_order() -> None:
    got = compare_text(TOOL_THEN_DONE, w_ordered, ("trail",))
    assert got["log"][:3] == ["A.before_agent", "B.before_agent", "C.before_agent"]


def test_hook_node_names_are_the_middlewares_names() -> None:
    """`name=` and a class's `name` name the hook nodes (stream_mode="updates")."""

    def nodes(name: str) -> list[str]:
        run = go(name, ["done"], lambda log: [*w_named(log), *w_ordered(log)[:1]], payloads=())
        agent = run.agent
        found = []
        for chunk in agent.stream(QUESTION, cfg("names"), stream_mode="updates"):
            found += [n for n in chunk if "." in n]
        return found

    assert nodes("ours") == nodes("create_agent")
    assert "Guard.before_model" in nodes("ours")


# -- middleware that raise -----------------------------------------------------------------------


class Broken(Exception):
    """A user's own error."""


def raising(where: str) -> Ware:
    def ware(log: list) -> list:
        def fail(*_: Any) -> Any:
            raise Broken(where)

        if where == "wrap_model_call_after_handler":

            @wrap_model_call
            def after_handler(request: ModelRequest, handler: Callable) -> Any:
                handler(request)
                raise Broken(where)

            return [after_handler]
        if where == "dynamic_prompt":
            return [dynamic_prompt(fail)]
        decorator = {
            "before_agent": before_agent,
            "before_model": before_model,
            "after_model": after_model,
            "after_agent": after_agent,
            "wrap_model_call": wrap_model_call,
            "wrap_tool_call": wrap_tool_call,
        }[where]
        return [decorator(fail)]

    return ware


HOOKS_THAT_RAISE = ["before_agent", "before_model", "after_model", "after_agent"]
WRAPS_THAT_RAISE = ["wrap_model_call", "wrap_model_call_after_handler", "dynamic_prompt"]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("where", HOOKS_THAT_RAISE)
def test_an_error_in_a_hook_reaches_the_caller(where: str, mode: str) -> None:
    got = compare(TOOL_THEN_DONE, raising(where), mode=mode)
    assert got["outs"] == [("raised", "Broken")]


@pytest.mark.parametrize("where", WRAPS_THAT_RAISE)
def test_by_design_an_error_in_a_model_wrap_ends_the_run_with_status_error(where: str) -> None:
    """create_agent raises the middleware's error; ours ends the run with status error and
    the error's sentence, as a failed model call ends (the model-error pin of
    test_parity_probe3.py; graph/nodes/think.py), since the wrap runs inside the model call."""
    assert go("create_agent", TOOL_THEN_DONE, raising(where)).outs == [("raised", "Broken")]
    out = go("ours", TOOL_THEN_DONE, raising(where)).outs[0][1]
    assert (out["status"], "Broken" in out["error"]) == ("error", True)


def test_by_design_an_error_in_a_tool_wrap_is_the_calls_error_observation() -> None:
    """create_agent's ToolNode re-raises what a wrap_tool_call raises; ours keeps it as the
    call's error observation and goes on (faults are observations, docs/tools-and-mcp.md; the
    raising-tool pin of test_parity_probe.py)."""
    ware = raising("wrap_tool_call")
    assert go("create_agent", TOOL_THEN_DONE, ware).outs == [("raised", "Broken")]
    out = go("ours", TOOL_THEN_DONE, ware).outs[0][1]
    results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert [m.status for m in results] == ["error"] and out["answer"] == "done"


def w_returns_command(log: list) -> list:
    @wrap_model_call
    def commands(request: ModelRequest, handler: Callable) -> Any:
        handler(request)
        return Command(update={"messages": [AIMessage("from a command")]})

    return [commands]


def w_extended_goto(log: list) -> list:
    @wrap_model_call
    def goes(request: ModelRequest, handler: Callable) -> Any:
        return ExtendedModelResponse(model_response=handler(request), command=Command(goto="tools"))

    return [goes]


def test_a_hook_writing_a_key_no_schema_declares_is_handled_the_same() -> None:
    compare(TOOL_THEN_DONE, w_undeclared_key, ("stray_key",))


@pytest.mark.parametrize("ware", [w_returns_command, w_extended_goto], ids=["command", "goto"])
def test_a_wrap_returning_what_create_agent_refuses_is_refused(ware: Ware) -> None:
    """A raw `Command` from wrap_model_call, or an ExtendedModelResponse whose Command has a
    `goto`: create_agent raises. Ours must not take it silently."""
    theirs = go("create_agent", TOOL_THEN_DONE, ware).outs[0]
    assert theirs[0] == "raised"
    ours = go("ours", TOOL_THEN_DONE, ware).outs[0]
    assert ours[0] == "raised" or ours[1]["status"] == "error"


# -- the text protocol against create_agent's native run ----------------------------------------

# Every case of the zoo, its requests left out (the text protocol renders its own).
TEXT_CASES = sorted(set(CASES))


@pytest.mark.parametrize("case", TEXT_CASES)
def test_user_middleware_under_the_text_protocol_calls_and_answers_the_same(case: str) -> None:
    steps, ware, keys, tools = CASES[case]
    compare_text(steps, ware, keys, tools=tools)


# -- state across turns, private and omitted keys, the caller's input ---------------------------


@pytest.mark.parametrize("protocol", ["native", "text"])
def test_a_private_counter_is_kept_across_turns_of_a_thread(protocol: str) -> None:
    payloads = (QUESTION, {"messages": [("user", "again")]})
    steps = ["first", "second"]
    if protocol == "native":
        got = compare(steps, w_turns, ("turns", "last_turn"), payloads=payloads)
    else:
        got = compare_text(steps, w_turns, ("turns", "last_turn"), payloads=payloads)
    assert [out[1] for out in got["outs"]] == [{"last_turn": 1}, {"last_turn": 2}]
    assert got["state"] == {"turns": 2, "last_turn": 2}


def test_keys_a_caller_sends_are_taken_as_create_agent_takes_them() -> None:
    """The input carries each of the middleware's keys: a private one and one omitted from
    the input are dropped, the others are taken (before_agent then overwrites them)."""
    sent = {**QUESTION, "public": "from caller", "secret": 99, "not_in": "x", "not_out": "y"}

    class Reader(AgentMiddleware):
        state_schema = Kept

        def __init__(self, log: list) -> None:
            super().__init__()
            self.log = log

        def before_agent(self, state: Any, runtime: Any) -> None:
            self.log.append({k: state.get(k) for k in KEPT})

    got = compare(["done"], lambda log: [Reader(log)], KEPT, payloads=(sent,))
    assert got["log"][0]["public"] == "from caller"


# -- the caller's context and store --------------------------------------------------------------


@dataclass
class Caller:
    user: str
    budget: int = 3


def w_context(log: list) -> list:
    @before_model
    def who(state: AgentState, runtime: Any) -> None:
        log.append(("before_model", runtime.context is CALLER, runtime.context.user))
        runtime.store.put(("notes", runtime.context.user), "seen", {"n": len(state["messages"])})

    @wrap_model_call
    def budget(request: ModelRequest, handler: Callable) -> ModelResponse:
        log.append(
            ("wrap_model_call", request.runtime.context is CALLER, request.runtime.context.budget)
        )
        return handler(request)

    @wrap_tool_call
    def tool_side(request: Any, handler: Callable) -> Any:
        item = request.runtime.store.get(("notes", request.runtime.context.user), "seen")
        log.append(
            ("wrap_tool_call", request.runtime.context is CALLER, item.value if item else None)
        )
        return handler(request)

    @after_agent
    def last(state: AgentState, runtime: Any) -> None:
        items = runtime.store.search(("notes",))
        log.append(("after_agent", runtime.context is CALLER, [i.value for i in items]))

    return [who, budget, tool_side, last]


CALLER = Caller("ada")


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("protocol", ["native", "text"])
def test_middleware_read_the_callers_own_context_and_the_store(protocol: str, mode: str) -> None:
    """The wraps are sync-only: create_agent's sync run is the reference for both modes."""
    kw: dict[str, Any] = {"context_schema": Caller, "context": CALLER}
    fresh = lambda: {"store": InMemoryStore()}  # noqa: E731
    theirs = go("create_agent", TOOL_THEN_DONE, w_context, **kw, **fresh())
    if protocol == "native":
        ours = go("ours", TOOL_THEN_DONE, w_context, mode=mode, **kw, **fresh())
        runs = {"create_agent": theirs, "ours": ours}
        assert view(ours) == view(theirs)
    else:
        ours = go("ours", TOOL_THEN_DONE, w_context, protocol="text", mode=mode, **kw, **fresh())
        runs = {"create_agent": theirs, "ours": ours}
        assert view(ours, text=True) == view(theirs, text=True)
    log = runs["ours"].log
    assert all(entry[1] is True for entry in log)
    assert log[-1] == ("after_agent", True, [{"n": 3}])


# -- more of the zoo: what a request carries, several wraps' commands, canned calls -------------


def w_inspect_request(log: list) -> list:
    @wrap_model_call
    def inspect(request: ModelRequest, handler: Callable) -> ModelResponse:
        log.append(
            {
                "messages": [type(m).__name__ for m in request.messages],
                "state_messages": len(request.state["messages"]),
                "tools": sorted(t.name for t in request.tools),
                "system": request.system_message.text if request.system_message else None,
                "tool_choice": request.tool_choice,
                "settings": dict(request.model_settings),
                "response_format": request.response_format,
            }
        )
        return handler(request)

    return [inspect]


def w_two_stampers(log: list) -> list:
    def stamper(tag: str) -> AgentMiddleware:
        class Stamp(AgentMiddleware):
            state_schema = Kept
            name = f"Stamp{tag}"

            def wrap_model_call(self, request: ModelRequest, handler: Callable) -> Any:
                response = handler(request)
                command = Command(update={"public": tag, "messages": [HumanMessage(f"note {tag}")]})
                return ExtendedModelResponse(model_response=response, command=command)

        return Stamp()

    return [stamper("outer"), stamper("inner")]


def w_retry_discards_inner_command(log: list) -> list:
    class Outer(AgentMiddleware):
        def wrap_model_call(self, request: ModelRequest, handler: Callable) -> Any:
            first = handler(request)
            log.append(first.result[-1].text)
            return handler(request)

    class Inner(AgentMiddleware):
        state_schema = Kept

        def __init__(self) -> None:
            super().__init__()
            self.n = 0

        def wrap_model_call(self, request: ModelRequest, handler: Callable) -> Any:
            self.n += 1
            update = {"public": f"attempt {self.n}"}
            return ExtendedModelResponse(
                model_response=handler(request), command=Command(update=update)
            )

    return [Outer(), Inner()]


def w_canned_call(log: list) -> list:
    @wrap_model_call
    def plan(request: ModelRequest, handler: Callable) -> Any:
        if not any(isinstance(m, ToolMessage) for m in request.messages):
            return AIMessage("", tool_calls=[tool_call("double", {"number": 21}, id="p1")])
        return handler(request)

    return [plan]


def w_two_messages(log: list) -> list:
    @wrap_model_call
    def two(request: ModelRequest, handler: Callable) -> Any:
        response = handler(request)
        return ModelResponse(result=[AIMessage("a preface"), *response.result])

    return [two]


def w_rewrite_question(log: list) -> list:
    @before_agent
    def redact(state: AgentState, runtime: Any) -> dict[str, Any]:
        first = state["messages"][-1]
        return {"messages": [HumanMessage(first.text.replace("hi", "[greeting]"), id=first.id)]}

    return [redact]


def w_remove_one(log: list) -> list:
    @before_model
    def drop_question(state: AgentState, runtime: Any) -> dict[str, Any] | None:
        tool_results = [m for m in state["messages"] if isinstance(m, ToolMessage)]
        if tool_results:
            return {"messages": [RemoveMessage(id=state["messages"][0].id)]}
        return None

    return [drop_question]


def w_after_model_jump_tools(log: list) -> list:
    @after_model(can_jump_to=["tools"])
    def force_tool(state: AgentState, runtime: Any) -> dict[str, Any] | None:
        last = state["messages"][-1]
        if not last.tool_calls and not any(isinstance(m, ToolMessage) for m in state["messages"]):
            step = AIMessage("", tool_calls=[tool_call("double", {"number": 8}, id="f1")])
            return {"messages": [step], "jump_to": "tools"}
        return None

    return [force_tool]


def w_new_tool_in_request(log: list) -> list:
    @wrap_model_call
    def extra_tool(request: ModelRequest, handler: Callable) -> Any:
        return handler(request.override(tools=[*request.tools, shout]))

    return [extra_tool]


def w_tool_wrap_only_its_own(log: list) -> list:
    class NoteKeeper(AgentMiddleware):
        tools = [note_tool]  # noqa: RUF012 - as a user writes it

        def wrap_tool_call(self, request: Any, handler: Callable) -> Any:
            if request.tool_call["name"] != "note_tool":
                return handler(request)
            log.append(request.tool_call["args"])
            return ToolMessage(
                "kept a note", tool_call_id=request.tool_call["id"], name="note_tool"
            )

    return [NoteKeeper()]


def w_dynamic_prompt_reads_state(log: list) -> list:
    @dynamic_prompt
    def by_state(request: ModelRequest) -> str:
        results = sum(isinstance(m, ToolMessage) for m in request.state["messages"])
        return f"base; results so far: {results}"

    return [by_state]


CASES2: dict[str, tuple[list[Any], Ware, tuple, tuple]] = {
    "inspect_request": (TOOL_THEN_DONE, w_inspect_request, (), (double,)),
    "retry_discards_inner_command": (
        ["one", "two"],
        w_retry_discards_inner_command,
        KEPT,
        (double,),
    ),
    "canned_tool_call": (["done"], w_canned_call, (), (double,)),
    "response_of_two_messages": (["done"], w_two_messages, (), (double,)),
    "before_agent_rewrites_question": (["done"], w_rewrite_question, (), (double,)),
    "before_model_removes_one": (TOOL_THEN_DONE, w_remove_one, (), (double,)),
    "after_model_jump_tools": (["draft", "done"], w_after_model_jump_tools, (), (double,)),
    "tool_wrap_for_its_own_tool": (
        [call("note_tool", {"text": "a"}, "c1"), call("double", {"number": 1}, "c2"), "done"],
        w_tool_wrap_only_its_own,
        (),
        (double,),
    ),
    "dynamic_prompt_reads_state": (TOOL_THEN_DONE, w_dynamic_prompt_reads_state, (), (double,)),
}


@pytest.mark.parametrize("mode", ["sync", "astream"])
@pytest.mark.parametrize("case", sorted(CASES2))
def test_more_user_middleware_is_seen_the_same(case: str, mode: str) -> None:
    steps, ware, keys, tools = CASES2[case]
    theirs = "stream" if mode == "astream" and any(sync_only_wrap(m) for m in ware([])) else None
    compare(steps, ware, keys, theirs, tools=tools, mode=mode)


@pytest.mark.parametrize("case", sorted(CASES2))
def test_more_user_middleware_under_the_text_protocol(case: str) -> None:
    steps, ware, keys, tools = CASES2[case]
    compare_text(steps, ware, keys, tools=tools)


def w_dynamic_tool(log: list) -> list:
    """LangChain's pattern for a tool added at run time: offered by wrap_model_call, run by
    wrap_tool_call with `request.override(tool=...)`."""

    class DynamicTool(AgentMiddleware):
        def wrap_model_call(self, request: ModelRequest, handler: Callable) -> Any:
            return handler(request.override(tools=[*request.tools, shout]))

        def wrap_tool_call(self, request: Any, handler: Callable) -> Any:
            log.append((request.tool_call["name"], request.tool.name if request.tool else None))
            if request.tool_call["name"] == "shout":
                return handler(request.override(tool=shout))
            return handler(request)

    return [DynamicTool()]


DYNAMIC_STEPS = [call("shout", {"text": "a"}, "c1"), call("double", {"number": 2}, "c2"), "done"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_tool_added_at_run_time_with_its_runner_runs_the_same(mode: str) -> None:
    got = compare(DYNAMIC_STEPS, w_dynamic_tool, mode=mode, theirs="sync")
    assert got["tool_runs"] == [("shout", "a"), ("double", 2)]


@pytest.mark.parametrize("protocol", ["native", "text"])
def test_a_request_offering_an_unknown_tool_is_refused_before_the_model_is_called(
    protocol: str,
) -> None:
    steps = [call("shout", {"text": "a"}, "c1"), "done"]
    assert go("create_agent", steps, w_new_tool_in_request).outs == [("raised", "ValueError")]
    ours = go("ours", steps, w_new_tool_in_request, protocol=protocol)
    assert ours.model_calls == 0
    status, out = ours.outs[0]
    assert status == "raised" or out["status"] == "error"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_by_design_two_wraps_commands_on_one_key_leave_the_outermost_value(mode: str) -> None:
    """Two wrap_model_call layers each return an ExtendedModelResponse whose Command writes
    the same plain key. LangChain documents "later commands overwrite earlier ones (outermost
    middleware wins over inner)", but create_agent applies them in one step and LangGraph
    raises InvalidUpdateError; ours applies the documented rule (graph/middleware/chain.py)
    and keeps both commands' messages, inner first. Not listed as by design in the brief:
    pinned so the lead decides."""
    theirs = go("create_agent", ["done"], w_two_stampers, mode="sync", payloads=())
    with pytest.raises(Exception, match="Can receive only one value per step"):
        theirs.agent.invoke(QUESTION, cfg())
    ours = go("ours", ["done"], w_two_stampers, mode=mode)
    assert view(ours, KEPT)["outs"] == [
        (
            [
                ("HumanMessage", "hi"),
                ("AIMessage", "done"),
                ("HumanMessage", "note inner"),
                ("HumanMessage", "note outer"),
            ],
            {"public": "outer"},
        )
    ]


# -- a user's own pauses, a hook's Command, names and keys ---------------------------------------


def w_ask_before_tools(log: list) -> list:
    from langgraph.types import interrupt

    @after_model(can_jump_to=["end"])
    def ask(state: AgentState, runtime: Any) -> dict[str, Any] | None:
        last = state["messages"][-1]
        if not last.tool_calls:
            return None
        answer = interrupt({"calls": [c["name"] for c in last.tool_calls]})
        log.append(answer)
        if answer == "no":
            return {"messages": [AIMessage("Cancelled.")], "jump_to": "end"}
        return None

    return [ask]


def w_ask_in_tool_wrap(log: list) -> list:
    from langgraph.types import interrupt

    @wrap_tool_call
    def confirm(request: Any, handler: Callable) -> Any:
        answer = interrupt({"tool": request.tool_call["name"], "args": request.tool_call["args"]})
        log.append(answer)
        if answer != "yes":
            return ToolMessage("refused", tool_call_id=request.tool_call["id"], name="double")
        return handler(request)

    return [confirm]


@pytest.mark.parametrize("decision", ["yes", "no"])
@pytest.mark.parametrize(
    "ware", [w_ask_before_tools, w_ask_in_tool_wrap], ids=["after_model", "wrap_tool_call"]
)
def test_a_users_own_interrupt_pauses_and_resumes_the_same(ware: Ware, decision: str) -> None:
    def read(name: str) -> Any:
        run = go(name, TOOL_THEN_DONE, ware)
        paused = run.outs[0][1]
        asked = [i.value for i in paused["__interrupt__"]]
        nodes = [
            {"model": "think", "tools": "act"}.get(n, n) for n in run.agent.get_state(cfg()).next
        ]
        done = run.agent.invoke(Command(resume=decision), cfg())
        return asked, nodes, seen(done["messages"]), run.log, list(RAN), len(run.model.requests)

    theirs, ours = read("create_agent"), read("ours")
    assert ours == theirs


def w_hook_returns_command(log: list) -> list:
    @before_model
    def commands(state: AgentState, runtime: Any) -> Any:
        if len(state["messages"]) == 1:
            return Command(update={"messages": [HumanMessage("from a hook's Command")]})
        return None

    return [commands]


def test_a_hook_returning_a_command_is_applied() -> None:
    """A node hook is a LangGraph node in create_agent, so a `Command(update=...)` it returns
    is applied; ours applies it too (it was refused with a TypeError)."""
    theirs = go("create_agent", ["done"], w_hook_returns_command)
    ours = go("ours", ["done"], w_hook_returns_command)
    assert seen(theirs.outs[0][1]["messages"])[1] == ("HumanMessage", "from a hook's Command")
    assert seen(ours.outs[0][1]["messages"])[:3] == seen(theirs.outs[0][1]["messages"])[:3]


def w_hook_jumps_by_command(log: list) -> list:
    @before_model
    def commands(state: AgentState, runtime: Any) -> Any:
        if len(state["messages"]) == 1:
            return Command(update={"messages": [AIMessage("ended by a Command")]}, goto=END)
        return None

    return [commands]


def test_a_hook_command_going_to_the_end_goes_as_in_create_agent() -> None:
    """A `goto` adds a branch beside the hook's own edge (LangGraph's rule), so in both agents
    the run's end and the model both follow: same messages, same calls."""
    theirs = go("create_agent", ["after"], w_hook_jumps_by_command)
    ours = go("ours", ["after"], w_hook_jumps_by_command)
    assert seen(ours.outs[0][1]["messages"]) == seen(theirs.outs[0][1]["messages"])
    assert seen(theirs.outs[0][1]["messages"])[1] == ("AIMessage", "ended by a Command")
    assert theirs.model_calls == ours.model_calls == 1


def w_same_names(log: list) -> list:
    @before_model(name="Twin")
    def one(state: AgentState, runtime: Any) -> None:
        return None

    @after_model(name="Twin")
    def two(state: AgentState, runtime: Any) -> None:
        return None

    return [one, two]


def test_two_middleware_of_one_name_are_refused_at_build() -> None:
    errors = {}
    for name in AGENTS:
        errors[name] = outcome(lambda name=name: go(name, ["done"], w_same_names, payloads=()))[0]
    assert errors == {"create_agent": "raised", "ours": "raised"}


class Stepped(AgentState):
    steps: NotRequired[int]


def w_own_steps_key(log: list) -> list:
    @before_model(state_schema=Stepped)
    def count(state: Stepped, runtime: Any) -> dict[str, Any]:
        return {"steps": (state.get("steps") or 0) + 1}

    return [count]


def test_by_design_a_middleware_key_named_like_the_agents_own_is_the_agents() -> None:
    """A middleware's `state_schema` key named like one of the agent's own output keys
    (`steps`, `status`, `answer`, `error`, `usage`) is the agent's channel: the agent's
    channels win (graph/middleware/schema.py), and a value that is not the agent's kind is
    refused in one sentence (graph/channels.py check_update). In create_agent the key is the
    middleware's. Not listed as by design in the brief: pinned so the lead decides."""
    theirs = go("create_agent", TOOL_THEN_DONE, w_own_steps_key)
    assert theirs.outs[0][1]["steps"] == 2
    ours = go("ours", TOOL_THEN_DONE, w_own_steps_key)
    assert ours.outs == [("raised", "ValueError")]  # 'steps' must be a list of step objects


def w_writer(log: list) -> list:
    @before_model
    def progress(state: AgentState, runtime: Any) -> None:
        runtime.stream_writer({"hook": "before_model", "n": len(state["messages"])})

    @wrap_tool_call
    def tool_progress(request: Any, handler: Callable) -> Any:
        request.runtime.stream_writer({"hook": "wrap_tool_call"})
        return handler(request)

    return [progress, tool_progress]


def test_a_hooks_stream_writer_reaches_the_custom_stream_the_same() -> None:
    """Ours adds its own step events (`event` keys, by design in test_parity_probe.py)."""
    got = {}
    for name in AGENTS:
        run = go(name, TOOL_THEN_DONE, w_writer, payloads=())
        chunks = run.agent.stream(QUESTION, cfg(), stream_mode="custom")
        got[name] = [c for c in chunks if "event" not in c]
    assert got["ours"] == got["create_agent"]
    assert {"hook": "wrap_tool_call"} in got["ours"]


# -- several calls in one step -------------------------------------------------------------------


PARALLEL = [
    calls(tool_call("double", {"number": 2}, id="c1"), tool_call("double", {"number": 3}, id="c2")),
    "done",
]


def w_tool_wrap_reads_everything(log: list) -> list:
    @wrap_tool_call
    def reader(request: Any, handler: Callable) -> Any:
        log.append(
            (
                request.tool_call["id"],
                [type(m).__name__ for m in request.state["messages"]],
                sorted(k for k in request.state if k in ("messages", "public")),
                request.runtime.context,
            )
        )
        return handler(request)

    return [reader]


PARALLEL_WARES = {
    "reads_state": w_tool_wrap_reads_everything,
    "short_circuit": w_wrap_tool_short,
    "mutates_args": w_wrap_tool_edit_args,
    "command": w_wrap_tool_command,
    "edits_result": w_wrap_tool_result_edit,
    "ordered": w_ordered,
    "after_model_edits_calls": w_after_model_edit_calls,
}


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("case", sorted(PARALLEL_WARES))
def test_middleware_around_parallel_calls_is_seen_the_same(case: str, mode: str) -> None:
    """Logs and tool runs compared as sets where the two calls run concurrently."""
    ware = PARALLEL_WARES[case]
    theirs = "sync" if mode == "async" and any(sync_only_wrap(m) for m in ware([])) else None
    got = {}
    for name in AGENTS:
        run = go(name, PARALLEL, ware, mode=(theirs or mode) if name == AGENTS[0] else mode)
        shown = view(run, (*KEPT, "trail"))
        shown["log"] = sorted(map(repr, shown["log"]))
        shown["tool_runs"] = sorted(shown["tool_runs"])
        shown["state"].pop("trail", None)
        got[name] = shown
    assert got["ours"] == got["create_agent"]


# -- replies a wrap rewrites, errors it handles, prompts it removes ------------------------------


def w_rewrite_reply_calls(log: list) -> list:
    @wrap_model_call
    def nine(request: ModelRequest, handler: Callable) -> Any:
        response = handler(request)
        reply = response.result[-1]
        if not reply.tool_calls:
            return response
        edited = [{**c, "args": {"number": 9}} for c in reply.tool_calls]
        return ModelResponse(result=[reply.model_copy(update={"tool_calls": edited})])

    return [nine]


def w_model_error_fallback(log: list) -> list:
    @wrap_model_call
    def fallback(request: ModelRequest, handler: Callable) -> Any:
        try:
            return handler(request)
        except RuntimeError as error:
            log.append(str(error))
            return AIMessage("The model is down; here is a fallback.")

    return [fallback]


def w_dynamic_system_message(log: list) -> list:
    @dynamic_prompt
    def as_message(request: ModelRequest) -> SystemMessage:
        return SystemMessage("a prompt as a message")

    return [as_message]


def w_no_system(log: list) -> list:
    @wrap_model_call
    def no_system(request: ModelRequest, handler: Callable) -> Any:
        return handler(request.override(system_message=None))

    return [no_system]


def w_after_agent_jump_model(log: list) -> list:
    @after_agent(can_jump_to=["model"])
    def not_done(state: AgentState, runtime: Any) -> dict[str, Any] | None:
        if state["messages"][-1].text == "draft":
            return {"messages": [HumanMessage("Finish it.")], "jump_to": "model"}
        return None

    return [not_done]


CASES4: dict[str, tuple[list[Any], Ware, tuple, tuple]] = {
    "wrap_rewrites_reply_calls": (TOOL_THEN_DONE, w_rewrite_reply_calls, (), (double,)),
    "wrap_handles_model_error": (
        [RuntimeError("model down")],
        w_model_error_fallback,
        (),
        (double,),
    ),
    "dynamic_prompt_as_system_message": (["done"], w_dynamic_system_message, (), (double,)),
    "after_agent_jump_model": (["draft", "final"], w_after_agent_jump_model, (), (double,)),
}


@pytest.mark.parametrize("mode", ["sync", "astream"])
@pytest.mark.parametrize("case", sorted(CASES4))
def test_wraps_that_rewrite_replies_and_handle_errors_are_seen_the_same(
    case: str, mode: str
) -> None:
    steps, ware, keys, tools = CASES4[case]
    theirs = "stream" if mode == "astream" and any(sync_only_wrap(m) for m in ware([])) else None
    compare(steps, ware, keys, theirs, tools=tools, mode=mode)


@pytest.mark.parametrize("case", sorted(CASES4))
def test_wraps_that_rewrite_replies_and_handle_errors_under_the_text_protocol(case: str) -> None:
    steps, ware, keys, tools = CASES4[case]
    compare_text(steps, ware, keys, tools=tools)


def test_a_dynamic_prompt_without_a_system_prompt_is_the_whole_system_message() -> None:
    got = {
        name: go(name, ["done"], w_dynamic_prompt, system_prompt=None).requests for name in AGENTS
    }
    assert got["ours"] == got["create_agent"]


def test_a_system_message_a_middleware_removes_is_not_sent() -> None:
    """build_graph was given a system prompt, so the default-instructions pin (no system prompt
    given, test_parity_probe3.py) is not the case here: the middleware removed it."""
    got = {name: go(name, ["done"], w_no_system).requests for name in AGENTS}
    assert got["create_agent"][0]["system"] == []
    assert got["ours"] == got["create_agent"]


# -- a tool call's arguments edited in place -----------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("protocol", ["native", "text"])
def test_by_design_arguments_a_tool_wrap_edits_in_place_reach_the_tool_not_the_stored_step(
    protocol: str, mode: str
) -> None:
    """A wrap_tool_call that edits `request.tool_call["args"]` in place: the tool gets the edit
    in both agents. create_agent's stored step shows it too, but only as a side effect: the
    edit mutates the AIMessage it holds in memory, and its message channel stores the whole
    list again at every checkpoint (under the default durability, ours shows it or not by the
    race of its background write). Ours stores the step as the model wrote it, as both agents
    do for the documented route, `request.override(tool_call=...)`; the ToolMessage says what
    ran. Checked with `durability="sync"`, where the outcome is fixed."""
    steps = [*TOOL_THEN_DONE, "second"]
    payloads = (QUESTION, {"messages": [("user", "again")]})
    got = {}
    for name in AGENTS:
        run = go(
            name,
            steps,
            w_wrap_tool_edit_args,
            protocol=protocol if name == "ours" else "native",
            mode="sync" if name == "create_agent" else mode,
            payloads=payloads,
            durability="sync",
        )
        got[name] = (gist(run.state["messages"])["calls"], run.tool_runs)
    assert got["create_agent"][0] == [("double", {"number": 10})]
    assert got["ours"][0] == [("double", {"number": 2})]  # as the model wrote it
    assert got["ours"][1] == got["create_agent"][1]


# -- both forms in one class, contexts of other kinds, pauses inside a wrap ----------------------


def w_both_forms(log: list) -> list:
    class BothForms(AgentMiddleware):
        def before_model(self, state: Any, runtime: Any) -> None:
            log.append("sync before_model")

        async def abefore_model(self, state: Any, runtime: Any) -> None:
            log.append("async before_model")

        def wrap_model_call(self, request: ModelRequest, handler: Callable) -> Any:
            log.append("sync wrap_model_call")
            return handler(request)

        async def awrap_model_call(self, request: ModelRequest, handler: Callable) -> Any:
            log.append("async wrap_model_call")
            return await handler(request)

        def wrap_tool_call(self, request: Any, handler: Callable) -> Any:
            log.append("sync wrap_tool_call")
            return handler(request)

        async def awrap_tool_call(self, request: Any, handler: Callable) -> Any:
            log.append("async wrap_tool_call")
            return await handler(request)

    return [BothForms()]


@pytest.mark.parametrize("mode", MODES)
def test_a_class_with_both_forms_runs_the_form_of_the_run(mode: str) -> None:
    got = compare(TOOL_THEN_DONE, w_both_forms, mode=mode)
    assert all(entry.startswith("async" if "a" in mode[:1] else "sync") for entry in got["log"])


class CallerModel(BaseModel):
    user: str


class CallerDict(TypedDict):
    user: str


CONTEXTS = {
    "pydantic": (CallerModel, CallerModel(user="ada")),
    "typeddict": (CallerDict, {"user": "ada"}),
    "none_given": (Caller, None),
}


def w_context_reader(log: list) -> list:
    @before_model
    def who(state: AgentState, runtime: Any) -> None:
        log.append(("before_model", type(runtime.context).__name__, runtime.context))

    @wrap_tool_call
    def tool_side(request: Any, handler: Callable) -> Any:
        context = request.runtime.context
        log.append(("wrap_tool_call", type(context).__name__, context))
        return handler(request)

    return [who, tool_side]


@pytest.mark.parametrize("kind", sorted(CONTEXTS))
def test_middleware_read_a_context_of_any_kind_as_the_caller_gave_it(kind: str) -> None:
    schema, context = CONTEXTS[kind]
    compare(TOOL_THEN_DONE, w_context_reader, context_schema=schema, context=context)


def w_pause_in_wrap(log: list) -> list:
    from langgraph.types import interrupt

    @wrap_model_call
    def confirm_first(request: ModelRequest, handler: Callable) -> Any:
        if len(request.messages) == 1:
            log.append(interrupt("may I call the model?"))
        return handler(request)

    return [confirm_first]


def w_pause_in_before_agent(log: list) -> list:
    from langgraph.types import interrupt

    @before_agent
    def who_is_it(state: AgentState, runtime: Any) -> dict[str, Any]:
        name = interrupt("who are you?")
        log.append(name)
        return {"messages": [HumanMessage(f"I am {name}.")]}

    return [who_is_it]


def paused_and_resumed(name: str, ware: Ware, protocol: str = "native") -> Any:
    run = go(name, TOOL_THEN_DONE, ware, protocol=protocol)
    status, out = run.outs[0]
    asked = [i.value for i in out.get("__interrupt__", [])] if status == "ok" else out
    done = run.agent.invoke(Command(resume="ada"), cfg())
    return asked, gist(done["messages"]), run.log, list(RAN), len(run.model.requests)


def test_a_pause_inside_before_agent_resumes_the_same() -> None:
    assert paused_and_resumed("ours", w_pause_in_before_agent) == paused_and_resumed(
        "create_agent", w_pause_in_before_agent
    )


@pytest.mark.parametrize("protocol", ["native", "text"])
def test_a_pause_inside_a_model_wrap_pauses_and_resumes(protocol: str) -> None:
    theirs = paused_and_resumed("create_agent", w_pause_in_wrap)
    assert theirs[0] == ["may I call the model?"]
    first = go("ours", TOOL_THEN_DONE, w_pause_in_wrap, protocol=protocol).outs[0][1]
    assert (first.get("status"), [i.value for i in first.get("__interrupt__", [])]) != (
        "error",
        [],
    ), first.get("error")
    assert paused_and_resumed("ours", w_pause_in_wrap, protocol) == theirs


# -- ours' own `answer` beside a rewritten final message -----------------------------------------


def w_redact_answer(log: list) -> list:
    @after_agent
    def redact(state: AgentState, runtime: Any) -> dict[str, Any]:
        last = state["messages"][-1]
        return {
            "messages": [AIMessage(last.text.replace("ada@example.com", "[email]"), id=last.id)]
        }

    return [redact]


@pytest.mark.parametrize("protocol", ["native", "text"])
def test_an_answer_rewritten_by_after_agent_is_the_runs_answer(protocol: str) -> None:
    steps = ["write to ada@example.com"]
    theirs = go("create_agent", steps, w_redact_answer).outs[0][1]
    ours = go("ours", steps, w_redact_answer, protocol=protocol).outs[0][1]
    assert theirs["messages"][-1].text == ours["messages"][-1].text == "write to [email]"
    assert ours["answer"] == "write to [email]"
