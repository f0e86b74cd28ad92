"""How big the embedded model's own helpers are, against what issue 25 counted before it.

Issue 25 counted about 2,100 lines of code that stood between the small model and the tools:
graph/models/local's prompt, examples, selection and copying modules, the text protocol's
observations and gbnf_match, and tools' math_words, chinese_numerals, number_mentions,
knowledge_synonyms and zone_names, at the commit before that work (`BEFORE`). The files that
hold those roles now are `NOW`. Library code does not count, and neither does data (the worked
records in graph/models/local/records.toml are counted apart).

Two measures: lines as `wc -l` counts them, and code lines (without docstrings, comments and
blank lines), so that a figure cannot move by rewording a docstring.

    uv run python bench/crutch_lines.py
"""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEFORE_COMMIT = "d147cbb^"  # the commit before issue 25's rewrite of the embedded model
BEFORE = (
    "graph/models/local/prompt.py",
    "graph/models/local/examples.py",
    "graph/models/local/selection.py",
    "graph/models/local/copying.py",
    "graph/protocols/text/observations.py",
    "graph/protocols/text/gbnf_match.py",
    "tools/math_words.py",
    "tools/chinese_numerals.py",
    "tools/number_mentions.py",
    "tools/knowledge_synonyms.py",
    "tools/zone_names.py",
)
NOW = (
    "graph/models/local/prompt.py",
    "graph/models/local/builtin_hints.py",
    "graph/models/local/constrain.py",
    "graph/models/local/hints.py",
    "graph/protocols/text/observations.py",
    "tools/math_words.py",
    "tools/zone_names.py",
)
DATA = ("graph/models/local/records.toml",)


def measure(source: str) -> tuple[int, int]:
    """(lines, code lines): code lines leave out docstrings, comment lines and blank lines."""
    lines = source.splitlines()
    in_docstrings: set[int] = set()  # line numbers, so a blank line inside one counts once
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                in_docstrings.update(range(body[0].lineno, body[0].end_lineno + 1))
    code = [
        line
        for number, line in enumerate(lines, start=1)
        if number not in in_docstrings and line.strip() and not line.strip().startswith("#")
    ]
    return len(lines), len(code)


def before(path: str) -> str:
    return subprocess.run(
        ["git", "show", f"{BEFORE_COMMIT}:{path}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def main() -> int:
    rows = [("before", path, *measure(before(path))) for path in BEFORE]
    rows += [("now", path, *measure((ROOT / path).read_text("utf-8"))) for path in NOW]
    print("| when | file | lines | code lines |\n|---|---|---:|---:|")
    for when, path, lines, code in rows:
        print(f"| {when} | `{path}` | {lines} | {code} |")
    lines_before, code_before = (sum(r[i] for r in rows if r[0] == "before") for i in (2, 3))
    lines_now, code_now = (sum(r[i] for r in rows if r[0] == "now") for i in (2, 3))
    print(
        f"\nlines: {lines_now} of {lines_before} ({lines_now / lines_before:.1%}); "
        f"code lines: {code_now} of {code_before} ({code_now / code_before:.1%})"
    )
    data = sum(len((ROOT / path).read_text("utf-8").splitlines()) for path in DATA)
    print(f"data beside them (worked records): {data} lines in {', '.join(DATA)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
