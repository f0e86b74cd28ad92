"""How the agent writes its steps into the conversation, whatever the protocol.

Everything is a standard LangChain message, so Studio, Agent Chat UI, `get_state` and any
LangGraph client show the same steps for both protocols:

* the model's step: an `AIMessage` with `tool_calls` (under the text protocol the parsed call,
  with a generated id; its content is the thought and the model's own text is kept in
  `response_metadata`);
* each observation: a `ToolMessage` with that call's id (its run time in `response_metadata`);
* the answer: an `AIMessage` without tool calls;
* the agent's own notes to the model (a correction after an unusable reply, the loop guard's
  nudge, the wrap-up request): a `HumanMessage` whose id starts with `do-not-render-`, the prefix
  Agent Chat UI uses for messages a person need not see.

`response_metadata["react_agent"]` says which of the agent's kinds a message is, where its shape
does not: a step is known by its tool calls and carries no mark (every step would store it).
"""

from __future__ import annotations

import operator
import random
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

MARK = "react_agent"  # response_metadata key: what kind of agent message this is
FROM_MIDDLEWARE = "middleware"  # MARK of a HumanMessage a middleware hook added mid-run
RAW = "react_text"  # the model's own text of a text-protocol step
PROTOCOL = "react_protocol"
THOUGHT = "react_thought"  # the thought before a text-protocol Final Answer
NOTE = "react_note"  # e.g. "2 more actions were ignored"
FALLBACK = "react_fallback"  # why this run switched to the text protocol
ERROR = "react_error"  # why an AI reply could not be used
TOLD = "react_told"  # what to tell the model about that reply instead, word for word
STRUCTURED = "react_structured"  # on an output tool's result: the run ends once its step ran
NOTICE = "react_notice"  # why a run stopped early (on the closing message)
QUOTED = "react_quoted"  # an answer the grammar left no choice for: written without a model call
DECIDED_BY = "react_decided_by"  # "model" or "code": who chose this step (the trace shows it)
STEP = "react_step"  # a step's number in its run: what the step limit counts
ARGUMENT_BY = "react_argument_by"  # "model" or "code": who wrote a call's arguments
DURATION = "duration_ms"
EDITED = "react_edited"  # on a ToolMessage: the arguments a person's edit ran (per_call mode)
RERUN = "react_rerun"  # on a ToolMessage: earlier starts of this call that never finished (a crash)
OURS = "react_agent_tool"  # on ToolMessages this agent produced under an id it did not choose
OBSERVATION_PREFIX = "obs-"  # the id of every other ToolMessage this agent produced
HIDDEN_PREFIX = "do-not-render-"

NoteKind = Literal["invalid", "repeat", "wrap_up", "not_run"]


def new_call_id() -> str:
    """An id for a call the agent read from text: 48 random bits, unique within any thread
    (each id is stored twice per step, on the call and on its observation)."""
    return f"call_{_random_hex(48)}"


def agent_note(text: str, kind: NoteKind) -> HumanMessage:
    """A message from the agent to the model that a person need not see."""
    return HumanMessage(
        content=text, id=f"{HIDDEN_PREFIX}{_random_hex()}", response_metadata={MARK: kind}
    )


def is_agent_note(message: BaseMessage) -> bool:
    return isinstance(message, HumanMessage) and (message.id or "").startswith(HIDDEN_PREFIX)


def is_user_message(message: BaseMessage) -> bool:
    """A person's message: not the agent's own note, nor one a middleware hook added mid-run
    (a reminder, a "try again": in `create_agent` it is just written, it starts no run)."""
    return (
        isinstance(message, HumanMessage)
        and not is_agent_note(message)
        and kind_of(message) != FROM_MIDDLEWARE
    )


def from_middleware(message: HumanMessage) -> HumanMessage:
    """A HumanMessage a middleware hook wrote, marked so (same id; shown like any other)."""
    return message.model_copy(
        update={"response_metadata": {**message.response_metadata, MARK: FROM_MIDDLEWARE}}
    )


def observation_event(result: ToolMessage) -> dict[str, Any]:
    """A call's result as the `custom` stream tells it (the command line prints it live)."""
    return {
        "event": "observation",
        "tool": result.name,
        "text": shown(result),
        "is_error": result.status == "error",
    }


