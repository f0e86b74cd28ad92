"""Which hooks a middleware implements, and each node hook as a graph node.

`before_agent`, `before_model`, `after_model` and `after_agent` hooks run as nodes of their
own, where `create_agent` runs them: a hook that interrupts or jumps is re-run alone on resume,
never together with a model call or a tool. A hook's update is written through the graph's
reducers like any node's, so `messages` keeps its delta channel and a middleware's private
keys their own channels. A malformed value for one of the agent's own keys fails the hook with
one sentence before anything of its update is stored.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Sequence
from typing import Any

from langchain.agents.middleware import (
    AgentMiddleware,
    ModelCallLimitMiddleware,
    ToolCallLimitMiddleware,
)
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import Runnable
from langgraph.constants import END
from langgraph.graph import StateGraph
from langgraph.runtime import get_runtime
from langgraph.types import Command

from graph._compat import declared_jumps, node_trace_policy, untraced
from graph.channels import check_update
from graph.messages import as_observation, from_middleware, is_user_message
from graph.node_names import CREATE_AGENT_NODES, our_goto
from graph.usage import counted, with_tokens
from tools.support.blocking import run_sync

NODE_HOOKS = ("before_agent", "before_model", "after_model", "after_agent")
JUMPS = ("model", "tools", "end")
# Middleware whose jump to the end means a limit was reached: the run's status says so.
LIMITS: tuple[type, ...] = (ModelCallLimitMiddleware, ToolCallLimitMiddleware)
# a hook's `Command(goto=...)` in `create_agent`'s names, where its end is finish: it writes
# what a caller reads
_GOTO = {**CREATE_AGENT_NODES, END: "finish"}


def implements(middleware: AgentMiddleware, hook: str) -> bool:
    """True when the middleware overrides the hook, in its sync or async form."""
    kind = type(middleware)
    return any(
        getattr(kind, name, None) is not getattr(AgentMiddleware, name, None)
        for name in (hook, f"a{hook}")
    )


def with_hook(middleware: Sequence[AgentMiddleware], hook: str) -> list[AgentMiddleware]:
    return [m for m in middleware if implements(m, hook)]


def node_name(middleware: AgentMiddleware, hook: str) -> str:
    return f"{middleware.name}.{hook}"


def jumps_of(middleware: AgentMiddleware, hook: str) -> list[str]:
    return [j for j in declared_jumps(middleware, hook) if j in JUMPS]


def hook_node(middleware: AgentMiddleware, hook: str) -> Runnable:
    """A node running one hook: the sync form in sync runs and the async form in async runs,
    each falling back to the other when only one is implemented."""
    sync_own = getattr(type(middleware), hook) is not getattr(AgentMiddleware, hook)
    async_own = getattr(type(middleware), f"a{hook}") is not getattr(AgentMiddleware, f"a{hook}")
    sync_hook = getattr(middleware, hook)
    async_hook = getattr(middleware, f"a{hook}")

    def closing(state: dict[str, Any], update: Any) -> Any:
        """After the run, a rewritten final reply rewrites the answer a caller reads."""
        return answer_rewritten(state, update) if hook == "after_agent" else update

    def run(state: dict[str, Any]) -> dict[str, Any]:
        runtime = get_runtime()
        with counted() as tokens:
            if sync_own or not async_own:
                result = sync_hook(state, runtime)
            else:
                result = run_sync(lambda: async_hook(state, runtime))
        return _counted(state, closing(state, written(middleware, result, state)), tokens)

    async def arun(state: dict[str, Any]) -> dict[str, Any]:
        runtime = get_runtime()
        with counted() as tokens:
            result = await async_hook(state, runtime) if async_own else sync_hook(state, runtime)
        return _counted(state, closing(state, written(middleware, result, state)), tokens)

    return untraced(run, arun, node_name(middleware, hook))  # one run and one event per node


def add_hook_nodes(builder: StateGraph, hooks: dict[str, list[AgentMiddleware]]) -> None:
    """A node for each node hook of each middleware. Its run records what the middleware's
    `trace_policy` (else the process default, `configure_trace_policy`) lets tracers record,
    as in `create_agent`: `AutoModeMiddleware`, for one, keeps the conversation out."""
    for hook, found in hooks.items():
        for ware in found:
            policy = node_trace_policy(ware.trace_policy)
            builder.add_node(node_name(ware, hook), hook_node(ware, hook), trace_policy=policy)


def written(middleware: AgentMiddleware, result: Any, state: dict[str, Any]) -> Any:
    """The hook's update, with the run's status when it ends or resumes the loop: a limit
    reached is `max_steps`, another middleware's stop is `stopped` (its reply, if it wrote one,
    is the answer), and a jump back into the loop keeps the run going."""
    if result is None:
        return {}
    if isinstance(result, Command):  # a node's own way to write and route, as in create_agent
        update = result.update
        update = written(middleware, update, state) if isinstance(update, dict) else update
        return dataclasses.replace(result, update=update, goto=our_goto(result.goto, _GOTO))
    if not isinstance(result, dict):
        raise TypeError(
            f"Middleware {middleware.name} returned {type(result).__name__}; a hook returns "
            "a dict of state updates, a Command or None."
        )
    update = dict(result)
    check_update(update)  # refused here, before LangGraph stores any of it
    if "messages" in update:
        thread = state.get("messages") or []
        update["messages"] = marked_as_agents(update["messages"], lambda: {x.id for x in thread})
    jump = update.get("jump_to")
    if jump == "end":
        update["status"] = "max_steps" if isinstance(middleware, LIMITS) else "stopped"
        reply = _reply(update.get("messages"))
        if reply:
            update["answer"] = reply
        update["run"] = {**update.get("run", {}), "ended_by": middleware.name}
    elif jump in ("model", "tools"):
        update["status"] = "running"
    return update


def marked_as_agents(messages: Any, held: Callable[[], Collection[str]]) -> Any:
    """A hook's messages with its ToolMessages marked as the agent's observations and the
    HumanMessages it adds marked as the middleware's, so neither reads as the client's (a
    stand-in result; a new question that would start a new run). A HumanMessage the thread
    holds already (`held`: its ids; a hook rewriting the conversation), or that the agent's
    own policies marked (a nudge), keeps what it is."""
    items = messages if isinstance(messages, list) else [messages]
    if not any(isinstance(x, (ToolMessage, HumanMessage)) for x in items):
        return messages
    kept = held()
    marked = [
        as_observation(x)
        if isinstance(x, ToolMessage)
        else from_middleware(x)
        if is_user_message(x) and (x.id is None or x.id not in kept)
        else x
        for x in items
    ]
    return marked if isinstance(messages, list) else marked[0]


def _reply(messages: Any) -> str | None:
    items = messages if isinstance(messages, list) else [messages]
    for item in reversed(items):
        if isinstance(item, AIMessage) and not item.tool_calls and item.text.strip():
            return item.text.strip()
    return None


def _counted(state: dict[str, Any], update: Any, tokens: dict[str, int]) -> Any:
    """The update with the hook's model calls counted (a Command's update included)."""
    if not isinstance(update, Command):
        return with_tokens(state, update, tokens)
    if not isinstance(update.update, dict):
        return update
    return dataclasses.replace(update, update=with_tokens(state, update.update, tokens))


def answer_rewritten(state: dict[str, Any], update: Any) -> Any:
    """An after_agent hook's update, with the run's answer when it rewrites the final reply
    (same id): finish wrote the answer before the hook ran, and a caller reads the answer as
    the last hook left it (a redaction reaches it, as an after_model hook's does)."""
    if not isinstance(update, dict) or not update.get("messages") or not state.get("answer"):
        return update
    final = next(
        (x for x in reversed(state.get("messages") or []) if isinstance(x, AIMessage)), None
    )
    items = update["messages"] if isinstance(update["messages"], list) else [update["messages"]]
    for item in reversed(items):
        if isinstance(item, AIMessage) and final is not None and item.id == final.id:
            return {**update, "answer": item.text} if not item.tool_calls else update
    return update
