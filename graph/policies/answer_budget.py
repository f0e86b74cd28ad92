"""AnswerBudget: once a run has `answer_after` successful tool results, the model is offered
no more tools, only a Final Answer. The embedded model's run policy (a 270M model that has its
result tends to call the tool again); off unless the setting is given or the model is the
embedded one."""

from __future__ import annotations

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import ToolMessage

from graph.policies.base import LoopPolicy
from graph.steps import run_messages


class AnswerBudget(LoopPolicy):
    needs = "answer_after"

    def shaped(self, request: ModelRequest) -> ModelRequest | ModelResponse:
        budget = self.settings(request).answer_after
        if not budget or not request.tools:
            return request
        in_run = run_messages(request.messages, self.run(request).get("question_id"))
        results = sum(isinstance(x, ToolMessage) and x.status != "error" for x in in_run)
        return request.override(tools=[]) if results >= budget else request
