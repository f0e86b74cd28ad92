"""The managed llama.cpp server: one subprocess per GGUF file, started on demand, always stopped
(for a GGUF served to other processes, and the eval's server mode). The process's one embedded
model, which runs in this process, is `shared.local_server()`.

The server is `python -m llama_cpp.server` (through `server_process.py`) in its own process
group on a free loopback port. It never outlives this process: `stop()` (context exit,
`atexit`, a failed start) sends SIGTERM to the group and SIGKILL after a grace period; since
the group does not get the terminal's Ctrl-C, a watchdog inside the server also exits it as
soon as its stdin (a pipe only this process writes) closes, which happens however this process
ends, even by SIGKILL.

Choices measured on a 2-core machine:

- `--logits_all False`: the server's default keeps logits for every prompt token, about 1 GB
  per request with Gemma's 262k-token vocabulary (a 4 s request took 27 s).
- `OMP_WAIT_POLICY=PASSIVE`: with other busy processes, spinning OpenMP workers made token
  generation 5-8 times slower.
- plain CPU buffers for the weights (see `server_process.py`: AMX buffers crash on VMs).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from graph.models.local import server_process
from graph.models.local.model_file import (
    LocalModelError,
    Progress,
    gguf_metadata,
    model_path,
    stderr_progress,
)
from graph.models.local.sizing import DEFAULT_CONTEXT, cpu_count

MODEL_NAME = "local"  # the name the agent's model setting uses, and the server's model alias
DEFAULT_STARTUP_TIMEOUT = 180.0
STOP_GRACE = 5.0
GEMMA_FORMAT = server_process.GEMMA_FORMAT


def chat_format_for(path: str | os.PathLike[str]) -> str | None:
    """The chat format to start the server with: None when the GGUF carries its own chat
    template (llama.cpp uses it); else one chosen by architecture (Gemma's own turns for the
    packaged Gemma 3 GGUF, which has no template)."""
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
            server_process.BOOTSTRAP,
            str(Path(server_process.__file__).resolve()),
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

    def start(self) -> LocalServer:
        """Start the server and wait until it answers; on any failure nothing is left running."""
        with self._lock:
            if self.running:
                return self
            if importlib.util.find_spec(server_process.SERVER_MODULE.split(".")[0]) is None:
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
