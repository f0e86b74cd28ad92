"""How `LocalCompletionModel` sends a request: over HTTP to a llama.cpp server, or to the model
loaded in this process (`engine.py`, base URL `in-process://embedded`). Both take and answer
the server's completion request form, so the step (`completion.py`) is written once.

The in-process model has one more duty before a call: its KV cache must begin with the
prompt's fixed part (instructions and worked records), restored from the state saved on disk
when it does not (`LocalEngine.warm`); a server keeps what it evaluated, so `prefill` only
sends the records ahead of the first question.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import httpx

from graph.models.local.engine import IN_PROCESS_URL
from graph.models.local.wire import backoff, json_of, timeout_error

Request = dict[str, Any]


def in_process(base_url: str) -> bool:
    return base_url == IN_PROCESS_URL


def engine() -> Any:
    """The in-process model `local_server()` started (starting it if none was)."""
    from graph.models.local.shared import local_server

    running = local_server()
    if not in_process(running.base_url):
        raise ConnectionError(
            f"no model runs in this process ({IN_PROCESS_URL}): the embedded model runs as a "
            f"llama.cpp server at {running.base_url} on this machine"
        )
    return running


def warm(base_url: str, prefix: str) -> None:
    """The prompt's fixed part evaluated (or restored) before a question needs it."""
    if in_process(base_url):
        engine().warm(prefix)
    else:
        prefill(base_url, prefix)


def prefill(base_url: str, prompt: str) -> None:
    """Have a server evaluate `prompt` (the worked records every prompt begins with) before the
    first question arrives: llama.cpp keeps the longest prefix it already evaluated. Best
    effort: on any failure the first request evaluates them itself."""
    body = {"prompt": prompt, "max_tokens": 1, "temperature": 0.0}
    with contextlib.suppress(httpx.HTTPError):
        httpx.post(base_url.rstrip("/") + "/completions", json=body, timeout=60, trust_env=False)


def post(client: httpx.Client, url: str, body: Request, timeout: float, retries: int) -> Request:
    """One request to a server, retried on connection errors and 5xx."""
    for attempt in range(retries + 1):
        try:
            response = client.post(url, json=body, timeout=timeout)
        except httpx.TimeoutException as exc:
            raise timeout_error(timeout) from exc
        except httpx.TransportError as exc:
            if attempt < retries:
                time.sleep(backoff(attempt))
                continue
            raise ConnectionError(f"the llama.cpp server at {url} failed: {exc}") from exc
        if response.status_code >= 500 and attempt < retries:
            time.sleep(backoff(attempt))
            continue
        return json_of(response)
    raise AssertionError("unreachable")  # pragma: no cover


async def apost(
    client: httpx.AsyncClient, url: str, body: Request, timeout: float, retries: int
) -> Request:
    """`post` for an event loop."""
    for attempt in range(retries + 1):
        try:
            response = await client.post(url, json=body, timeout=timeout)
        except httpx.TimeoutException as exc:
            raise timeout_error(timeout) from exc
        except httpx.TransportError as exc:
            if attempt < retries:
                await asyncio.sleep(backoff(attempt))
                continue
            raise ConnectionError(f"the llama.cpp server at {url} failed: {exc}") from exc
        if response.status_code >= 500 and attempt < retries:
            await asyncio.sleep(backoff(attempt))
            continue
        return json_of(response)
    raise AssertionError("unreachable")  # pragma: no cover
