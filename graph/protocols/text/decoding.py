"""When a request carries the grammar, and how: constrained decoding is an option of the
request, separate from building the grammar itself (`grammar`)."""

from __future__ import annotations

from typing import Any

CONSTRAINED_DECODING_VALUES: tuple[str, ...] = ("auto", "on", "off")


def use_grammar(setting: str, *, protocol: str, local: bool) -> bool:
    """Whether a request carries the grammar: only text-protocol requests ever do; `auto` sends
    it to the embedded llama.cpp server only (another endpoint may reject the field), `on` to
    any endpoint (one that understands `grammar`, e.g. your own llama.cpp server), `off` never."""
    if setting not in CONSTRAINED_DECODING_VALUES:
        raise ValueError(
            f"constrained_decoding must be one of {', '.join(CONSTRAINED_DECODING_VALUES)}, "
            f"got {setting!r}"
        )
    if protocol != "text" or setting == "off":
        return False
    return setting == "on" or local


def request_options(grammar: str) -> dict[str, Any]:
    """Keyword arguments for `model.bind(...)` that put the grammar in the request body."""
    return {"extra_body": {"grammar": grammar}}
