"""Tracing's cost: CPU per iteration with tracing off against the same agent with no tracing
code in the run, and with OpenTelemetry on (OpenInference's LangChain instrumentation, the
redacting processor, a batch processor into an in-memory exporter), in one process.

Variants, each run on a fresh thread of N iterations (one tool call each) plus the answer, with
the benchmarks' instant scripted model (bench/doubles.py), interleaved round by round:

- `untraced`: `agent.invoke`, nothing else;
- `off`: what an entry point adds when tracing is off: `trace_from_environment()` (the
  environment holds no OTEL_ variable), then the same run;
- `on`: the run with tracing switched on before the sample and off after it (instrumenting is
  process-wide, so it is never left on for the other variants; switching it on and off is not
  timed), spans exported to memory; the exporter is emptied before each run;
- `on, payloads off`: the same with `payloads=False` (no messages or tool payloads in spans).

    uv run python bench/tracing.py              # N=20 iterations, 20 rounds, native and text
    uv run python bench/tracing.py --quick      # smoke run
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import build_agent, check_run, inputs, run_config
from bench.report import percent, ratio, table, write_json
from bench.timing import Sample, compare, median, spread, summary, timed
from graph.tracing import trace_from_environment


class Variant:
    """A run to time, with what must happen before and after it (not timed)."""

    def __init__(self, run: Callable[[], Any], payloads: bool | None = None, on: bool = False):
        self.run = run
        self.on = on
        self.payloads = payloads
        self.tracing: Any = None
        self.spans = 0
        self.exporter: Any = None

    def before(self) -> None:
        if not self.on:
            return
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )

        from graph.tracing import enable_tracing

        self.exporter = InMemorySpanExporter()
        self.tracing = enable_tracing(
            exporter=self.exporter,
            payloads=self.payloads,
            environ={},
        )

    def after(self) -> None:
        if self.tracing is None:
            return
        self.tracing.flush()
        self.spans = len(self.exporter.get_finished_spans())
        self.tracing.shutdown()
        self.tracing = None


def variants_for(protocol: str, n: int) -> dict[str, Variant]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}

    def runner(agent: Any, check_off: bool = False) -> Callable[[], Any]:
        def run() -> Any:
            if check_off and trace_from_environment(environ) is not None:
                raise RuntimeError("tracing came on with no OTEL_ variable set")
            out = agent.invoke(inputs(), run_config("ours"))
            check_run(out, "ours", n)
            return out

        return run

    def agent() -> Any:
        return build_agent("ours", protocol, n)

    return {
        f"untraced {protocol}": Variant(runner(agent())),
        f"off {protocol}": Variant(runner(agent(), check_off=True)),
        f"on {protocol}": Variant(runner(agent()), on=True),
        f"on, payloads off {protocol}": Variant(runner(agent()), payloads=False, on=True),
    }


def rounds_of(variants: dict[str, Variant], rounds: int) -> dict[str, list[Sample]]:
    """Each round runs every variant once, in a rotated order (bench/timing.interleaved, with
    each variant's untimed set-up and tear-down around its sample)."""
    names = list(variants)
    for name in names:  # warm-up
        variants[name].before()
        variants[name].run()
        variants[name].after()
    samples: dict[str, list[Sample]] = {name: [] for name in names}
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            variant = variants[name]
            variant.before()
            samples[name].append(timed(variant.run))
            variant.after()
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--protocol", choices=["native", "text", "both"], default="both")
    parser.add_argument("--quick", action="store_true", help="N=5, 4 rounds")
    args = parser.parse_args()
    n, rounds = (5, 4) if args.quick else (args.iterations, args.rounds)
    protocols = ["native", "text"] if args.protocol == "both" else [args.protocol]
    variants: dict[str, Variant] = {}
    for protocol in protocols:
        variants.update(variants_for(protocol, n))
    print(f"tracing: N={n} iterations per run, {rounds} rounds, {', '.join(protocols)}", flush=True)
    samples = rounds_of(variants, rounds)

    rows, results = [], {}
    for name, runs in samples.items():
        protocol = name.rsplit(" ", 1)[1]
        base = samples[f"untraced {protocol}"]
        cpu = [s.cpu for s in runs]
        cpu_ratio, paired = compare(cpu, [s.cpu for s in base])
        entry = {**summary(runs), "cpu_ratio": cpu_ratio, "paired_cpu_ratio": paired}
        entry["cpu_ms_per_iteration"] = median(cpu) / n * 1000
        entry["wall_ms_per_iteration"] = median(s.wall for s in runs) / n * 1000
        entry["spans_per_run"] = variants[name].spans
        results[name] = entry
        rows.append(
            [
                name,
                f"{entry['cpu_ms_per_iteration']:.2f}",
                f"{entry['wall_ms_per_iteration']:.2f}",
                percent(spread(cpu)),
                ratio(cpu_ratio),
                ratio(paired),
                variants[name].spans or "-",
            ]
        )
    print()
    print(
        table(
            [
                "variant",
                "CPU ms/iter",
                "wall ms/iter",
                "CPU IQR",
                "CPU vs untraced",
                "paired",
                "spans/run",
            ],
            rows,
        )
    )
    path = write_json("tracing", {"iterations": n, "rounds": rounds, "results": results})
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
