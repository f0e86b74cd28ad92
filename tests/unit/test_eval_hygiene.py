"""No evaluation question leaks into what is built or tested.

The embedded model's accuracy figures mean something only if no question of an evaluation set
(bench/data/*.jsonl) is written into the code, its worked records, its comments, the tests or
the docs: a record that quotes a question teaches the model that very answer. The check is on
normalised text (case, spacing and punctuation folded), so a copy with other quotes or line
breaks is caught too. A failure names the file and the set, never the question.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "bench" / "data"
SEARCHED = ("graph", "tools", "tests", "docs", "examples", "README.md", "CHANGELOG.md")
MIN_CHARS = 24  # a shorter question ("What is 19 * 27?") is too generic to call a leak


def _folded(text: str) -> str:
    return " ".join(re.sub(r"[^\w\u3400-\u9fff]+", " ", text.casefold()).split())


def _questions() -> dict[str, str]:
    """Folded question -> the set it comes from."""
    found = {}
    for path in sorted(DATA.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                question = _folded(json.loads(line)["question"])
                if len(question) >= MIN_CHARS:
                    found[question] = path.name
    return found


def _files() -> list[Path]:
    files: list[Path] = []
    for name in SEARCHED:
        path = ROOT / name
        files += [path] if path.is_file() else sorted(path.rglob("*"))
    kinds = (".py", ".md", ".json", ".txt", ".toml")
    return [f for f in files if f.is_file() and f.suffix in kinds]


def test_the_eval_sets_are_read() -> None:
    assert len(_questions()) > 200  # every set, so the check below checks something


def test_no_eval_question_is_quoted_outside_the_eval_data() -> None:
    questions = _questions()
    leaks = []
    for path in _files():
        text = _folded(path.read_text(encoding="utf-8", errors="replace"))
        leaks += [
            f"{path.relative_to(ROOT)} quotes a question of {source}"
            for question, source in questions.items()
            if question in text
        ]
    assert not leaks, "\n".join(leaks)
