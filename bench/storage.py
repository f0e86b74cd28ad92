"""Goal 2: checkpoint bytes stored per run, ours vs the prebuilt agent, SQLite and PostgreSQL.

One run per (saver, agent, N): N iterations of one tool call, each observation a distinct
2,000-character text (incompressible for PostgreSQL's TOAST), then the answer, on a fresh thread
that is deleted afterwards. Measured from the saver's own tables for that thread id:

- SQLite: `checkpoints` (length of `checkpoint` + `metadata` blobs) + `writes` (`value` blobs);
- PostgreSQL: `checkpoints` + `checkpoint_blobs` + `checkpoint_writes`, `sum(pg_column_size(t.*))`
  (what the rows take, after TOAST compression; the raw payload `octet_length` is in the JSON).

Then, for our agent at the largest N on SQLite: `get_state_history` returns every checkpoint,
`get_state` at the middle checkpoint has the expected messages, and a replay from there ends
like the original run. Writes `bench/results/storage.json` and `bench/results/storage.png`.

    uv run --with matplotlib python bench/storage.py [--quick] [--no-postgres]
"""

from __future__ import annotations

import argparse
import math
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (
    OBSERVATION_CHARS,
    POSTGRES_URL,
    RESULTS,
    BenchModel,
    build_ours,
    build_prebuilt,
    check_run,
    fetch_tool,
    human_bytes,
    inputs,
    loop_policy,
    new_thread,
    ratio,
    run_config,
    table,
    write_json,
)

# (label, agent, protocol, saver): "plain" is LangGraph's saver with its default serializer;
# "project" is the saver our command line opens (`graph.persistence.savers.open_saver`, whatever
# serializer it configures, e.g. compression), used by both agents.
VARIANTS = [
    ("prebuilt native", "prebuilt", "native", "plain"),
    ("ours native", "ours", "native", "plain"),
    ("ours text", "ours", "text", "plain"),
    ("prebuilt native · project saver", "prebuilt", "native", "project"),
    ("ours native · project saver", "ours", "native", "project"),
]
TARGET_TIMES_RAW = 3.0  # goal: at N = 50, stored bytes ≤ 3 × the raw observation bytes


# -- measuring the savers' tables -----------------------------------------------------------
def sqlite_bytes(conn: sqlite3.Connection, thread_id: str) -> dict[str, int]:
    checkpoints, checkpoint_bytes, metadata_bytes = conn.execute(
        "select count(*), coalesce(sum(length(checkpoint)), 0), "
        "coalesce(sum(length(metadata)), 0) from checkpoints where thread_id = ?",
        (thread_id,),
    ).fetchone()
    writes, write_bytes = conn.execute(
        "select count(*), coalesce(sum(length(value)), 0) from writes where thread_id = ?",
        (thread_id,),
    ).fetchone()
    return {
        "checkpoint_rows": checkpoints,
        "write_rows": writes,
        "checkpoint_bytes": checkpoint_bytes,
        "metadata_bytes": metadata_bytes,
        "write_bytes": write_bytes,
        "stored_bytes": checkpoint_bytes + metadata_bytes + write_bytes,
    }


def sqlite_breakdown(conn: sqlite3.Connection, thread_id: str) -> dict[str, int]:
    """Where the bytes go: checkpoint and metadata blobs, and the writes per channel."""
    out = dict(
        zip(
            ("checkpoint blobs", "metadata blobs"),
            conn.execute(
                "select coalesce(sum(length(checkpoint)), 0), coalesce(sum(length(metadata)), 0) "
                "from checkpoints where thread_id = ?",
                (thread_id,),
            ).fetchone(),
            strict=True,
        )
    )
    for channel, size in conn.execute(
        "select channel, coalesce(sum(length(value)), 0) from writes where thread_id = ? "
        "group by channel order by 2 desc",
        (thread_id,),
    ).fetchall():
        out[f"writes: {channel}"] = size
    return out


PG_TABLES = {
    "checkpoints": "octet_length(checkpoint::text) + octet_length(metadata::text)",
    "checkpoint_blobs": "coalesce(octet_length(blob), 0)",
    "checkpoint_writes": "octet_length(blob)",
}


