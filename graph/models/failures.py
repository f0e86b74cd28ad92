"""A model call's failure in one sentence a person can act on, and which failures call for a
fallback: another endpoint (`endpoint_failed`) or the text protocol (`tools_unsupported`)."""

from __future__ import annotations

import json
import re
from typing import Any

from langchain.agents.structured_output import StructuredOutputError

from graph.models.call import ModelDeadline
from graph.models.factory import NO_KEY_NEEDED, endpoint_name, wants_local
from graph.settings import AgentContext, ConfigError

# where the endpoint was set: the variable, the command's option, or `build_graph`'s argument
BASE_URL = "the base URL (OPENAI_BASE_URL, --base-url or base_url=)"
_TOOLS_UNSUPPORTED = re.compile(
    r"(tool|function)[^.]{0,60}(not (be )?support|unsupported|not available|not enabled|"
    r"not allowed|disabled|invalid)|(does not|doesn't|do not) support[^.]{0,40}(tool|function)|"
    r"unrecognized[^.]{0,40}(tools|tool_choice)|extra[^.]{0,40}(tools|tool_choice)",
    re.IGNORECASE,
)


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


def describe_failure(
    exc: BaseException, ctx: AgentContext, *, secret: str | None = None, given: Any = None
) -> str:
    """One sentence: which endpoint, what happened, what to check. Never echoes the key.

    The endpoint and model named are those of the request that failed, read from the error
    (the SDK's errors carry their request): after fallbacks, the last one tried, not the run's
    primary. An error that carries no request names the run's configured endpoint, or the
    model object the caller gave (`given`), which the settings do not describe."""
    carried = getattr(getattr(exc, "request", None), "url", None) is not None
    status = getattr(exc, "status_code", None)
    name = type(exc).__name__
    own = given is not None and not carried  # the settings' endpoint hints do not apply
    if own:
        where = f"the model {_label(given)}"
    elif wants_local(ctx) and given is None:
        where = "the embedded local model"
    else:
        where = "the model endpoint {} (model {!r})".format(*failed_at(exc, ctx))
    if isinstance(exc, ConfigError):
        text = str(exc)
    elif isinstance(exc, StructuredOutputError):  # the call answered; its answer is refused
        text = (
            f"The structured answer from {where} did not match its schema, and the response "
            f"format says not to ask again: {one_line(_message(exc))}."
        )
    elif isinstance(exc, ModelDeadline) or (given is None and _timed_out(exc)):
        text = (  # the run's deadline, or the client the agent built with it
            f"{where} did not answer within {ctx.model_timeout:g} s; check that it is up, or "
            "raise REACT_AGENT_MODEL_TIMEOUT."
        )
    elif _timed_out(exc):  # the caller's own client's timeout
        text = (
            f"{where} timed out ({one_line(_message(exc))}); check that it is up, or raise "
            "its client's timeout."
        )
    elif _is(exc, "APIConnectionError") or isinstance(exc, ConnectionError):
        text = f"Could not reach {where}: {one_line(_root_cause(exc))}"
        text += "." if own else f"; check {BASE_URL} and that the server is running."
    elif status in (401, 403):
        text = f"{where} rejected the API key (HTTP {status})"
        text += "." if own else f"; check {ctx.api_key_env} (and that it is this endpoint's)."
    elif status == 404:
        text = f"{where} answered HTTP 404 ({one_line(_message(exc))})"
        text += (
            "."
            if own
            else (
                "; check the model name (REACT_AGENT_MODEL) and that the base URL ends where "
                "the API starts (often /v1)."
            )
        )
    elif status == 429:
        text = (
            f"{where} kept answering HTTP 429 (rate limited or out of quota) after "
            f"{ctx.max_retries} retries; wait and resume, or check the account's quota."
        )
    elif isinstance(status, int) and status >= 500:
        text = (
            f"{where} kept failing with HTTP {status} after {ctx.max_retries} retries "
            f"({one_line(_message(exc))}); resume the run once the endpoint is healthy."
        )
    elif isinstance(status, int):
        text = f"{where} refused the request with HTTP {status}: {one_line(_message(exc))}."
    else:
        text = f"The model call to {where} failed: {name}: {one_line(_message(exc))}."
    return _redact(text[:1].upper() + text[1:], secret)


def _timed_out(exc: BaseException) -> bool:
    """A client's timeout: Python's, the `openai` SDK's, or httpx's (`TimeoutException`)."""
    if isinstance(exc, TimeoutError) or _is(exc, "APITimeoutError"):
        return True
    return any(kind.__name__ == "TimeoutException" for kind in type(exc).__mro__)


def _label(model: Any) -> str:
    """A model object as a sentence names it: its class, and its model name where it has one."""
    named = getattr(model, "model_name", None) or getattr(model, "model", None)
    kind = type(model).__name__
    return f"{named!r} ({kind})" if isinstance(named, str) and named else kind


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
    return one_line(_message(exc))


def _message(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
        if isinstance(body.get("message"), str):
            return body["message"]
    return str(exc) or type(exc).__name__


def one_line(text: str, limit: int = 200) -> str:
    """Another library's message, on one line and without its closing stop or LangChain's
    troubleshooting link: it is quoted inside a sentence of ours (`...: <message>; check ...`)."""
    text = " ".join(text.split("For troubleshooting, visit:", 1)[0].split()).rstrip(".")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _redact(text: str, secret: str | None) -> str:
    if secret and len(secret) >= 4 and secret != NO_KEY_NEEDED:
        text = text.replace(secret, "[redacted]")
    return re.sub(r"\bsk-[A-Za-z0-9_\-*]{6,}", "sk-[redacted]", text)
