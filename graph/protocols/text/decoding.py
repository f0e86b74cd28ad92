"""When a request carries the grammar, and how: an option of the request, apart from building
the grammar (`grammar`), so a run that only asks whether to send one builds nothing."""

from __future__ import annotations

from typing import Any

_SETTINGS = ("auto", "on", "off")


def use_grammar(setting: str, *, protocol: str, local: bool) -> bool:
    """Whether a request carries the grammar: only text-protocol requests ever do; `auto` sends
    it to the embedded llama.cpp server only (another endpoint may reject the field), `on` to
    any endpoint (one that understands `grammar`, e.g. your own llama.cpp server), `off` never."""
    if setting not in _SETTINGS:
        raise ValueError(
            f"constrained_decoding must be one of {', '.join(_SETTINGS)}, got {setting!r}"
        )
    return protocol == "text" and (setting == "on" or (setting == "auto" and local))


def request_options(grammar: str) -> dict[str, Any]:
    """Keyword arguments for `model.bind(...)` that put the grammar in the request body."""
    return {"extra_body": {"grammar": grammar}}
