"""The fenced blocks of the README and the docs site, with the marks the docs tests read.

Every example in the docs runs as a test, or carries a mark that says why it cannot run here.
A mark is an HTML comment right before the fence (a reader of the rendered page never sees it):

    <!-- docs-test skip: needs Docker (langgraph build runs docker build) -->
    <!-- docs-test exit: 2 -->
    <!-- docs-test replies:
    {"content": "Thought: ...\\nFinal Answer: 391"}
    {"tool_calls": [{"name": "calculator", "arguments": {"expression": "17 * 23"}}]}
    -->

* `skip: <reason>`: the block is not run; the reason is required.
* `replies:` then one JSON object a line: what the scripted OpenAI-compatible server answers,
  in order (`ScriptedOpenAIServer.from_json`'s format). Every reply must be consumed.
* `exit: N`: the exit status the block's last shell command must end with (default 0).

Python fences follow pytest-markdown-docs's options (so either runner reads them): `notest`
(with a `skip:` mark giving the reason), `continuation`, and `fixture:docs_model` for a block that
talks to the model (the scripted server, with the block's `replies`). In docs/ the options go in
pymdownx.superfences's brace form, ```` ``` {.python fixture:docs_model} ````, which the site
renders; in the README (rendered by GitHub) in the plain form,
```` ```python fixture:docs_model ````.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt

REPO = Path(__file__).resolve().parents[2]
MARK = "docs-test"
PYTHON = frozenset({"py", "python", "python3"})
SHELL = frozenset({"bash", "sh", "shell", "console"})
_COMMENT = re.compile(r"<!--\s*docs-test\b(?P<body>.*?)-->", re.DOTALL)


class MarkError(ValueError):
    """A docs-test mark that cannot be read; the message names the file and line."""


@dataclass(frozen=True)
class Block:
    """One fenced block and its mark."""

    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    options: frozenset[str]
    code: str
    skip: str | None = None
    replies: tuple[dict[str, Any], ...] = ()
    exit: int = 0
    marked: bool = field(default=False, compare=False)

    @property
    def where(self) -> str:
        """`docs/page.md:12`, as a test id and in failure messages."""
        return f"{shown_path(self.path)}:{self.line}"


def shown_path(path: Path) -> str:
    """A doc file's path as a reader names it: from the repository's root when inside it."""
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def doc_files() -> list[Path]:
    """The README and every page of the site."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def fence_info(info: str) -> tuple[str, frozenset[str]]:
    """The language and options of a fence's info string, plain (`python notest`) or in
    superfences's brace form (`{.python notest}`), as pytest-markdown-docs reads them."""
    info = info.strip()
    if info.startswith("{"):
        parts = info.strip("{}").split()
        lang = next((p[1:] for p in parts if p.startswith(".")), "")
        return lang, frozenset(p for p in parts if not p.startswith("."))
    parts = info.split()
    return (parts[0] if parts else ""), frozenset(parts[1:])


def parse_mark(body: str, where: str) -> dict[str, Any]:
    """The fields of one `docs-test` comment (see the module docstring)."""
    mark: dict[str, Any] = {}
    replies: list[dict[str, Any]] | None = None
    for raw in body.splitlines():
        text = raw.strip()
        if not text:
            continue
        if text.startswith("skip:"):
            reason = text.removeprefix("skip:").strip()
            if not reason:
                raise MarkError(f"{where}: a skip mark needs a reason after 'skip:'.")
            mark["skip"] = reason
        elif text.startswith("exit:"):
            mark["exit"] = int(text.removeprefix("exit:").strip())
        elif text.startswith("replies:"):
            replies = []
            if text.removeprefix("replies:").strip():
                raise MarkError(f"{where}: put each reply on a line of its own after 'replies:'.")
        elif text.startswith("{") and replies is not None:
            try:
                replies.append(json.loads(text))
            except json.JSONDecodeError as exc:
                problem = f"{where}: a reply is not one JSON object a line ({exc})."
                raise MarkError(problem) from None
        else:
            raise MarkError(f"{where}: unknown docs-test mark {text!r} (skip:, exit:, replies:).")
    if replies is not None:
        mark["replies"] = tuple(replies)
    return mark


@cache
def blocks(path: Path) -> tuple[Block, ...]:
    """Every fenced block of a Markdown file, each with the mark right before it."""
    tokens = MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8"))
    found: list[Block] = []
    pending: dict[str, Any] | None = None
    for token in tokens:
        if token.type == "html_block" and token.map:
            match = _COMMENT.search(token.content)
            if match:
                where = f"{shown_path(path)}:{token.map[0] + 1}"
                pending = parse_mark(match.group("body"), where)
                continue
        if token.type == "fence" and token.map:
            lang, options = fence_info(token.info)
            mark = pending or {}
            found.append(
                Block(
                    path=path,
                    line=token.map[0] + 1,
                    lang=lang,
                    options=options,
                    code=token.content,
                    skip=mark.get("skip"),
                    replies=mark.get("replies", ()),
                    exit=mark.get("exit", 0),
                    marked=pending is not None,
                )
            )
        if token.type not in ("html_block",) or not token.content.strip().startswith("<!--"):
            pending = None  # a mark belongs to the very next block only
    return tuple(found)


def all_blocks(langs: frozenset[str]) -> list[Block]:
    """The blocks of every doc file in one of these languages."""
    return [b for path in doc_files() for b in blocks(path) if b.lang in langs]


def block_at(path: Path, line: int) -> Block:
    """The block whose opening fence is on `line` (1-based) of `path`."""
    for block in blocks(path):
        if block.line == line:
            return block
    raise MarkError(f"{path}:{line}: no fenced block starts on this line.")