def postgres_bytes(conn: Any, thread_id: str) -> dict[str, int]:
    out: dict[str, int] = {"stored_bytes": 0, "raw_bytes": 0}
    for name, raw in PG_TABLES.items():
        rows, stored, payload = conn.execute(
            f"select count(*), coalesce(sum(pg_column_size(t.*)), 0), coalesce(sum({raw}), 0) "
            f"from {name} t where thread_id = %s",
            (thread_id,),
        ).fetchone()
        out[f"{name}_rows"] = rows
        out[f"{name}_bytes"] = int(stored)
        out["stored_bytes"] += int(stored)
        out["raw_bytes"] += int(payload)
    out["checkpoint_rows"] = out["checkpoints_rows"]
    out["write_rows"] = out["checkpoint_writes_rows"]
    return out


@contextmanager
def project_saver(url: str) -> Iterator[Any]:
    """The project's own saver for the URL, or None when it cannot be opened."""
    try:
        from graph.persistence.savers import open_saver

        manager = open_saver(url)
        saver = manager.__enter__()
    except Exception as exc:
        print(f"project saver for {url.split('@')[-1]} unavailable: {exc}")
        yield None
        return
    try:
        yield saver
    finally:
        manager.__exit__(None, None, None)


@contextmanager
def sqlite_store(tmp: Path) -> Iterator[tuple[dict[str, Any], Any]]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = tmp / "storage.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        saver.setup()
        with project_saver(f"sqlite:///{path}") as project:
            yield (
                {"plain": saver, "project": project},
                lambda thread: {
                    **sqlite_bytes(conn, thread),
                    "breakdown": sqlite_breakdown(conn, thread),
                },
            )
    finally:
        conn.close()


@contextmanager
def postgres_store(url: str) -> Iterator[tuple[dict[str, Any], Any]]:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        with psycopg.connect(url, autocommit=True) as conn, project_saver(url) as project:
            yield {"plain": saver, "project": project}, lambda thread: postgres_bytes(conn, thread)


def build(kind: str, protocol: str, n: int, saver: Any) -> Any:
    model = BenchModel(loop_policy(n, protocol))
    if kind == "prebuilt":
        return build_prebuilt(model, [fetch_tool()], checkpointer=saver)
    return build_ours(model, [fetch_tool()], protocol=protocol, checkpointer=saver, iterations=n)


def measure(saver: Any, count: Any, kind: str, protocol: str, n: int) -> dict[str, Any]:
    agent = build(kind, protocol, n, saver)
    thread = new_thread("bench-storage")
    config = run_config(kind, thread)
    started = time.perf_counter()
    out = agent.invoke(inputs(), config)
    run_s = time.perf_counter() - started
    check_run(out, kind, n)
    started = time.perf_counter()
    history = list(agent.get_state_history(config))
    history_s = time.perf_counter() - started
    result = count(thread)
    saver.delete_thread(thread)
    left = count(thread)
    if left["checkpoint_rows"] or left["write_rows"]:
        raise RuntimeError(f"delete_thread left rows for {thread}: {left}")
    raw = n * OBSERVATION_CHARS
    result.update(
        run_s=run_s,
        history_s=history_s,
        history_entries=len(history),
        raw_observation_bytes=raw,
        times_raw=result["stored_bytes"] / raw,
        per_iteration_bytes=result["stored_bytes"] / n,
    )
    return result


# -- history, state and replay at the largest N ----------------------------------------------
def _shape(messages: list[Any]) -> list[tuple[str, str]]:
    return [(m.type, str(m.content)) for m in messages]


