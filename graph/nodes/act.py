"""act: run a step's tool call with LangGraph's `ToolNode` through the middleware's
`wrap_tool_call` layers (`graph.tooling.execution`), and write its observation. A step of one
call reaches act by an edge; a step of several sends one task per call (`graph.loop.tasks`).

Each task writes its own ToolMessage, so a crash keeps every call that finished and a resume
runs only the ones that did not. A failure of any kind is an observation, never an exception
that escapes the graph. A call that needs approval runs only with the review step's seal for
exactly that call.

One execution path per call: a sync run invokes the ToolNode, an async run awaits it, as
`create_agent` does; the per-call timeout is a wait (`graph.tooling.execution`).
"""

from __future__ import annotations

import time
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.config import get_stream_writer
from langgraph.runtime import get_runtime
from langgraph.types import Command, Send

from graph import messages as m
from graph._compat import tool_input
from graph.loop.bindings import Bindings
from graph.loop.tasks import idle, pending_calls
from graph.middleware.approval_check import SKIPPED, ApprovalCheck
from graph.middleware.approvals import approval_middleware, needs_approval
from graph.settings import AgentContext
from graph.state import ActInput
from graph.tooling.execution import outputs, tool_node, tool_update_refusal


def make_act(b: Bindings) -> tuple[Any, Any]:
    def act_one(payload: ActInput, config: RunnableConfig, state: Any) -> Any:
        task = Task(b, payload, config)
        if task.refused is not None:
            return task.refused
        return task.written(task.node.invoke(tool_input(task.call, state), config))

    async def aact_one(
        payload: ActInput, config: RunnableConfig, ctx: AgentContext, state: Any
    ) -> Any:
        task = Task(b, payload, config, ctx)
        if task.refused is not None:
            return task.refused
        return task.written(await task.node.ainvoke(tool_input(task.call, state), config))

    def act(given: ActInput | dict[str, Any], config: RunnableConfig) -> Any:
        payloads = _payloads(given)
        if len(payloads) > 1:
            return {} if idle(given) else _fanned_out(payloads)
        state = _state(given)
        return _joined([act_one(payload, config, state) for payload in payloads])

    async def aact(given: ActInput | dict[str, Any], config: RunnableConfig) -> Any:
        payloads = _payloads(given)
        if len(payloads) > 1:
            return {} if idle(given) else _fanned_out(payloads)
        ctx = b.context(get_runtime().context, read_env=False)
        await b.atools(ctx)  # a resume may start here
        state = _state(given)
        return _joined([await aact_one(payload, config, ctx, state) for payload in payloads])

    return act, aact


def _payloads(given: ActInput | dict[str, Any]) -> list[ActInput]:
    """The calls this task runs: the one a `Send` carried, or, reached by an edge (a step of
    one call, a `Command(goto="act")`), each call of the last step that has no observation."""
    if "call" in given:
        return [given]  # type: ignore[list-item]
    return pending_calls(given)  # type: ignore[arg-type]


def _fanned_out(payloads: list[ActInput]) -> Command:
    """Several pending calls reached act by its edge (a client's `Command(goto="act")`): one
    task per call, as think's route sends them, so each call's result is kept the moment it
    finishes and a pause or crash in one call never runs another call again
    (`graph.loop.tasks.to_act`; the route after this task waits for those tasks)."""
    return Command(goto=[Send("act", payload) for payload in payloads])


def _state(given: ActInput | dict[str, Any]) -> dict[str, Any] | None:
    """The graph state act was given (reached by an edge), or None for a `Send`'s payload:
    the ToolNode then reads the state itself, for the tools that have it injected."""
    return None if "call" in given else given  # type: ignore[return-value]


def _joined(updates: list[Any]) -> Any:
    """One call's update as it is; several (an edge to a step of many calls) as one list of
    `Command`s, the form LangGraph takes for several updates from one task."""
    if not updates:  # nothing was pending (a client's goto on a finished step)
        return {}
    if len(updates) == 1:
        return updates[0]
    flat = [u for update in updates for u in (update if isinstance(update, list) else [update])]
    return [u if isinstance(u, Command) else Command(update=u) for u in flat]


class Task:
    """One call as act runs it: the run's settings and tools, the observation of a call that
    will not run (`refused`), else the ToolNode and the call, and the run's clock."""

    def __init__(
        self,
        b: Bindings,
        payload: ActInput,
        config: RunnableConfig,
        ctx: AgentContext | None = None,
    ) -> None:
        self.payload = payload
        self.ctx, self.tools = _setup(b, ctx)
        self.call = _call(payload)
        early = _before(payload)
        self.refused = _written([{"messages": [early]}], payload, self.ctx, 0.0) if early else None
        self.node = _node(b, self.ctx, payload, self.tools) if early is None else None
        self.started = time.perf_counter()
        self.guarded = b.guarded

    def written(self, result: Any) -> Any:
        seconds = time.perf_counter() - self.started
        results = [self._allowed(x) for x in outputs(result)]
        return _written(results, self.payload, self.ctx, seconds)

    def _allowed(self, result: Any) -> Any:
        """A tool's `Command` that writes a key only the agent's own steps write (the seals,
        the loop's bookkeeping, a middleware's private key such as HITL's edits) is not
        applied: its observation says so instead (`graph.tooling.execution.tool_update_refusal`)."""
        refusal = tool_update_refusal(result, self.guarded)
        if refusal is None:
            return result
        return {"messages": [m.observation(self.call, refusal, is_error=True)]}


def _setup(b: Bindings, ctx: AgentContext | None) -> tuple[AgentContext, dict[str, BaseTool]]:
    ctx = ctx or b.context(get_runtime().context, read_env=False)
    return ctx, {tool.name: tool for tool in b.tools(ctx)}


