"""A scripted, OpenAI-compatible HTTP server for tests, benchmarks and subprocesses.

Real clients (the ``openai`` SDK, ``langchain_openai.ChatOpenAI``, a CLI run as a
subprocess with ``OPENAI_BASE_URL`` pointing here, a ``langgraph dev`` server) talk to
it over real HTTP on 127.0.0.1, so tests exercise the actual wire protocol (headers,
SSE streaming, retries, error mapping) without any mocking and without internet.

Each ``POST /v1/chat/completions`` consumes the next *script item*:

* :class:`Reply` - an assistant message (content and/or native tool calls),
* :class:`HTTPError` - an OpenAI-shaped error response with a status code,
* a callable - called with the parsed JSON request body, returns one of the above.

Every request is recorded (before it is answered) in :attr:`ScriptedOpenAIServer.requests`.

Example::

    with ScriptedOpenAIServer([Reply(content="Final Answer: 391")]) as server:
        llm = ChatOpenAI(base_url=server.base_url, api_key="sk-test", model="scripted")
        assert llm.invoke("17*23?").content == "Final Answer: 391"
        assert server.requests[0].headers["authorization"] == "Bearer sk-test"

Command-line mode (for tests that need the server in a separate process)::

    python -m tests.support.openai_server --script script.json [--port 0]
        [--default-content TEXT] [--no-honor-stop] [--record requests.jsonl]

prints exactly one line ``READY http://127.0.0.1:PORT/v1`` once listening and serves
until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import re
import signal
import socket
import socketserver
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeAlias

__all__ = [
    "HTTPError",
    "RecordedRequest",
    "Reply",
    "ScriptItem",
    "ScriptedOpenAIServer",
    "ToolCall",
    "scripted_server",
]

DEFAULT_MODEL = "scripted"
_CHAT_PATH = "/chat/completions"
_MODELS_PATH = "/models"
# Benign errors when a client goes away mid-response (timeouts, cancelled streams).
_DISCONNECT_ERRORS = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError)


# --------------------------------------------------------------------------- script items


@dataclass(frozen=True)
class ToolCall:
    """A native (OpenAI function-calling) tool call in a scripted reply.

    ``arguments`` is a dict (JSON-encoded by the server) or a str sent verbatim, so a
    test can send broken JSON. Without ``id`` every response gets a fresh unique
    ``call_...`` id, so one ToolCall can be reused (e.g. in a ``default=`` item).
    """

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"ToolCall.name must be a non-empty str, got {self.name!r}")
        if not isinstance(self.arguments, (str, Mapping)):
            raise TypeError(
                f"ToolCall.arguments must be a dict or str, got {type(self.arguments).__name__}"
            )

    def arguments_json(self) -> str:
        """The arguments exactly as they go on the wire."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(dict(self.arguments), ensure_ascii=False)


@dataclass(frozen=True)
class Reply:
    """A scripted assistant message.

    ``finish_reason`` defaults to ``"tool_calls"`` when there are tool calls, else
    ``"stop"``. ``usage`` is ``(prompt_tokens, completion_tokens)``; when omitted a
    rough chars/4 estimate is sent so usage is always present. ``delay`` sleeps before
    answering (timeouts, concurrency); ``chunk_delay`` sleeps between streamed chunks
    (to observe or interrupt a stream mid-way). ``model`` overrides the echoed model.
    """

    content: str | None = None
    tool_calls: Sequence[ToolCall] = ()
    usage: tuple[int, int] | None = None
    finish_reason: str | None = None
    delay: float = 0.0
    model: str | None = None
    chunk_delay: float = 0.0

    def __post_init__(self) -> None:
        if self.content is not None and not isinstance(self.content, str):
            raise TypeError(f"Reply.content must be a str or None, got {self.content!r}")
        calls = tuple(self.tool_calls)
        for call in calls:
            if not isinstance(call, ToolCall):
                raise TypeError(f"Reply.tool_calls items must be ToolCall, got {call!r}")
        object.__setattr__(self, "tool_calls", calls)
        if self.usage is not None:
            prompt, completion = self.usage
            object.__setattr__(self, "usage", (int(prompt), int(completion)))
        if self.delay < 0 or self.chunk_delay < 0:
            raise ValueError("Reply.delay and Reply.chunk_delay must be >= 0")