def verify_history(saver: Any, conn: sqlite3.Connection, protocol: str, n: int) -> dict[str, Any]:
    """History, state and replay of one of our runs, checked against independent records: the
    saver's table and the requests the model actually received."""
    model = BenchModel(loop_policy(n, protocol), record=True)
    agent = build_ours(model, [fetch_tool()], protocol=protocol, checkpointer=saver, iterations=n)
    thread = new_thread("bench-history")
    config = run_config("ours", thread)
    out = agent.invoke(inputs(), config)
    check_run(out, "ours", n)
    requests = list(model.requests)
    final_messages = out["messages"]
    ids = {
        row[0]
        for row in conn.execute(
            "select checkpoint_id from checkpoints where thread_id = ?", (thread,)
        ).fetchall()
    }
    started = time.perf_counter()
    history = list(agent.get_state_history(config))
    history_s = time.perf_counter() - started
    history_ids = [s.config["configurable"]["checkpoint_id"] for s in history]
    steps = sorted(s.metadata.get("step", -99) for s in history)

    # The middle checkpoint: its conversation is the start of the final one.
    mid = history[len(history) // 2]
    started = time.perf_counter()
    state = agent.get_state(mid.config)
    get_state_s = time.perf_counter() - started
    messages = state.values.get("messages", [])
    prefix = bool(messages) and _shape(messages) == _shape(final_messages[: len(messages)])

    # Checkpoints where `think` runs next, oldest first, against the model's requests in order:
    # the state there must be exactly what the model was sent from it (system prompt aside).
    thinks = sorted(
        (s for s in history if "think" in s.next), key=lambda s: s.metadata.get("step", 0)
    )
    middle_think = thinks[len(thinks) // 2] if thinks else None
    sent = [[m for m in r.messages if m.type != "system"] for r in requests]
    think_count = len(thinks) == len(requests)
    think_messages = think_count and all(
        len(t.values.get("messages", [])) == len(r) for t, r in zip(thinks, sent, strict=True)
    )
    if protocol == "native":  # the text protocol rewrites messages as transcript text
        think_messages = think_messages and all(
            _shape(t.values.get("messages", [])) == _shape(r)
            for t, r in zip(thinks, sent, strict=True)
        )
    mid_think_state = agent.get_state(middle_think.config) if middle_think else None
    mid_think_expected = len(sent[len(thinks) // 2]) if think_count and thinks else None
    mid_think_got = len(mid_think_state.values.get("messages", [])) if mid_think_state else None

    # Message ids: the same checkpoint loaded twice, and against the final state.
    again = agent.get_state(mid.config).values.get("messages", [])
    same_load_ids = [m.id for m in messages] == [m.id for m in again]
    final_ids = [m.id for m in messages] == [m.id for m in final_messages[: len(messages)]]
    unstable = [
        f"{m.type} #{i}"
        for i, (m, f) in enumerate(zip(messages, final_messages, strict=False))
        if m.id != f.id
    ]

    replay = agent.invoke(None, mid.config)  # a fork from the middle checkpoint
    replay_ok = replay.get("status") == "answered" and _shape(replay["messages"]) == _shape(
        final_messages
    )
    saver.delete_thread(thread)
    checks = {
        "get_state_history lists every checkpoint in the table": (
            len(history) == len(ids) and set(history_ids) == ids
        ),
        "steps contiguous": steps == list(range(steps[0], steps[0] + len(steps))),
        "middle checkpoint: messages are the start of the final conversation": prefix,
        "every think checkpoint holds what the model was sent from it": think_messages,
        "middle think checkpoint: expected message count": (
            mid_think_got is not None and mid_think_got == mid_think_expected
        ),
        "message ids: same on two loads of a checkpoint": same_load_ids,
        "message ids: same at the checkpoint as in the final state": final_ids,
        "replay from the middle checkpoint ends like the run": replay_ok,
    }
    return {
        "protocol": protocol,
        "iterations": n,
        "checkpoints_in_table": len(ids),
        "history_entries": len(history),
        "middle_step": state.metadata.get("step"),
        "middle_next": list(mid.next),
        "middle_messages": len(messages),
        "middle_think_step": middle_think.metadata.get("step") if middle_think else None,
        "middle_think_messages": mid_think_got,
        "middle_think_expected_messages": mid_think_expected,
        "final_messages": len(final_messages),
        "model_requests": len(requests),
        "think_checkpoints": len(thinks),
        "messages_with_changed_ids": unstable,
        "history_s": history_s,
        "get_state_s": get_state_s,
        "checks": checks,
        "ok": all(checks.values()),
    }


# -- output -----------------------------------------------------------------------------------
def growth_exponent(points: dict[int, int]) -> float | None:
    """Slope of log(bytes) against log(N) between the smallest and largest N: 1 = linear,
    2 = quadratic."""
    ns = sorted(points)
    if len(ns) < 2 or points[ns[0]] <= 0:
        return None
    return math.log(points[ns[-1]] / points[ns[0]]) / math.log(ns[-1] / ns[0])


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
    styles = {"sqlite": "-", "postgres": "--"}
    looks = {  # colour and marker per variant; line style per saver
        "prebuilt native": ("tab:red", "o"),
        "ours native": ("tab:blue", "o"),
        "ours text": ("tab:green", "^"),
        "prebuilt native · project saver": ("tab:orange", "s"),
        "ours native · project saver": ("tab:purple", "s"),
    }
    series: dict[tuple[str, str], dict[int, int]] = {}
    for r in results:
        series.setdefault((r["saver"], r["variant"]), {})[r["n"]] = r["stored_bytes"]
    for (saver, label), points in series.items():
        ns = sorted(points)
        color, marker = looks.get(label, (None, "o"))
        ax.plot(
            ns,
            [points[n] for n in ns],
            styles.get(saver, "-"),
            marker=marker,
            markersize=5,
            color=color,
            alpha=0.65 if "project" in label else 0.95,
            label=f"{label} · {saver}",
        )
    ns = sorted({r["n"] for r in results})
    ax.plot(ns, [n * OBSERVATION_CHARS for n in ns], ":", color="black", label="raw observations")
    ax.plot(
        ns,
        [TARGET_TIMES_RAW * n * OBSERVATION_CHARS for n in ns],
        ":",
        color="gray",
        label=f"target: {TARGET_TIMES_RAW:g}× raw",
    )
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5, 20, 50])
    parser.add_argument("--quick", action="store_true", help="N = 2 and 5")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--postgres", default=POSTGRES_URL, help="PostgreSQL URL")
    args = parser.parse_args()
    sizes = [2, 5] if args.quick else sorted(args.sizes)
    largest = max(sizes)

    results: list[dict[str, Any]] = []
    verification: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="bench-storage-") as tmp:
        stores = [("sqlite", lambda: sqlite_store(Path(tmp)))]
        if not args.no_postgres:
            stores.append(("postgres", lambda: postgres_store(args.postgres)))
        for saver_name, open_store in stores:
            try:
                with open_store() as (savers_by_kind, count):
                    saver = savers_by_kind["plain"]
                    for n in sizes:
                        for label, kind, protocol, serde in VARIANTS:
                            if savers_by_kind[serde] is None:
                                continue
                            r = measure(savers_by_kind[serde], count, kind, protocol, n)
                            r.update(
                                saver=saver_name,
                                variant=label,
                                agent=kind,
                                protocol=protocol,
                                serde=serde,
                                n=n,
                            )
                            results.append(r)
                            print(
                                f"{saver_name:8} {label:31} N={n:<3} "
                                f"{human_bytes(r['stored_bytes']):>10}  "
                                f"({r['times_raw']:.1f}× raw, run {r['run_s']:.2f} s, "
                                f"history {r['history_s'] * 1000:.0f} ms)",
                                flush=True,
                            )
                    if saver_name == "sqlite":
                        for protocol in ("native", "text"):
                            verification.append(
                                verify_history(saver, saver.conn, protocol, largest)
                            )
            except Exception as exc:
                if saver_name != "postgres":
                    raise
                skipped["postgres"] = f"{type(exc).__name__}: {exc}"
                print(f"PostgreSQL skipped: {skipped['postgres']}")

    by_key = {(r["saver"], r["variant"], r["n"]): r for r in results}
    savers = [s for s in ("sqlite", "postgres") if any(r["saver"] == s for r in results)]
    rows = []
    for saver_name in savers:
        for n in sizes:
            pre = by_key[(saver_name, "prebuilt native", n)]["stored_bytes"]
            ours_native = by_key[(saver_name, "ours native", n)]["stored_bytes"]
            ours_text = by_key[(saver_name, "ours text", n)]["stored_bytes"]
            raw = n * OBSERVATION_CHARS
            rows.append(
                [
                    saver_name,
                    n,
                    human_bytes(raw),
                    human_bytes(pre),
                    human_bytes(ours_native),
                    human_bytes(ours_text),
                    ratio(ours_native / pre),
                    ratio(ours_text / pre),
                    f"{pre / raw:.1f}×",
                    f"{ours_native / raw:.1f}×",
                    f"{ours_text / raw:.1f}×",
                ]
            )
    print()
    print(
        table(
            [
                "saver",
                "N",
                "raw obs",
                "prebuilt",
                "ours native",
                "ours text",
                "native / prebuilt",
                "text / prebuilt",
                "prebuilt × raw",
                "native × raw",
                "text × raw",
            ],
            rows,
        )
    )
    project_rows = []
    for saver_name in savers:
        for n in sizes:
            pre_p = by_key.get((saver_name, "prebuilt native · project saver", n))
            ours_p = by_key.get((saver_name, "ours native · project saver", n))
            if not pre_p or not ours_p:
                continue
            raw = n * OBSERVATION_CHARS
            project_rows.append(
                [
                    saver_name,
                    n,
                    human_bytes(pre_p["stored_bytes"]),
                    human_bytes(ours_p["stored_bytes"]),
                    ratio(ours_p["stored_bytes"] / pre_p["stored_bytes"]),
                    f"{ours_p['stored_bytes'] / raw:.1f}×",
                    ratio(
                        ours_p["stored_bytes"]
                        / by_key[(saver_name, "ours native", n)]["stored_bytes"]
                    ),
                ]
            )
    if project_rows:
        print(
            "\nwith the project's savers (graph.persistence.savers.open_saver, its serializer) for both "
            "agents; the observations are random text, close to the worst case for compression:"
        )
        print(
            table(
                [
                    "saver",
                    "N",
                    "prebuilt",
                    "ours native",
                    "ours / prebuilt",
                    "ours × raw",
                    "vs plain saver",
                ],
                project_rows,
            )
        )
    exponents = []
    for saver_name in savers:
        for label, _kind, _protocol, _serde in VARIANTS:
            points = {
                n: by_key[(saver_name, label, n)]["stored_bytes"]
                for n in sizes
                if (saver_name, label, n) in by_key
            }
            rows_n = by_key.get((saver_name, label, largest))
            if rows_n is None:
                continue
            exponents.append(
                [
                    saver_name,
                    label,
                    f"{growth_exponent(points):.2f}",
                    rows_n["checkpoint_rows"],
                    rows_n["write_rows"],
                    human_bytes(rows_n["per_iteration_bytes"]),
                    f"{rows_n['history_s'] * 1000:.0f}",
                ]
            )
    print()
    print(
        table(
            [
                "saver",
                "agent",
                "growth exponent",
                f"checkpoints @N={largest}",
                f"writes @N={largest}",
                f"bytes/iteration @N={largest}",
                "get_state_history ms",
            ],
            exponents,
        )
    )
    print(
        "\ngrowth exponent: log(bytes) slope against log(N), 1 = linear, 2 = quadratic. "
        f"Target: ours at N = {largest} ≤ {TARGET_TIMES_RAW:g}× raw observation bytes."
    )
    for v in verification:
        status = "OK" if v["ok"] else "FAILED"
        print(
            f"\nhistory check, ours {v['protocol']}, N={v['iterations']}, SQLite: {status} — "
            f"{v['history_entries']} history entries / {v['checkpoints_in_table']} checkpoints "
            f"in the table; middle checkpoint (step {v['middle_step']}, next "
            f"{v['middle_next']}): {v['middle_messages']} messages; middle think checkpoint "
            f"(step {v['middle_think_step']}): {v['middle_think_messages']} messages, expected "
            f"{v['middle_think_expected_messages']} (what the model was sent from it); "
            f"history {v['history_s'] * 1000:.0f} ms, get_state {v['get_state_s'] * 1000:.1f} ms"
        )
        if v["messages_with_changed_ids"]:
            print(
                "  messages whose id differs from the final state: "
                + ", ".join(v["messages_with_changed_ids"])
            )
        for name, ok in v["checks"].items():
            print(f"  {'ok  ' if ok else 'FAIL'} {name}")

    breakdown_rows = []
    pre = by_key.get(("sqlite", "prebuilt native", largest), {}).get("breakdown", {})
    ours = by_key.get(("sqlite", "ours native", largest), {}).get("breakdown", {})
    for part in dict.fromkeys([*ours, *pre]):
        a, b = ours.get(part, 0), pre.get(part, 0)
        if max(a, b) >= largest:  # at least a byte per iteration
            breakdown_rows.append(
                [
                    part,
                    human_bytes(a / largest),
                    human_bytes(b / largest),
                    f"{a / (largest * OBSERVATION_CHARS):.2f}×",
                ]
            )
    if breakdown_rows:
        print(f"\nwhere the bytes go, SQLite, N={largest}, per iteration (native protocol):")
        print(table(["part", "ours", "prebuilt", "ours × raw"], breakdown_rows))

    png = RESULTS / "storage.png"
    plotted = plot(results, png)
    path = write_json(
        "storage",
        {
            "sizes": sizes,
            "observation_chars": OBSERVATION_CHARS,
            "results": results,
            "history_checks": verification,
            "skipped": skipped,
            "plot": str(png) if plotted else None,
        },
    )
    print(f"\nwrote {path}" + (f" and {png}" if plotted else ""))


if __name__ == "__main__":
    main()
