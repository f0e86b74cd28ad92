"""StepLimit: the step limit and its graceful end, decided before each model call.

A run that has taken `max_steps` steps (or whose recursion limit leaves no room for another
full step) makes no ordinary call. With `answer_on_limit` on, and room for one more call and
finish, the model gets one last call with no tools that asks for its best answer from what was
found; the run then ends with status `max_steps` and that answer. Otherwise the run ends with
status `max_steps` and finish says why. This is `before_model` work done inside think's chain,
so the limit costs no graph node and no superstep of its own.
"""

from __future__ import annotations

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import HumanMessage
from langgraph.types import Command

from graph.policies.base import CallAndStore, Decision, LoopPolicy, ended
from graph.steps import steps_taken

# supersteps after think that a tool step needs to still end through finish: review, act,
# observe, finish
AFTER_THINK = 4
CLOSING_ROOM = 1  # a closing call needs finish after it

WRAP_UP = (
    "You have used all {steps} steps. Do not call any more tools. From what you have found so "
    "far, give your best answer now"
)


class StepLimit(LoopPolicy):
    def shaped(self, request: ModelRequest) -> Decision:
        """The request while the run has steps left; else the closing call (no tools, the
        wrap-up question) whose reply ends the run, or the end of the run with no call."""
        ctx = self.settings(request)
        run = self.run(request)
        state = request.state or {}
        room = state.get("remaining_steps", 10**6) - self.bindings.after_think_hooks
        if steps_taken(request.messages, run) < ctx.max_steps and room > AFTER_THINK:
            return request
        if not ctx.answer_on_limit or room <= CLOSING_ROOM:
            return ended({"status": "max_steps"})
        text = WRAP_UP.format(steps=ctx.max_steps)
        text += " as a Final Answer." if run.get("protocol") == "text" else "."
        # the inner policies see the closing call for what it is (`run.wrap_up`)
        seen = {**state, "run": {**run, "wrap_up": True}}
        closing = request.override(
            tools=[], messages=[*request.messages, HumanMessage(text)], state=seen
        )
        return CallAndStore(closing, Command(update={"status": "max_steps"}))
