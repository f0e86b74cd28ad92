"""Timing for the benchmarks: samples of wall and CPU time, variants run interleaved (so load
from other jobs on a shared machine hits all of them alike), medians and noise figures.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any


@dataclass
class Sample:
    wall: float
    cpu: float


def timed(fn: Callable[[], Any]) -> Sample:
    gc.collect()
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    return Sample(time.perf_counter() - wall, time.process_time() - cpu)


def interleaved(
    variants: dict[str, Callable[[], Any]], rounds: int, warmup: int = 1
) -> dict[str, list[Sample]]:
    """Each round runs every variant once, in a rotated order, so drifting machine load hits
    all of them alike. Compare medians over rounds."""
    names = list(variants)
    for _ in range(warmup):
        for name in names:
            variants[name]()
    samples: dict[str, list[Sample]] = {name: [] for name in names}
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(timed(variants[name]))
    return samples


def median(values: Iterable[float]) -> float:
    return statistics.median(list(values))


def spread(values: Sequence[float]) -> float:
    """Interquartile range relative to the median (a rough noise figure)."""
    if len(values) < 4:
        return float("nan")
    q = statistics.quantiles(values, n=4)
    return (q[2] - q[0]) / statistics.median(values)


def compare(ours: Sequence[float], theirs: Sequence[float]) -> tuple[float, float]:
    """Ours against theirs: the ratio of the medians, and the paired ratio."""
    return median(ours) / median(theirs), paired_ratio(ours, theirs)


def paired_ratio(ours: Sequence[float], theirs: Sequence[float]) -> float:
    """Median over rounds of ours/theirs, each pair measured back to back."""
    return statistics.median(a / b for a, b in zip(ours, theirs, strict=True) if b > 0)


def summary(samples: Sequence[Sample]) -> dict[str, Any]:
    walls = [s.wall for s in samples]
    cpus = [s.cpu for s in samples]
    return {
        "wall_median_s": median(walls),
        "cpu_median_s": median(cpus),
        "wall_spread": spread(walls),
        "cpu_spread": spread(cpus),
        "samples": [asdict(s) for s in samples],
    }
