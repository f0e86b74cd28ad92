"""The two ways a model asks for tools, each reduced to the same typed decision.

`native` (`native.py`): the model gets the tool schemas and answers with `tool_calls`.
`text` (`text/`): the model writes Thought / Action / Action Input / Final Answer; the request
stops at `Observation:` and the reply is read by `text.reader.parse_react`.

Both protocols store the same standard messages (`graph.messages`); a protocol is only how the
prompt is rendered for the model and how its reply is read back, so a thread can switch protocol
between turns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langgraph.constants import TAG_NOSTREAM

from graph.lru import LRU
from graph.messages import new_call_id
from graph.protocols.decisions import Act, Answer, Decision, Invalid
from graph.protocols.native import decide_native, native_system_prompt
from graph.protocols.ordering import Ordering, ordered
from graph.protocols.text.prompts import OBSERVATION, text_system_prompt, text_transcript
from graph.protocols.text.reader import parse_react

STOP = [OBSERVATION]

__all__ = [
    "STOP",
    "Act",
    "Answer",
    "Decision",
    "Invalid",
    "bind",
    "decide",
    "request_messages",
    "system_message",
]


def bind(
    model: BaseChatModel, protocol: str, tools: Sequence[BaseTool], **options: Any
) -> Runnable:
    """The model as this protocol calls it: with tool schemas, or with the stop sequence.

    Text-protocol tokens are not streamed to clients (`nostream`): they are raw
    `Thought:/Action:` labels; the parsed step reaches them as a message instead. A model that
    renders its own completion prompt (`completion_prompt = True`, the embedded model) also
    gets the tools, to pick its worked examples.
    """
    if protocol == "native":
        bound = model.bind_tools(list(tools)) if tools else model
        return bound.bind(**options) if options else bound
    if getattr(model, "completion_prompt", False):
        bound = model.bind_tools(list(tools)).bind(stop=STOP, **options)
    else:
        bound = model.bind(stop=STOP, **options)
    return bound.with_config(tags=[TAG_NOSTREAM])


def request_messages(
    protocol: str,
    messages: Sequence[BaseMessage],
    tools: Sequence[BaseTool],
    instructions: str | SystemMessage | None,
    *,
    prepared: bool = False,
) -> list[BaseMessage]:
    """System prompt plus the conversation in the form this protocol's model reads (a run's
    error, said to the user in the conversation, is not the model's to read). `prepared`:
    the messages are already so (`conversation`), as think built them. A `SystemMessage`
    with text is sent as given to a native model (its content blocks and extras kept, as
    `create_agent` sends it); the text protocol reads its text into its own prompt."""
    sent = list(messages) if prepared else ordered(messages)
    given = instructions if isinstance(instructions, SystemMessage) else None
    text = given.text if given is not None else instructions
    if protocol == "native":
        system = given if given is not None and text else system_message(native_system_prompt(text))
        return [system, *sent]
    return [system_message(text_system_prompt(tools, text)), *text_transcript(sent)]


def system_message(text: str) -> SystemMessage:
    """The system message for this text, built once while it is in use (a request carries the
    same prompt at every step). Shared, so never changed in place: a middleware replaces it
    (`request.override(system_message=...)`), as LangChain's do."""
    return _SYSTEM.get(text, lambda: SystemMessage(content=text))


_SYSTEM = LRU(32)


def conversation(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The messages a model reads: no run errors, each tool result after its call (the last
    conversation's order reused when this one only grew at its end: `ordering`)."""
    return _CONVERSATIONS(messages)


_CONVERSATIONS = Ordering()


def decide(protocol: str, reply: AIMessage, tools: Sequence[BaseTool] = ()) -> Decision:
    return decide_native(reply) if protocol == "native" else decide_text(reply, tools)


def decide_text(reply: AIMessage, tools: Sequence[BaseTool] = ()) -> Decision:
    step = parse_react(reply.text, list(tools) or None)
    if step.kind == "action":
        call = {"name": step.tool or "", "args": _as_args(step.tool_input), "id": new_call_id()}
        return Act(calls=[call], thought=step.thought, note=step.note, read=step.read)
    if step.kind == "final":
        return Answer(text=step.answer or "", thought=step.thought, read=step.read)
    error = step.error or "the reply could not be parsed"
    return Invalid(error=error, thought=step.thought, read=step.read)


def _as_args(tool_input: Any) -> dict[str, Any]:
    """ToolCall args are an object; a plain-text input travels under `__arg1`, LangChain's
    name for a single positional input, and the runner fits it to the tool's one argument."""
    if isinstance(tool_input, dict):
        return tool_input
    return {} if tool_input in (None, "") else {"__arg1": tool_input}
