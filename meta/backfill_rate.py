"""The adaptive backfill rate: meta's controller of `SET backfill_rate_limit = adaptive`.

A fixed `backfill_rate_limit` is either too low (the backfill takes hours) or too high (the barriers
of the jobs already running slow down). An adaptive job's limit (rows/s per parallelism, as the fixed
one) follows the cluster's barrier latency instead, by additive increase, multiplicative decrease
(AIMD, as TCP's congestion window, with TCP's slow start):

- after every committed barrier of the default group, its latency (inject to commit, measured by
  the barrier manager) is compared with the controller's threshold: `AimdPolicy.aim` times the
  system parameter ``adaptive_backfill_target_barrier_latency_ms`` (0: twice the barrier interval).
  The threshold sits below the target because the controller learns it went too far only from a
  barrier that already took too long: aimed at the target itself, the saw-tooth's peaks are above it;
- **slow start**: a job starts multiplying its limit by `AimdPolicy.slow_start_factor` after every
  barrier under the threshold, until the first barrier over it — a backfill the cluster absorbs
  reaches its rate in a few barriers instead of tens (a 10M-row backfill lasts only tens of
  barriers). The factor is 1.5, not TCP's 2: from a limit whose barrier was just under the
  threshold, 1.5× the backfill's share of a barrier keeps the next one under the target itself, as
  long as the existing jobs' share is at least two fifths of it (1.2 − 0.5 × that share ≤ 1, in
  units of the target; in bench/isolation.py it is about half);
- then, under or at the threshold, each adaptive creating job's limit grows by `AimdPolicy.step`;
  over it, the limit is multiplied by `AimdPolicy.factor` (the first barrier over it ends the slow
  start with that same decrease);
- the limit stays within ``[floor, ceiling]``: the floor is above 0, so a backfill always progresses,
  and the ceiling is never exceeded;
- **a cost the limit cannot remove**: when the median of a job's last `AimdPolicy.floor_window`
  barriers at the floor is over the threshold, what the barriers pay is not the backfill's rate: it
  is the existing jobs' own work, or the fixed cost of a round that carries a backfill at all (an
  arrangement backfill's Spark stages; measured, bench/isolation.py, 10M rows, both CPUs: idle
  barriers p50 0.91 s; at the floor, 2K rows a round, p50 1.57 s and p10 1.38 s against a threshold
  of ~1.45 s, so the limit stayed at the floor and the backfill would have taken hours where
  unlimited it took 80 s). Backing off further only makes the backfill last longer, so the job is
  judged from then on against that cost: its *floor latency*, the median of those barriers, times
  `AimdPolicy.floor_margin` (where that is above the threshold) — the limit grows while what the
  backfill reads adds at most a fifth to what the barriers cost anyway. The floor latency is
  measured only at the floor, so a limit that grows cannot raise the bar it is judged by; a median,
  not barriers in a row, since one barrier at the floor under the threshold lets the limit off it.
  The floor latency expires `AimdPolicy.floor_ttl` barriers after it was measured (the existing
  jobs' burst that slowed the cluster may be over, and the job's own reads keep the barriers over
  the plain threshold, so nothing else would show it): the job is judged by the plain threshold
  again, backs off to the floor if its barriers are still over it, and measures again there; if the
  cost is still there, it goes on from half the limit it had when the floor latency expired.

An arrangement or no-shuffle backfill round shares the barrier with every other job, so its cost
shows in the very barrier that carries it: the signal answers within one round. But there a round's
latency is mostly what it costs whatever it reads, and noise, so a barrier over the threshold is
mostly noise, and AIMD halved the limit for it: such a job's limit follows a line fitted through its
recent barriers instead (`meta.backfill_rate_fit`, which says when AIMD still decides: a barrier over
the target itself, too few samples). A rate-limited snapshot read runs off the barrier's path
(`compute.stream.snapshot`): its cost shows only as the cores and the driver it takes from the rounds
while it runs (Spark's fair pools give the rounds their share of the cores, not priority), so the
signal is weaker and later there, and no line links a barrier to the limit: AIMD decides, and the
limit decides how much each read takes and how often one starts.

A changed limit reaches the compute nodes as the `Throttle` mutation a fixed limit uses, in the
next barrier (without forcing one), so every strategy follows it unchanged: arrangement and
no-shuffle backfill read ``limit × parallelism`` rows per round, snapshot backfill reads what its
limit has earned since its last read (`compute.stream.snapshot.ReadBucket`, over splits of one vnode
merged at run time), so a back-off makes the next read smaller, not only later.

A serverless backfill ignores the adaptive rate: it runs on resources of its own, so it is left
unlimited. The current limits live in meta's memory: a recovery re-adds each job at its current
limit (`MetaService._rate_limit_of`); the catalog keeps the flag and the starting limit, so after a
restart of meta a job starts again from there. Only the default resource group's jobs are adapted
(to its barriers' latency); a job in another group keeps its starting limit.

State in the relation's catalog ``extra``::

    | adaptive_backfill_rate: true | backfill_rate_limit: <starting limit> |
"""

