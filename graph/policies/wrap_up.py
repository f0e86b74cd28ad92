"""WrapUp: the step limit's graceful end. When `observe` finds the run out of steps (and
`answer_on_limit` is on), the next model call offers no tools and asks for the best answer
from what was found; the run then ends with status `max_steps` and that answer."""

from __future__ import annotations

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import HumanMessage

from graph.policies.base import LoopPolicy

WRAP_UP = (
    "You have used all {steps} steps. Do not call any more tools. From what you have found so "
    "far, give your best answer now"
)


class WrapUp(LoopPolicy):
    def shaped(self, request: ModelRequest) -> ModelRequest | ModelResponse:
        run = self.run(request)
        if not run.get("wrap_up"):
            return request
        text = WRAP_UP.format(steps=self.settings(request).max_steps)
        text += " as a Final Answer." if run.get("protocol") == "text" else "."
        return request.override(tools=[], messages=[*request.messages, HumanMessage(text)])
