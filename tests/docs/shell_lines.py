"""Reading and running the shell lines of the docs, exactly as written, against test servers.

A reader copies each line into a fresh shell, so each line is run by bash as written. `uv` in
that shell is a stand-in (`uv_shim`) that runs `uv run [--extra NAME] PROGRAM ARGS` with this
test environment's own programs: the environment is already synced, and a test must not resolve
or install anything. `console` blocks show output after each `$ ` line; that output must be what
the command prints, with two allowances: `…` stands for any text, and an id (a checkpoint's
UUID, a thread's hex id) stands for any id of its shape, the real one then replacing it in the
block's later lines (so `replay --checkpoint <an id shown above>` replays the real checkpoint).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from tests.docs.markdown_blocks import Block

# Programs a docs line may run here (after `uv run`); any other needs a skip mark with a reason.
RUNNABLE = frozenset({"react-agent"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_HEX_ID = r"(?<![0-9a-z-])[0-9a-f]{12}(?![0-9a-z-])"
_ID = re.compile(f"{_UUID}|{_HEX_ID}")

UV_SHIM = """#!/bin/sh
# The docs tests' `uv`: runs `uv run [--extra NAME] PROGRAM ARGS` from this environment.
[ "$1" = run ] || { echo "docs tests: only 'uv run' is available here, not 'uv $1'" >&2; exit 97; }
shift
while [ "$1" = --extra ]; do shift 2; done
exec "$@"
"""


@dataclass
class Command:
    """One command line of a block and the output shown under it (console blocks only)."""

    line: str
    shown: list[str] = field(default_factory=list)


def commands(block: Block) -> list[Command]:
    """The command lines of a shell block (continuations joined; comments and blanks left
    out); in a `console` block only the `$ ` lines, each with the output shown under it."""
    found: list[Command] = []
    pending = ""
    for raw in block.code.splitlines():
        if block.lang == "console":
            if raw.startswith("$ "):
                found.append(Command(raw[2:].strip()))
            elif found:
                found[-1].shown.append(raw.rstrip())
            continue
        text = raw.strip()
        if not pending and (not text or text.startswith("#")):
            continue
        if text.endswith("\\"):
            pending += text[:-1] + " "
            continue
        found.append(Command(pending + text))
        pending = ""
    for command in found:  # trailing blank lines of a console block are layout
        while command.shown and not command.shown[-1]:
            command.shown.pop()
    return found


def program(line: str) -> tuple[str | None, str | None]:
    """The program a line runs after `uv run` (None for an `export` line), and a sentence
    saying what is wrong when the line is not written as `uv run ...`."""
    words = shlex.split(line, comments=True)
    if words and words[0] == "export":
        if all(_ASSIGNMENT.match(w) for w in words[1:]):
            return None, None
        return None, f"`{line}` is not a plain `export NAME=value`."
    while words and _ASSIGNMENT.match(words[0]):
        words.pop(0)
    if words[:2] != ["uv", "run"]:
        return None, f"`{line}` does not start with `uv run`: a fresh clone has no other way in."
    rest = words[2:]
    while rest and rest[0] == "--extra":
        rest = rest[2:]
    while rest and rest[0].startswith("-"):
        rest = rest[1:]
    return (rest[0] if rest else None), None


def shown_pattern(shown: str) -> re.Pattern[str]:
    """A shown output line as a pattern: `…` any text, an id any id of its shape."""
    parts = []
    for piece in re.split(f"(…|{_UUID}|{_HEX_ID})", shown):
        if piece == "…":
            parts.append(".*?")
        elif _ID.fullmatch(piece):
            shape = _UUID if "-" in piece else r"[0-9a-f]{12}"
            parts.append(f"({shape})")
        else:
            parts.append(re.escape(piece))
    return re.compile("".join(parts))


def match_output(shown: list[str], printed: list[str], ids: dict[str, str]) -> str | None:
    """Compare what a block shows with what the command printed; learn the real ids into `ids`.
    Returns a sentence naming the first difference, or None."""
    printed = [line.rstrip() for line in printed]
    while printed and not printed[-1]:
        printed.pop()
    if len(shown) != len(printed):
        return f"the block shows {len(shown)} lines of output, the command printed {len(printed)}"
    for want, got in zip(shown, printed, strict=True):
        pattern = shown_pattern(want)
        match = pattern.fullmatch(got)
        if match is None:
            return f"shown {want!r}, printed {got!r}"
        for written, real in zip(_ID.findall(want), match.groups(), strict=True):
            ids.setdefault(written, real)
    return None


def with_real_ids(line: str, ids: dict[str, str]) -> str:
    """The line with each id the block showed replaced by the one the run really made."""
    for written, real in ids.items():
        line = line.replace(written, real)
    return line


def write_shim(folder: Path) -> Path:
    """A folder holding the `uv` stand-in, to put first on PATH."""
    folder.mkdir(parents=True, exist_ok=True)
    shim = folder / "uv"
    shim.write_text(UV_SHIM, encoding="utf-8")
    shim.chmod(0o755)
    return folder
