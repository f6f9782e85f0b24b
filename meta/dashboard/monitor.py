"""The cluster monitor: a thread in meta that samples, every few seconds, what the dashboard charts
over time and what Prometheus reads as gauges.

Each sample records the process tree's CPU and memory, the L0 depth of every state table and the
compaction counters into ring buffers covering the last minutes, and sets the sampled gauges:
``risingspark_process_*``, ``risingspark_storage_l0_sub_levels``,
``risingspark_compaction_pending_bytes``, ``risingspark_compaction_running_tasks``,
``risingspark_storage_write_amplification`` and ``risingspark_backfill_rows_per_second``. (Barrier latencies are recorded by the barrier manager
itself, one sample per barrier.)
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prometheus_client import REGISTRY

from meta.dashboard.process import ProcessTreeSampler, ResourceSample, set_resource_gauges
from meta.history import RingBuffer
from meta.metrics import METRICS, backfill_labels

if TYPE_CHECKING:
    from meta.service import MetaService

logger = logging.getLogger(__name__)

SAMPLE_INTERVAL_S = 2.0
WINDOW_S = 300.0
# Every role of the playground runs in this one process; its resource series carry this node name.
PLAYGROUND_PROCESS = "playground"


@dataclass(frozen=True)
class StorageSample:
    """The LSM shape and compaction activity at one sample: the deepest L0 of any state table, L0
    sub-levels over all tables, and compaction tasks and bytes committed since the previous sample."""

    at: float
    max_l0_sub_levels: int
    total_l0_sub_levels: int
    compaction_tasks: int
    compaction_bytes: int


class ClusterMonitor:
    def __init__(self, meta: MetaService, *, process: str = PLAYGROUND_PROCESS,
                 interval_s: float = SAMPLE_INTERVAL_S, window_s: float = WINDOW_S) -> None:
        self.meta = meta
        self.process = process
        self.interval_s = interval_s
        self.window_s = window_s
        capacity = int(window_s / interval_s) + 1
        self.resources: RingBuffer[ResourceSample] = RingBuffer(capacity)
        self.storage: RingBuffer[StorageSample] = RingBuffer(capacity)
        self._sampler = ProcessTreeSampler()
        self._compaction = self.compaction_totals()
        self._l0_labels: set[tuple[str, str]] = set()
        self._rate_labels: set[tuple[str, str]] = set()
        self._failures = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def pid(self) -> int:
        return self._sampler.root.pid

    def start(self) -> None:
        self._sampler.sample()  # primes CPU measurement
        self._thread = threading.Thread(target=self._run, name="cluster-monitor", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.sample_once()
                self._failures = 0
            except Exception:  # a failed sample must never stop the monitor
                self._failures += 1
                # (once per run of failures: during shutdown meta's store may already be closed)
                logger.log(logging.WARNING if self._failures == 1 else logging.DEBUG,
                           "cluster monitor sample failed", exc_info=True)

    def sample_once(self) -> None:
        res = self._sampler.sample()
        self.resources.append(res)
        set_resource_gauges(METRICS.process_cpu, METRICS.process_memory, self.process, res)
        self.storage.append(self._sample_storage(res.at))
        self._set_backfill_rates()

    def _sample_storage(self, at: float) -> StorageSample:
        snapshot = self.meta.catalog.snapshot
        owners = {d.table_id: r.name for r in snapshot.relations.values() for d in r.state_tables}
        version = self.meta.hummock.version
        seen: set[tuple[str, str]] = set()
        depths = []
        pending = self.meta.compaction.pending_bytes()
        for table_id, levels in version.tables.items():
            if table_id not in owners:
                continue
            labels = (owners[table_id], str(table_id))
            METRICS.l0_sub_levels.labels(*labels).set(len(levels.l0))
            METRICS.compaction_pending_bytes.labels(*labels).set(pending.get(table_id, 0))
            seen.add(labels)
            depths.append(len(levels.l0))
        for gauge in (METRICS.l0_sub_levels, METRICS.compaction_pending_bytes):
            _remove_stale(gauge, self._l0_labels - seen)
        self._l0_labels = seen
        METRICS.compaction_running_tasks.set(len(self.meta.compaction.running))
        flushed = REGISTRY.get_sample_value("risingspark_storage_flush_bytes_total") or 0
        tasks, written = self.compaction_totals()
        if flushed:
            METRICS.write_amplification.set(round(written / flushed, 3))
        prev_tasks, prev_written = self._compaction
        self._compaction = (tasks, written)
        return StorageSample(at, max(depths, default=0), sum(depths), tasks - prev_tasks, written - prev_written)

    def _set_backfill_rates(self) -> None:
        relations = self.meta.catalog.snapshot.relations
        if not self._rate_labels and not any(r.is_creating for r in relations.values()):
            return  # nothing backfills: spare meta the progress query
        seen: set[tuple[str, str]] = set()
        for p in self.meta.ddl_progress():
            rel = relations.get(p.ddl_id)
            if rel is None:
                continue
            labels = backfill_labels(rel)
            METRICS.backfill_rows_per_second.labels(**labels).set(p.rows_per_second or 0.0)
            seen.add((labels["job"], labels["fragment"]))
        _remove_stale(METRICS.backfill_rows_per_second, self._rate_labels - seen)
        self._rate_labels = seen

    @staticmethod
    def compaction_totals() -> tuple[int, int]:
        """Compaction tasks and bytes committed since this process started."""
        return (int(REGISTRY.get_sample_value("risingspark_compaction_tasks_total") or 0),
                int(REGISTRY.get_sample_value("risingspark_compaction_write_bytes_total") or 0))

    def recent_resources(self, now: float | None = None) -> list[ResourceSample]:
        since = (now or time.time()) - self.window_s
        return [s for s in self.resources.items() if s.at >= since]

    def recent_storage(self, now: float | None = None) -> list[StorageSample]:
        since = (now or time.time()) - self.window_s
        return [s for s in self.storage.items() if s.at >= since]


def _remove_stale(gauge, label_sets: set[tuple[str, str]]) -> None:
    for labels in label_sets:
        with contextlib.suppress(KeyError):  # removed already
            gauge.remove(*labels)
