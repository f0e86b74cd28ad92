"""Goal 2: checkpoint bytes stored per run, ours vs the prebuilt agent, SQLite and PostgreSQL.

One run per (saver, agent, N): N iterations of one tool call, each observation a distinct
2,000-character text (incompressible for PostgreSQL's TOAST), then the answer, on a fresh thread
that is deleted afterwards. Bytes come from the saver's own tables for that thread id
(`storage_bytes`: totals, and the parts they are made of). Then, for our agent at the largest N,
the checkpoints are read back through the same stock savers (`storage_history`). Writes
`bench/results/storage.json` and `bench/results/storage.png`.

    uv run python bench/storage.py [--quick] [--no-postgres] [--sizes 5 20 50]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (
    POSTGRES_URL,
    build_ours,
    build_prebuilt,
    check_run,
    inputs,
    new_thread,
    run_config,
)
from bench.doubles import OBSERVATION_CHARS, BenchModel, fetch_tool, loop_policy
from bench.report import RESULTS, human_bytes, write_json
from bench.storage_bytes import postgres_bytes, postgres_parts, sqlite_bytes, sqlite_parts
from bench.storage_history import verify_history
from bench.storage_report import (
    TARGET_TIMES_RAW,
    growth_table,
    history_report,
    main_table,
    parts_table,
    plot,
    project_table,
)

# (label, agent, protocol, saver): "plain" is LangGraph's stock saver with its default
# serializer; "project" is the saver our command line opens (`graph.persistence.savers`, with
# whatever serializer it configures, e.g. compression), used by both agents.
VARIANTS = [
    ("prebuilt native", "prebuilt", "native", "plain"),
    ("ours native", "ours", "native", "plain"),
    ("ours text", "ours", "text", "plain"),
    ("prebuilt native · project saver", "prebuilt", "native", "project"),
    ("ours native · project saver", "ours", "native", "project"),
]


@dataclass
class Store:
    """One database: its savers, and how to count a thread's bytes and checkpoints in it."""

    name: str
    savers: dict[str, Any]  # "plain" (stock), "project" (None when it cannot be opened)
    count: Callable[[Any, str], dict[str, Any]]  # (saver, thread) -> totals and parts
    checkpoint_ids: Callable[[str], set[str]]


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
def sqlite_store(tmp: Path) -> Iterator[Store]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = tmp / "storage.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        saver.setup()
        with project_saver(f"sqlite:///{path}") as project:
            yield Store(
                "sqlite",
                {"plain": saver, "project": project},
                lambda used, thread: {
                    **sqlite_bytes(conn, thread),
                    "parts": sqlite_parts(used, conn, thread),
                },
                lambda thread: {
                    row[0]
                    for row in conn.execute(
                        "select checkpoint_id from checkpoints where thread_id = ?", (thread,)
                    )
                },
            )
    finally:
        conn.close()


@contextmanager
def postgres_store(url: str) -> Iterator[Store]:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        with psycopg.connect(url, autocommit=True) as conn, project_saver(url) as project:
            yield Store(
                "postgres",
                {"plain": saver, "project": project},
                lambda _used, thread: {
                    **postgres_bytes(conn, thread),
                    "parts": postgres_parts(conn, thread),
                },
                lambda thread: {
                    row[0]
                    for row in conn.execute(
                        "select checkpoint_id from checkpoints where thread_id = %s", (thread,)
                    )
                },
            )


def measure(store: Store, serde: str, kind: str, protocol: str, n: int) -> dict[str, Any]:
    saver = store.savers[serde]
    model = BenchModel(loop_policy(n, protocol))
    if kind == "prebuilt":
        agent = build_prebuilt(model, [fetch_tool()], checkpointer=saver)
    else:
        agent = build_ours(
            model, [fetch_tool()], protocol=protocol, checkpointer=saver, iterations=n
        )
    thread = new_thread("bench-storage")
    config = run_config(kind, thread)
    started = time.perf_counter()
    out = agent.invoke(inputs(), config)
    run_s = time.perf_counter() - started
    check_run(out, kind, n)
    started = time.perf_counter()
    history = list(agent.get_state_history(config))
    history_s = time.perf_counter() - started
    result = store.count(saver, thread)
    saver.delete_thread(thread)
    left = store.count(saver, thread)
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


def run_store(store: Store, sizes: list[int]) -> tuple[list[dict], list[dict]]:
    results, checks = [], []
    for n in sizes:
        for label, kind, protocol, serde in VARIANTS:
            if store.savers[serde] is None:
                continue
            r = measure(store, serde, kind, protocol, n)
            r.update(saver=store.name, variant=label, agent=kind, protocol=protocol, n=n)
            results.append(r)
            print(
                f"{store.name:8} {label:31} N={n:<3} {human_bytes(r['stored_bytes']):>10}  "
                f"({r['times_raw']:.2f}× raw, run {r['run_s']:.2f} s, "
                f"history {r['history_s'] * 1000:.0f} ms)",
                flush=True,
            )
    for protocol in ("native", "text"):
        check = verify_history(store.savers["plain"], store.checkpoint_ids, protocol, max(sizes))
        checks.append({**check, "saver": store.name})
    return results, checks


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
    checks: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="bench-storage-") as tmp:
        stores = [("sqlite", lambda: sqlite_store(Path(tmp)))]
        if not args.no_postgres:
            stores.append(("postgres", lambda: postgres_store(args.postgres)))
        for name, open_store in stores:
            try:
                with open_store() as store:
                    found, checked = run_store(store, sizes)
            except Exception as exc:
                if name != "postgres":
                    raise
                skipped[name] = f"{type(exc).__name__}: {exc}"
                print(f"PostgreSQL skipped: {skipped[name]}")
                continue
            results += found
            checks += checked

    by_key = {(r["saver"], r["variant"], r["n"]): r for r in results}
    savers = [s for s in ("sqlite", "postgres") if any(r["saver"] == s for r in results)]
    print("\n" + main_table(by_key, savers, sizes))
    project = project_table(by_key, savers, sizes)
    if project:
        print(
            "\nwith the project's savers (graph.persistence.savers.open_saver, its serializer) "
            "for both agents; the observations are random text, close to the worst case for "
            "compression:\n" + project
        )
    print("\n" + growth_table(by_key, savers, [v[0] for v in VARIANTS], sizes))
    print(
        "\ngrowth exponent: log(bytes) slope against log(N), 1 = linear, 2 = quadratic. "
        f"Target: ours at N = {largest} ≤ {TARGET_TIMES_RAW:g}× raw observation bytes."
    )
    for check in checks:
        print("\n" + history_report(check))
    for saver in savers:
        print(f"\nwhere the bytes go, {saver}, N={largest}, per iteration (native protocol):")
        print(parts_table(by_key, saver, largest))

    png = RESULTS / "storage.png"
    plotted = plot(results, png)
    path = write_json(
        "storage",
        {
            "sizes": sizes,
            "observation_chars": OBSERVATION_CHARS,
            "results": results,
            "history_checks": checks,
            "skipped": skipped,
            "plot": str(png) if plotted else None,
        },
    )
    print(f"\nwrote {path}" + (f" and {png}" if plotted else ""))


if __name__ == "__main__":
    main()
