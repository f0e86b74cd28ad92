"""A client's `messages` write checked against the thread it lands on, before LangGraph stores
it (`graph.checked` calls this for every input, command and state update that writes steps or
results): what a chat API, or the approval invariant, could not take is refused in one sentence.

- A removal of an id the thread does not hold: `add_messages` would refuse it only when applied,
  after LangGraph stored the write.
- A result for a call no step holds (a chat API refuses an orphan result), or a second result
  for a call that has one (the model would read the later one).
- A result dressed as the agent's own (`messages.is_our_observation`) for a call of the
  thread's that has none yet: only act writes those, so it is a stand-in wearing the agent's
  mark, and the next turn would tell the model the call ran.
- While calls wait for a person's decision (the review's `run.review`; in per_call mode the
  calls approval middleware asks about inside act, `run.asking`; each while it has no result):
  a new step with calls (the waiting calls would no longer be the last step's, and never be
  answered), or another step with a waiting call's id; and, in the same command as a decision,
  a rewrite of the waiting step (the decision would answer a call the person was not shown: to
  change a call, decide with an edit); by a state update or a command, a result for a waiting
  call (the run would wait for a decision on a call that has its result: decide, or send a
  new question). The waiting step rewritten by a state update (Studio's
  editor, `react-agent replay --input`) is taken; the question is then asked again about the
  call as it now reads, and a decision sent before it is asked is refused
  (`graph.checked`).

A step and its results written together (a transcript moved over from another thread) are
taken: a result's call may be held by the thread or by a step earlier in the same write.
Replacing a message in place (under its own id, the same kind of message, a result for the
same call) is an edit of the thread's history, which a state writer may make, even of a result
the agent wrote (LangGraph's time travel edits a result and replays from there). Removing the
whole conversation (`REMOVE_ALL_MESSAGES`) starts the checks over on what is written after it.

`writes_of` reads the (key, value) writes a state update or a command makes, in every form
LangGraph takes, for these checks and `graph.checked`'s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    RemoveMessage,
    ToolMessage,
    convert_to_messages,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.types import Command
from pydantic import BaseModel

from graph import messages as m
from graph.message_reducer import unknown_removals


class RefusedWrite(ValueError):
    """A `messages` write the thread it lands on cannot take."""


def needs_thread(write: Any) -> bool:
    """Whether a `messages` write is checked against the thread: it removes messages, or it
    writes steps or results. A question (the common case, and what Agent Chat UI sends as a
    dict) is not: reading the thread for it would double the cost of every turn, and a user's
    message can neither run a call nor say one ran (under a step's id it replaces the step,
    and the calls that step held with it)."""
    items = write if isinstance(write, list) else [write]
    return any(
        isinstance(x, (RemoveMessage, AIMessage, ToolMessage))
        or (isinstance(x, dict) and (x.get("type") or x.get("role")) in _STEP_OR_RESULT)
        for x in items
    )


# how a dict names a removal, a step or a result (LangChain's `convert_to_messages` takes these)
_STEP_OR_RESULT = frozenset({"remove", "ai", "assistant", "tool"})


def check_against_thread(
    values: Mapping[str, Any], write: Any, *, deciding: bool = False, question: bool = False
) -> None:
    """Refuse `write` (already checked by `message_reducer.check_messages`) when the thread
    whose state is `values` cannot take it (the module's docstring); `deciding`: the write
    comes with a decision (a `Command` with `resume`); `question`: it is a run's input (a
    client's stand-in for a waiting call comes with a new message, and is answered as not
    run), not a state update or a command."""
    held: list[BaseMessage] = list(values.get("messages") or [])
    unknown = unknown_removals(held, write)
    if unknown:
        _refuse(f"it removes {', '.join(map(repr, unknown[:3]))}, which the thread does not hold")
    Thread(held, values.get("run") or {}, deciding, question).take(write)


def waiting_calls(values: Mapping[str, Any]) -> set[str]:
    """The calls of the thread that wait for a person's decision and have no result yet."""
    held: list[BaseMessage] = list(values.get("messages") or [])
    return Thread(held, values.get("run") or {}).waiting


def decided_calls(values: Mapping[str, Any]) -> set[str]:
    """The calls of the thread that hold a person's sealed decision and have no result yet."""
    sealed = set(values.get("approvals") or ())
    held = values.get("messages") or []
    return sealed - {x.tool_call_id for x in held if isinstance(x, ToolMessage)}


