"""What runs inside the llama.cpp server process, before `python -m llama_cpp.server` starts.

`LocalServer` starts `python -c BOOTSTRAP <this file> <server arguments>`: the file is loaded
by path, so it must not import the `graph` package (nor anything but the standard library and
llama_cpp). It adds three things llama_cpp.server does not do by itself:

- a watchdog thread that exits the process as soon as its stdin closes: stdin is a pipe whose
  only writer is the owning process, so the server never outlives its owner, however the owner
  ends (even SIGKILL, which no `atexit` sees);
- no "extra buffer types" for the weights (`--extra_buffers off`, the default): llama.cpp built
  natively on a CPU that advertises AMX puts the weights in AMX buffers, and on virtual
  machines that advertise AMX without enabling it every request dies with a general
  protection fault in `ldtilecfg` (seen on this project's 2-core CI machines). The plain CPU
  path is what the small models need anyway;
- a Gemma chat format for GGUFs without a chat template (the packaged Gemma 3 270M has none;
  llama-cpp-python would fall back to llama-2's format, and its own "gemma" format drops the
  system message). Only the `chat` prompt mode uses it; completion mode sends raw text.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from typing import Any

SERVER_MODULE = "llama_cpp.server"
GEMMA_FORMAT = "react-agent-gemma"

BOOTSTRAP = """\
import importlib.util, sys
spec = importlib.util.spec_from_file_location("react_agent_server_process", sys.argv[1])
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module
spec.loader.exec_module(module)
module.serve(sys.argv[2:])
"""


def serve(argv: list[str]) -> None:  # pragma: no cover - runs in the server process
    import runpy

    def watch() -> None:
        try:
            while sys.stdin.buffer.read(1):
                pass
        finally:
            os._exit(0)  # the owner is gone: no orphan server

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()
    argv = list(argv)
    extra_buffers = "off"
    if "--extra_buffers" in argv:
        at = argv.index("--extra_buffers")
        extra_buffers = argv[at + 1] if at + 1 < len(argv) else "off"
        del argv[at : at + 2]
    if extra_buffers != "on":
        _without_extra_buffers()
    _register_gemma_format()
    sys.argv = [SERVER_MODULE, *argv]
    runpy.run_module(SERVER_MODULE, run_name="__main__", alter_sys=True)


def _without_extra_buffers() -> None:  # pragma: no cover - runs in the server process
    """Every model this process loads keeps its weights in plain CPU buffers."""
    import llama_cpp.llama_cpp as low_level

    default_params = low_level.llama_model_default_params

    def params() -> Any:
        value = default_params()
        if hasattr(value, "use_extra_bufts"):
            value.use_extra_bufts = False
        return value

    low_level.llama_model_default_params = params


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


def _register_gemma_format() -> None:  # pragma: no cover - runs in the server process
    from llama_cpp import llama_chat_format

    @llama_chat_format.register_chat_format(GEMMA_FORMAT)
    def _gemma(messages: Any, **_kwargs: Any) -> Any:
        return llama_chat_format.ChatFormatterResponse(
            prompt=gemma_prompt(messages), stop="<end_of_turn>"
        )
