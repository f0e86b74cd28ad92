"""What the loop policies share: the run's settings and bookkeeping, read from the request."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse

from graph.settings import AgentContext


class AgentHost(Protocol):
    """What the policies read from the graph that hosts them (`graph.loop.bindings.Bindings`),
    named here so the policies need no import of the layer above them."""

    response_format: Any
    after_think_hooks: int  # supersteps the middleware's node hooks add after think

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
        """The run's settings, as think resolved them for this run (the host resolves a run
        context once and hands every later reader the same object)."""
        return self.bindings.context(request.runtime.context, read_env=False)

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
