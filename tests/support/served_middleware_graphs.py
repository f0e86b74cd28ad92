"""Graphs served side by side by tests/integration/test_served_parity_middleware.py: ours
(`build_graph`) and LangChain's `create_agent`, each pair with the same user middleware, the same
calculator and the same scripted OpenAI-compatible endpoint (OPENAI_BASE_URL).

Each graph is a module-level compiled graph, as a `langgraph.json` names it
(`path/to/served_middleware_graphs.py:ours_counter`); the server supplies the checkpointer.
Every agent gets its own middleware instances; `pii` and `text_pii` use LangChain's own
`PIIMiddleware` (e-mail addresses in the model's output redacted). The model `scripted` answers
natively; the model `text` writes the text protocol (for ours with `protocol="text"` and for
`create_agent(TextReAct(inner))`); the test module's endpoint tells the two apart by the
request's `model`. The server runs its runs asynchronously, so each wrap has both forms
(create_agent refuses a sync-only wrap in an async run).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, NotRequired

from langchain.agents import AgentState, create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    HumanInTheLoopMiddleware,
    ModelRequest,
    ModelResponse,
    PIIMiddleware,
)
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_openai import ChatOpenAI
from langgraph.types import Command, interrupt

from graph import build_graph
from graph.protocols.text.chat_model import TextReAct

EMAIL = "ada@example.com"
REDACTED = "[email]"
HOOK_MESSAGE = "from a hook's Command"
HOOK_NOTE = "set by a Command"
CACHED = "cached 42"
DECISIONS = ["approve", "edit", "reject"]


def _model(name: str = "scripted") -> ChatOpenAI:
    return ChatOpenAI(
        base_url=os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
        api_key="sk-x",  # type: ignore[arg-type]
        model=name,
        max_retries=0,
    )


def _tools() -> list[Any]:
    from tools.calculator import calculator

    return [calculator]


# --------------------------------------------------------------------------- the middleware


class CounterState(AgentState):
    model_calls: NotRequired[Annotated[int, PrivateStateAttr]]
    last_count: NotRequired[int]


class Counter(AgentMiddleware):
    """before_model: counts the model calls of the thread in a private key (kept across turns)
    and shows the count in a public one."""

    state_schema = CounterState

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any]:
        count = state.get("model_calls", 0) + 1
        return {"model_calls": count, "last_count": count}


class Redact(AgentMiddleware):
    """after_model: the model's words without the e-mail address (the message keeps its id)."""

    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        last = state["messages"][-1]
        if not isinstance(last, AIMessage) or EMAIL not in last.text:
            return None
        redacted = last.model_copy(update={"content": last.text.replace(EMAIL, REDACTED)})
        return {"messages": [redacted]}


class Rewrite(AgentMiddleware):
    """after_agent: the answer shouted (the same message id, so it replaces the answer)."""

    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        last = state["messages"][-1]
        if not isinstance(last, AIMessage) or last.tool_calls:
            return None
        return {"messages": [AIMessage(last.text.upper(), id=last.id)]}


class Pause(AgentMiddleware):
    """wrap_model_call: before the first model call of a thread, asks who approves it
    (`interrupt`); the answer is added to the request, so the model's echo shows it."""

    def _request(self, request: ModelRequest) -> ModelRequest:
        if len(request.messages) != 1:
            return request
        who = interrupt({"question": "may I call the model?"})
        return request.override(messages=[*request.messages, HumanMessage(f"approved by {who}")])

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        return handler(self._request(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        return await handler(self._request(request))


class ShortCircuit(AgentMiddleware):
    """wrap_tool_call: answers every call from a cache; the tool never runs."""

    def _cached(self, request: Any) -> ToolMessage:
        call = request.tool_call
        return ToolMessage(CACHED, tool_call_id=call["id"], name=call["name"])

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return self._cached(request)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return self._cached(request)


class NotedState(AgentState):
    note: NotRequired[str]


class Commanding(AgentMiddleware):
    """before_model: on a thread's first model call, returns `Command(update=...)` adding a
    message and writing a public key."""

    state_schema = NotedState

    def before_model(self, state: Any, runtime: Any) -> Any:
        if len(state["messages"]) != 1:
            return None
        return Command(update={"messages": [HumanMessage(HOOK_MESSAGE)], "note": HOOK_NOTE})


def _pii() -> PIIMiddleware:
    """LangChain's own PII redaction, on the model's output only."""
    return PIIMiddleware("email", strategy="redact", apply_to_input=False, apply_to_output=True)


def _hitl() -> HumanInTheLoopMiddleware:
    return HumanInTheLoopMiddleware(interrupt_on={"calculator": {"allowed_decisions": DECISIONS}})


WARES: dict[str, Callable[[], list[AgentMiddleware]]] = {
    "counter": lambda: [Counter()],
    "redact": lambda: [Redact()],
    "pii": lambda: [_pii()],
    "rewrite": lambda: [Rewrite()],
    "pause": lambda: [Pause()],
    "short": lambda: [ShortCircuit()],
    "command": lambda: [Commanding()],
    "hitl": lambda: [_hitl()],
}
TEXT_WARES: dict[str, Callable[[], list[AgentMiddleware]]] = {
    "text": list,
    "text_hitl": lambda: [_hitl()],
    "text_pause": lambda: [Pause()],
    "text_redact": lambda: [Redact()],
    "text_rewrite": lambda: [Rewrite()],
    "text_pii": lambda: [_pii()],
}


def ours(case: str) -> Any:
    if case in TEXT_WARES:
        return build_graph(
            model=_model("text"), tools=_tools(), protocol="text", middleware=TEXT_WARES[case]()
        )
    return build_graph(model=_model(), tools=_tools(), middleware=WARES[case]())


def ref(case: str) -> Any:
    if case in TEXT_WARES:
        return create_agent(TextReAct(_model("text")), _tools(), middleware=TEXT_WARES[case]())
    return create_agent(_model(), _tools(), middleware=WARES[case]())


CASES = [*WARES, *TEXT_WARES]

ours_counter, ref_counter = ours("counter"), ref("counter")
ours_redact, ref_redact = ours("redact"), ref("redact")
ours_pii, ref_pii = ours("pii"), ref("pii")
ours_rewrite, ref_rewrite = ours("rewrite"), ref("rewrite")
ours_pause, ref_pause = ours("pause"), ref("pause")
ours_short, ref_short = ours("short"), ref("short")
ours_command, ref_command = ours("command"), ref("command")
ours_hitl, ref_hitl = ours("hitl"), ref("hitl")
ours_text, ref_text = ours("text"), ref("text")
ours_text_hitl, ref_text_hitl = ours("text_hitl"), ref("text_hitl")
ours_text_pause, ref_text_pause = ours("text_pause"), ref("text_pause")
ours_text_redact, ref_text_redact = ours("text_redact"), ref("text_redact")
ours_text_rewrite, ref_text_rewrite = ours("text_rewrite"), ref("text_rewrite")
ours_text_pii, ref_text_pii = ours("text_pii"), ref("text_pii")
