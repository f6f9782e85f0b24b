"""The adaptive backfill rate of a job whose backfill runs in the rounds: a fitted latency model.

An arrangement or no-shuffle backfill reads its rows in the barrier's round, so a barrier's latency
is the existing jobs' work, plus what a round that carries a backfill costs whatever it reads (its
Spark stages), plus a cost per row it reads, plus noise. Measured (bench/isolation.py, 10M rows, both
CPUs, docs/notes/issue-16.md, 2026-12-07 fifth): rounds of 2K rows took 1.4–1.6 s, rounds of 838K and
1.37M rows 2.34 s and 1.82 s, idle rounds p50 0.74 s — the latency is mostly the fixed part and the
noise. AIMD (`meta.backfill_rate.AimdPolicy`) halves the limit at every barrier over its threshold,
which there is mostly noise, and wins it back by a small step a barrier: the limit saw-toothed
3K–150K and the backfill took 6.1× the unlimited one's time.

So such a job's limit follows a line fitted through its recent barriers instead, as
`compute.stream.chunk_size` sizes a round's chunk::

    latency ≈ fixed + per_rate × rows read    (Theil–Sen over the last `FitPolicy.window` barriers)

(rows read by the job's round in that barrier, per parallelism: the limit's unit), and after each
barrier the limit moves to where the line meets the threshold (`LatencyLine.limit_at`), at most
`FitPolicy.growth` up and `AimdPolicy.factor` down a barrier. A barrier over the threshold is then
no cut by itself: it moves the line only as much as one sample of the window can. The slope is never
taken below 0 (a latency that falls as the limit grows is noise or the existing jobs' work going
down: the line is then flat, and the limit grows only while the window's latencies are under the
threshold). What the fit cannot see is kept from hurting the existing jobs so:

- a barrier over the **target** itself (not the threshold under it) halves the limit at once, as
  AIMD does: the cluster got busy, and the window has not seen it yet;
- while the window holds fewer than `FitPolicy.samples` barriers, there is no line: the job follows
  AIMD. When its limits vary by less than `FitPolicy.spread` (a job that settled, or at its ceiling
  or floor) they show no slope: the limit takes one step of `spread` up or down (`FitPolicy.probe`),
  and the line is fitted again through the samples that gives. (Keeping the last slope instead froze
  a job on a slope that two noisy barriers had made steep: bench/isolation.py held its limit at
  8–10K rows/s for 70 s, 2026-12-07 sixth.) The slope is fitted by Theil–Sen for the same reason;
- a round that read nothing (its scans wait in the backfill order) leaves the limit as it is;
- a sample's limit is what the barrier's round read (`meta.backfill_rate.rows_read_per_parallelism`),
  not the limit when it committed: a new limit reaches the rounds one or two barriers after it is
  sent (barriers in flight), and a round near the end reads less. With
  the limit at commit instead, a probe's slope was attributed to the wrong barriers: in the unit
  tests' simulated cluster with one barrier of lag, the limit fell to a quarter now and then.

The threshold is the one AIMD aims at (`AimdPolicy.under`: `aim` × the target, or the job's floor
latency × `floor_margin`), so the floor latency rule of `meta.backfill_rate` (a fixed cost over the
threshold) works unchanged: there every barrier is over the threshold, the line's intercept too, and
the limit goes down to the floor, where that cost is measured.

A snapshot backfill keeps AIMD: its rate-limited reads run off the barrier's path, so a barrier's
latency is not a function of the limit in the round it commits.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class LatencyLine:
    """``latency_ms ≈ fixed_ms + per_rate_ms × limit``, fitted by least squares; the slope ≥ 0."""

    fixed_ms: float
    per_rate_ms: float

    @classmethod
    def fit(cls, samples: Sequence[tuple[float, float]]) -> LatencyLine:
        """The line through `(limit, latency_ms)` samples (at least two distinct limits), by
        Theil–Sen: the slope is the median of the slopes between pairs of samples, the intercept the
        median of what each sample leaves. One barrier the noise made slow (a burst of the existing
        jobs, a GC) moves a least-squares slope as much as all the others; it moves a median by one
        place (the estimator stands up to ~29 % of such samples).

        >>> LatencyLine.fit([(1000, 1500), (2000, 1600), (3000, 1700)])
        LatencyLine(fixed_ms=1400.0, per_rate_ms=0.1)
        >>> LatencyLine.fit([(1000, 1500), (2000, 1600), (3000, 1700), (4000, 4000), (5000, 1900)])
        LatencyLine(fixed_ms=1400.0, per_rate_ms=0.1)
        >>> LatencyLine.fit([(1000, 1700), (2000, 1600), (3000, 1500)])  # falling: flat
        LatencyLine(fixed_ms=1600.0, per_rate_ms=0.0)
        """
        pairs = list(samples)
        slopes = [(y2 - y1) / (x2 - x1) for i, (x1, y1) in enumerate(pairs) for x2, y2 in pairs[i + 1:] if x2 != x1]
        slope = max(0.0, statistics.median(slopes)) if slopes else 0.0
        fixed = statistics.median(y - slope * x for x, y in samples)
        return cls(fixed_ms=round(fixed, 6), per_rate_ms=round(slope, 9))

    def limit_at(self, latency_ms: float) -> float:
        """The limit at which the line meets `latency_ms`: infinite when it is flat and under it, 0
        when even no backfill would be over it.

        >>> LatencyLine(1400.0, 0.1).limit_at(1600), LatencyLine(1400.0, 0.0).limit_at(1600)
        (2000.0, inf)
        >>> LatencyLine(1700.0, 0.0).limit_at(1600), LatencyLine(1700.0, 0.1).limit_at(1600)
        (0.0, 0.0)
        """
        if latency_ms <= self.fixed_ms:
            return 0.0
        return math.inf if self.per_rate_ms <= 0 else (latency_ms - self.fixed_ms) / self.per_rate_ms


@dataclass(frozen=True)
class FitPolicy:
    """When a job's limit follows the fitted line, and how fast it may move.

    `window`: a backfill of 10M rows lasts a few tens of barriers at its rate (bench/isolation.py),
    so the line must form within a few of them and forget an old cluster load within ~10; `samples`
    and `spread`: fewer barriers, or limits within 25 % of each other, give a slope that is mostly
    noise; `growth` is the slow start's factor (`AimdPolicy.slow_start_factor`, why 1.5 there).
    """

    window: int = 10
    samples: int = 5
    spread: float = 1.25
    growth: float = 1.5

    def line(self, samples: Sequence[tuple[float, float]]) -> LatencyLine | None:
        """The line through a job's recent `(limit, latency_ms)` samples (at least `samples` of them:
        the caller's check), when their limits are far enough apart to show a slope.

        >>> FitPolicy().line([(1000, 1500)] * 5) is None  # one limit: no slope to see
        True
        >>> FitPolicy().line([(1000, 1500), (2000, 1600), (3000, 1700), (1000, 1500), (2000, 1600)])
        LatencyLine(fixed_ms=1400.0, per_rate_ms=0.1)
        """
        limits = [x for x, _ in samples]
        return LatencyLine.fit(samples) if max(limits) >= self.spread * min(limits) else None

    def probe(self, rate: int, latency_ms: float, threshold_ms: float) -> int:
        """The limit after a barrier when the job's recent limits are too alike for a line (it
        settled): one step of `spread` up or down, by the barrier against the threshold, so the
        next samples have a slope again.

        >>> FitPolicy().probe(1000, 1500, 1600), FitPolicy().probe(1000, 1700, 1600)
        (1250, 800)
        """
        return int(rate * self.spread) if latency_ms <= threshold_ms else int(rate / self.spread)

    def probing(self, rate: int, samples: Sequence[tuple[float, float]]) -> bool:
        """Whether the limit is already a probe away from what the samples' rounds read (a new
        limit reaches the rounds a barrier or two later): another probe then would go twice as far.

        >>> FitPolicy().probing(1250, [(1000, 1500)] * 5), FitPolicy().probing(1000, [(1000, 1500)] * 5)
        (True, False)
        """
        mean = statistics.fmean(x for x, _ in samples)
        return max(rate, mean) >= self.spread * min(rate, mean) if mean > 0 else rate > 0

    def next_rate(self, rate: int, line: LatencyLine, threshold_ms: float, factor: float) -> int:
        """The limit after a barrier: where `line` meets the threshold, within `factor` × and
        `growth` × the current limit (the caller clamps it to the floor and ceiling).

        >>> FitPolicy().next_rate(1000, LatencyLine(1400.0, 0.1), 1600, 0.5)  # the line meets it at 2000
        1500
        >>> FitPolicy().next_rate(1800, LatencyLine(1400.0, 0.1), 1600, 0.5)
        2000
        >>> FitPolicy().next_rate(3000, LatencyLine(1400.0, 0.1), 1600, 0.5)
        2000
        >>> FitPolicy().next_rate(3000, LatencyLine(1700.0, 0.0), 1600, 0.5)  # over it at any limit
        1500
        """
        goal = line.limit_at(threshold_ms)
        return int(min(rate * self.growth, max(rate * factor, goal)))