def _call(payload: ActInput) -> dict[str, Any]:
    return {**payload["call"], "type": "tool_call"}


def _node(
    b: Bindings,
    ctx: AgentContext,
    payload: ActInput,
    tools: dict[str, BaseTool],
) -> Any:
    """The ToolNode for this run's tools and layers: the user's tool wrappers, outermost
    first, then innermost, right around the tool, `ApprovalCheck` with the run's approval
    middleware (it asks per call, applies a reviewer's edit and tells the model). So the check
    sees each call exactly as it will run, whatever a wrapper changed, and a wrapper that runs
    the call again (a retry) reaches the check again: one decision runs one call, once
    (`graph.middleware.approval_check`)."""
    policy = tuple(sorted({*ctx.approve, *(payload.get("approve") or [])}))

    def make() -> Any:  # once per key: not at every call
        approvals = approval_middleware(policy, list(tools.values()), ctx.approval_mode)
        gated = [name for name, tool in tools.items() if needs_approval(tool, policy)]
        check = ApprovalCheck(gated, approvals, ctx.approval_mode)
        # the user's wraps, each in its span, then the check (it runs the approval middleware)
        return tool_node(
            list(tools.values()),
            ctx.tool_timeout,
            [*b.tool_wraps, check.wrap_tool_call],
            [*b.tool_awraps, check.awrap_tool_call],
        )

    # kept per tool selection, and built again when the selection's tools were loaded again
    key = (b.tool_selection(ctx), policy, ctx.approval_mode, ctx.tool_timeout)
    loaded, kept = b.tools(ctx), b.tool_nodes.peek(key)
    if kept is None or kept[0] is not loaded:
        kept = (loaded, make())
        b.tool_nodes.put(key, kept)
    return kept[1]


def _before(payload: ActInput) -> ToolMessage | None:
    """The observation of a call the model's reply broke (nothing runs). Whether a call that
    needs approval may run is decided inside the tool node, on the call as it will really
    run (`ApprovalCheck`), whatever sent it here."""
    if payload.get("error"):
        return m.observation(payload["call"], payload["error"], is_error=True)
    return None


def _written(results: list[Any], payload: ActInput, ctx: AgentContext, seconds: float) -> Any:
    """The node's update: each ToolMessage as the agent's observation (cut to the limit, with
    the step's note and its run time), told to stream listeners; a `Command` a tool returned
    keeps its update and its route."""
    out: list[Any] = []
    for result in results:
        if isinstance(result, Command) and isinstance(result.update, dict):
            update = {**result.update, "messages": _observed(result.update, payload, ctx, seconds)}
            out.append(Command(update=update, goto=result.goto, graph=result.graph))
        elif isinstance(result, dict):
            out.append({**result, "messages": _observed(result, payload, ctx, seconds)})
        else:
            out.append(result)
    return out[0] if len(out) == 1 and isinstance(out[0], dict) else out


def _observed(
    update: dict[str, Any], payload: ActInput, ctx: AgentContext, seconds: float
) -> list[Any]:
    messages = update.get("messages") or []
    messages = messages if isinstance(messages, list) else [messages]
    out = []
    for message in messages:
        if isinstance(message, ToolMessage) and message.response_metadata.get(SKIPPED):
            continue  # a call act left alone: no result is written for it
        if isinstance(message, ToolMessage):
            message = _ours(message, payload, ctx, seconds)
            event = m.observation_event(message)
            rerun = message.response_metadata.get(m.RERUN)
            get_stream_writer()({**event, "rerun": rerun} if rerun else event)
        out.append(message)
    return out


def _ours(
    message: ToolMessage, payload: ActInput, ctx: AgentContext, seconds: float
) -> ToolMessage:
    note = payload.get("note")
    if not (note and message.tool_call_id == payload["call"].get("id")):
        note = None
    content = _cut(message.content, ctx.observation_limit, note)
    meta = dict(message.response_metadata)
    meta.setdefault(m.DURATION, round(seconds * 1000, 3))
    update: dict[str, Any] = {"content": content, "response_metadata": meta}
    if message.id is None:  # the id says it is ours
        update["id"] = m.observation_id()
    elif not m.is_our_observation(message):  # an id of the tool's own: a flag says it
        meta[m.OURS] = True
    return message.model_copy(update=update)


def _cut(content: str | list[Any], limit: int, note: str | None) -> str | list[Any]:
    """The result's content within `limit` characters of text, with the step's note. Content
    blocks stay blocks (an image, a file), as `ToolNode` writes them for the model: only their
    text is cut, from the block that reaches the limit on."""
    said = f"(Note: {note})" if note else None
    if isinstance(content, str):
        text = truncate(content, limit)
        return f"{text}\n{said}" if said else text
    total = sum(len(t) for b in content if (t := _block_text(b)) is not None)
    out, left = list(content), limit
    if total > limit:
        out = []
        for block in content:
            text = _block_text(block)
            if text is None:
                out.append(block)
            elif left > 0:  # text past the limit is left out
                kept = text if len(text) < left else f"{text[:left]}\n{_cut_notice(total, limit)}"
                out.append(kept if isinstance(block, str) else {**block, "text": kept})
                left -= len(text)
    return [*out, {"type": "text", "text": said}] if said else out


def _block_text(block: Any) -> str | None:
    if isinstance(block, str):
        return block
    if isinstance(block, dict) and block.get("type") == "text":
        return str(block.get("text") or "")
    return None


def truncate(text: str, limit: int) -> str:
    """Cut an observation to `limit` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n{_cut_notice(len(text), limit)}"


def _cut_notice(total: int, limit: int) -> str:
    return f"[... {total - limit:,} more characters cut; {total:,} in all]"
