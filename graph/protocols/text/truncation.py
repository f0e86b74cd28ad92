"""A reply cut off at the token limit (`max_tokens`), and whether the call it holds was written
whole before the cut.

The reader repairs loose JSON (a missing brace, an unclosed string) because a model that stopped
on its own often writes it. A reply the endpoint cut off at the token limit is different: the
"repair" completes arguments the model never wrote (an email body cut at "we will NOT" would be
sent). A provider with function calling reports such a call as invalid (`ChatOpenAI` puts the
cut arguments in `invalid_tool_calls`), and so does `replies.read_text_reply`, unless the cut
fell after the call: text followed it (an invented `Observation:`), or its arguments closed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from graph.protocols.text.blobs import balanced_end, read_value
from graph.protocols.text.step import ReactStep

# where providers say the reply ended at the token limit, and the words they use for it:
# OpenAI (`finish_reason: length`), Anthropic and Bedrock (`stop_reason: max_tokens`),
# Gemini (`finish_reason: MAX_TOKENS`), Ollama (`done_reason: length`), OpenAI's Responses API
# (`incomplete_details.reason: max_output_tokens`)
REASON_KEYS = ("finish_reason", "stop_reason", "stopReason", "done_reason")
AT_LIMIT = frozenset({"length", "max_tokens", "max_output_tokens"})
CUT_CALL = (
    "the reply was cut off at the token limit (max_tokens) before the call to {tool} was "
    "complete, so it was not run; write the step again, shorter (split the work into smaller "
    "calls), or raise max_tokens"
)
CUT_REPLY = "the reply was cut off at the token limit (max_tokens)"
_OPENER = re.compile(r"[{\[]")


def cut_off(meta: Mapping[str, Any]) -> bool:
    """Whether the response metadata says the reply ended at the token limit."""
    reasons = [meta.get(key) for key in REASON_KEYS]
    incomplete = meta.get("incomplete_details")
    if isinstance(incomplete, Mapping):
        reasons.append(incomplete.get("reason"))
    return any(isinstance(r, str) and r.lower() in AT_LIMIT for r in reasons)


def whole_call(step: ReactStep) -> bool:
    """Whether the call of a step read from a cut-off reply was written whole before the cut.

    The step as read (`step.read`) must close every bracket it opens (an argument object the cut
    left open was completed by the repair, not by the model); and the cut must fall after it:
    text followed the step, or the step ends with a value (the arguments) that reads as it was
    written, without repair. Anything else, such as plain-text arguments running to the cut, is
    refused: running a cut-off call is the dangerous mistake, a refused one costs a retry."""
    read = step.read.rstrip()
    last: tuple[int, int] | None = None
    pos = 0
    while (opener := _OPENER.search(read, pos)) is not None:
        end = balanced_end(read, opener.start())
        if end is None:
            return False
        last, pos = (opener.start(), end), end
    if last is not None and last[1] == len(read):
        return read_value(read, last[0], repair=False) is not None
    return step.ended


def as_cut(step: ReactStep) -> ReactStep:
    """The step of a reply cut off at the token limit, as it can be used: a call written whole
    as it is, a call cut inside an error (so nothing runs), an error saying it was cut off."""
    if step.kind == "action" and not whole_call(step):
        message = CUT_CALL.format(tool=step.tool or "the tool")
        return ReactStep(kind="error", thought=step.thought, error=message, read=step.read)
    if step.kind == "error" and CUT_REPLY not in (step.error or ""):
        return ReactStep(kind="error", thought=step.thought, error=f"{step.error} ({CUT_REPLY})",
                         read=step.read)  # fmt: skip
    return step
