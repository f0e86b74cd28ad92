"""The agent's own loop policies that shape a model call, as LangChain `AgentMiddleware`
(`wrap_model_call`), one class per file. They run outermost in think's chain, in this order,
so a user's middleware sees the request they shaped:

- `RunDeadline`: past the run's time limit, no model call is made (status `timeout`);
- `Corrections`: an unusable reply is answered (what was wrong, the form to use) before the
  next call; `max_invalid` in a row end the run (status `error`);
- `RepeatGuard`: identical steps in a row get a note, then end the run (status `stuck`);
- `StepLimit`: at the step limit no ordinary call is made: one last call with no tools asks
  for the best answer (`answer_on_limit`), or the run ends (status `max_steps`);
- `ContextFit`: a request that would outgrow the window has old tool results cleared, then
  earlier turns left out; the current run's calls stay in sight;
- `AnswerBudget`: the embedded model gets no tools once it has its results;
- `QuotedAnswer`: when the grammar allows exactly one answer, it is written without a model
  call, and the step says so (`react_quoted`);
- `NativeToTextFallback`: under `auto`, a request refused for its tools goes again as text;
- `StructuredAnswer`: with `response_format`, the answer is the typed result (LangChain's
  strategies natively; a JSON Final Answer checked against the schema under text, the
  fallback's retry included);
- `EndpointFallback`: the operator's `fallback_models` take over on a connection error, a
  429 or a 5xx (LangChain's `ModelFallbackMiddleware`, with the agent's rule of when).

A policy whose setting is off for a run (`LoopPolicy.needs`: no `run_timeout`, no
`fallback_models`, `answer_after` or `quoted_answers` unset, `context_share=0`, a protocol other
than `auto`) is left out of that run's chain, so a trace or a stack shows only the policies
that can act.

They add no graph nodes and no channels: what they read is the run's bookkeeping (`run`), one
delta channel, so they cost no checkpoint rows. The corrections, the repeated-call guard and
the step limit are `before_model` work done at the start of the chain (the tools' results are
in the state by then), so they need no node either.
"""

from __future__ import annotations

from graph.policies.answer_budget import AnswerBudget
from graph.policies.base import AgentHost, LoopPolicy
from graph.policies.context_fit import ContextFit
from graph.policies.corrections import Corrections
from graph.policies.endpoint_fallback import EndpointFallback
from graph.policies.quoted_answer import QuotedAnswer
from graph.policies.repeat_guard import RepeatGuard
from graph.policies.run_deadline import RunDeadline
from graph.policies.step_limit import StepLimit
from graph.policies.structured_answer import StructuredAnswer
from graph.policies.text_fallback import NativeToTextFallback


def loop_policies(b: AgentHost) -> list[LoopPolicy]:
    """The policies, outermost first, for one compiled graph."""
    return [
        RunDeadline(b),
        Corrections(b),
        RepeatGuard(b),
        StepLimit(b),
        ContextFit(b),
        AnswerBudget(b),
        QuotedAnswer(b),
        NativeToTextFallback(b),  # outside StructuredAnswer: its retry asks for a text answer
        *([StructuredAnswer(b, b.response_format)] if b.response_format is not None else []),
        EndpointFallback(b),
    ]
