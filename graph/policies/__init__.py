"""The agent's own loop policies that shape a model call, as LangChain `AgentMiddleware`
(`wrap_model_call`), one class per file. They run outermost in think's chain, in this order,
so a user's middleware sees the request they shaped:

- `RunDeadline`: past the run's time limit, no model call is made (status `timeout`);
- `WrapUp`: after the step limit, one last call with no tools asks for the best answer;
- `ContextFit`: a request that would outgrow the window has old tool results cleared, then
  earlier turns left out; the current run's calls stay in sight;
- `AnswerBudget`: the embedded model gets no tools once it has its results;
- `QuotedAnswer`: when the grammar allows exactly one answer, it is written without a model
  call, and the step says so (`react_quoted`);
- `StructuredAnswer`: with `response_format`, the answer is the typed result (LangChain's
  strategies natively; a JSON Final Answer checked against the schema under text);
- `NativeToTextFallback`: under `auto`, a request refused for its tools goes again as text;
- `EndpointFallback`: the operator's `fallback_models` take over on a connection error, a
  429 or a 5xx (LangChain's `ModelFallbackMiddleware`, with the agent's rule of when).

The ones that only shape the request (the first five) run as one layer of the chain
(`base.Shapers`), which is the same as nesting them and cheaper at every model call.

They add no graph nodes and no channels: what they read is the run's bookkeeping (`run`), one
delta channel, so they cost no checkpoint rows. Counting the iterations, the repeated-call
guard and the corrections of unusable replies act after the tools ran, a point LangChain's
hooks do not have; they stay in `observe`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langchain.agents.middleware import AgentMiddleware

    from graph.policies.base import AgentHost


def loop_policies(b: AgentHost) -> list[AgentMiddleware]:
    """The policies, outermost first, for one compiled graph."""
    from graph.policies.answer_budget import AnswerBudget
    from graph.policies.base import fused
    from graph.policies.context_fit import ContextFit
    from graph.policies.endpoint_fallback import EndpointFallback
    from graph.policies.quoted_answer import QuotedAnswer
    from graph.policies.run_deadline import RunDeadline
    from graph.policies.structured_answer import StructuredAnswer
    from graph.policies.text_fallback import NativeToTextFallback
    from graph.policies.wrap_up import WrapUp

    return fused(
        b,
        [
            RunDeadline(b),
            WrapUp(b),
            ContextFit(b),
            AnswerBudget(b),
            QuotedAnswer(b),
            *([StructuredAnswer(b, b.response_format)] if b.response_format is not None else []),
            NativeToTextFallback(b),
            EndpointFallback(b),
        ],
    )  # the shaping-only ones run as one layer (`base.fused`)
