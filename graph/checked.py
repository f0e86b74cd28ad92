"""What the compiled agent checks before LangGraph sees a run's input or a state update.

LangGraph fails inside on a few inputs a client can send: a resume where no run is paused
(UnboundLocalError, or a TypeError on the server), a command that carries nothing, messages that
cannot become messages (a validation dump, an AttributeError). `AgentGraph` refuses those first,
each in one sentence, and stamps each call with its start (the run's deadline restarts there).

Every client write (`update_state` as any node, `bulk_update_state`, a fork, a `Command`'s
update as run input, in code or through the served API, which calls these same methods) is
checked here before LangGraph stores anything of it: LangGraph saves a write before its
channel applies it, so a write refused only by its channel would already be stored and break
every later read of the thread. A write to a key only the agent's own steps write (the loop's
bookkeeping `run`, the approval seals, a hook's jump, any middleware's private key, such as
`HumanInTheLoopMiddleware`'s `hitl_edited_tool_calls`) is refused whatever its value: LangGraph
runs a node's writers without its function for `update_state(as_node=...)`, so a node's name
proves nothing about who wrote.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import defaultdict
from collections.abc import Iterable, Mapping
from contextlib import aclosing
from typing import Any

from langchain_core.runnables.config import merge_configs
from langgraph.channels.base import BaseChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, StateUpdate

from graph.caller_schemas import nested_marked
from graph.channels import CHECKS
from graph.continuing import (
    NothingToResume,
    check_known,
    check_resume,
    continues,
    deciding,
    named_checkpoint,
    outside_the_run,
)
from graph.loop.turn import paused_input
from graph.message_reducer import check_messages
from graph.middleware.schema import private_keys
from graph.node_names import our_goto, our_node_names, our_update_nodes
from graph.policies.run_deadline import invoked
from graph.state import LOOP_KEYS
from graph.thread_writes import (
    check_against_thread,
    is_update,
    needs_thread,
    values_and_node,
    writes_of,
)

# Where the served graph's factory puts the run context as the server received it, before the
# server drops the keys the context schema does not list (`graph.agent.served_graph`).
SERVED_CONTEXT = "__react_agent_served_context__"


class ProtectedKey(ValueError):
    """A client write to a key only the agent's own steps write."""


_WHAT = {
    "run": "the loop's own bookkeeping (the run's deadline reads it)",
    "approvals": "the seals of a person's approval decisions",
    "jump_to": "a middleware hook's jump",
}


