"""A provider's `response_format` (JSON mode, a JSON schema) under the text protocol.

`create_agent(..., response_format=ProviderStrategy(Schema))` binds OpenAI's
`response_format={"type": "json_schema", ...}` to the model and parses the final reply's text
as JSON. Sent on to the inner model, it would hold every reply to the schema: no
Thought / Action step could be written (or the endpoint refuses it beside a prompt of its own).
So `TextReAct` keeps it: the prompt asks for a Final Answer that is one JSON object matching
the schema (`answer_note`), and the answer's content is that object as JSON (`as_json_answer`),
which is what `ProviderStrategy` parses.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.utils.function_calling import convert_to_json_schema

from graph.protocols.text.arguments import fenced_body, unfence
from graph.protocols.text.blobs import read_object
from graph.protocols.text.prompts import READ, step_digest

RESPONSE_FORMAT = "response_format"
ANSWER_SCHEMA = (
    "Your Final Answer must be exactly one JSON object matching this JSON schema, and nothing "
    "else:\n{schema}"
)
ANSWER_OBJECT = "Your Final Answer must be exactly one JSON object, and nothing else."


def answer_note(response_format: Any) -> str | None:
    """The prompt's words for a `response_format`: the JSON schema the answer must match (an
    OpenAI `json_schema` format, or a schema given as a class or a dict), an object for JSON
    mode; None for none, or for `{"type": "text"}`."""
    if response_format is None:
        return None
    if isinstance(response_format, dict):
        kind = response_format.get("type")
        if kind == "text":
            return None
        if kind == "json_object":
            return ANSWER_OBJECT
        if kind == "json_schema":
            schema = (response_format.get("json_schema") or {}).get("schema")
            return ANSWER_SCHEMA.format(schema=_shown(schema)) if schema else ANSWER_OBJECT
    try:
        schema = convert_to_json_schema(response_format)
    except Exception:  # LangChain raises several types for a shape it cannot convert
        return ANSWER_OBJECT
    return ANSWER_SCHEMA.format(schema=_shown(schema))


def as_json_answer(message: AIMessage, *, cut: bool) -> AIMessage:
    """A final answer under a `response_format`: its content the JSON object the model wrote
    (out of a code fence, without prose after it), as a provider's JSON mode returns it. A
    reply cut off at the token limit (`cut`) is kept as written: completing its object would
    invent the rest, and the caller's parser reports it as a provider's cut-off JSON."""
    if message.tool_calls or message.invalid_tool_calls or cut:
        return message
    text = fenced_body(unfence(message.text))
    value = read_object(text)
    if value is None:
        return message
    content = json.dumps(value, ensure_ascii=False)
    meta = {**message.response_metadata, READ: step_digest(content, [])}
    return message.model_copy(update={"content": content, "response_metadata": meta})


def _shown(schema: Any) -> str:
    return json.dumps(schema, ensure_ascii=False)
