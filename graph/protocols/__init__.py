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
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langgraph.constants import TAG_NOSTREAM

from graph.messages import NOTE, RAW, THOUGHT, kind_of
from graph.protocols.decisions import Act, Answer, Decision, Invalid
from graph.protocols.native import decide_native, native_system_prompt
from graph.protocols.text.chat_model import TextReAct
from graph.protocols.text.decoding import request_options
from graph.protocols.text.grammar import grammar_for
from graph.protocols.text.prompts import (
    OBSERVATION,
    instructions_text,
    text_system_prompt,
    text_transcript,
)

STOP = [OBSERVATION]

__all__ = [
    "STOP",
    "Act",
    "Answer",
    "Decision",
    "Invalid",
    "bind",
    "decide",
    "renders_own_prompt",
    "request_messages",
    "system_message",
]


def renders_own_prompt(model: Any) -> bool:
    """The one special case of the text protocol: a model that renders its own completion
    prompt from the conversation and the tools (`completion_prompt = True`, the embedded model)
    gets the transcript and the tools as they are, and its raw reply is read here. Every other
    model is wrapped in `TextReAct`, which renders and reads the protocol itself."""
    return bool(getattr(model, "completion_prompt", False))


def bind(
    model: BaseChatModel,
    protocol: str,
    tools: Sequence[BaseTool],
    *,
    grammar: bool = False,
    quotes: Sequence[str] = (),
    **options: Any,
) -> Runnable:
    """The model as this protocol calls it: with tool schemas (native), or as
    `TextReAct(model).bind_tools(tools)` (text), with the grammar when asked for.

    Text-protocol tokens are not streamed to clients (`nostream`): they are raw
    `Thought:/Action:` labels; the parsed step reaches them as a message instead.
    """
    if protocol == "native":
        bound = model.bind_tools(list(tools)) if tools else model
        return bound.bind(**options) if options else bound
    if renders_own_prompt(model):
        if grammar:
            options.update(request_options(grammar_for(tools, quotes=quotes)))
        bound = model.bind_tools(list(tools)).bind(stop=STOP, **options)
    else:
        # never `_stream`: the parsed step reaches a client whole either way
        text = TextReAct(model, grammar=grammar, quotes=list(quotes), disable_streaming=True)
        text = text.bind_tools(list(tools))
        bound = text.bind(**options) if options else text
    return bound.with_config(tags=[TAG_NOSTREAM])


def request_messages(
    protocol: str,
    messages: Sequence[BaseMessage],
    tools: Sequence[BaseTool],
    instructions: str | SystemMessage | None,
    *,
    prepared: bool = False,
    own_prompt: bool = False,
) -> list[BaseMessage]:
    """System prompt plus the conversation as the bound model takes it (a run's error, said
    to the user in the conversation, is not the model's to read). `prepared`: the messages
    are already so (`conversation`), as think built them. A `SystemMessage` with text is sent
    as given to a native model (its content blocks and extras kept, as `create_agent` sends
    it); `TextReAct` reads its text into its own prompt; a model that renders its own prompt
    (`own_prompt`) gets the text protocol's system prompt and transcript."""
    sent = list(messages) if prepared else conversation(messages)
    given = instructions if isinstance(instructions, SystemMessage) else None
    text = instructions_text(given) if given is not None else instructions
    if protocol == "native":
        system = given if given is not None and text else system_message(native_system_prompt(text))
        return [system, *sent]
    if not own_prompt:
        return [system_message(text), *sent] if text else sent
    return [system_message(text_system_prompt(tools, text)), *text_transcript(sent)]


def system_message(text: str) -> SystemMessage:
    """The system message for this text."""
    return SystemMessage(content=text)


def conversation(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The messages a model reads: no run errors, and each ToolMessage right after the
    AIMessage that asked for it, as chat APIs require, even when it was written later (a call
    answered after the user had moved on); a second result for one call is not sent."""
    kept = [x for x in messages if kind_of(x) != "error"]
    results = {x.tool_call_id: x for x in kept if isinstance(x, ToolMessage)}
    placed: set[str] = set()
    out: list[BaseMessage] = []
    for message in kept:
        if isinstance(message, ToolMessage):
            if message.tool_call_id not in placed:
                placed.add(message.tool_call_id)
                out.append(message)
            continue
        out.append(message)
        if isinstance(message, AIMessage):
            for call in [*message.tool_calls, *message.invalid_tool_calls]:
                found = results.get(call.get("id") or "")
                if found is not None and found.tool_call_id not in placed:
                    placed.add(found.tool_call_id)
                    out.append(found)
    return out


def decide(protocol: str, reply: AIMessage) -> Decision:
    return decide_native(reply) if protocol == "native" else decide_text(reply)


def decide_text(reply: AIMessage) -> Decision:
    """The decision in a text-protocol reply read into a standard message (`read_text_reply`):
    its calls, answer or reason, with what the reader reported."""
    meta = reply.response_metadata
    read = meta.get(RAW) or ""
    if reply.tool_calls:
        return Act(calls=list(reply.tool_calls), thought=reply.text, note=meta.get(NOTE), read=read)
    if reply.invalid_tool_calls:
        error = reply.invalid_tool_calls[0].get("error") or "the reply could not be parsed"
        return Invalid(error=error, thought=reply.text, read=read)
    return Answer(text=reply.text, thought=meta.get(THOUGHT) or "", read=read)
