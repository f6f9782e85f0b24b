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

    latency ≈ fixed + per_rate × limit          (least squares over the last `FitPolicy.window`)

and after each barrier the limit moves to where the line meets the threshold (`limit_at`), at most
`FitPolicy.growth` up and `AimdPolicy.factor` down a barrier. A barrier over the threshold is then
no cut by itself: it moves the line only as much as one sample of the window can. The slope is never
taken below 0 (a latency that falls as the limit grows is noise or the existing jobs' work going
down: the line is then flat at the window's mean, and the limit grows only while that mean is under
the threshold). Three things keep what the fit cannot see from hurting the existing jobs:

- a barrier over the **target** itself (not the threshold under it) halves the limit at once, as
  AIMD does: the cluster got busy, and the window has not seen it yet;
- while the window holds fewer than `FitPolicy.samples` barriers, there is no line: the job follows
  AIMD. When its limits vary by less than `FitPolicy.spread` (a job that settled, or at its ceiling
  or floor) they show no slope: the job's last line keeps its slope and is moved to the window's
  mean latency (no line before: AIMD);
- the fit uses the limit the job had when the barrier committed (the one sent with an earlier
  barrier), so the sample of a barrier whose round already ran at a new limit is off by one step;
  the clamp on each move keeps such an error to one step too.

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
        """The line through `(limit, latency_ms)` samples (at least two distinct limits).

        >>> LatencyLine.fit([(1000, 1500), (2000, 1600), (3000, 1700)])
        LatencyLine(fixed_ms=1400.0, per_rate_ms=0.1)
        >>> LatencyLine.fit([(1000, 1700), (2000, 1600), (3000, 1500)])  # falling: flat at the mean
        LatencyLine(fixed_ms=1600.0, per_rate_ms=0.0)
        """
        xs = [float(x) for x, _ in samples]
        ys = [float(y) for _, y in samples]
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        sxx = sum((x - mx) ** 2 for x in xs)
        slope = max(0.0, sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx) if sxx else 0.0
        return cls(fixed_ms=round(my - slope * mx, 6), per_rate_ms=round(slope, 9))

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

    def line(self, samples: Sequence[tuple[float, float]], last: LatencyLine | None = None) -> LatencyLine | None:
        """The line through a job's recent `(limit, latency_ms)` samples, when they can carry one.
        When their limits are too alike for a slope (a job that settled), `last` (the job's last
        line) keeps its slope and moves to the samples' mean: the existing jobs' load may change,
        the cost of a row much less.

        >>> FitPolicy().line([(1000, 1500)] * 5) is None  # one limit, no line before: no slope to see
        True
        >>> line = FitPolicy().line([(1000, 1500), (2000, 1600), (3000, 1700), (1000, 1500), (2000, 1600)])
        >>> line
        LatencyLine(fixed_ms=1400.0, per_rate_ms=0.1)
        >>> FitPolicy().line([(2000, 1800)] * 5, line)
        LatencyLine(fixed_ms=1600.0, per_rate_ms=0.1)
        """
        if len(samples) < self.samples:
            return None
        limits = [x for x, _ in samples]
        if max(limits) >= self.spread * min(limits):
            return LatencyLine.fit(samples)
        if last is None:
            return None
        mean_ms = statistics.fmean(y for _, y in samples)
        return LatencyLine(fixed_ms=round(mean_ms - last.per_rate_ms * statistics.fmean(limits), 6),
                           per_rate_ms=last.per_rate_ms)

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