from __future__ import annotations

import contextlib
import logging
import statistics
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from meta.backfill_rate_fit import FitPolicy
from meta.metrics import METRICS, backfill_labels
from meta.serverless import serverless_state
from risingspark.barrier import BackfillReport, Throttle
from risingspark.catalog import (
    ADAPTIVE_BACKFILL_RATE,
    BACKFILL_RATE_LIMIT,
    BackfillType,
    JobStatus,
    RelationCatalog,
)

logger = logging.getLogger(__name__)

ADAPTIVE = "adaptive"  # the value of `backfill_rate_limit` that asks for an adaptive rate
TARGET_PARAM = "adaptive_backfill_target_barrier_latency_ms"  # the system parameter (`meta.system_params`)


@dataclass(frozen=True)
class AimdPolicy:
    """The controller's constants, in rows/s per parallelism.

    Why these numbers (bench/isolation.py, docs/notes/issue-3.md and issue-4.md, 2 cores): a snapshot
    backfill of the 10M-row aggregation reads ~3.3M rows/s on both cores (~1.6M per parallelism) and
    ~0.7M rows/s when the cluster has one core (10M rows in one ~12 s round, with the existing jobs'
    barriers 4× slower meanwhile); an idle barrier under 1 000 changes/s costs ~0.3 s to 1.7 s.
    `start` is a fifth of the one-core speed, so the first rounds cost the existing jobs little
    (~0.2 s of a core); `step` is a twentieth of `start`, so the limit doubles in about 20 barriers
    after a back-off and the saw-tooth stays narrow (at 10M rows, bench/isolation.py, a backfill
    lasts only ~10 barriers here and the limit went from 100K to 140K: a bigger step was tried, 25K,
    in a run whose target was lower, and did worse — the two need a run at the same target before
    the step changes); `ceiling` is above the fastest measured backfill
    (it never slows a backfill the cluster absorbs); `floor` keeps a paused cluster's backfill alive.

    `slow_start_factor` and `aim`, from bench/isolation.py with the playground on both CPUs
    (docs/notes/issue-16.md, 2026-11-30, one run each): the slow start took the 10M-row backfill from
    3.45× to 2.41× the unlimited one's time, with p99 1.83× idle (1.51× without it): a snapshot read
    runs over 2–3 barriers, so the limit grew ×1.5 two or three times before the first slow barrier
    and one read was 3M rows. Judging each read once (grow only after a read ended with no barrier
    over, cut once per read) kept the reads under 1.6M rows but was slower (6.1×, p99 1.70×) and
    is not kept: barriers over 1.2 s came every 10–40 s whatever the read's size (a read's fixed
    cost, ~1 s of Spark jobs, and the noise: the idle p99 was 1.0–1.15 s), each a cut, and growth once a
    read is slow to come back. A lower `aim`, 0.7, put the threshold at 1.1 s, under what a read of
    40K rows costs the barriers: the limit sank to the floor (15.4×).
    """

    start: int = 100_000
    step: int = 5_000
    factor: float = 0.5
    floor: int = 1_000
    ceiling: int = 2_000_000
    slow_start_factor: float = 1.5
    aim: float = 0.8
    floor_window: int = 5
    floor_margin: float = 1.2
    floor_ttl: int = 30

    def next_rate(self, rate: int, latency_ms: float, target_ms: float, slow_start: bool = False,
                  floor_ms: float = 0.0) -> int:
        """The limit after a barrier of `latency_ms`; in slow start, a barrier under the threshold
        multiplies it by `slow_start_factor` (the caller ends the slow start at the first barrier
        over the threshold). `floor_ms`: the job's floor latency, if measured (see the module doc).

        >>> AimdPolicy().next_rate(100_000, 900, 2000)
        105000
        >>> AimdPolicy().next_rate(100_000, 900, 2000, slow_start=True)
        150000
        >>> AimdPolicy().next_rate(100_000, 1700, 2000, slow_start=True)  # over 0.8 × 2000 ms
        50000
        >>> AimdPolicy().next_rate(1_500, 9000, 2000)
        1000
        >>> AimdPolicy().next_rate(1_000, 1700, 2000, floor_ms=1500)  # within 1.2 × its floor latency
        6000
        """
        if not self.under(latency_ms, target_ms, floor_ms):
            rate = int(rate * self.factor)
        elif slow_start:
            rate = int(rate * self.slow_start_factor)
        else:
            rate = rate + self.step
        return max(self.floor, min(self.ceiling, rate))

    def under(self, latency_ms: float, target_ms: float, floor_ms: float = 0.0) -> bool:
        """Whether a barrier's latency is within the threshold the controller aims at (or within
        `floor_margin` of the job's floor latency, when that is higher)."""
        return latency_ms <= self.threshold(target_ms, floor_ms)

    def threshold(self, target_ms: float, floor_ms: float = 0.0) -> float:
        """The latency the controller aims at: `aim` × the target, or the job's floor latency ×
        `floor_margin` when that is higher (÷ `aim`: the bound a barrier must not pass)."""
        return max(self.aim * target_ms, self.floor_margin * floor_ms)

    def clamp(self, rate: int) -> int:
        return max(self.floor, min(self.ceiling, rate))