@dataclass(frozen=True)
class HTTPError:
    """A scripted error response: ``status`` plus an OpenAI-shaped JSON error body.

    The body is ``{"error": {"message", "type", "param": null, "code"}}`` so the
    ``openai`` SDK maps it to its typed exceptions (400 -> BadRequestError, 401 ->
    AuthenticationError, 429 -> RateLimitError, 5xx -> InternalServerError).
    ``headers`` are extra response headers (e.g. ``{"retry-after-ms": "1"}``).
    """

    status: int
    message: str
    type: str = "invalid_request_error"
    code: str | None = None
    headers: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        if not 400 <= int(self.status) <= 599:
            raise ValueError(f"HTTPError.status must be 4xx or 5xx, got {self.status}")

    def body(self) -> dict[str, Any]:
        """The JSON error body, as the real API shapes it."""
        return _error_body(self.message, self.type, self.code)


ScriptItem: TypeAlias = Reply | HTTPError | Callable[[dict[str, Any]], Reply | HTTPError]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received (recorded before it is answered).

    ``headers`` has lower-cased names (HTTP names are case-insensitive), e.g.
    ``headers["authorization"]``. ``body`` is the parsed JSON (None when the body is
    empty or not JSON); ``raw`` keeps the exact bytes, e.g. to check a secret never
    appears anywhere in what was sent.
    """

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes
    index: int
    received_at: float

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat messages of a chat-completions request (empty list otherwise)."""
        if isinstance(self.body, dict) and isinstance(self.body.get("messages"), list):
            return self.body["messages"]
        return []

    def to_json(self) -> dict[str, Any]:
        """A JSON-serialisable form (used by the ``--record`` command-line option)."""
        return {
            "index": self.index,
            "method": self.method,
            "path": self.path,
            "headers": self.headers,
            "body": self.body,
        }


# --------------------------------------------------------------------------- helpers


def conversation_problem(messages: list[dict[str, Any]]) -> str | None:
    """What OpenAI's chat API refuses in a request's messages, or None: a call with no result
    right after its step, a result with no call right before it, a system message anywhere
    but first (a scripted endpoint answers such a request with HTTP 400, as OpenAI does)."""
    waiting: set[str] = set()
    for at, message in enumerate(messages):
        role = message.get("role")
        if role == "system" and at != 0:
            return f"a system message at {at}"
        if role == "tool":
            call = message.get("tool_call_id")
            if call not in waiting:
                return f"a result for {call!r} with no call right before it (at {at})"
            waiting.discard(call)
            continue
        if waiting:
            return f"calls {sorted(waiting)} have no result before message {at} ({role})"
        if role == "assistant":
            waiting = {c["id"] for c in message.get("tool_calls") or []}
    return f"calls {sorted(waiting)} have no result at the end" if waiting else None


