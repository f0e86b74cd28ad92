"""A text-protocol reply read into a standard `AIMessage`: what `TextReAct` returns, and what the
loop stores for a model that renders its own prompt (the embedded model).

The reader (`reader.parse_react`) decides what the reply says; this module decides what a model
*with* function calling would have returned for it, so an agent built for those (LangChain's
`create_agent`, LangGraph's prebuilt agent, this project's loop) treats both alike:

* an action: `tool_calls` with one call (a generated id), the thought as the content;
* a call the tools refuse (a name no tool has, an object of arguments off the schema): the call
  as written, so the agent's tool runner answers it with the error as it does a native model's
  call, and the run goes on (an agent does not answer an invalid call: `create_agent` would end);
* a final answer: the answer as the content; under a forced tool choice with one tool to force
  (`with_structured_output`), an answer that is a JSON object is that tool's call;
* with no tools bound, any prose is the answer (a summary that opens "Let me summarize:" is not
  an unwritten step: there is no step to write);
* a reply that cannot be used (no name, broken JSON, nothing written): `invalid_tool_calls` with
  the reason, as a provider reports a call whose arguments were broken JSON, and the text the
  model wrote as the content, so a user whose agent ends there sees it;
* a reply cut off at the token limit (`truncation`): a call the cut fell inside is invalid
  (its name and the reply as written, the error saying it was cut off), as `ChatOpenAI` reports
  a cut-off native call, so nothing runs with arguments the reader's repair completed;
* a reply that carries native `tool_calls` after all, or a refusal: kept as the model made it.

What the reader reports rides in `response_metadata`: the step as read (`react_text`: what later
requests send back, never text the reader did not read), a digest of the words and calls read
from it (so an edited call or a redacted answer is sent back as stored, see
`prompts.step_as_text`), the thought before a
final answer, and its note (e.g. "2 more actions were ignored").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from graph.messages import NOTE, RAW, THOUGHT, new_call_id, refused
from graph.protocols.text.arguments import fenced_body, unfence
from graph.protocols.text.prompts import READ, step_digest, written_call
from graph.protocols.text.reader import parse_react
from graph.protocols.text.step import ReactStep
from graph.protocols.text.toolset import Toolset
from graph.protocols.text.truncation import as_cut, cut_off

# The inner reply's `model_name`, kept under this key when the inner call was a run of its own
# (a runnable around the model, `TextReAct._generate`): LangChain's usage counter
# (`get_usage_metadata_callback`) counts each reply that names its model, and that run was
# counted already; the parsed message carries the same usage, so it names no model.
INNER_MODEL = "react_inner_model"

# `tool_choice` values that ask for some call, whichever tool (OpenAI's, Anthropic's, LangChain's)
ANY_TOOL = ("any", "required", True)


def read_text_reply(
    reply: BaseMessage,
    tools: Sequence[Any] | None,
    *,
    forced: str | None = None,
    counted: bool = False,
) -> AIMessage:
    """The reply as a standard message (see the module docstring). `tools`: LangChain tools or
    function specs, or None; `forced`: the tool a forced `tool_choice` names, or "any";
    `counted`: the reply came from a run of its own, whose usage a counter saw already."""
    if isinstance(reply, AIMessage) and (refused(reply) or reply.tool_calls):
        return reply.model_copy(update={"response_metadata": _inner_meta(reply, counted)})
    raw = reply.text
    step = parse_react(raw, tools or None)
    if step.kind == "error" and tools:
        step = _as_written(raw, tools) or step
    cut = cut_off(reply.response_metadata)  # at the token limit: no call cut inside it runs
    named = step.tool if cut and step.kind == "action" else None
    step = as_cut(step) if cut else step
    if not tools and step.kind != "final" and (step.read or raw).strip():
        answer = (step.read or raw).strip()
        step = ReactStep(kind="final", answer=answer, read=answer)
    if forced and tools and step.kind == "final":
        step = _forced_call(step, tools, forced) or step
    meta = {**_inner_meta(reply, counted), RAW: step.read or raw.strip()}
    if step.note:
        meta[NOTE] = step.note
    fields: dict[str, Any] = {
        "id": reply.id,
        "response_metadata": meta,
        "usage_metadata": getattr(reply, "usage_metadata", None),
    }
    if step.kind == "action":
        args = step.tool_input
        if not isinstance(args, dict):  # LangChain's name for one positional input
            args = {} if args in (None, "") else {"__arg1": args}
        call = {"name": step.tool or "", "args": args, "id": new_call_id(), "type": "tool_call"}
        meta[READ] = step_digest(step.thought, [call])
        return AIMessage(content=step.thought, tool_calls=[call], **fields)
    if step.kind == "final":
        if step.thought:
            meta[THOUGHT] = step.thought
        meta[READ] = step_digest(step.answer or "", [])
        return AIMessage(content=step.answer or "", **fields)
    error = step.error or "the reply could not be parsed"
    invalid = {"name": named, "args": raw, "id": new_call_id(), "error": error}
    invalid["type"] = "invalid_tool_call"
    return AIMessage(content=step.thought or meta[RAW], invalid_tool_calls=[invalid], **fields)


def _inner_meta(reply: BaseMessage, counted: bool) -> dict[str, Any]:
    """The inner reply's metadata; its model named under `INNER_MODEL` when the inner call
    was `counted` in a run of its own (so the usage is counted once)."""
    meta = dict(getattr(reply, "response_metadata", None) or {})
    if counted and "model_name" in meta:
        meta[INNER_MODEL] = meta.pop("model_name")
    return meta


def _as_written(raw: str, tools: Sequence[Any]) -> ReactStep | None:
    """A call the tools refuse, as the model wrote it: a name no tool has, or an object of
    arguments off the tool's schema. A reply that is no call at all (no name, a sentence where
    the name belongs) or a known tool's input that is not an object (broken JSON) is not one:
    those stay invalid, as a provider reports broken JSON."""
    loose = parse_react(raw, None)
    if loose.kind != "action" or not loose.tool:
        return None
    if isinstance(loose.tool_input, dict) or Toolset(tools).resolve(loose.tool) is None:
        return loose
    return None


def _forced_call(step: ReactStep, tools: Sequence[Any], forced: str) -> ReactStep | None:
    """Under a forced choice of one tool, a Final Answer that is a JSON object (bare, or the
    whole of a code fence) is that tool's call: a model asked for a structured answer often
    writes the object as its answer, and often in a ```json fence."""
    names = list(Toolset(tools).names)
    target = forced if forced in names else names[0] if len(names) == 1 else None
    try:
        value = json.loads(fenced_body(unfence(step.answer or "")))
    except ValueError:
        return None
    if target is None or not isinstance(value, dict):
        return None
    read = written_call(step.thought, target, value)
    return ReactStep(kind="action", thought=step.thought, tool=target, tool_input=value, read=read)


def forced_tool(tool_choice: Any) -> str | None:
    """The tool a `tool_choice` forces ("any" for any tool), or None when it forces none."""
    if tool_choice in ANY_TOOL:
        return "any"
    if isinstance(tool_choice, dict):
        named = tool_choice.get("function", tool_choice)
        return named.get("name") if isinstance(named, dict) else None
    if isinstance(tool_choice, str) and tool_choice not in ("auto", "none"):
        return tool_choice
    return None
