"""llama.cpp's HTTP wire format for `LocalCompletionModel`: a request's answer read as JSON (or
one error), its text, the retry back-off, and the replies assembled into a LangChain result with
its usage. The `chat` prompt mode's transcript is rendered here too."""

from __future__ import annotations

import time
from collections.abc import Generator, Sequence
from typing import Any

import httpx
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from graph.messages import DECIDED_BY
from graph.models.local.hints import tool_name
from graph.models.local.prompt import HIDDEN_PREFIX


class LocalModelRequestError(RuntimeError):
    """The llama.cpp server refused a request; `status_code` and `body` say how."""

    def __init__(self, message: str, status_code: int, body: Any = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.body = body


def chat_result(
    text: str,
    meta: dict[str, Any],
    usage: list[dict[str, Any]],
    started: float,
    model_name: str,
    stop: list[str] | None = None,
) -> ChatResult:
    """The step as a chat result, cut before the first of the caller's `stop` sequences (the
    constrained requests cannot take them: they write what the grammar allows)."""
    cuts = [text.find(s) for s in stop or () if s and s in text]
    message = AIMessage(
        content=text[: min(cuts)] if cuts else text,
        response_metadata={
            "model_name": model_name,
            "seconds": round(time.monotonic() - started, 3),
            "requests": len(usage),
            **meta,
        },
    )
    prompt_tokens = sum(int(u.get("prompt_tokens") or 0) for u in usage)
    completion_tokens = sum(int(u.get("completion_tokens") or 0) for u in usage)
    if prompt_tokens or completion_tokens:
        message.usage_metadata = {
            "input_tokens": prompt_tokens,
            "output_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
    return ChatResult(generations=[ChatGeneration(message=message)])


def text_of(data: dict[str, Any]) -> str:
    choice = (data.get("choices") or [{}])[0]
    text = choice.get("text")
    if text is None:
        text = (choice.get("message") or {}).get("content") or ""
    return text


def backoff(attempt: int) -> float:
    return 0.25 * (2**attempt)


def timeout_error(seconds: float) -> TimeoutError:
    return TimeoutError(f"llama.cpp did not answer within {seconds:g} s")


def json_of(response: httpx.Response) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        data = {"error": {"message": response.text[:500]}}
    if response.status_code >= 400:
        error = data.get("error") if isinstance(data, dict) else None
        detail = error.get("message") if isinstance(error, dict) else None
        detail = detail or (data.get("detail") if isinstance(data, dict) else None) or data
        raise LocalModelRequestError(
            f"HTTP {response.status_code}: {detail}", response.status_code, data
        )
    return data if isinstance(data, dict) else {}


def chat_messages(messages: Sequence[BaseMessage], tools: Sequence[Any] | None) -> list[dict]:
    """The text protocol's chat transcript (the `chat` prompt mode)."""
    from graph.protocols.text.prompts import text_system_prompt, text_transcript

    visible = [
        m for m in messages if not (isinstance(m.id, str) and m.id.startswith(HIDDEN_PREFIX))
    ]
    system = next((m.text for m in visible if isinstance(m, SystemMessage)), None)
    if system is None and tools:
        system = text_system_prompt([t for t in tools if tool_name(t)])
    out = [{"role": "system", "content": system}] if system else []
    for message in text_transcript(visible):
        role = "assistant" if isinstance(message, AIMessage) else "user"
        if isinstance(message, HumanMessage) or role == "assistant":
            out.append({"role": role, "content": message.text})
    return out


def chat_request(
    model_name: str,
    temperature: float | None,
    max_tokens: int | None,
    messages: Sequence[BaseMessage],
    stop: list[str] | None,
    kwargs: dict[str, Any],
) -> dict[str, Any]:
    """The `chat` prompt mode's one request: the transcript, the agent's grammar."""
    extra = dict(kwargs.get("extra_body") or {})
    body: dict[str, Any] = {
        "model": model_name,
        **extra,
        "messages": chat_messages(messages, kwargs.get("tools")),
    }
    stops = list(dict.fromkeys([*(stop or []), *(kwargs.get("stop") or [])]))
    if stops:
        body["stop"] = stops
    body["max_tokens"] = int(kwargs.get("max_tokens") or max_tokens or 256)
    if temperature is not None:
        body["temperature"] = temperature
    return body


def single(
    body: dict[str, Any],
) -> Generator[dict[str, Any], dict[str, Any], tuple[str, dict[str, Any]]]:
    data = yield body
    return text_of(data).strip(), {DECIDED_BY: "model"}
