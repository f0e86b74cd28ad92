"""observe: the node after a step's tools when the loop does not simply go back to the model:
a `return_direct` tool's result ends the run as its answer (as `ToolNode` and `create_agent`
do); a call a person edited inside act (per_call approvals) is written into its step with the
arguments that ran (batched mode's review does so before act); and after a step of several
calls, whose act tasks each see their own result only, it is the one node that sees them all
before the model is asked again.

Tool observations were already written by `act` (each task its own, so a crash keeps every
finished one), so an ordinary iteration goes from act straight back to think: two supersteps,
as in `create_agent`. The loop's policies (corrections of unusable replies, the repeated-call
guard, the step limit) run in think's chain (graph/policies), not here.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import get_runtime

from graph import messages as m
from graph._compat import config_runtime
from graph.caller_schemas import run_settings_only
from graph.loop.bindings import Bindings
from graph.loop.tasks import idle, pending_calls
from graph.middleware.approvals import steps_edited
from graph.settings import AgentContext
from graph.state import AgentState, RouteState


def make_observe(b: Bindings) -> Any:
    def observe(state: AgentState) -> dict[str, Any]:
        return assess(b, b.context(get_runtime().context, read_env=False), state) or {}

    return observe


def make_route_after_act(b: Bindings, loop_entry: str) -> Any:
    def route_after_act(state: RouteState, config: RunnableConfig) -> str | list[str]:
        if held(state, config):
            return []  # act ran nothing here: the review, the next turn or its tasks go on
        step, _ = m.last_step(state.get("messages") or [])
        calls = len(step.tool_calls) + len(step.invalid_tool_calls) if step is not None else 0
        if calls > 1:  # this act task saw its own result only
            return "observe"
        # from the config: none in `update_state(..., as_node="act")` (`config_runtime`)
        runtime = config_runtime(config)
        given = run_settings_only(runtime.context) if runtime is not None else None
        ctx = b.context(given, read_env=False)
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
    step, _ = m.last_step(state.get("messages") or [])
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


def assess(b: Bindings, ctx: AgentContext, state: RouteState | AgentState) -> dict[str, Any] | None:
    """The update observe writes after the last step, or None when the run just goes on."""
    messages = state.get("messages") or []
    step, results = m.last_step(messages)
    update: dict[str, Any] = {}
    # a `return_direct` tool's result is the answer, as in ToolNode; not where the run asks
    # for a typed result (`response_format`): the model reads it and gives the typed answer
    direct = None if b.response_format else _returned_directly(b.tools(ctx), step, results)
    if direct is not None:
        update.update(status="answered", answer=direct)
    structured = m.structured_answer(results)
    if structured is not None:  # the step gave the structured answer beside other calls
        update.update(status="answered", answer=structured)
    edited = steps_edited(step, results)  # per_call: what a person's edit ran, in the step
    if edited is not None:
        update["messages"] = [edited]
    return update or None


def _returned_directly(
    tools: list[Any], step: AIMessage | None, results: list[ToolMessage]
) -> str | None:
    """The result of a successful call to a tool marked `return_direct`, when every call the
    step made is to such a tool (as `create_agent` ends: a step that also called an ordinary
    tool goes back to the model with all the results)."""
    direct = {t.name for t in tools if getattr(t, "return_direct", False)}
    if step is None or not direct:
        return None
    known = {t.name for t in tools}
    called = [c for c in step.tool_calls if c["name"] in known]  # a provider's tools aside
    if not called or any(c["name"] not in direct for c in called):
        return None
    ids = {c["id"] for c in called}
    found = [r.text for r in results if r.tool_call_id in ids and r.status != "error"]
    return found[-1] if found else None
