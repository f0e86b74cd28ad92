"""EndpointFallback: the operator's `fallback_models` take over, in order, when the endpoint
fails with a connection error, a 429 or a 5xx. Built on LangChain's `ModelFallbackMiddleware`,
with the agent's rule of when to switch: never on the run's deadline, a reply past the cap, or
a model that refuses tools (that one is `NativeToTextFallback`'s)."""

from __future__ import annotations

from langchain.agents.middleware import ModelFallbackMiddleware, ModelRequest, ModelResponse

from graph.models import factory, failures
from graph.policies.base import AsyncHandler, Handler, LoopPolicy
from graph.protocols.text.chat_model import TextReAct


class _Kept(BaseException):
    """Carries a failure that must not switch models past ModelFallbackMiddleware, which
    catches every `Exception`."""

    def __init__(self, error: Exception) -> None:
        super().__init__(error)
        self.error = error


class EndpointFallback(LoopPolicy):
    needs = "fallback_models"

    def shaped(self, request: ModelRequest) -> ModelRequest | ModelResponse:
        return request

    def fallbacks(self, request: ModelRequest) -> ModelFallbackMiddleware | None:
        ctx = self.settings(request)
        if not ctx.fallback_models or self.bindings.is_local(ctx):
            return None
        models = [factory.fallback_model(entry, ctx) for entry in ctx.fallback_models]
        if isinstance(request.model, TextReAct):  # the run went on as text: so do they
            models = [TextReAct(model) for model in models]
        return ModelFallbackMiddleware(*models)

    def wrap_model_call(self, request: ModelRequest, handler: Handler) -> ModelResponse:
        fallbacks = self.fallbacks(request)
        if fallbacks is None:
            return handler(request)

        def switching(req: ModelRequest) -> ModelResponse:
            try:
                return handler(req)
            except Exception as exc:
                if not failures.endpoint_failed(exc):
                    raise _Kept(exc) from exc
                raise

        try:
            return fallbacks.wrap_model_call(request, switching)
        except _Kept as kept:
            raise kept.error from None

    async def awrap_model_call(self, request: ModelRequest, handler: AsyncHandler) -> ModelResponse:
        fallbacks = self.fallbacks(request)
        if fallbacks is None:
            return await handler(request)

        async def switching(req: ModelRequest) -> ModelResponse:
            try:
                return await handler(req)
            except Exception as exc:
                if not failures.endpoint_failed(exc):
                    raise _Kept(exc) from exc
                raise

        try:
            return await fallbacks.awrap_model_call(request, switching)
        except _Kept as kept:
            raise kept.error from None
