"""Registry names for MCP tools: each keeps its own name unless two (or a reserved name, such as
a built-in tool's) clash, in which case the clashing ones are prefixed with their server's name.
Every name is a valid function name (`^[a-zA-Z0-9_-]{1,64}$`), which OpenAI-compatible
endpoints require and the text protocol's `Action:` line relies on.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

VALID_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_INVALID = re.compile(r"[^a-zA-Z0-9_-]+")


def clean(name: str, limit: int = 64) -> str:
    """`name` with every run of other characters turned into `_`, cut to `limit`."""
    return _INVALID.sub("_", name).strip("_")[:limit] or "tool"


def assign_names(pairs: Sequence[tuple[str, str]], reserved: Iterable[str] = ()) -> list[str]:
    """One unique registry name per (server, tool) pair, in order."""
    taken = set(reserved)
    bare = [clean(tool) for _, tool in pairs]
    counts = Counter(bare)
    names: list[str | None] = [
        name if counts[name] == 1 and name not in taken else None for name in bare
    ]
    taken.update(name for name in names if name)
    for i, ((server, tool), name) in enumerate(zip(pairs, names, strict=True)):
        if name is None:
            names[i] = _unique(clean(f"{server}_{tool}"), taken)
            taken.add(names[i])  # type: ignore[arg-type]
    return [name for name in names if name]


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 2
    while candidate in taken:
        suffix = f"_{n}"
        candidate, n = f"{name[: 64 - len(suffix)]}{suffix}", n + 1
    return candidate