def _error_body(message: str, type_: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def _new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


def _apply_stop(content: str | None, stop: Any) -> str | None:
    """Cut ``content`` at the earliest stop string, removing it, as a real server does."""
    if content is None or stop is None:
        return content
    stops = [stop] if isinstance(stop, str) else list(stop) if isinstance(stop, list) else []
    cut = len(content)
    for s in stops:
        if isinstance(s, str) and s:
            pos = content.find(s)
            if 0 <= pos < cut:
                cut = pos
    return content[:cut]


def _estimate_usage(
    body: dict[str, Any], content: str | None, calls: Sequence[ToolCall]
) -> tuple[int, int]:
    """Rough chars/4 token counts, so clients that read usage always get numbers."""
    messages = body.get("messages") if isinstance(body, dict) else None
    prompt = max(1, len(json.dumps(messages or [], ensure_ascii=False)) // 4)
    produced = len(content or "") + sum(len(c.name) + len(c.arguments_json()) for c in calls)
    return prompt, max(1, produced // 4)


def _split_words(text: str) -> list[str]:
    """Split into small pieces (word plus trailing whitespace) whose join is ``text``."""
    return re.findall(r"\s+|\S+\s*", text)


def _split_fixed(text: str, size: int = 8) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _usage_json(usage: tuple[int, int]) -> dict[str, int]:
    prompt, completion = usage
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


# --------------------------------------------------------------------------- HTTP layer


class _HTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer tuned for many concurrent local clients and quick shutdown."""

    daemon_threads = True  # a handler stuck in a delay or keep-alive never blocks exit
    request_queue_size = 256  # the default backlog of 5 drops SYNs under 100 concurrent runs
    allow_reuse_address = True

    owner: ScriptedOpenAIServer

    def server_bind(self) -> None:
        """Bind without HTTPServer's reverse-DNS ``getfqdn`` lookup (slow with no network)."""
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet about disconnects; record anything else for the test to see."""
        exc = sys.exc_info()[1]
        if isinstance(exc, _DISCONNECT_ERRORS) or self.owner._closing.is_set():
            return
        self.owner._record_error(f"unhandled server error: {exc!r}")


class _Handler(BaseHTTPRequestHandler):
    """Routes requests to the owning :class:`ScriptedOpenAIServer`."""

    protocol_version = "HTTP/1.1"  # keep-alive, as the openai SDK's connection pool expects
    server_version = "ScriptedOpenAI/1.0"
    disable_nagle_algorithm = True  # avoid 40 ms Nagle/delayed-ACK stalls on small writes
    timeout = 300  # idle keep-alive connections eventually free their thread
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, add=True)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        self.server.owner._track(self.connection, add=False)

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default per-request stderr logging."""

    def do_GET(self) -> None:
        self.server.owner._handle(self, "GET")

    def do_POST(self) -> None:
        self.server.owner._handle(self, "POST")

    def do_PUT(self) -> None:
        self.server.owner._handle(self, "PUT")

    def do_PATCH(self) -> None:
        self.server.owner._handle(self, "PATCH")

    def do_DELETE(self) -> None:
        self.server.owner._handle(self, "DELETE")

    # -- low-level I/O used by the owner

    def read_body(self) -> bytes:
        """Read the whole request body (Content-Length or chunked) so keep-alive stays in sync."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts = []
            while True:
                size_line = self.rfile.readline(65537)
                size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline(65537)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def send_json(
        self, status: int, payload: Any, headers: Mapping[str, str] | None = None
    ) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", _new_id("req_"))
        for name, value in (headers or {}).items():
            self.send_header(name, str(value))
        self.end_headers()
        self.wfile.write(data)

    def start_event_stream(self) -> bool:
        """Send SSE headers; returns whether chunked transfer-encoding is used."""
        chunked = self.request_version != "HTTP/1.0"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("x-request-id", _new_id("req_"))
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Connection", "close")
        self.end_headers()
        return chunked

    def send_event(self, data: str, chunked: bool) -> None:
        payload = f"data: {data}\n\n".encode()
        if chunked:
            payload = f"{len(payload):X}\r\n".encode() + payload + b"\r\n"
        self.wfile.write(payload)

    def end_event_stream(self, chunked: bool) -> None:
        if chunked:
            self.wfile.write(b"0\r\n\r\n")


# --------------------------------------------------------------------------- the server


class ScriptedOpenAIServer:
    """An OpenAI-compatible chat-completions server that replays a script.

    Runs a ``ThreadingHTTPServer`` on 127.0.0.1 (port 0 = a free port) in a background
    thread. Use it as a context manager, or call :meth:`start` / :meth:`close` from a
    fixture. All state (script queue, request log) is guarded by one lock, so many
    concurrent clients and :meth:`add` from the test thread are safe.

    ``default`` (a Reply, HTTPError or callable) answers whenever the script is empty,
    for benchmarks and long-running servers; without it an exhausted script answers
    HTTP 500 "scripted server: script exhausted after N requests" so an under-scripted
    test fails clearly. ``honor_stop=False`` returns content past the request's
    ``stop`` strings, to test clients that must cut a hallucinated ``Observation:``.
    """

    def __init__(
        self,
        items: Iterable[ScriptItem] = (),
        *,
        default: ScriptItem | None = None,
        honor_stop: bool = True,
        host: str = "127.0.0.1",
        port: int = 0,
        model_name: str = DEFAULT_MODEL,
    ) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._script: deque[ScriptItem] = deque()
        self._requests: list[RecordedRequest] = []
        self._errors: list[str] = []
        self._consumed = 0
        self._connections: set[socket.socket] = set()
        self._closing = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._record_file: Any = None
        self.default = default
        self.honor_stop = honor_stop
        self.host = host
        self._port = port
        self.model_name = model_name
        self.add(*items)

    # -- construction helpers

    @classmethod
    def from_json(cls, items: Iterable[Mapping[str, Any]], **kwargs: Any) -> ScriptedOpenAIServer:
        """Build a server from JSON-style dicts (the ``--script`` file format).

        ``{"content": "...", "tool_calls": [{"name": ..., "arguments": {...}, "id": ...}],
        "usage": [10, 5], "delay": 0.1, "finish_reason": ..., "model": ...}`` is a Reply;
        ``{"error": 400, "message": "...", "type": ..., "code": ..., "headers": {...}}``
        is an HTTPError. Unknown keys raise ValueError, so typos fail loudly.
        """
        return cls([_item_from_json(item) for item in items], **kwargs)

    # -- lifecycle

    def start(self) -> ScriptedOpenAIServer:
        """Bind and serve in a daemon thread; returns self (handy in fixtures)."""
        if self._closing.is_set():
            raise RuntimeError("ScriptedOpenAIServer cannot be restarted after close()")
        if self._httpd is not None:
            return self
        httpd = _HTTPServer((self.host, self._port), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},  # so close() returns promptly
            name=f"scripted-openai-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and drop open connections; idempotent and quick (never hangs)."""
        self._closing.set()  # also wakes handlers sleeping in a Reply.delay
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        with self._cond:
            conns = list(self._connections)
            self._cond.notify_all()
        for conn in conns:  # unblock keep-alive handlers so stale pooled connections die
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._record_file is not None:
            with contextlib.suppress(OSError):
                self._record_file.close()

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- addresses

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("ScriptedOpenAIServer is not running; call start() first")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``: what OPENAI_BASE_URL / ChatOpenAI(base_url=) need."""
        return f"http://{self.host}:{self.port}/v1"

    # -- script and log

    def add(self, *items: ScriptItem) -> None:
        """Append script items (thread-safe; allowed while clients are talking)."""
        for item in items:
            _check_item(item)
        with self._cond:
            self._script.extend(items)

    @property
    def remaining(self) -> list[ScriptItem]:
        """Script items not yet consumed (a snapshot)."""
        with self._cond:
            return list(self._script)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received, in arrival order (a snapshot)."""
        with self._cond:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """Only the chat-completions requests (those that consume script items)."""
        return [r for r in self.requests if r.method == "POST" and _route(r.path) == _CHAT_PATH]

    @property
    def errors(self) -> list[str]:
        """Server-side problems (a script callable raised, bad return value...)."""
        with self._cond:
            return list(self._errors)

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Block until at least ``count`` requests arrived (for subprocess clients)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self._requests) < count:
                left = deadline - time.monotonic()
                if left <= 0 or self._closing.is_set():
                    raise TimeoutError(
                        f"expected {count} requests within {timeout}s, got {len(self._requests)}"
                    )
                self._cond.wait(left)
            return list(self._requests)

    def record_to(self, path: str) -> None:
        """Also append every request as a JSON line to ``path`` (for out-of-process use)."""
        self._record_file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()

    # -- internals

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._cond:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def _record_error(self, message: str) -> None:
        with self._cond:
            self._errors.append(message)

    def _record(self, handler: _Handler, method: str, raw: bytes) -> RecordedRequest:
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {name.lower(): value for name, value in handler.headers.items()}
        with self._cond:
            request = RecordedRequest(
                method=method,
                path=handler.path,
                headers=headers,
                body=body,
                raw=raw,
                index=len(self._requests),
                received_at=time.time(),
            )
            self._requests.append(request)
            if self._record_file is not None:
                self._record_file.write(json.dumps(request.to_json(), ensure_ascii=False) + "\n")
                self._record_file.flush()
            self._cond.notify_all()
        return request

    def _next_item(self) -> tuple[ScriptItem | None, int]:
        """Pop the next script item (or the default); also return how many were consumed."""
        with self._cond:
            if self._script:
                self._consumed += 1
                return self._script.popleft(), self._consumed
            return self.default, self._consumed

    def _handle(self, handler: _Handler, method: str) -> None:
        """Entry point for every request: read, record, route, answer."""
        try:
            raw = handler.read_body()
            request = self._record(handler, method, raw)
            route = _route(handler.path)
            if route == _CHAT_PATH:
                if method != "POST":
                    self._send_error(handler, 405, f"{method} not allowed on {handler.path}")
                elif not isinstance(request.body, dict):
                    self._send_error(
                        handler, 400, "scripted server: request body is not a JSON object"
                    )
                else:
                    self._chat(handler, request)
            elif route == _MODELS_PATH and method == "GET":
                handler.send_json(200, {"object": "list", "data": [self._model_card()]})
            elif route == f"{_MODELS_PATH}/{self.model_name}" and method == "GET":
                handler.send_json(200, self._model_card())
            else:
                self._send_error(
                    handler,
                    404,
                    f"scripted server: no route for {method} {handler.path} (only POST "
                    f"/v1/chat/completions and GET /v1/models; the Responses API is not served)",
                    type_="not_found_error",
                    code="not_found",
                )
        except _DISCONNECT_ERRORS:
            handler.close_connection = True
        except Exception as exc:
            handler.close_connection = True
            if not self._closing.is_set():
                self._record_error(f"{method} {handler.path}: {exc!r}")
                with contextlib.suppress(Exception):
                    self._send_error(
                        handler,
                        500,
                        f"scripted server internal error: {exc!r}",
                        type_="server_error",
                    )

    def _model_card(self) -> dict[str, Any]:
        return {"id": self.model_name, "object": "model", "created": 0, "owned_by": "scripted"}

    def _send_error(
        self,
        handler: _Handler,
        status: int,
        message: str,
        *,
        type_: str = "invalid_request_error",
        code: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        handler.send_json(status, _error_body(message, type_, code), headers)

    def _chat(self, handler: _Handler, request: RecordedRequest) -> None:
        body: dict[str, Any] = request.body
        item, consumed = self._next_item()
        if item is None:
            last_message = request.messages[-1] if request.messages else None
            last = last_message.get("content") if isinstance(last_message, dict) else None
            self._send_error(
                handler,
                500,
                f"scripted server: script exhausted after {consumed} requests "
                f"(unscripted request #{len(self.chat_requests)}, last message: {last!r:.200})",
                type_="server_error",
                code="script_exhausted",
                # a retrying client would only get the same answer after a backoff
                headers={"x-should-retry": "false"},
            )
            return
        if not isinstance(item, (Reply, HTTPError)):
            try:
                item = item(copy.deepcopy(body))
            except Exception as exc:
                message = f"scripted server: script callable raised {exc!r}"
                self._record_error(message)
                self._send_error(
                    handler, 500, message, type_="server_error", headers={"x-should-retry": "false"}
                )
                return
            if not isinstance(item, (Reply, HTTPError)):
                message = f"scripted server: script callable returned {item!r}, not Reply/HTTPError"
                self._record_error(message)
                self._send_error(
                    handler, 500, message, type_="server_error", headers={"x-should-retry": "false"}
                )
                return
        if isinstance(item, HTTPError):
            handler.send_json(item.status, item.body(), item.headers)
            return
        if item.delay and self._closing.wait(item.delay):
            handler.close_connection = True
            return
        content = _apply_stop(item.content, body.get("stop")) if self.honor_stop else item.content
        calls = [(call, call.id or _new_id("call_")) for call in item.tool_calls]
        usage = item.usage or _estimate_usage(body, content, item.tool_calls)
        finish = item.finish_reason or ("tool_calls" if calls else "stop")
        model = item.model or body.get("model") or self.model_name
        if body.get("stream"):
            self._stream(handler, item, body, content, calls, usage, finish, model)
            return
        message: dict[str, Any] = {
            "role": "assistant",
            "content": content if content is not None or calls else "",
            "refusal": None,
        }
        if calls:
            message["tool_calls"] = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_json()},
                }
                for call, call_id in calls
            ]
        handler.send_json(
            200,
            {
                "id": _new_id("chatcmpl-"),
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "system_fingerprint": None,
                "choices": [
                    {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
                ],
                "usage": _usage_json(usage),
            },
        )

    def _stream(
        self,
        handler: _Handler,
        item: Reply,
        body: dict[str, Any],
        content: str | None,
        calls: list[tuple[ToolCall, str]],
        usage: tuple[int, int],
        finish: str,
        model: str,
    ) -> None:
        """Answer as SSE ``chat.completion.chunk`` events, like the real API."""
        options = body.get("stream_options")
        include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        base = {
            "id": _new_id("chatcmpl-"),
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": None,
        }

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
            event: dict[str, Any] = {
                **base,
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
                ],
            }
            if include_usage:
                event["usage"] = None  # the real API sends null usage until the last chunk
            return json.dumps(event, ensure_ascii=False)

        def events() -> Iterator[str]:
            yield chunk({"role": "assistant", "content": "", "refusal": None})
            for piece in _split_words(content or ""):
                yield chunk({"content": piece})
            for index, (call, call_id) in enumerate(calls):
                yield chunk(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": call_id,
                                "type": "function",
                                "function": {"name": call.name, "arguments": ""},
                            }
                        ]
                    }
                )
                for piece in _split_fixed(call.arguments_json()):
                    yield chunk(
                        {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
                    )
            yield chunk({}, finish)
            if include_usage:
                yield json.dumps({**base, "choices": [], "usage": _usage_json(usage)})
            yield "[DONE]"

        chunked = handler.start_event_stream()
        for n, data in enumerate(events()):
            if n and item.chunk_delay and self._closing.wait(item.chunk_delay):
                handler.close_connection = True
                return
            handler.send_event(data, chunked)
        handler.end_event_stream(chunked)
        if not chunked:
            handler.close_connection = True


def _route(path: str) -> str:
    """Normalise a request path: drop the query and an optional ``/v1`` prefix."""
    path = path.split("?", 1)[0].rstrip("/")
    return path[3:] if path.startswith("/v1/") else path


def _check_item(item: Any) -> None:
    if not (isinstance(item, (Reply, HTTPError)) or callable(item)):
        raise TypeError(f"script items must be Reply, HTTPError or callable, got {item!r}")


_REPLY_KEYS = {"content", "tool_calls", "usage", "delay", "finish_reason", "model", "chunk_delay"}
_ERROR_KEYS = {"error", "message", "type", "code", "headers"}


def _item_from_json(data: Mapping[str, Any]) -> Reply | HTTPError:
    """Convert one ``--script`` JSON object into a Reply or HTTPError."""
    if not isinstance(data, Mapping):
        raise ValueError(f"script item must be a JSON object, got {data!r}")
    if "error" in data:
        unknown = set(data) - _ERROR_KEYS
        if unknown:
            raise ValueError(f"unknown keys {sorted(unknown)} in error item {dict(data)!r}")
        return HTTPError(
            int(data["error"]),
            str(data.get("message", "scripted error")),
            type=data.get("type", "invalid_request_error"),
            code=data.get("code"),
            headers=data.get("headers"),
        )
    unknown = set(data) - _REPLY_KEYS
    if unknown:
        raise ValueError(f"unknown keys {sorted(unknown)} in reply item {dict(data)!r}")
    calls = []
    for call in data.get("tool_calls") or ():
        extra = set(call) - {"name", "arguments", "id"}
        if extra:
            raise ValueError(f"unknown keys {sorted(extra)} in tool call {call!r}")
        calls.append(ToolCall(call["name"], call.get("arguments", {}), call.get("id")))
    usage = data.get("usage")
    return Reply(
        content=data.get("content"),
        tool_calls=calls,
        usage=tuple(usage) if usage is not None else None,
        finish_reason=data.get("finish_reason"),
        delay=float(data.get("delay", 0.0)),
        model=data.get("model"),
        chunk_delay=float(data.get("chunk_delay", 0.0)),
    )


def scripted_server(items: Iterable[ScriptItem] = (), **kwargs: Any) -> ScriptedOpenAIServer:
    """Convenience alias: ``with scripted_server([...]) as server:`` (not started yet)."""
    return ScriptedOpenAIServer(items, **kwargs)


# --------------------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a JSON script until SIGTERM/SIGINT; print ``READY <base_url>`` when listening."""
    parser = argparse.ArgumentParser(
        prog="python -m tests.support.openai_server",
        description="Scripted OpenAI-compatible chat-completions server for tests.",
    )
    parser.add_argument("--script", help="JSON file: a list of reply/error objects")
    parser.add_argument("--port", type=int, default=0, help="port (default 0: a free one)")
    parser.add_argument(
        "--default-content", help="reply with this content once the script is empty"
    )
    parser.add_argument("--no-honor-stop", action="store_true", help="ignore request 'stop'")
    parser.add_argument("--record", help="append every request as a JSON line to this file")
    args = parser.parse_args(argv)

    items: list[Any] = []
    if args.script:
        with open(args.script, encoding="utf-8") as fh:
            items = json.load(fh)
        if not isinstance(items, list):
            parser.error("--script must contain a JSON list")
    default = Reply(content=args.default_content) if args.default_content is not None else None
    server = ScriptedOpenAIServer.from_json(
        items, default=default, honor_stop=not args.no_honor_stop, port=args.port
    )
    if args.record:
        server.record_to(args.record)

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with server:
        print(f"READY {server.base_url}", flush=True)
        while not stop.wait(0.2):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
