"""Prompt text of the text protocol, rendered by pure functions: the system prompt, the message a
model gets when its reply could not be parsed, and the text-protocol view of a conversation."""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from graph.messages import RAW, is_agent_note, kind_of, readable
from graph.protocols.native import DEFAULT_INSTRUCTIONS
from graph.tooling.runner import declares_no_schema

OBSERVATION = "Observation:"
READ = "react_read"  # response_metadata key: a digest of what was read from the text

_TEXT_FORMAT = """\
You can use these tools:

{tool_list}

Every reply you write takes exactly one of two forms.

To use a tool:
Thought: what you know so far and what you need next
Action: the tool's name, exactly one of: {tool_names}
Action Input: the tool's arguments as one JSON object

Then stop writing. The tool runs and its result comes back to you in a message that starts \
with "{observation}". Never write "{observation}" yourself.

When you can answer:
Thought: why you can answer now
Final Answer: the complete answer for the user

Use one Action per reply and only the tools listed. When an Observation reports an error, \
read it and correct your next step."""


def tool_spec(tool: Any) -> dict[str, Any]:
    """The tool as name, description and JSON-schema parameters (the function-calling shape).
    A function tool that declares no schema takes any JSON object (`declares_no_schema`)."""
    spec = convert_to_openai_tool(tool)["function"]
    if declares_no_schema(tool):
        spec["parameters"] = {"type": "object", "properties": {}, "additionalProperties": True}
    return spec


def provider_tool(tool: Any) -> bool:
    """A provider's built-in tool (`{"type": "web_search_preview"}`): a dict that is no function
    in OpenAI's shape. Its provider runs it inside a native call, so the text protocol, whose
    calls the agent runs, cannot offer it."""
    return isinstance(tool, dict) and "function" not in convert_to_openai_tool(tool)


def instructions_text(message: SystemMessage) -> str:
    """A system message's words for a prompt of our own: its text blocks as paragraphs (a
    person who writes instructions as blocks writes one part each; LangChain's `.text` joins
    them with nothing between), other blocks (images, cache markers) left out."""
    if isinstance(message.content, str):
        return message.content
    texts = [
        block if isinstance(block, str) else block.get("text", "")
        for block in message.content
        if isinstance(block, str) or block.get("type") == "text"
    ]
    return "\n\n".join(text.strip() for text in texts if text.strip())


def text_system_prompt(tools: Sequence[Any], instructions: str | None = None) -> str:
    """The text-protocol system prompt: instructions, the tools (LangChain tools or function
    specs) with their JSON argument schemas, the reply format."""
    specs = [tool_spec(tool) for tool in tools]
    tool_list = "\n".join(map(_tool_line, specs)) or "(no tools: answer directly)"
    listed = ", ".join(spec["name"] for spec in specs) or "(none)"
    body = _TEXT_FORMAT.format(tool_list=tool_list, tool_names=listed, observation=OBSERVATION)
    return f"{instructions or DEFAULT_INSTRUCTIONS}\n\n{body}"


def _tool_line(spec: dict[str, Any]) -> str:
    params = json.dumps(spec.get("parameters", {}), ensure_ascii=False, separators=(", ", ": "))
    description = spec.get("description", "").strip()
    return f"- {spec['name']}: {description}\n  Action Input schema: {params}"


def invalid_reply_observation(error: str, tool_names: Sequence[str]) -> str:
    """What a model is told when its reply could not be parsed: the problem and the exact form."""
    names = ", ".join(tool_names) or "(none)"
    return (
        f"Your reply could not be used: {error}. Reply in exactly one of these forms.\n"
        "To use a tool:\n"
        "Thought: <your reasoning>\n"
        f"Action: <one of: {names}>\n"
        'Action Input: <the arguments as a JSON object, e.g. {"key": "value"}>\n'
        "To answer:\n"
        "Thought: <your reasoning>\n"
        "Final Answer: <the answer>"
    )


def text_transcript(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The conversation as a model without function calling reads it.

    The model's own text steps go back as it wrote them; steps stored as tool calls (edited by
    a person, or from a native turn) are written out as Thought / Action / Action Input; tool
    results and the agent's corrections come back as `Observation:` messages; answers get their
    `Final Answer:` label back so the model keeps the format across turns.
    """
    sent: list[BaseMessage] = []
    for message in messages:
        if isinstance(message, AIMessage | ToolMessage) or is_agent_note(message):
            sent.append(_as_read(message))
        elif not isinstance(message, SystemMessage):  # the prompt is the system's
            sent.append(message)  # the user's own words, as they are
    if messages and _is_prefill(messages[-1]):  # the reply continues it: sent as written
        sent[-1] = AIMessage(content=messages[-1].text)
    return sent


def _is_prefill(message: BaseMessage) -> bool:
    """A conversation that ends with a model's message the agent did not read (no step, no
    mark) asks the model to continue it, as a prefill does with a chat API."""
    return (
        isinstance(message, AIMessage)
        and not message.tool_calls
        and not message.invalid_tool_calls
        and RAW not in message.response_metadata
        and kind_of(message) is None
    )


def _as_read(message: BaseMessage) -> BaseMessage:
    if isinstance(message, AIMessage):
        return AIMessage(content=step_as_text(message))
    if isinstance(message, ToolMessage) or kind_of(message) != "wrap_up":
        return HumanMessage(content=f"{OBSERVATION} {readable(message)}")
    return message  # the wrap-up request is the user's turn, as it is


def step_as_text(message: AIMessage) -> str:
    """An earlier step as the text protocol sends it back: the model's own text as read where it
    is kept and still says what is stored (a middleware or a person may have edited the calls
    or redacted the words since: then the step as stored), else rendered from the stored
    step."""
    raw = message.response_metadata.get(RAW)
    if isinstance(raw, str) and raw.strip() and _reads_as_stored(message):
        return raw
    invalid = kind_of(message) == "invalid"  # the agent's mark: its text is the reply as read
    # the calls, or a native model's broken ones (their argument text as it was written)
    calls = message.tool_calls or ([] if invalid else message.invalid_tool_calls)
    if calls:
        thought = message.text.strip()
        return "\n".join(
            written_call(thought if i == 0 else "", call.get("name") or "", call.get("args"))
            for i, call in enumerate(calls)
        )
    return message.text if invalid else f"Final Answer: {message.text}"


def written_call(thought: str, name: str, args: Any) -> str:
    """One call in the protocol's own form: Thought (when there is one), Action, Action Input
    (arguments as JSON; a broken call's argument text as it was written)."""
    shown = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    lines = [f"Thought: {thought}"] if thought else []
    return "\n".join([*lines, f"Action: {name}", f"Action Input: {shown}"])


def step_digest(content: str, calls: Sequence[dict[str, Any]]) -> str:
    """A short digest of a step's words and calls: whether the step still says what was read
    from its text. Computed for every step of every request, so it is cheap (the repr, built
    in C; a checkpoint gives the arguments back in their order), not cryptographic."""
    named = repr((content, [(call.get("name"), call.get("args")) for call in calls]))
    return format(zlib.crc32(named.encode("utf-8", "surrogatepass")), "08x")


def _reads_as_stored(message: AIMessage) -> bool:
    """Whether the kept text still says what the step stores: its words and calls as read
    from it (a middleware may have edited the calls, or redacted the words, since); a step
    stored before the digest was kept is taken as read."""
    read = message.response_metadata.get(READ)
    return read is None or read == step_digest(message.text, message.tool_calls)
