"""The compute node: keeps the streaming jobs meta gave it and runs one epoch round per barrier on
its SparkSession."""

from __future__ import annotations

import logging
import threading
import uuid
from dataclasses import dataclass, replace

from compute.stream.round import EpochRound, JobRuntime
from risingspark.barrier import AddJobs, Barrier, EpochResult, Mutation, StreamJob, Throttle
from risingspark.storage.object_store import ObjectStore

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CacheBudgets:
    """Memory of a compute node's caches, shared by its Spark cores (each Python worker gets its
    share): the executors' state caches and the block cache of decoded SST blocks."""

    state_cache_mb: int = 512
    block_cache_mb: int = 512

    def per_worker(self, cores: int) -> tuple[int, int]:
        """``(state, block)`` bytes of one Python worker."""
        cores = max(1, cores)
        return (self.state_cache_mb << 20) // cores, (self.block_cache_mb << 20) // cores


class ComputeNode:
    def __init__(self, spark, store: ObjectStore, *, parallelism: int = 0,
                 target_round_s: float = 1.0, caches: CacheBudgets | None = None) -> None:
        self.spark = spark
        self.store = store
        self.default_parallelism = parallelism or spark.sparkContext.defaultParallelism
        self.target_round_s = target_round_s
        self.caches = caches or CacheBudgets()
        self._jobs: dict[int, JobRuntime] = {}
        self._lock = threading.Lock()
        # The executor caches of the Python workers are valid within one generation: a recovery rolls
        # back epochs whose writes they may hold (`compute.cache.state_cache`).
        self._node_token = uuid.uuid4().hex[:12]
        self._resets = 0

    @property
    def generation(self) -> str:
        return f"{self._node_token}-{self._resets}"

    def reset(self) -> None:
        with self._lock:
            for rt in self._jobs.values():
                _cancel_read(rt)
            self._jobs.clear()
            self._resets += 1

    def run_epoch(self, barrier: Barrier) -> EpochResult:
        with self._lock:
            for m in barrier.mutations:
                self._apply(m)
            jobs = list(self._jobs.values())
            # Jobs run upstream first: ids grow with creation, and a job only reads older relations.
            jobs.sort(key=lambda rt: rt.job.job_id)
            if barrier.recovery:
                self._resets += 1
            cores = self.spark.sparkContext.defaultParallelism
            return EpochRound(self.spark, self.store, barrier, self.target_round_s, generation=self.generation,
                              cache_bytes=self.caches.per_worker(cores)).run(jobs)

    def _apply(self, mutation: Mutation) -> None:
        if isinstance(mutation, Throttle):
            for job_id, rate in mutation.rates:
                rt = self._jobs.get(job_id)
                if rt is not None:
                    rt.job = replace(rt.job, backfill_rate_limit=rate)
                    logger.info("job %d: backfill rate limit %s", job_id, "unlimited" if rate is None else rate)
            return
        if isinstance(mutation, AddJobs):
            for job in mutation.jobs:
                old = self._jobs.get(job.job_id)
                if old is not None and old.pending is not None:
                    # The read let go may still write through the executor caches at an epoch that
                    # will never commit: a new generation makes every cache start again.
                    _cancel_read(old)
                    self._resets += 1
                self._jobs[job.job_id] = self._runtime(job)
                logger.info("job %d (%s) added%s", job.job_id, job.name,
                            " (backfilling)" if job.backfill is not None else "")
        else:
            for job_id in mutation.job_ids:
                rt = self._jobs.pop(job_id, None)
                if rt is not None:
                    _cancel_read(rt)
                    logger.info("job %d dropped", job_id)

    def _runtime(self, job: StreamJob) -> JobRuntime:
        parallelism = job.parallelism or self.default_parallelism
        progress = {s.scan_id: list(s.vnodes) for s in job.backfill} if job.backfill is not None else None
        return JobRuntime(job, parallelism, progress, snapshot=job.snapshot)

    @property
    def job_ids(self) -> list[int]:
        with self._lock:
            return sorted(self._jobs)


def _cancel_read(rt: JobRuntime) -> None:
    """Stop the snapshot read running off the barrier's path of a job this node lets go."""
    if rt.pending is not None:
        rt.pending.cancel()
