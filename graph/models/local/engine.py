"""The embedded model in this process: the GGUF file loaded by llama.cpp (through its C API,
`native.py`), one per process, with the worked records' evaluation saved once per machine.

Why in process and not llama.cpp's server: a server is a second interpreter that imports
FastAPI and uvicorn and loads the model (about a second on two cores) before the first request
can be sent, and its KV cache can only be filled by sending the records (about 2.6 s of
evaluation) again in every process. In process the model loads in a background thread while
the command imports LangChain (ctypes releases the GIL), and the records' KV state is restored
from disk (`prefix_cache.py`, about 0.05 s) instead of evaluated. Each call then evaluates only
its new tokens, and `chat` keeps the one warm model for all its turns.

What it keeps from the server's set-up, measured on two cores: `OMP_WAIT_POLICY=PASSIVE` unless
set (spinning OpenMP workers made generation 5-8 times slower beside other busy processes),
logits of the last token only (Gemma's 262k-token vocabulary: about 1 GB of them per request
otherwise), a full-size sliding-window cache (without it llama.cpp cannot cut the KV cache back
to a shared prefix, and every call would evaluate the whole prompt again).

Where llama.cpp has AMX kernels the weights stay in plain CPU buffers (`native.py` says why).
A call's deadline is checked after every token, never a signal raised into llama.cpp.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graph.models.local import prefix_cache
from graph.models.local.model_file import (
    LocalModelError,
    Progress,
    model_path,
    stderr_progress,
)
from graph.models.local.native import (
    NativeModel,
    amx_kernels,
    import_llama,
    log_into,
)
from graph.models.local.sizing import DEFAULT_CONTEXT, cpu_count

IN_PROCESS_URL = "in-process://embedded"  # the base URL of the engine of this process
TIMES_VARIABLE = "REACT_AGENT_LOCAL_TIMES"


@dataclass(frozen=True)
class Call:
    """What one call cost: the prompt's tokens, how many of them were evaluated (the rest were
    in the KV cache already), the tokens written, and the seconds."""

    prompt_tokens: int
    evaluated: int
    written: int
    seconds: float


class LocalEngine:
    """One GGUF model loaded in this process; calls take turns (a lock)."""

    def __init__(
        self,
        model: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = DEFAULT_CONTEXT,
        threads: int | None = None,
        progress: Progress | None = stderr_progress,
        save_prefix: bool = True,
    ) -> None:
        self.model = Path(model) if model is not None else None
        self.n_ctx = n_ctx
        self.threads = threads or cpu_count()
        self.progress = progress
        self.save_prefix = save_prefix
        self.times = os.environ.get(TIMES_VARIABLE, "").strip() not in ("", "0")
        self.startup_seconds: float | None = None
        self.calls: list[Call] = []
        self.log: deque[str] = deque(maxlen=40)  # llama.cpp's own messages, for errors
        self._llm: Any = None
        self._lock = threading.RLock()
        self._llama: Any = None  # the llama_cpp module, once imported

    @property
    def base_url(self) -> str:
        return IN_PROCESS_URL

    @property
    def running(self) -> bool:
        return self._llm is not None

    def start(self) -> LocalEngine:
        """Load the model (once); raises LocalModelError with the reason."""
        with self._lock:
            if self._llm is not None:
                return self
            started = time.monotonic()
            llama = self._import()
            imported = time.monotonic()
            if self.model is None:
                self.model = model_path(self.progress)
            try:
                self._llm = NativeModel(
                    llama,
                    self.model,
                    n_ctx=self.n_ctx,
                    threads=self.threads,
                    plain_buffers=amx_kernels(llama),
                )
            except Exception as exc:  # llama.cpp says why in its log, not in the error
                detail = "".join(self.log).strip().splitlines()[-3:]
                raise LocalModelError(
                    f"llama.cpp could not load {self.model}: {exc}"
                    + (f" ({' / '.join(detail)})" if detail else "")
                ) from None
            atexit.register(self.stop)
            self.startup_seconds = time.monotonic() - started
            born = process_started()
            self._time(
                f"model start: import llama_cpp {imported - started:.2f} s, load the model "
                f"{time.monotonic() - imported:.2f} s"
                + (f" (process started at {born:.3f})" if born is not None else "")
            )
            return self

    def _import(self) -> Any:
        try:
            llama_cpp = import_llama()
        except ImportError as exc:
            raise LocalModelError(
                f"llama.cpp is not installed ({exc}): install the local extra "
                "(uv sync --extra local)."
            ) from None
        # llama.cpp's log goes to a bounded buffer, shown when a load fails, not to stderr.
        log_into(llama_cpp, self.log)
        self._llama = llama_cpp
        return llama_cpp

    def stop(self) -> None:
        """Free the model (also at exit); idempotent."""
        with self._lock:
            llm, self._llm = self._llm, None
            with contextlib.suppress(Exception):
                atexit.unregister(self.stop)
            if llm is not None:
                with contextlib.suppress(Exception):
                    llm.close()

    # -- the prefix -----------------------------------------------------------------------

    def warm(self, prefix: str) -> None:
        """Make the KV cache begin with `prefix` (the worked records): nothing when it does,
        else restore it from its saved state, else evaluate it and save the state."""
        with self._lock:
            self.start()
            tokens = self.tokens(prefix)  # about a millisecond: checked at every call
            if self._llm.cached(tokens) < len(tokens):
                key, path = self._state_place(prefix)
                if not self._restore(path, key, tokens):
                    self._evaluate(tokens, path, key)

    def _state_place(self, prefix: str) -> tuple[prefix_cache.PrefixKey, Path]:
        llama, llm = self._llama, self._llm
        build = f"{llama.__version__}|{llama.llama_print_system_info().decode(errors='replace')}"
        context = f"n_ctx={llm.n_ctx()}|swa_full=1|logits_all=0|extra_bufts={int(not llm.plain)}"
        key = prefix_cache.PrefixKey.make(self.model, prefix, build, context)
        return key, prefix_cache.state_path(self.model, key)

    def _restore(self, path: Path, key: prefix_cache.PrefixKey, tokens: list[int]) -> bool:
        started = time.monotonic()
        try:
            saved, state = prefix_cache.read_state(path, key)
        except FileNotFoundError:
            return False
        except (OSError, prefix_cache.Refused) as exc:
            self._say(f"ignored {path} ({exc}); evaluating the worked examples again")
            return False
        if saved != tokens:
            self._say(f"ignored {path} (its tokens are not this prompt's); evaluating again")
            return False
        if not self._llm.restore(state, tokens):
            self._say(f"ignored {path} (llama.cpp refused it); evaluating again")
            return False
        self._time(f"prefix restored: {len(tokens)} tokens in {time.monotonic() - started:.2f} s")
        return True

    def _evaluate(self, tokens: list[int], path: Path, key: prefix_cache.PrefixKey) -> None:
        started = time.monotonic()
        evaluated = self._llm.evaluate(tokens)
        seconds = time.monotonic() - started
        self._time(f"prefix evaluated: {evaluated} tokens in {seconds:.2f} s")
        if not self.save_prefix:
            return
        try:
            prefix_cache.write_state(path, key, tokens, self._llm.state())
        except OSError as exc:
            self._say(f"could not save the worked examples' state to {path}: {exc}")
            return
        self._say(
            f"evaluated the worked examples once ({len(tokens)} tokens, {seconds:.1f} s); "
            f"saved for the next runs: {path}"
        )

    def tokens(self, text: str) -> list[int]:
        """The tokens a call evaluates for this text (BOS first, special tokens parsed)."""
        return self._llm.tokenize(text.encode("utf-8"))

    # -- a call -----------------------------------------------------------------------------

    def complete(self, body: dict[str, Any], timeout: float) -> dict[str, Any]:
        """One completion request, in the form llama.cpp's server takes and answers
        (`prompt`, `max_tokens`, `stop`, `grammar`, `temperature`, `repeat_penalty`);
        raises TimeoutError when `timeout` seconds pass first."""
        from graph.models.local.wire import LocalModelRequestError, timeout_error

        deadline = time.monotonic() + timeout
        if not self._lock.acquire(timeout=max(timeout, 0.0)):
            raise timeout_error(timeout)
        try:
            self.start()
            tokens = self.tokens(body["prompt"])
            evaluated = len(tokens) - min(self._llm.cached(tokens), len(tokens) - 1)
            started = time.monotonic()
            try:
                text, written, reason = self._llm.complete(
                    tokens,
                    max_tokens=int(body.get("max_tokens") or 16),
                    stop=body.get("stop") or [],
                    # llama.cpp's server defaults where the request names none
                    temperature=float(body.get("temperature", 0.8)),
                    repeat_penalty=float(body.get("repeat_penalty", 1.1)),
                    grammar=body.get("grammar"),
                    past_deadline=lambda: time.monotonic() > deadline,
                )
            except ValueError as exc:  # a bad grammar, a prompt longer than the context
                message = {"error": {"message": str(exc)}}
                raise LocalModelRequestError(f"HTTP 400: {exc}", 400, message) from None
        finally:
            self._lock.release()
        if time.monotonic() > deadline:
            raise timeout_error(timeout)
        call = Call(len(tokens), evaluated, written, time.monotonic() - started)
        self.calls.append(call)
        self._time(
            f"call: {call.evaluated} of {call.prompt_tokens} prompt tokens evaluated, "
            f"{call.written} written, {call.seconds:.2f} s"
        )
        usage = {
            "prompt_tokens": len(tokens),
            "completion_tokens": written,
            "total_tokens": len(tokens) + written,
            "evaluated_tokens": evaluated,
        }
        choice = {"text": text, "index": 0, "logprobs": None, "finish_reason": reason}
        return {"object": "text_completion", "choices": [choice], "usage": usage}

    # -- what it says -------------------------------------------------------------------------

    def _say(self, message: str) -> None:
        if self.progress is not None:
            with contextlib.suppress(Exception):
                self.progress(message)

    def _time(self, message: str) -> None:
        """A timing line, only when REACT_AGENT_LOCAL_TIMES asks for them (the bench does)."""
        if self.times:
            self._say(f"{message} (at {time.time():.3f})")

    def __repr__(self) -> str:
        state = "loaded" if self.running else "not loaded"
        return f"LocalEngine({self.model}, {state})"


def process_started() -> float | None:
    """When this process started (seconds since the epoch, to a hundredth), for the timing
    lines; None where /proc does not say."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return time.time() - (uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None
