"""Corrections: a reply the agent could not use (no parse, a broken call, nothing at all) is
answered before the next model call, and too many in a row end the run.

think marks an unusable reply in the run's bookkeeping (`run.invalid`, why) and loops back to
the model; this policy, first in the chain at that next call, tells the model what was wrong
and the exact form to use (stored in the thread with the reply that follows, as an observation
is): a note under the text protocol, or one error result per broken call natively, so every
call the model made has its answer. After `max_invalid` unusable replies in a row the run ends
with status `error` and no further call. `before_model` work inside think's chain: no node.
"""

from __future__ import annotations

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.config import get_stream_writer
from langgraph.types import Command

from graph import messages as m
from graph.models.failures import one_line
from graph.policies.base import CallAndStore, Decision, LoopPolicy, ended
from graph.protocols.native import native_invalid_observation
from graph.protocols.text.prompts import invalid_reply_observation


class Corrections(LoopPolicy):
    def shaped(self, request: ModelRequest) -> Decision:
        """The request when the last reply was usable; else the request with the correction
        (stored with the next reply, with the bookkeeping), or the end of the run."""
        run = self.run(request)
        error = run.get("invalid")
        if not error:
            return request
        streak = int(run.get("invalid_streak") or 0) + 1
        max_invalid = self.settings(request).max_invalid
        if streak >= max_invalid:
            failed = (
                f"The model's last {max_invalid} replies could not be parsed (last problem: "
                f"{one_line(error)}); try another model or the other protocol "
                "(REACT_AGENT_PROTOCOL)."
            )
            return ended({"status": "error", "error": failed, "run": {"invalid_streak": streak}})
        told = correction(request, error)
        bookkeeping = {"invalid": None, "invalid_streak": streak, "review": []}
        corrected = request.override(messages=[*request.messages, *told])
        return CallAndStore(corrected, Command(update={"messages": told, "run": bookkeeping}))


def correction(request: ModelRequest, error: str) -> list[BaseMessage]:
    """What the model is told: one error result per broken native call (each call gets its
    answer), else one note in the protocol's own words."""
    error = one_line(error, limit=600)  # a library's message: no troubleshooting link
    stored = (request.state or {}).get("messages") or []
    step = next((x for x in reversed(stored) if isinstance(x, AIMessage)), None)
    protocol = (request.state or {}).get("run", {}).get("protocol") or "native"
    if protocol == "text":
        names = [getattr(t, "name", None) or t.get("name", "?") for t in request.tools]
        text = invalid_reply_observation(error, names)
    else:
        text = native_invalid_observation(error)
    get_stream_writer()({"event": "observation", "tool": None, "text": text, "is_error": True})
    broken = list(step.invalid_tool_calls) if step is not None else []
    if protocol == "native" and broken:
        # a ToolStrategy's own `handle_errors` says it word for word (`StructuredAnswer`)
        said = step.response_metadata.get(m.TOLD) or text
        return [
            m.observation({"id": c.get("id"), "name": c.get("name")}, said, is_error=True)
            for c in broken
        ]
    return [m.agent_note(text, "invalid")]