class AgentGraph(CompiledStateGraph):
    """The compiled agent. Before a run starts, a `Command` that carries nothing, a resume on a
    thread where no run is paused, and a bare continue (`None` input) at the head of a thread
    with nothing left to run are refused with one sentence; LangGraph would fail inside with
    UnboundLocalError or TypeError, or quietly hand back the old state. A continue from a named
    checkpoint (time travel) is LangGraph's own, from a checkpoint the thread holds.
    `goto=None`, as the LangGraph server maps a command without one, means no goto. A write in
    an input, a command or a state update is checked before LangGraph stores it (the module's
    docstring). A new question on a thread paused inside a step is read with the pause in mind
    (`graph.loop.turn.paused_input`)."""

    def stream(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        input, thread_checks = self._checked_input(input)
        config, kwargs = nested_marked(invoked(config)), self._run_options(kwargs)
        where = self._bound(config)
        resuming = continues(input, where)
        if named_checkpoint(where) and self._has_threads(where):
            check_known(self.checkpointer.get_tuple(where), where)
        if (thread_checks or resuming) and self._has_threads(where):
            _check_on_thread(self.get_state(where), input, thread_checks, resuming)
        if _new_input(input, where) and self._has_threads(where):
            input, kept = paused_input(input, self.checkpointer.get_tuple(where))
            if kept:
                update = [[StateUpdate({"messages": kept}, "act")]]
                super().bulk_update_state(outside_the_run(where), update)
        yield from super().stream(input, config, **kwargs)

    async def astream(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        input, thread_checks = self._checked_input(input)
        config, kwargs = nested_marked(invoked(config)), self._run_options(kwargs)
        where = self._bound(config)
        resuming = continues(input, where)
        if named_checkpoint(where) and self._has_threads(where):
            check_known(await self.checkpointer.aget_tuple(where), where)
        if (thread_checks or resuming) and self._has_threads(where):
            _check_on_thread(await self.aget_state(where), input, thread_checks, resuming)
        if _new_input(input, where) and self._has_threads(where):
            input, kept = paused_input(input, await self.checkpointer.aget_tuple(where))
            if kept:
                update = [[StateUpdate({"messages": kept}, "act")]]
                await super().abulk_update_state(outside_the_run(where), update)
        # closed with ours (as `yield from` closes the sync one): a caller that stops reading
        # must find the run ended, its writes landed, before it sends the next input
        async with aclosing(super().astream(input, config, **kwargs)) as parts:
            async for part in parts:
                yield part

    def bulk_update_state(self, config: Any, supersteps: Any) -> Any:
        supersteps = our_update_nodes(supersteps)
        if named_checkpoint(config) and self._has_threads(config):
            check_known(self.checkpointer.get_tuple(config), config)
        if thread_checks := self._check_supersteps(supersteps):
            _check_against_thread(thread_checks, self.get_state(config))
        return super().bulk_update_state(config, supersteps)

    async def abulk_update_state(self, config: Any, supersteps: Any) -> Any:
        supersteps = our_update_nodes(supersteps)
        if named_checkpoint(config) and self._has_threads(config):
            check_known(await self.checkpointer.aget_tuple(config), config)
        if thread_checks := self._check_supersteps(supersteps):
            _check_against_thread(thread_checks, await self.aget_state(config))
        return await super().abulk_update_state(config, supersteps)

    def _bound(self, config: Any) -> Any:
        """The call's config as the run reads it: with what `with_config` bound (a thread id
        bound once for every call), for the checks made before LangGraph starts."""
        return merge_configs(self.config, config) if self.config else config

    def _has_threads(self, config: Any) -> bool:
        configurable = (config or {}).get("configurable") or {}
        return isinstance(self.checkpointer, BaseCheckpointSaver) and "thread_id" in configurable

    def _run_options(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The run's options with its interrupt nodes in `create_agent`'s names taken for ours,
        and a served run's context as the server received it, where the graph factory kept it
        (the run's settings then refuse the keys the server would have dropped unseen)."""
        options = dict(kwargs)
        for key in ("interrupt_before", "interrupt_after"):
            if key in options:
                options[key] = our_node_names(options[key])
        served = ((self.config or {}).get("configurable") or {}).get(SERVED_CONTEXT)
        return options if served is None else {**options, "context": served}

    def _checked_input(self, input: Any) -> tuple[Any, list[Any]]:
        """The input as LangGraph takes it, and the `messages` writes the caller checks against
        the thread (`graph.thread_writes.needs_thread`)."""
        if not isinstance(input, Command):
            if not isinstance(input, Mapping):
                return input, []
            keys = self.builder.schemas[self.builder.input_schema]  # what reaches the state
            writes = ((k, v) for k, v in input.items() if k in keys)
            return input, self._check_writes(writes, protect=False)
        thread_checks = self._check_writes(writes_of(input.update), protect=True)
        input = dataclasses.replace(input, goto=our_goto(input.goto))
        if input.resume is None and input.update is None and not input.goto:
            raise NothingToResume(
                "The command carries nothing: send Command(resume=...) with the decisions for a "
                "paused run, or new messages as input."
            )
        return input, thread_checks

    def _check_supersteps(self, supersteps: Any) -> list[Any]:
        """Each superstep's writes checked; the `messages` writes to check against the thread."""
        thread_checks: list[Any] = []
        for superstep in supersteps or ():
            writes: list[tuple[str, Any]] = []
            for update in superstep or ():
                values, as_node = values_and_node(update)
                if as_node == "__copy__" and isinstance(values, (list, tuple)):
                    # a fork with updates: they are applied as the next superstep
                    items = [item for item in values if is_update(item)]
                    thread_checks.extend(self._check_supersteps([items]))
                    continue
                writes.extend(writes_of(values))
            thread_checks.extend(self._check_writes(writes, protect=True))
        return thread_checks

    def _check_writes(self, writes: Iterable[tuple[str, Any]], *, protect: bool) -> list[Any]:
        """One superstep's writes, refused in one sentence when a value is malformed for its
        channel, or (`protect`) when a key is one only the agent writes. Returns the
        `messages` writes to check against the thread (`thread_writes.needs_thread`)."""
        grouped: dict[str, list[Any]] = defaultdict(list)
        for key, value in writes:
            grouped[key].append(value)
        for key, values in grouped.items():
            _check_channel(key, self.channels.get(key), values)
        thread_checks = [v for v in grouped.get("messages", ()) if needs_thread(v)]
        if not protect:
            return thread_checks
        guarded = LOOP_KEYS | _private_keys(self.builder.state_schema)
        for key in grouped:
            if key in guarded:
                what = _WHAT.get(key, "private to the agent's middleware")
                raise ProtectedKey(
                    f"State update refused: {key!r} is {what}, which only the agent's own "
                    "steps write; no state update or command may set it."
                )
        return thread_checks


@functools.lru_cache(maxsize=64)
def _private_keys(schema: type) -> frozenset[str]:
    return private_keys(schema)


def _check_channel(key: str, spec: Any, values: list[Any]) -> None:
    """The values one superstep writes to one channel, applied as the channel would apply
    them: the agent's own channels by their strict checks, any other (a middleware's, the
    caller's state schema) to an empty copy of it."""
    if key == "messages":
        for value in values:
            check_messages(value)
        return
    check = CHECKS.get(key)
    if check is not None:
        for value in values:
            check(None, value)
        return
    if not isinstance(spec, BaseChannel):
        return  # not a channel: LangGraph ignores or refuses it itself, storing nothing
    try:
        spec.copy().update(values)
    except Exception as exc:
        reason = str(exc).split(" For troubleshooting", 1)[0].split("\n", 1)[0].strip()
        raise ValueError(
            f"State update refused: {key!r} cannot take {values[-1]!r:.80} "
            f"({reason or type(exc).__name__})."
        ) from None


def _check_against_thread(
    written: list[Any], snapshot: Any, deciding: bool = False, question: bool = False
) -> None:
    """The `messages` writes that need the thread, checked against it (`graph.thread_writes`)."""
    for value in written:
        check_against_thread(snapshot.values or {}, value, deciding=deciding, question=question)


def _check_on_thread(snapshot: Any, input: Any, thread_checks: list[Any], resuming: bool) -> None:
    """A run's input checked against the thread, read once: its `messages` writes, and a
    resume's paused run."""
    question = isinstance(input, Mapping)
    _check_against_thread(thread_checks, snapshot, deciding(input), question)
    if resuming:
        check_resume(snapshot, input)


def _new_input(input: Any, config: Any) -> bool:
    """A question (or other new input) at the thread's head, where a pause is read
    (`graph.loop.turn.paused_input`)."""
    return isinstance(input, Mapping) and not named_checkpoint(config)
