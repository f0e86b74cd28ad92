"""What the loop policies share: the run's settings and bookkeeping, read from the request."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar, Protocol

from langchain.agents.middleware import (
    AgentMiddleware,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langgraph.types import Command

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


class CallAndStore:
    """A policy's decision to make the call with `request` and store `command` with its reply
    (a note the model was told, the bookkeeping it changed)."""

    __slots__ = ("command", "request")

    def __init__(self, request: ModelRequest, command: Command) -> None:
        self.request, self.command = request, command

    def stored(self, response: ModelResponse) -> ExtendedModelResponse:
        """The reply with the note written before it, as the model read it (a `Command`'s
        messages are written after the reply, as `create_agent` writes a middleware's), and
        the rest of the command beside it."""
        update = dict(self.command.update) if isinstance(self.command.update, dict) else {}
        notes = update.pop("messages", [])
        result = [*notes, *response.result]
        kept = ModelResponse(result=result, structured_response=response.structured_response)
        return ExtendedModelResponse(kept, Command(update=update) if update else None)


Decision = ModelRequest | ModelResponse | ExtendedModelResponse | CallAndStore


class LoopPolicy(AgentMiddleware):
    """A policy with one decision per model call, made before it: `shaped` returns the request
    to send, a response to give instead of calling the model (an `ExtendedModelResponse` whose
    `Command` ends the run), or a `CallAndStore` (this request, and a command stored with the
    reply). The sync and async forms share it."""

    needs: ClassVar[str | tuple[str, Any] | None] = None
    """The setting the policy acts on (or a setting and the one value it acts on). Where a
    run's value is empty (unset, 0, nothing listed), or not that value, the policy is left out
    of that run's chain (`Bindings.model_wraps`), as `create_agent` runs only the middleware
    it was given: it would only pass the call on."""

    def acts_on(self, ctx: Any) -> bool:
        """Whether this run's settings give the policy something to do (`needs`)."""
        if isinstance(self.needs, tuple):
            name, value = self.needs
            return getattr(ctx, name) == value
        return self.needs is None or bool(getattr(ctx, self.needs))

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

    def shaped(self, request: ModelRequest) -> Decision:
        raise NotImplementedError

    def wrap_model_call(self, request: ModelRequest, handler: Handler) -> Any:
        shaped = self.shaped(request)
        if isinstance(shaped, CallAndStore):
            return shaped.stored(handler(shaped.request))
        return handler(shaped) if isinstance(shaped, ModelRequest) else shaped

    async def awrap_model_call(self, request: ModelRequest, handler: AsyncHandler) -> Any:
        shaped = self.shaped(request)
        if isinstance(shaped, CallAndStore):
            return shaped.stored(await handler(shaped.request))
        return await handler(shaped) if isinstance(shaped, ModelRequest) else shaped


def ended(update: dict[str, Any]) -> ExtendedModelResponse:
    """No call: the run ends with this update (its `status`, and what goes with it)."""
    return ExtendedModelResponse(ModelResponse(result=[]), Command(update=update))
