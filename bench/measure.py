"""Timing: run a callable many times and summarize the latencies (milliseconds)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Latency:
    count: int
    p50: float
    p95: float
    p99: float
    mean: float
    max: float

    def as_dict(self) -> dict[str, float | int]:
        return {
            "count": self.count,
            "p50_ms": round(self.p50, 3),
            "p95_ms": round(self.p95, 3),
            "p99_ms": round(self.p99, 3),
            "mean_ms": round(self.mean, 3),
            "max_ms": round(self.max, 3),
        }


def percentile(sorted_values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of already sorted values."""
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[rank - 1]


def summarize(samples_ms: list[float]) -> Latency:
    ordered = sorted(samples_ms)
    return Latency(
        count=len(ordered),
        p50=percentile(ordered, 0.50),
        p95=percentile(ordered, 0.95),
        p99=percentile(ordered, 0.99),
        mean=sum(ordered) / len(ordered),
        max=ordered[-1],
    )


def time_calls(call: Callable[[int], object], *, requests: int, warmup: int) -> Latency:
    """`call(i)` `warmup` times unmeasured, then `requests` times measured one by one."""
    for i in range(warmup):
        call(i)
    samples: list[float] = []
    for i in range(requests):
        started = time.perf_counter()
        call(warmup + i)
        samples.append((time.perf_counter() - started) * 1000)
    return summarize(samples)


def time_round_robin(calls: dict[str, Callable[[int], object]], *, requests: int, warmup: int) -> dict[str, Latency]:
    """Each call in turn, `warmup` rounds unmeasured then `requests` measured: on a shared, noisy machine a
    burst of load slows every call alike, so their ratios hold while the milliseconds move."""
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for i in range(warmup + requests):
        for name, call in calls.items():
            started = time.perf_counter()
            call(i)
            if i >= warmup:
                samples[name].append((time.perf_counter() - started) * 1000)
    return {name: summarize(values) for name, values in samples.items()}