def observation(
    call: dict[str, Any], text: str, *, is_error: bool, duration_ms: float = 0.0
) -> ToolMessage:
    return ToolMessage(
        content=text,
        tool_call_id=call["id"],
        name=call.get("name"),
        status="error" if is_error else "success",
        id=observation_id(),
        response_metadata={DURATION: duration_ms},
    )


def _random_hex(bits: int = 128) -> str:
    """Random bits as hex digits (128: a uuid's 32), from `random` (seeded from the system at
    start, and again in a forked child): an id needs no secrecy, and `uuid4` asks the kernel,
    which lets the saver's thread take the interpreter lock in the middle of every step."""
    return f"{random.getrandbits(bits):0{bits // 4}x}"


def observation_id() -> str:
    """An id that marks a ToolMessage as the agent's own observation at no cost: the same
    length as the uuid it would get anyway, where a metadata flag would be stored with every
    observation."""
    return f"{OBSERVATION_PREFIX}{_random_hex()}"


def as_observation(message: ToolMessage) -> ToolMessage:
    """A ToolMessage the agent's own middleware or tools wrote (an after_model hook's refusal,
    a tool's `Command`), marked as the agent's observation so a later turn never takes it for a
    client's stand-in."""
    if message.response_metadata.get(OURS):
        return message
    return message.model_copy(
        update={"response_metadata": {**message.response_metadata, OURS: True}}
    )


def is_our_observation(message: BaseMessage) -> bool:
    return isinstance(message, ToolMessage) and (
        (message.id or "").startswith(OBSERVATION_PREFIX)
        or bool(message.response_metadata.get(OURS))
    )


def kind_of(message: BaseMessage) -> str | None:
    return message.response_metadata.get(MARK)


def structured_answer(messages: Sequence[BaseMessage]) -> str | None:
    """The structured answer an output tool's result among `messages` carries, as JSON (the
    run's `answer`; `StructuredAnswer` writes it), or None."""
    for message in messages:
        if isinstance(message, ToolMessage) and message.response_metadata.get(STRUCTURED):
            return message.response_metadata[STRUCTURED]
    return None


# a message's id, for `map` over many messages in the same way
ID_OF = operator.attrgetter("id")


def marked(message: AIMessage, **metadata: Any) -> AIMessage:
    """The same message (same id) with more agent metadata."""
    return message.model_copy(
        update={"response_metadata": {**message.response_metadata, **metadata}}
    )


def refused(reply: AIMessage) -> bool:
    """Whether the provider reported a refusal (a standard `refusal` content block). Plain text
    from a model that names no provider has no blocks to translate: building them at every
    step would find only the text and the calls."""
    if isinstance(reply.content, str) and not reply.response_metadata.get("model_provider"):
        return False
    return any(block.get("type") == "refusal" for block in reply.content_blocks)


def last_step(messages: Sequence[BaseMessage]) -> tuple[AIMessage | None, list[ToolMessage]]:
    """The model's last step and the tool results written after it."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], AIMessage):
            after = [x for x in messages[index + 1 :] if isinstance(x, ToolMessage)]
            return messages[index], after
    return None, []


def readable(message: Any) -> str:
    """A message's text for a person or a text-reading model, with a note for each block that
    is not text (an image, a file): `[image/png, 12,345 bytes, not shown]`, never its bytes and
    never nothing."""
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    notes = [not_shown(b) for b in content if isinstance(b, dict) and b.get("type") != "text"]
    return "\n".join(part for part in (message.text, *notes) if part)


def shown(message: Any) -> str:
    """What a person is shown of a message (a history row, a step line, the trace): its text,
    or, when it has none, what its blocks were (an image-only question or result)."""
    text = message.text
    return text if text.strip() else readable(message)


def not_shown(block: dict[str, Any]) -> str:
    """What a block that is not text was, without its bytes."""
    data = block.get("base64") or block.get("data")
    size = f", {len(data) * 3 // 4:,} bytes" if isinstance(data, str) and data else ""
    return f"[{block.get('mime_type') or block.get('type') or 'content'}{size}, not shown]"
