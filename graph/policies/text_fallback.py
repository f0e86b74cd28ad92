"""NativeToTextFallback: under `protocol=auto`, a native request the endpoint refuses for its
tools (a model without function calling) is sent again with the model swapped for
`TextReAct(model)`, the text ReAct protocol as a chat model, and the rest of the run keeps to
it. The reply says why (`react_fallback` in its metadata, which the trace shows as the
`fallback` step); other failures pass on."""

from __future__ import annotations

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage

from graph import messages as m
from graph.models import failures
from graph.policies.base import AsyncHandler, Handler, LoopPolicy
from graph.protocols.text.chat_model import TextReAct


class NativeToTextFallback(LoopPolicy):
    needs = ("protocol", "auto")

    def shaped(self, request: ModelRequest) -> ModelRequest | ModelResponse:
        return request

    def wrap_model_call(self, request: ModelRequest, handler: Handler) -> ModelResponse:
        try:
            return handler(request)
        except Exception as exc:
            why = self.refused_tools(request, exc)
            if why is None:
                raise
            return _noted(handler(request.override(model=TextReAct(request.model))), why)

    async def awrap_model_call(self, request: ModelRequest, handler: AsyncHandler) -> ModelResponse:
        try:
            return await handler(request)
        except Exception as exc:
            why = self.refused_tools(request, exc)
            if why is None:
                raise
            retry = request.override(model=TextReAct(request.model))
            return _noted(await handler(retry), why)

    def refused_tools(self, request: ModelRequest, exc: Exception) -> str | None:
        """Why the run goes on as text, when this failure of a native request calls for it."""
        if (self.run(request).get("protocol") or "native") != "native":
            return None
        if isinstance(request.model, TextReAct) or not failures.tools_unsupported(exc):
            return None
        return (
            f"The endpoint refused tools ({failures.error_message(exc)}); this run continues "
            "with the text ReAct protocol."
        )


def _noted(response: ModelResponse, why: str) -> ModelResponse:
    """The response with its step marked as the one where the run switched protocol."""
    result = list(response.result)
    for i in range(len(result) - 1, -1, -1):
        if isinstance(result[i], AIMessage):
            result[i] = m.marked(result[i], **{m.FALLBACK: why})
            break
    return ModelResponse(result=result, structured_response=response.structured_response)
