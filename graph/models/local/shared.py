"""The process-wide embedded model: one `LocalEngine` per process, started on first use and
shared by every graph and command of the process (a second load would cost a second copy of the
weights and another second or two)."""

from __future__ import annotations

import threading
from typing import Any

from graph.models.local.engine import LocalEngine
from graph.models.local.model_file import Progress, stderr_progress

_shared: LocalEngine | None = None
_shared_lock = threading.Lock()


def local_server(progress: Progress | None = stderr_progress, **options: Any) -> Any:
    """The process-wide embedded model: started on first call, reused afterwards (restarted if
    it stopped), stopped at interpreter exit. It runs in this process (`LocalEngine`), on every
    llama.cpp build (with AMX kernels too: see `native.py`); its `base_url` is what
    `chat_model` takes. `options` (the engine's arguments) apply to the first start."""
    global _shared
    with _shared_lock:
        if _shared is not None and _shared.running:
            return _shared
        if _shared is None:
            _shared = LocalEngine(progress=progress, **options)
        elif progress is not None:
            _shared.progress = progress
        return _shared.start()


def stop_local_server() -> None:
    """Stop the shared model now (it is also stopped at exit)."""
    global _shared
    with _shared_lock:
        if _shared is not None:
            _shared.stop()
            _shared = None
