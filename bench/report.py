"""Output of the benchmarks: Markdown tables ready for a README, number formats, and the JSON
record of a run with what its numbers depend on (versions, load, the exact `graph/` sources).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.timing import Sample

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A Markdown table (right-aligned numbers), ready for a README."""
    text_rows = [[_cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in text_rows)) for i, h in enumerate(headers)]
    numeric = [all(_numberish(r[i]) for r in text_rows) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        parts = [
            c.rjust(w) if n else c.ljust(w) for c, w, n in zip(cells, widths, numeric, strict=True)
        ]
        return "| " + " | ".join(parts) + " |"

    rule = (
        "|"
        + "|".join(
            ("-" * (w + 1) + ":") if n else "-" * (w + 2)
            for w, n in zip(widths, numeric, strict=True)
        )
        + "|"
    )
    return "\n".join([line(headers), rule, *(line(r) for r in text_rows)])


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 100 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _numberish(text: str) -> bool:
    stripped = text.replace(",", "").replace("×", "").replace("%", "").strip()
    try:
        float(stripped)
    except ValueError:
        return stripped in ("", "n/a", "-", "nan")
    return True


def percent(value: float) -> str:
    return "-" if value != value else f"{value * 100:.0f}%"


def ratio(value: float | None) -> str:
    """`0.95×`, or `-` where there is nothing to compare with."""
    return "-" if value is None else f"{value:.2f}×"


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.2f} {unit}"
        n /= 1000
    return f"{n:.2f} GB"


def environment() -> dict[str, Any]:
    """What the numbers depend on: versions, cores, load, and the exact graph/ sources."""
    digest = hashlib.sha1()
    for path in sorted((ROOT / "graph").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        digest.update(name.encode() + b"\0" + path.read_bytes())
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        head = ""
    versions = {}
    for package in ("langgraph", "langgraph-prebuilt", "langgraph-checkpoint", "langchain-core"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "git_head": head,
        "graph_sources_sha1": digest.hexdigest()[:12],
        "versions": versions,
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def write_json(name: str, data: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {"benchmark": name, "environment": environment(), **data}
    path.write_text(json.dumps(payload, indent=2, default=_json_default) + "\n")
    return path


def _json_default(value: Any) -> Any:
    if isinstance(value, Sample):
        return asdict(value)
    return str(value)
