"""QuotedAnswer: with `quoted_answers` on and a grammar in use, an answer right after a result
quotes one of its lines. When the grammar leaves exactly one answer and no tool is offered,
that answer is written without a model call, and the step says code wrote it
(`response_metadata["react_quoted"]`, shown in the trace and in `--json`)."""

from __future__ import annotations

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage

from graph import messages as m
from graph.policies.base import LoopPolicy
from graph.protocols.text.observations import QUOTED_THOUGHT
from graph.steps import run_messages


class QuotedAnswer(LoopPolicy):
    needs = "quoted_answers"

    def shaped(self, request: ModelRequest) -> ModelRequest | ModelResponse:
        run = self.run(request)
        if request.tools or run.get("wrap_up") or self.bindings.response_format is not None:
            return request  # a structured answer is the schema's, not a quoted line
        ctx = self.settings(request)
        if self.bindings.is_local(ctx):
            return request  # the embedded model quotes a result itself (LocalCompletionModel)
        in_run = run_messages(request.messages, run.get("question_id"))
        protocol = run.get("protocol") or "native"
        quotes = self.bindings.quotes(ctx, protocol, False, in_run)
        if len(quotes) != 1:
            return request
        meta = {
            m.QUOTED: True,
            m.DECIDED_BY: "code",
            m.MARK: "answer",
            m.THOUGHT: QUOTED_THOUGHT,
            m.PROTOCOL: protocol,
        }
        if protocol == "text":  # what the transcript sends back for this step
            meta[m.RAW] = f"Thought: {QUOTED_THOUGHT}\nFinal Answer: {quotes[0]}"
        return ModelResponse(result=[AIMessage(content=quotes[0], response_metadata=meta)])