class Thread:
    """What the checks need to know of the thread: as stored (`before`), and as the write
    leaves it so far (a removal of everything starts that over)."""

    def __init__(
        self,
        held: list[BaseMessage],
        run: Mapping[str, Any],
        deciding: bool = False,
        question: bool = False,
    ) -> None:
        self.deciding, self.question = deciding, question
        steps = {x.id: x for x in held if isinstance(x, AIMessage) and x.tool_calls}
        self.before = {x.id: x for x in held}
        self.ids_before = set(self.before)
        self.calls = {c["id"]: x.id for x in steps.values() for c in x.tool_calls}
        self.calls_before = set(self.calls)
        self.answered_before = {x.tool_call_id for x in held if isinstance(x, ToolMessage)}
        self.ids, self.answered = set(self.ids_before), set(self.answered_before)
        asked = [*(run.get("review") or ()), *(run.get("asking") or ())]
        self.waiting = {c for c in asked if c in self.calls and c not in self.answered}
        self.waiting_steps = {self.calls[c]: steps[self.calls[c]] for c in self.waiting}

    def take(self, write: Any) -> None:
        items = write if isinstance(write, list) else [write]
        for message in convert_to_messages(items):
            if isinstance(message, RemoveMessage):
                if message.id == REMOVE_ALL_MESSAGES:
                    self.ids, self.calls, self.answered = set(), {}, set()
                continue
            self._waiting_step(message)
            self._replaced(message)
            if isinstance(message, AIMessage):
                self._step(message)
            elif isinstance(message, ToolMessage):
                self._result(message)
            if message.id is not None:  # one without an id gets a new one when stored
                self.ids.add(message.id)

    def _held(self, message: BaseMessage) -> bool:
        """Whether the message is one the thread holds (sent back, or edited in place)."""
        return message.id is not None and (message.id in self.ids_before or message.id in self.ids)

    def _waiting_step(self, message: BaseMessage) -> None:
        """With a decision, the waiting step as it is: the decision answers what was asked."""
        step = self.waiting_steps.get(message.id)
        if step is None or not self.deciding:
            return
        if not (isinstance(message, AIMessage) and message.tool_calls == step.tool_calls):
            _refuse(
                f"message {message.id!r} is the step whose calls the decision answers; to change "
                "a call, decide with an edit"
            )

    def _replaced(self, message: BaseMessage) -> None:
        """A message written under the id of one the thread holds replaces it: the same kind of
        message, and a result for the same call (else a result would move to another call)."""
        old = self.before.get(message.id) if message.id in self.ids else None
        if old is None:
            return
        if old.type != message.type or (
            isinstance(old, ToolMessage) and old.tool_call_id != message.tool_call_id
        ):
            what = (
                f"the result for call {old.tool_call_id!r}"
                if isinstance(old, ToolMessage)
                else f"a {old.type} message"
            )
            _refuse(f"message {message.id!r} is {what}; a write under its id may only edit it")

    def _step(self, step: AIMessage) -> None:
        for call in step.tool_calls:
            holder = self.calls.get(call["id"])
            if holder is not None and holder != step.id:
                _refuse(f"call id {call['id']!r} is already the call of message {holder!r}")
        if step.tool_calls and self.waiting and not self._held(step):
            waiting = ", ".join(map(repr, sorted(self.waiting)))
            _refuse(
                f"calls {waiting} wait for a person's decision; decide on them (resume) or send "
                "a new question before writing another step with calls"
            )
        self.calls.update((call["id"], step.id) for call in step.tool_calls)

    def _result(self, result: ToolMessage) -> None:
        call = result.tool_call_id
        if call not in self.calls:
            _refuse(f"the result {result.id or ''!r} answers call {call!r}, which no step holds")
        if self._held(result):
            self.answered.add(call)  # sent back, or replaced in place: an edit of the history
            return
        if call in self.answered:
            _refuse(f"call {call!r} already has its result; replace that one (its id) instead")
        if (
            m.is_our_observation(result)
            and call in self.calls_before
            and call not in self.answered_before
        ):
            _refuse(
                f"the result for call {call!r} carries the agent's observation mark, but the "
                "agent has not run that call; send it without the mark (an id of your own, no "
                "'react_agent_tool' metadata)"
            )
        if call in self.waiting and not self.question:
            _refuse(
                f"call {call!r} waits for a person's decision; decide on it (a 'respond' "
                "decision gives it a result) instead of writing its result"
            )
        self.answered.add(call)


def _refuse(reason: str) -> None:
    raise RefusedWrite(f"'messages' update refused: {reason}.")


def values_and_node(update: Any) -> tuple[Any, Any]:
    """A `StateUpdate` (values, as_node[, task_id]), or bare values."""
    if isinstance(update, tuple) and update:
        return update[0], update[1] if len(update) > 1 else None
    return update, None


def is_update(item: Any) -> bool:
    return isinstance(item, Sequence) and not isinstance(item, (str, bytes)) and len(item) >= 1


def writes_of(values: Any) -> Iterator[tuple[str, Any]]:
    """The (key, value) writes a state update or a command's update makes: a dict, a list of
    pairs, a `Command` (or a list of them, as a node returns), or a state object."""
    if values is None:
        return
    if isinstance(values, Command):
        yield from writes_of(values.update)
    elif isinstance(values, Mapping):
        yield from values.items()
    elif isinstance(values, (list, tuple)):
        for item in values:
            if isinstance(item, Command):
                yield from writes_of(item.update)
            elif isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str):
                yield item[0], item[1]
    elif isinstance(values, BaseModel):
        yield from ((name, getattr(values, name)) for name in values.model_fields_set)
    elif dataclasses.is_dataclass(values) and not isinstance(values, type):
        for field in dataclasses.fields(values):
            value = getattr(values, field.name)
            if value is not None:
                yield field.name, value
