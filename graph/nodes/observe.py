"""observe: tell the model what went wrong if its reply was unusable, end the run with a
`return_direct` tool's result, and see every result of a step of several calls.

Tool observations were already written by `act` (each task its own, so a crash keeps every
finished one), and `think` counts the steps, so an iteration that leaves nothing to observe
goes from act straight back to think: two supersteps, as in `create_agent`. `route_after_act`
asks `assess` whether there is anything to write; observe runs when there is (a correction, a
`return_direct` result), and after a step of several calls (each call
is its own act task, and only a node after them sees every result). The step limit and the
repeated-call guard are loop policies in think's chain (`graph.policies.step_limit`,
`graph.policies.repeat_guard`).
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime, get_runtime

from graph import messages as m
from graph.loop.bindings import Bindings
from graph.loop.tasks import idle, pending_calls
from graph.protocols.native import native_invalid_observation
from graph.protocols.text.prompts import invalid_reply_observation
from graph.settings import AgentContext
from graph.state import AgentState, RouteState


def make_observe(b: Bindings) -> Any:
    def observe(state: AgentState) -> dict[str, Any]:
        return assess(b, b.context(get_runtime().context, read_env=False), state, tell=True) or {}

    return observe


def make_route_after_act(b: Bindings, loop_entry: str) -> Any:
    def route_after_act(
        state: RouteState, runtime: Runtime, config: RunnableConfig
    ) -> str | list[str]:
        if held(state, config):
            return []  # act ran nothing here: the review, the next turn or its tasks go on
        step, _ = last_step(state.get("messages") or [])
        calls = len(step.tool_calls) + len(step.invalid_tool_calls) if step is not None else 0
        if calls > 1:  # this act task saw its own result only
            return "observe"
        # the runtime LangGraph hands a router: none in `update_state(..., as_node="act")`
        ctx = b.context(runtime.context if runtime is not None else None, read_env=False)
        return "observe" if assess(b, ctx, state) else loop_entry

    return route_after_act


def held(state: RouteState | AgentState, config: RunnableConfig | None = None) -> bool:
    """Whether the act task that just ran goes nowhere: no run is under way (a client's
    `Command(goto="act")` on a finished or new thread: the next turn closes its calls, and a
    turn the client's update started runs its own loop), the step still waits for the review
    (which routes to act itself), act reached by its edge sent one task per pending call
    (`graph.nodes.act`; those tasks route on), or a task found its call already answered
    (a second task for one call: the first one routes on)."""
    if idle(state):
        return True
    step, _ = last_step(state.get("messages") or [])
    if step is None or len(step.tool_calls) + len(step.invalid_tool_calls) < 2:
        return False
    pending = len(pending_calls(state))
    if sent_task(config):  # one task of several: a duplicate that found every call answered
        return pending == 0
    return pending > 1  # act by its edge, which sent one task per pending call


def sent_task(config: RunnableConfig | None) -> bool:
    """Whether this act task is one a `Send` started (one call of several), not act reached
    by its edge: LangGraph's documented task metadata names what triggered it
    (`langgraph_triggers`). Every such task of a step sees only its own result, so one that
    sees no pending call at all ran none: the calls were answered before it started."""
    metadata = (config or {}).get("metadata") or {}
    return PUSH in (metadata.get("langgraph_triggers") or ())


PUSH = "__pregel_push"  # the trigger LangGraph names for a task a `Send` started


def assess(
    b: Bindings, ctx: AgentContext, state: RouteState | AgentState, *, tell: bool = False
) -> dict[str, Any] | None:
    """The update observe writes after the last step, or None when the run just goes on.
    Pure but for `tell`, which streams the notes to the client."""
    run = state.get("run") or {}
    messages = state.get("messages") or []
    step, results = last_step(messages)
    changes: dict[str, Any] = {}
    written: list[BaseMessage] = []
    if run.get("invalid"):
        written += _correction(b, ctx, run, step, results, tell)
        changes.update(invalid_streak=run.get("invalid_streak", 0) + 1, invalid=None, review=[])
    update: dict[str, Any] = {}
    if written:
        update["messages"] = written
    direct = _returned_directly(b.tools(ctx), step, results)
    if direct is not None:  # a `return_direct` tool's result is the answer, as in ToolNode
        return {**update, "run": changes, "status": "answered", "answer": direct}
    streak = changes.get("invalid_streak", run.get("invalid_streak", 0))
    if streak >= ctx.max_invalid:
        update["status"] = "error"
        update["error"] = (
            f"The model's last {ctx.max_invalid} replies could not be parsed (last "
            f"problem: {run.get('invalid') or 'unknown'}); try another model or the "
            "other protocol (REACT_AGENT_PROTOCOL)."
        )
    if changes:
        update["run"] = changes
    return update or None


def _returned_directly(
    tools: list[Any], step: AIMessage | None, results: list[ToolMessage]
) -> str | None:
    """The result of a successful call to a tool marked `return_direct`, if the step made one."""
    direct = {t.name for t in tools if getattr(t, "return_direct", False)}
    if step is None or not direct:
        return None
    called = {c["id"] for c in step.tool_calls if c["name"] in direct}
    found = [r.text for r in results if r.tool_call_id in called and r.status != "error"]
    return found[-1] if found else None


def last_step(messages: list[BaseMessage]) -> tuple[AIMessage | None, list[ToolMessage]]:
    """The model's last step and the tool results written after it."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], AIMessage):
            after = [x for x in messages[index + 1 :] if isinstance(x, ToolMessage)]
            return messages[index], after
    return None, []


def _correction(
    b: Bindings, ctx: AgentContext, run: dict, step: AIMessage | None, results: list, tell: bool
) -> list[BaseMessage]:
    error = run.get("invalid") or "the reply could not be parsed"
    protocol = run.get("protocol") or "native"
    if protocol == "text":
        text = invalid_reply_observation(error, [t.name for t in b.tools(ctx)])
    else:
        text = native_invalid_observation(error)
    _tell(text, tell)
    broken = list(step.invalid_tool_calls) if step is not None else []
    if protocol == "native" and broken:
        return [
            m.observation({"id": c.get("id"), "name": c.get("name")}, text, is_error=True)
            for c in broken
        ]
    return [m.agent_note(text, "invalid")]


def _tell(text: str, tell: bool) -> None:
    if tell:
        get_stream_writer()({"event": "observation", "tool": None, "text": text, "is_error": True})
