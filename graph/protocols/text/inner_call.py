"""How `TextReAct` calls the model it wraps: inside TextReAct's own run, one chat-model run
per call, as LangChain's conformance suites expect of a chat model and as `ChatHuggingFace`
calls the model it wraps. A chat model, or a `.bind(...)` of one, is called through its
`_generate` (its `_stream` when it is set to stream, as its `invoke` would), after its rate
limiter; the reply carries what a run adds to a message (the result's `llm_output` and
`generation_info`: the model's name, the token usage). No run manager is passed: the inner
model's tokens are raw protocol text, not for a client's stream. What only the inner model's
own `invoke` does is not done: its own `callbacks` and `cache` (give them to TextReAct).

Another runnable around a model (`.with_retry()`, `.with_fallbacks()`) is invoked, so what it
adds runs; that call is a child run of TextReAct's (`child_config`)."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManager
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.chat_models import agenerate_from_stream, generate_from_stream
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from langchain_core.runnables import (
    Runnable,
    RunnableBinding,
    RunnableConfig,
    RunnableWithFallbacks,
)
from langchain_core.runnables.retry import RunnableRetry
from langgraph.constants import TAG_NOSTREAM

Reply = tuple[BaseMessage, dict[str, Any] | None]  # the message and the result's llm_output


def wrapped_model(inner: Runnable) -> tuple[BaseChatModel | None, dict[str, Any]]:
    """The chat model `inner` is, or binds arguments to (`.bind(...)`, any depth), and those
    arguments; None for another runnable. Any `RunnableBinding` is a binding: a chat model's
    `.bind(...)` returns a subclass of it (`_ChatModelBinding` in langchain-core 1.x)."""
    bound: dict[str, Any] = {}
    while isinstance(inner, RunnableBinding):
        bound = {**inner.kwargs, **bound}
        inner = inner.bound
    return (inner, bound) if isinstance(inner, BaseChatModel) else (None, {})


def model_of(inner: Runnable) -> BaseChatModel | None:
    """The chat model that writes the text: `inner`, or the model a binding, a retry or a
    fallback list (its first) runs; None for another runnable."""
    model, _ = wrapped_model(inner)
    if model is None and isinstance(inner, RunnableRetry):
        return model_of(inner.bound)
    if model is None and isinstance(inner, RunnableWithFallbacks):
        return model_of(inner.runnable)
    return model


def identity(inner: Runnable) -> Any:
    """What tells `inner` apart from another model in TextReAct's response cache: a chat
    model's own identifying parameters (its type, model name, temperature, ...) with what a
    binding binds, as a plain chat model's cache key holds them; through `.with_retry()` and
    `.with_fallbacks()` to the models they run; another runnable by its repr."""
    model, bound = wrapped_model(inner)
    if model is not None:
        return {**model.asdict(), **bound}  # its identifying parameters and its `_type`
    if isinstance(inner, RunnableRetry):
        return {"retried": identity(inner.bound)}
    if isinstance(inner, RunnableWithFallbacks):
        return [identity(runnable) for runnable in inner.runnables]
    return repr(inner)


def generate(
    model: BaseChatModel, bound: dict[str, Any], messages: list[BaseMessage], options: Any
) -> Reply:
    options = _merged(bound, options)
    if model.rate_limiter:
        model.rate_limiter.acquire(blocking=True)
    if _streams(model):
        return _as_reply(generate_from_stream(model._stream(messages, **options)))
    return _as_reply(model._generate(messages, **options))


async def agenerate(
    model: BaseChatModel, bound: dict[str, Any], messages: list[BaseMessage], options: Any
) -> Reply:
    options = _merged(bound, options)
    if model.rate_limiter:
        await model.rate_limiter.aacquire(blocking=True)
    if _streams(model):
        return _as_reply(await agenerate_from_stream(model._astream(messages, **options)))
    return _as_reply(await model._agenerate(messages, **options))


def child_config(manager: Any) -> RunnableConfig:
    """A runnable's call as a child of TextReAct's run (LangChain's LLM run managers have no
    `get_child`, so it is built as the chain managers build theirs), tagged `nostream`: the
    raw Thought/Action text is not for a client's token stream, the parsed message is."""
    if manager is None:
        return {"tags": [TAG_NOSTREAM]}
    child = CallbackManager(handlers=[], parent_run_id=manager.run_id)
    child.set_handlers(manager.inheritable_handlers)
    child.add_tags(manager.inheritable_tags)
    child.add_metadata(manager.inheritable_metadata)
    child.add_tags([TAG_NOSTREAM], inherit=False)
    return {"callbacks": child}


def _streams(model: BaseChatModel) -> bool:
    """Whether the model is set to stream (`streaming=True`): its `_generate` may then ask
    the endpoint for a stream, which `invoke` would have read through `_stream`."""
    return bool(getattr(model, "streaming", False)) and not model.disable_streaming


def _merged(bound: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """A binding's arguments under the call's, their stop sequences joined."""
    stop = [*options.get("stop", []), *(bound.get("stop") or [])]
    return {**bound, **options, "stop": stop}


def _as_reply(result: ChatResult) -> Reply:
    generation = result.generations[0]
    meta = {
        **(result.llm_output or {}),
        **(generation.generation_info or {}),
        **generation.message.response_metadata,
    }
    return generation.message.model_copy(update={"response_metadata": meta}), result.llm_output
