"""What the loop policies share: the run's settings and bookkeeping, read from the request."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from typing import Any, Protocol

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse

from graph.settings import AgentContext

# The run's settings, set by think around its model call: each policy reads them here instead of
# resolving the run context again (every policy, every step).
RUN_SETTINGS: ContextVar[AgentContext | None] = ContextVar("react_agent_settings", default=None)


class AgentHost(Protocol):
    """What the policies read from the graph that hosts them (`graph.nodes.bindings.Bindings`),
    named here so the policies need no import of the layer above them."""

    response_format: Any

    def context(self, run_context: Any, *, read_env: bool = True) -> AgentContext: ...

    def is_local(self, ctx: AgentContext) -> bool: ...

    def quotes(
        self,
        ctx: AgentContext,
        protocol: str,
        local: bool,
        messages: Sequence[Any],
        question_id: str | None = None,
    ) -> Any: ...


Handler = Callable[[ModelRequest], ModelResponse]
AsyncHandler = Callable[[ModelRequest], Awaitable[ModelResponse]]


class LoopPolicy(AgentMiddleware):
    """A policy with one decision per model call: `shaped` returns the request to send, or
    the response to give instead of calling the model. The sync and async forms share it."""

    def __init__(self, bindings: AgentHost) -> None:
        super().__init__()
        self.bindings = bindings

    def settings(self, request: ModelRequest) -> AgentContext:
        return RUN_SETTINGS.get() or self.bindings.context(request.runtime.context, read_env=False)

    @staticmethod
    def run(request: ModelRequest) -> dict[str, Any]:
        return (request.state or {}).get("run") or {}

    def shaped(self, request: ModelRequest) -> ModelRequest | ModelResponse:
        raise NotImplementedError

    def wrap_model_call(self, request: ModelRequest, handler: Handler) -> ModelResponse:
        shaped = self.shaped(request)
        return shaped if isinstance(shaped, ModelResponse) else handler(shaped)

    async def awrap_model_call(self, request: ModelRequest, handler: AsyncHandler) -> ModelResponse:
        shaped = self.shaped(request)
        return shaped if isinstance(shaped, ModelResponse) else await handler(shaped)


class Shapers(LoopPolicy):
    """Consecutive policies that only shape the request, as one layer of think's chain. The
    same as nesting them: each passes its request on and returns the response as it came;
    without a level of the chain (two closures, two calls, a response check) per policy at
    every model call."""

    def __init__(self, bindings: Any, policies: list[LoopPolicy]) -> None:
        super().__init__(bindings)
        self.policies = policies

    def shaped(self, request: ModelRequest) -> ModelRequest | ModelResponse:
        for policy in self.policies:
            shaped = policy.shaped(request)
            if isinstance(shaped, ModelResponse):
                return shaped
            request = shaped
        return request


def shaping_only(policy: AgentMiddleware) -> bool:
    """A loop policy that keeps LoopPolicy's wrap: it only shapes the request."""
    kind = type(policy)
    return (
        isinstance(policy, LoopPolicy)
        and kind.wrap_model_call is LoopPolicy.wrap_model_call
        and kind.awrap_model_call is LoopPolicy.awrap_model_call
    )


def fused(bindings: Any, policies: list[AgentMiddleware]) -> list[AgentMiddleware]:
    """The policies with each run of shaping-only ones as one `Shapers` layer, in order."""
    out: list[AgentMiddleware] = []
    run: list[LoopPolicy] = []
    for policy in [*policies, None]:
        if policy is not None and shaping_only(policy):
            run.append(policy)  # type: ignore[arg-type]
            continue
        if run:
            out.append(run[0] if len(run) == 1 else Shapers(bindings, run))
            run = []
        if policy is not None:
            out.append(policy)
    return out