POLICY = AimdPolicy()


def is_adaptive(rel: RelationCatalog) -> bool:
    return bool(rel.extra.get(ADAPTIVE_BACKFILL_RATE))


def target_ms(configured: int, barrier_interval_ms: int) -> int:
    """The barrier latency the controller aims at: the system parameter, or twice the interval.

    >>> target_ms(0, 1000), target_ms(3000, 1000)
    (2000, 3000)
    """
    return configured if configured > 0 else 2 * barrier_interval_ms


class BackfillRateController:
    """The current limit of every adaptive creating job, updated from each barrier's latency."""

    def __init__(self, policy: AimdPolicy = POLICY, fit: FitPolicy = FitPolicy()) -> None:
        self.policy = policy
        self.fit = fit
        self._lock = threading.Lock()
        self._rates: dict[int, int] = {}
        self._slow_start: set[int] = set()  # the jobs no barrier over the threshold has slowed yet
        self._at_floor: dict[int, deque[float]] = {}  # latencies of a job's last barriers at the floor
        self._floor_ms: dict[int, float] = {}  # a job's floor latency, once measured (the module doc)
        self._floor_age: dict[int, int] = {}  # barriers since a job's floor latency was measured
        self._resume: dict[int, int] = {}  # a job's limit when its floor latency expired
        self._labels: dict[int, dict[str, str]] = {}  # of each job's gauge
        # (rows read per parallelism, latency) of the last barriers of a job whose backfill runs in the
        # rounds (`meta.backfill_rate_fit`)
        self._samples: dict[int, deque[tuple[float, float]]] = {}

    def start(self, rel: RelationCatalog, current: int | None = None) -> int:
        """Begin adapting a job's limit from `current` (a fixed limit it had), else from the start."""
        rate = self.policy.start if current is None or current <= 0 else self.policy.clamp(current)
        with self._lock:
            self._set(rel, rate)
            self._slow_start.add(rel.id)
        logger.info("job %d (%s): adaptive backfill rate from %d rows/s per parallelism", rel.id, rel.name, rate)
        return rate

    def rate(self, job_id: int) -> int | None:
        with self._lock:
            return self._rates.get(job_id)

    def after_barrier(self, latency_ms: float, target: float, jobs: Iterable[RelationCatalog],
                      read: Mapping[int, float] | None = None) -> Throttle | None:
        """One control step for the adaptive jobs among `jobs` (the creating jobs whose rounds run
        in the barrier that took `latency_ms`): the `Throttle` of the limits that changed, if any.
        Jobs no longer among `jobs` (created, dropped, moved to a backfiller) are forgotten. `read`:
        the backfill rows each job's round read in that barrier, per parallelism (the limit's unit),
        for the fitted line of `meta.backfill_rate_fit` — a new limit reaches the rounds a barrier or
        two after it is sent, so the limit at this step is not what that round read."""
        changed = []
        with self._lock:
            live = set()
            for rel in jobs:
                if not is_adaptive(rel) or rel.status is not JobStatus.CREATING:
                    continue
                live.add(rel.id)
                rate = self._rates.get(rel.id)
                if rate is None:  # after a restart: the job runs at its stored starting limit
                    rate = self._set(rel, self.policy.clamp(int(rel.extra.get(BACKFILL_RATE_LIMIT)
                                                                    or self.policy.start)))
                    self._slow_start.add(rel.id)
                slow_start = rel.id in self._slow_start
                floor_ms, resume = self._measure_floor(rel.id, rate, latency_ms, target)
                new = self._fitted_rate(rel, rate, latency_ms, target, floor_ms, read)
                if new is None:
                    new = self.policy.next_rate(rate, latency_ms, target, slow_start, floor_ms)
                if resume:  # (measured again: back near where the job was before it went to measure)
                    new = max(new, self.policy.clamp(int(resume * self.policy.factor)))
                if slow_start and not self.policy.under(latency_ms, target, floor_ms):
                    self._slow_start.discard(rel.id)
                if new != rate:
                    self._set(rel, new)
                    changed.append((rel.id, new))
                    logger.debug("job %d: barrier %.0f ms (target %.0f ms): adaptive backfill rate %d -> %d",
                                 rel.id, latency_ms, target, rate, new)
            for stale in set(self._rates) - live:
                self._forget(stale)
        return Throttle(tuple((job_id, rate) for job_id, rate in changed)) if changed else None

    def _fitted_rate(self, rel: RelationCatalog, rate: int, latency_ms: float, target: float,
                     floor_ms: float, read: Mapping[int, float] | None) -> int | None:
        """The limit after this barrier from the line fitted through the job's recent barriers
        (`meta.backfill_rate_fit`), or None where AIMD decides: a snapshot backfill, too few samples
        for a line, a barrier over the target itself. A round that read nothing keeps the limit."""
        if rel.backfill_type not in (BackfillType.ARRANGEMENT_BACKFILL, BackfillType.NO_SHUFFLE_BACKFILL):
            return None
        samples = self._samples.setdefault(rel.id, deque(maxlen=self.fit.window))
        if read is None:  # (what the round read is not known: the limit now, as if it had)
            samples.append((float(rate), latency_ms))
        elif read.get(rel.id, 0) > 0:
            samples.append((read[rel.id], latency_ms))
        else:  # its round read nothing (its scans wait in the backfill order): no word on the limit
            return rate
        threshold = self.policy.threshold(target, floor_ms)
        if len(samples) < self.fit.samples or latency_ms > threshold / self.policy.aim:
            return None
        line = self.fit.line(samples)
        if line is None:
            if self.fit.probing(rate, samples):  # (its rounds have not read the last probe yet)
                return rate
            return self.policy.clamp(self.fit.probe(rate, latency_ms, threshold))
        return self.policy.clamp(self.fit.next_rate(rate, line, threshold, self.policy.factor))

    def _measure_floor(self, job_id: int, rate: int, latency_ms: float, target: float) -> tuple[float, int]:
        """The job's floor latency after this barrier (0: none), from its last `floor_window` barriers
        at the floor (see the module doc), and, when it was just measured again after it expired,
        the limit the job had then (else 0)."""
        window = self.policy.floor_window
        if self.policy.under(latency_ms, target):  # (a quick barrier: the cost that expired is gone)
            self._resume.pop(job_id, None)
        floor_ms = self._floor_ms.get(job_id, 0.0)
        if floor_ms:
            age = self._floor_age[job_id] = self._floor_age.get(job_id, 0) + 1
            if age >= self.policy.floor_ttl:  # measured again: the cost may have gone
                self._forget_floor(job_id)
                self._resume[job_id] = rate
                return 0.0, 0
        if rate > self.policy.floor:
            return floor_ms, 0
        seen = self._at_floor.setdefault(job_id, deque(maxlen=window))
        seen.append(latency_ms)
        if len(seen) < window or self.policy.under(statistics.median(seen), target, floor_ms):
            return floor_ms, 0
        floor_ms = self._floor_ms[job_id] = statistics.median(seen)
        self._floor_age[job_id] = 0
        seen.clear()
        logger.info("job %d: barriers at the floor of %d rows/s take %.0f ms (the threshold: %.0f ms): the "
                    "adaptive rate now aims at %.0f ms", job_id, rate, floor_ms, self.policy.aim * target,
                    self.policy.floor_margin * floor_ms)
        return floor_ms, self._resume.pop(job_id, 0)

    def _forget_floor(self, job_id: int) -> None:
        self._at_floor.pop(job_id, None)
        self._floor_ms.pop(job_id, None)
        self._floor_age.pop(job_id, None)

    def _set(self, rel: RelationCatalog, rate: int) -> int:
        self._rates[rel.id] = rate
        labels = self._labels.setdefault(rel.id, backfill_labels(rel))
        METRICS.backfill_rate_limit.labels(**labels).set(rate)
        return rate

    def _forget(self, job_id: int) -> None:
        self._rates.pop(job_id, None)
        self._slow_start.discard(job_id)
        self._forget_floor(job_id)
        self._resume.pop(job_id, None)
        self._samples.pop(job_id, None)
        labels = self._labels.pop(job_id, None)
        if labels is not None:
            with contextlib.suppress(KeyError):
                METRICS.backfill_rate_limit.remove(*labels.values())


