"""Recent history kept in meta's memory for the dashboard: bounded ring buffers of samples, and
percentiles of barrier latency over time.

Prometheus keeps the long history; these buffers only cover the last minutes, so the dashboard
needs nothing but meta.

>>> percentile([0.1, 0.2, 0.3, 0.4], 0.5)
0.2
>>> percentile([0.1, 0.2, 0.3, 0.4], 0.99)
0.4
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


class RingBuffer(Generic[T]):
    """The newest `capacity` items appended, safe to append and read from several threads."""

    def __init__(self, capacity: int) -> None:
        self._items: deque[T] = deque(maxlen=capacity)
        self._lock = threading.Lock()

    def append(self, item: T) -> None:
        with self._lock:
            self._items.append(item)

    def items(self) -> list[T]:
        """A copy, oldest first."""
        with self._lock:
            return list(self._items)

    def newest(self) -> T | None:
        with self._lock:
            return self._items[-1] if self._items else None

    def __len__(self) -> int:
        return len(self._items)


@dataclass(frozen=True)
class BarrierSample:
    """One committed barrier: when it committed (unix seconds), its epoch, the time from injection to
    commit, the part of it spent committing to the meta store, the Spark jobs its round ran, and the
    keys its stateful executors found in their state caches and read from storage."""

    at: float
    epoch: int
    duration_s: float
    commit_s: float
    spark_jobs: int
    cache_hits: int = 0
    cache_misses: int = 0


@dataclass(frozen=True)
class LatencyBucket:
    """Barrier latency percentiles of the barriers that committed in ``[start, start + width)``."""

    start: float
    count: int
    p50: float
    p99: float
    max: float


def percentile(values: Iterable[float], q: float) -> float:
    """The nearest-rank percentile `q` (0 to 1) of `values`; 0.0 when empty."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def latency_buckets(samples: Iterable[BarrierSample], *, now: float, window_s: float,
                    width_s: float) -> list[LatencyBucket]:
    """Barrier latency p50/p99 per `width_s` bucket over the last `window_s` seconds, oldest first;
    buckets with no barrier are left out.

    >>> s = [BarrierSample(100.0 + i, i, (i % 3 + 1) / 4, 0.01, 1) for i in range(6)]
    >>> [(b.start, b.count, b.p50) for b in latency_buckets(s, now=106.0, window_s=10, width_s=3)]
    [(99.0, 2, 0.25), (102.0, 3, 0.5), (105.0, 1, 0.75)]
    """
    first = float(math.floor((now - window_s) / width_s) * width_s)
    grouped: dict[float, list[float]] = {}
    for s in samples:
        if s.at < first or s.at > now:
            continue
        start = float(math.floor(s.at / width_s) * width_s)
        grouped.setdefault(start, []).append(s.duration_s)
    return [LatencyBucket(start, len(v), percentile(v, 0.5), percentile(v, 0.99), max(v))
            for start, v in sorted(grouped.items())]
