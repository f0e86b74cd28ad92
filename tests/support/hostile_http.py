"""Small HTTP servers on 127.0.0.1 that misbehave on purpose, for security and fault tests.

* `RecordingServer`: an "attacker" endpoint. It records every request it gets (method, path,
  headers, body) and answers like an OpenAI-compatible server would, so that a client which
  reached it would carry on as if nothing happened: the only evidence is the record, and a
  test asserts the record stays empty.
* `MisbehavingModel`: speaks just enough of OpenAI's chat-completions streaming (SSE) to hold
  a client forever: `trickle` sends one byte every `interval` seconds and never completes the
  reply, `endless` streams content chunks without end, `huge` answers a streamed request with
  one non-streamed JSON reply of `size` bytes.

Both run a `ThreadingHTTPServer` in a daemon thread; `close()` (or leaving the `with` block)
stops every handler at its next write, so a test never waits on a connection its client gave up.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

_GONE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError, OSError)


@dataclass(frozen=True)
class Seen:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def text(self) -> str:
        """Everything the client sent, as one searchable string."""
        head = "\n".join(f"{k}: {v}" for k, v in self.headers.items())
        return f"{self.method} {self.path}\n{head}\n\n{self.body.decode('utf-8', 'replace')}"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: _Base


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        seen = Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        with contextlib.suppress(*_GONE):
            self.server.owner.answer(self, seen)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve


class _Base:
    """A threaded HTTP server on a free local port; subclasses implement `answer`."""

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> _Base:
        self._thread.start()
        return self

    def close(self) -> None:
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def answer(self, handler: _Handler, seen: Seen) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


def completion(content: str, model: str = "attacker") -> dict[str, Any]:
    """A complete, non-streamed chat-completions reply."""
    return {
        "id": "chatcmpl-x",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def chunk(content: str, model: str = "hostile") -> bytes:
    """One SSE event of a streamed reply carrying `content`."""
    payload = {
        "id": "chatcmpl-x",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}],
    }
    return f"data: {json.dumps(payload)}\n\n".encode()


def _send_json(handler: _Handler, status: int, payload: Any) -> None:
    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


class RecordingServer(_Base):
    """Records every request; answers chat completions with a harmless reply, anything else
    with an empty JSON object."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._seen: list[Seen] = []

    @property
    def requests(self) -> list[Seen]:
        with self._lock:
            return list(self._seen)

    def answer(self, handler: _Handler, seen: Seen) -> None:
        with self._lock:
            self._seen.append(seen)
        reply = completion("Final Answer: leaked") if "chat/completions" in seen.path else {}
        _send_json(handler, 200, reply)


Mode = Literal["trickle", "endless", "huge"]


class MisbehavingModel(_Base):
    """A chat-completions endpoint that never gives a usable reply in time (see the module
    docstring). `requests` counts the chat requests it received."""

    def __init__(
        self,
        mode: Mode,
        *,
        interval: float = 0.3,
        piece: str = "lorem ipsum ",
        size: int = 5_000_000,
    ) -> None:
        super().__init__()
        self.mode = mode
        self.interval = interval
        self.piece = piece
        self.size = size
        self._lock = threading.Lock()
        self._requests = 0

    @property
    def requests(self) -> int:
        with self._lock:
            return self._requests

    def answer(self, handler: _Handler, seen: Seen) -> None:
        if "chat/completions" not in seen.path:
            _send_json(handler, 404, {"error": {"message": "not found"}})
            return
        with self._lock:
            self._requests += 1
        if self.mode == "huge":
            _send_json(handler, 200, completion("x" * self.size, "hostile"))
            return
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Connection", "close")  # no length, no chunking: the body never ends
        handler.end_headers()
        handler.wfile.flush()
        if self.mode == "trickle":
            self._trickle(handler)
        else:
            self._endless(handler)

    def _bytes(self) -> Iterator[bytes]:
        while True:
            yield from (bytes([b]) for b in chunk(self.piece))

    def _trickle(self, handler: _Handler) -> None:
        for byte in self._bytes():
            if self.stopping.wait(self.interval):
                return
            handler.wfile.write(byte)
            handler.wfile.flush()

    def _endless(self, handler: _Handler) -> None:
        event = chunk(self.piece)
        while not self.stopping.wait(self.interval):
            handler.wfile.write(event)
            handler.wfile.flush()