def rows_read_per_parallelism(reports: Iterable[BackfillReport], jobs: Iterable[RelationCatalog],
                              default_parallelism: int | None) -> dict[int, float]:
    """What each job's backfill read in a barrier's round, in the limit's unit, for the fitted line
    (`meta.backfill_rate_fit`): the most rows one of its scans read, per parallelism. Each scan of a
    job reads up to limit × parallelism rows in a round (`compute.stream.round`'s budget, at its
    1-s round), so the most any scan read is the limit the round ran at; a sum would count a join's
    scans k times. A job whose scans read nothing (waiting in the backfill order, or done) is left
    out: such a round tells nothing of the limit. So is a job whose parallelism is not known.

    >>> from risingspark.barrier import BackfillReport as R
    >>> jobs = [RelationCatalog(id=i, database_id=1, schema_id=1, name="m", kind=None, fields=(), pk=(),
    ...                         dist_key=(), definition="", parallelism=p) for i, p in ((1, 0), (2, 4), (3, 0))]
    >>> rows_read_per_parallelism([R(1, 10, (), 2000, scan_id=0), R(1, 11, (), 1500, scan_id=1),
    ...                            R(2, 10, (), 4000), R(3, 10, (), 0)], jobs, 2)
    {1: 1000.0, 2: 1000.0}
    """
    most: dict[int, int] = {}
    for report in reports:
        if report.rows_read > 0:
            most[report.job_id] = max(most.get(report.job_id, 0), report.rows_read)
    return {r.id: most[r.id] / parallelism for r in jobs
            if r.id in most and (parallelism := r.parallelism or default_parallelism or 0) > 0}


def with_adaptive_start(rel: RelationCatalog, policy: AimdPolicy = POLICY) -> RelationCatalog:
    """A new adaptive job as the catalog keeps it: the starting limit stored as its fixed limit, so
    its first rounds (and those after a recovery) run at it; none for a serverless backfill."""
    extra = {k: v for k, v in rel.extra.items() if k != BACKFILL_RATE_LIMIT}
    if serverless_state(rel) is None:
        extra[BACKFILL_RATE_LIMIT] = policy.start
    return replace(rel, extra=extra)


def describe(fixed: int | None, adaptive: int | None) -> str | None:
    """A job's limit as `rw_fragment_backfill_progress.rate_limit` shows it.

    >>> describe(None, 120000), describe(5000, None), describe(None, None)
    ('adaptive (120000 rows/s)', '5000', None)
    """
    if adaptive is not None:
        return f"adaptive ({adaptive} rows/s)"
    return None if fixed is None else str(fixed)
