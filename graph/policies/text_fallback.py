"""NativeToTextFallback: under `protocol=auto`, a native request the endpoint refuses for its
tools (a model without function calling) is sent again in the text ReAct protocol, and the
rest of the run keeps to it. The step says why (`react_fallback`); other failures pass on."""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse

from graph.models import factory
from graph.policies.base import AsyncHandler, Handler, LoopPolicy

# Request settings the innermost handler reads and removes; never sent to a model.
PROTOCOL_SETTING = "react_agent_protocol"
FALLBACK_SETTING = "react_agent_fallback"


class NativeToTextFallback(LoopPolicy):
    def shaped(self, request: ModelRequest) -> ModelRequest | ModelResponse:
        return request

    def wrap_model_call(self, request: ModelRequest, handler: Handler) -> ModelResponse:
        try:
            return handler(request)
        except Exception as exc:
            retry = self.as_text(request, exc)
            if retry is None:
                raise
            return handler(retry)

    async def awrap_model_call(self, request: ModelRequest, handler: AsyncHandler) -> ModelResponse:
        try:
            return await handler(request)
        except Exception as exc:
            retry = self.as_text(request, exc)
            if retry is None:
                raise
            return await handler(retry)

    def as_text(self, request: ModelRequest, exc: Exception) -> ModelRequest | None:
        """The same request in the text protocol, when this failure calls for it."""
        if self.settings(request).protocol != "auto":
            return None
        if (self.run(request).get("protocol") or "native") != "native":
            return None
        settings: dict[str, Any] = dict(request.model_settings)
        if settings.get(PROTOCOL_SETTING) or not factory.tools_unsupported(exc):
            return None
        why = (
            f"The endpoint refused tools ({factory.error_message(exc)}); this run continues "
            "with the text ReAct protocol."
        )
        settings.update({PROTOCOL_SETTING: "text", FALLBACK_SETTING: why})
        return request.override(model_settings=settings)
