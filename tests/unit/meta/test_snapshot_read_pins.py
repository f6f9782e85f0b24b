"""Meta keeps what a snapshot read running off the barrier's path needs (`BarrierManager._track_reads`):
from the round whose report names the read (`BackfillReport.reading_epoch`) until a report no longer
does, that round's version stays pinned (compaction's vacuum keeps its files) and its epoch
outstanding (the full GC keeps the read's files); a recovery lets both go. The compute node is
scripted: it reports a read started in one round, still running in the next ones, then committed."""

from __future__ import annotations

import threading
import time

from meta.service import MetaService
from meta.store.store import MetaStore
from risingspark.barrier import BackfillReport, Barrier, EpochResult
from risingspark.storage.object_store import ObjectStore

JOB = 999


class ReadingCompute:
    """Reports a read of job `JOB` started by the first barrier after `start` is set, running until
    `adopt` is set (the round that sees it commits it and reports no read)."""

    def __init__(self) -> None:
        self.start, self.adopt = threading.Event(), threading.Event()
        self.barriers: list[Barrier] = []
        self.reading: int | None = None
        self.started: tuple[int, int] | None = None  # (epoch, version id) of the round that started it
        self.resets = 0

    def reset(self) -> None:
        self.resets += 1
        self.reading = None

    def run_epoch(self, barrier: Barrier) -> EpochResult:
        self.barriers.append(barrier)
        assert barrier.reads_off_path
        if self.reading is None and self.start.is_set() and self.started is None:
            self.reading = barrier.epoch.curr
            self.started = (barrier.epoch.curr, barrier.version.id)
        elif self.reading is not None and self.adopt.is_set():
            self.reading = None
        report = BackfillReport(JOB, 1, (), 0, reading_epoch=self.reading)
        return EpochResult(barrier.epoch.curr, backfill=(report,))


def _meta(tmp_path, compute: ReadingCompute) -> MetaService:
    store = MetaStore(f"sqlite:///{tmp_path / 'meta.db'}")
    store.upgrade()
    meta = MetaService(store, ObjectStore(str(tmp_path / "objects")), compute)
    meta.params.set("barrier_interval_ms", 50)
    meta.start()
    return meta


def _rounds_after(compute: ReadingCompute, n: int) -> None:
    target = len(compute.barriers) + n
    deadline = time.monotonic() + 30
    while len(compute.barriers) < target:
        assert time.monotonic() < deadline, "barriers stopped"
        time.sleep(0.02)


def test_a_read_keeps_its_version_pinned_and_its_epoch_outstanding_until_committed(tmp_path) -> None:
    compute = ReadingCompute()
    meta = _meta(tmp_path, compute)
    try:
        _rounds_after(compute, 2)
        assert meta.barriers.oldest_outstanding_epoch() is None
        compute.start.set()
        _rounds_after(compute, 3)
        assert compute.started is not None
        epoch, version_id = compute.started
        assert meta.barriers.oldest_outstanding_epoch() == epoch
        assert meta.hummock._pins[version_id] >= 1  # noqa: SLF001 (the vacuum's protection)
        compute.adopt.set()
        _rounds_after(compute, 2)
        assert meta.barriers.oldest_outstanding_epoch() is None
        assert version_id not in meta.hummock._pins  # noqa: SLF001
    finally:
        meta.stop()


def test_a_recovery_lets_the_read_go(tmp_path) -> None:
    compute = ReadingCompute()
    meta = _meta(tmp_path, compute)
    try:
        compute.start.set()
        _rounds_after(compute, 3)
        assert compute.started is not None
        epoch, version_id = compute.started
        assert meta.barriers.oldest_outstanding_epoch() == epoch
        resets = compute.resets
        meta.barriers.request_recovery()
        deadline = time.monotonic() + 30
        while compute.resets == resets:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        _rounds_after(compute, 2)
        assert meta.barriers.oldest_outstanding_epoch() is None
        assert version_id not in meta.hummock._pins  # noqa: SLF001
    finally:
        meta.stop()
