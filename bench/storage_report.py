"""The storage benchmark's tables and plot, from the rows `storage.py` measured.

Each row of `results` is one run: `saver`, `variant`, `n`, `stored_bytes`, and the counts and
parts of `storage_bytes`. Kept apart from the measuring so either can change alone.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from bench.doubles import OBSERVATION_CHARS
from bench.report import human_bytes, ratio, table

TARGET_TIMES_RAW = 3.0  # goal: at N = 50, stored bytes ≤ 3 × the raw observation bytes
Key = tuple[str, str, int]


def growth_exponent(points: dict[int, int]) -> float | None:
    """Slope of log(bytes) against log(N) between the smallest and largest N: 1 = linear,
    2 = quadratic."""
    ns = sorted(points)
    if len(ns) < 2 or points[ns[0]] <= 0:
        return None
    return math.log(points[ns[-1]] / points[ns[0]]) / math.log(ns[-1] / ns[0])


def times_raw(stored: float, n: int) -> str:
    return f"{stored / (n * OBSERVATION_CHARS):.2f}×"


def main_table(by_key: dict[Key, dict[str, Any]], savers: list[str], sizes: list[int]) -> str:
    rows = []
    for saver in savers:
        for n in sizes:
            pre, native, text = (
                by_key[(saver, label, n)]["stored_bytes"]
                for label in ("prebuilt native", "ours native", "ours text")
            )
            rows.append(
                [
                    saver,
                    n,
                    human_bytes(n * OBSERVATION_CHARS),
                    *(human_bytes(b) for b in (pre, native, text)),
                    ratio(native / pre),
                    ratio(text / pre),
                    *(times_raw(b, n) for b in (pre, native, text)),
                ]
            )
    headers = ["saver", "N", "raw obs", "prebuilt", "ours native", "ours text"]
    headers += ["native / prebuilt", "text / prebuilt", "prebuilt × raw", "native × raw"]
    return table([*headers, "text × raw"], rows)


def project_table(by_key: dict[Key, dict[str, Any]], savers: list[str], sizes: list[int]) -> str:
    rows = []
    for saver in savers:
        for n in sizes:
            pre = by_key.get((saver, "prebuilt native · project saver", n))
            ours = by_key.get((saver, "ours native · project saver", n))
            if not pre or not ours:
                continue
            plain = by_key[(saver, "ours native", n)]["stored_bytes"]
            rows.append(
                [
                    saver,
                    n,
                    human_bytes(pre["stored_bytes"]),
                    human_bytes(ours["stored_bytes"]),
                    ratio(ours["stored_bytes"] / pre["stored_bytes"]),
                    times_raw(ours["stored_bytes"], n),
                    ratio(ours["stored_bytes"] / plain),
                ]
            )
    if not rows:
        return ""
    headers = ["saver", "N", "prebuilt", "ours native", "ours / prebuilt", "ours × raw"]
    return table([*headers, "vs stock saver"], rows)


def growth_table(
    by_key: dict[Key, dict[str, Any]], savers: list[str], variants: list[str], sizes: list[int]
) -> str:
    largest = max(sizes)
    rows = []
    for saver in savers:
        for label in variants:
            last = by_key.get((saver, label, largest))
            if last is None:
                continue
            points = {n: by_key[(saver, label, n)]["stored_bytes"] for n in sizes}
            exponent = growth_exponent(points)
            rows.append(
                [
                    saver,
                    label,
                    f"{exponent:.2f}" if exponent is not None else "-",
                    last["checkpoint_rows"],
                    last["write_rows"],
                    human_bytes(last["per_iteration_bytes"]),
                    f"{last['history_s'] * 1000:.0f}",
                ]
            )
    headers = ["saver", "agent", "growth exponent", f"checkpoints @N={largest}"]
    headers += [f"writes @N={largest}", f"bytes/iteration @N={largest}"]
    return table([*headers, "get_state_history ms"], rows)


def parts_table(by_key: dict[Key, dict[str, Any]], saver: str, n: int) -> str:
    """Where the bytes go, per iteration: ours native next to the prebuilt."""
    ours = by_key.get((saver, "ours native", n), {}).get("parts", {})
    pre = by_key.get((saver, "prebuilt native", n), {}).get("parts", {})
    rows = []
    for part in sorted(set(ours) | set(pre), key=lambda p: -ours.get(p, 0)):
        a, b = ours.get(part, 0), pre.get(part, 0)
        if max(a, b) >= n:  # at least a byte per iteration
            rows.append([part, human_bytes(a / n), human_bytes(b / n), times_raw(a, n)])
    total = by_key.get((saver, "ours native", n), {}).get("stored_bytes", 0)
    rows.append(["total", human_bytes(total / n), "", times_raw(total, n)])
    return table(["part", "ours native", "prebuilt", "ours × raw"], rows)


def history_report(check: dict[str, Any]) -> str:
    status = "OK" if check["ok"] else "FAILED"
    lines = [
        f"history check, ours {check['protocol']}, N={check['iterations']}, {check['saver']}: "
        f"{status} — {check['history_entries']} history entries / "
        f"{check['checkpoints_in_table']} checkpoints in the table; middle checkpoint (step "
        f"{check['middle_step']}, next {check['middle_next']}): {check['middle_messages']} "
        f"messages; middle think checkpoint (step {check['middle_think_step']}): "
        f"{check['middle_think_messages']} messages, expected "
        f"{check['middle_think_expected_messages']} (what the model was sent from it); history "
        f"{check['history_s'] * 1000:.0f} ms, get_state {check['get_state_s'] * 1000:.1f} ms"
    ]
    if check["messages_with_changed_ids"]:
        changed = ", ".join(check["messages_with_changed_ids"])
        lines.append(f"  messages whose id differs from the final state: {changed}")
    lines += [f"  {'ok  ' if ok else 'FAIL'} {name}" for name, ok in check["checks"].items()]
    return "\n".join(lines)


LOOKS = {  # colour and marker per variant; line style per saver
    "prebuilt native": ("tab:red", "o"),
    "ours native": ("tab:blue", "o"),
    "ours text": ("tab:green", "^"),
    "prebuilt native · project saver": ("tab:orange", "s"),
    "ours native · project saver": ("tab:purple", "s"),
}


def plot(results: list[dict[str, Any]], path: Path) -> bool:
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed: no plot (uv run --with matplotlib python ...)")
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    fig, ax = plt.subplots(figsize=(10, 5.5))
    series: dict[tuple[str, str], dict[int, int]] = {}
    for r in results:
        series.setdefault((r["saver"], r["variant"]), {})[r["n"]] = r["stored_bytes"]
    for (saver, label), points in series.items():
        ns = sorted(points)
        color, marker = LOOKS.get(label, (None, "o"))
        ax.plot(
            ns,
            [points[n] for n in ns],
            "--" if saver == "postgres" else "-",
            marker=marker,
            markersize=5,
            color=color,
            alpha=0.65 if "project" in label else 0.95,
            label=f"{label} · {saver}",
        )
    ns = sorted({r["n"] for r in results})
    raw = [n * OBSERVATION_CHARS for n in ns]
    ax.plot(ns, raw, ":", color="black", label="raw observations")
    target = [TARGET_TIMES_RAW * b for b in raw]
    ax.plot(ns, target, ":", color="gray", label=f"target: {TARGET_TIMES_RAW:g}× raw")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("iterations per run (N), 2,000-character observations")
    ax.set_ylabel("bytes stored per run")
    ax.set_title("Checkpoint storage per run (log-log: slope 1 = linear, 2 = quadratic)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True
