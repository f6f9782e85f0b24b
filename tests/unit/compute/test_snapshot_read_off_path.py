"""A rate-limited snapshot read runs off the barrier's path (`compute.stream.snapshot`): the round
that starts it does not wait for it, rounds meanwhile report no progress, the first round after it
finished commits its files and progress with its own epoch, a failed read fails that round, and an
unlimited read stays in its round.

The read itself (`_read`: a Spark job over the split) is replaced by one the test controls; the
rounds are real `EpochRound`s over a real local object store."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from compute.stream import snapshot
from compute.stream.round import EpochRound, JobRuntime
from risingspark.barrier import Barrier, ChangeLogInfo, SnapshotState, StreamJob, VnodeProgress
from risingspark.epoch import EpochPair
from risingspark.storage.desc import HummockVersion, SstableInfo, StateTableDesc
from risingspark.storage.object_store import ObjectStore
from risingspark.stream_plan import StreamMaterialize, StreamTableScan
from risingspark.types import INT8, Field
from risingspark.vnode import VNODE_COUNT

FIELDS = (Field("id", INT8),)
MV = StateTableDesc(2, FIELDS, (0,))
ROWS = 1000


class FakeContext:
    """What the rounds and the read's thread ask of a SparkContext: local properties, job groups."""

    defaultParallelism = 2  # noqa: N815 (Spark's name)

    def __init__(self) -> None:
        self.properties: dict[str, str] = {}
        self.cancelled: list[str] = []

    def setLocalProperty(self, key: str, value: str) -> None:  # noqa: N802 (Spark's name)
        self.properties[key] = value

    def setJobGroup(self, group: str, description: str, interruptOnCancel: bool = False) -> None:  # noqa: N802,N803
        self.properties["spark.jobGroup.id"] = group

    def cancelJobGroup(self, group: str) -> None:  # noqa: N802
        self.cancelled.append(group)


def runtime(rate: int | None) -> JobRuntime:
    scan = StreamTableScan(FIELDS, (0,), upstream_id=1, upstream_desc=StateTableDesc(1, FIELDS, (0,)))
    plan = StreamMaterialize(FIELDS, (0,), input=scan, table=MV)
    job = StreamJob(2, "m", plan, 2, (1,), backfill_rate_limit=rate)
    progress = {0: [VnodeProgress(v, None, False, 0) for v in range(VNODE_COUNT)]}
    sst = SstableInfo("s", 1, 0, 0, 0, VNODE_COUNT - 1, 1, 1, ROWS, 0, 0)
    return JobRuntime(job, 2, progress, snapshot=SnapshotState(1, (sst,), True, ((0, VNODE_COUNT - 1),), 1))


class Reads:
    """Stands for the Spark job of a read: records what it was asked, writes one SST and one change
    log into the round it runs in, and finishes when the test says."""

    def __init__(self, block: bool) -> None:
        self.release = threading.Event()
        if not block:
            self.release.set()
        self.started = threading.Event()
        self.calls: list[tuple[int, int, int]] = []  # (lo, hi, epoch of the round it ran in)
        self.fail = False

    def __call__(self, rnd: EpochRound, rt: JobRuntime, lo: int, hi: int) -> int:
        self.calls.append((lo, hi, rnd.env.epoch))
        self.started.set()
        assert self.release.wait(10)
        if self.fail:
            raise RuntimeError("the read failed")
        rnd.out.ssts.append(SstableInfo(f"hummock/2/{lo}.parquet", 2, rnd.env.epoch, rnd.env.epoch, lo, hi,
                                        1, 1, 7, 0, 100))
        rnd.out.change_logs.append(ChangeLogInfo(2, rnd.env.epoch, f"log/2/{lo}.parquet", 7))
        rnd.out.row_deltas[2] += 7
        return 7


@pytest.fixture
def context():
    return FakeContext()


def round_at(epoch: int, tmp_path, context: FakeContext, off_path: bool = True) -> EpochRound:
    barrier = Barrier(EpochPair(epoch, epoch - 1), True, HummockVersion(1, epoch - 1), reads_off_path=off_path)
    return EpochRound(SimpleNamespace(sparkContext=context), ObjectStore(str(tmp_path)), barrier, 1.0)


def test_a_limited_read_is_committed_by_the_first_round_after_it_finished(tmp_path, monkeypatch, context) -> None:
    reads = Reads(block=True)
    monkeypatch.setattr(snapshot, "_read", reads)
    rt = runtime(rate=100_000)  # its bucket covers the first split at once

    first = round_at(10, tmp_path, context)
    snapshot.run_snapshot_backfill(first, rt)  # returns while the read runs
    assert reads.started.wait(10) and reads.calls == [(0, VNODE_COUNT - 1, 10)]
    assert first.out.ssts == [] and [r.vnodes for r in first.out.backfill] == [()]
    assert first.out.backfill[0].reading_epoch == 10  # meta pins this round's version meanwhile
    assert context.properties["spark.scheduler.pool"] == snapshot.READ_POOL
    assert context.properties["spark.jobGroup.id"] == rt.pending.group

    second = round_at(11, tmp_path, context)
    snapshot.run_snapshot_backfill(second, rt)  # still reading: no progress, no second read
    assert second.out.ssts == [] and [r.vnodes for r in second.out.backfill] == [()]
    assert not second.out.backfill[0].snapshot_done and len(reads.calls) == 1
    assert second.out.backfill[0].reading_epoch == 10

    reads.release.set()
    assert rt.pending is not None and rt.pending.done.wait(10)
    third = round_at(12, tmp_path, context)
    snapshot.run_snapshot_backfill(third, rt)
    assert [s.path for s in third.out.ssts] == ["hummock/2/0.parquet"]  # written at epoch 10, committed at 12
    assert third.out.change_logs == [ChangeLogInfo(2, 12, "log/2/0.parquet", 7)]
    assert third.changelogs[2] == ["log/2/0.parquet"] and third.out.row_deltas[2] == 7
    report = third.out.backfill[0]
    assert report.rows_read == 7 and report.snapshot_done and len(report.vnodes) == VNODE_COUNT
    assert report.reading_epoch is None
    assert all(p.finished for p in rt.progress[0]) and rt.pending is None


def test_a_failed_read_fails_the_round_that_would_commit_it(tmp_path, monkeypatch, context) -> None:
    reads = Reads(block=False)
    reads.fail = True
    monkeypatch.setattr(snapshot, "_read", reads)
    rt = runtime(rate=100_000)
    snapshot.run_snapshot_backfill(round_at(10, tmp_path, context), rt)
    assert rt.pending is not None and rt.pending.done.wait(10)
    with pytest.raises(RuntimeError, match="the read failed"):
        snapshot.run_snapshot_backfill(round_at(11, tmp_path, context), rt)
    assert not any(p.finished for p in rt.progress[0])


def test_an_unlimited_read_stays_in_its_round(tmp_path, monkeypatch, context) -> None:
    reads = Reads(block=False)
    monkeypatch.setattr(snapshot, "_read", reads)
    rt = runtime(rate=None)
    rnd = round_at(10, tmp_path, context)
    snapshot.run_snapshot_backfill(rnd, rt)
    assert rt.pending is None and [s.path for s in rnd.out.ssts] == ["hummock/2/0.parquet"]
    assert rnd.out.backfill[0].snapshot_done and "spark.scheduler.pool" not in context.properties


def test_a_dropped_job_cancels_its_read(tmp_path, monkeypatch, context) -> None:
    from compute.node import ComputeNode
    from risingspark.barrier import DropJobs

    reads = Reads(block=True)
    monkeypatch.setattr(snapshot, "_read", reads)
    rt = runtime(rate=100_000)
    snapshot.run_snapshot_backfill(round_at(10, tmp_path, context), rt)
    assert reads.started.wait(10) and rt.pending is not None
    node = ComputeNode(SimpleNamespace(sparkContext=context), ObjectStore(str(tmp_path)))
    node._jobs[rt.job.job_id] = rt
    node._apply(DropJobs((rt.job.job_id,)))
    deadline = time.monotonic() + 10
    while not context.cancelled:  # (from a thread that cancels again until the read ends)
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert set(context.cancelled) == {rt.pending.group}
    reads.release.set()


def test_a_job_re_added_while_reading_starts_a_new_cache_generation(tmp_path, monkeypatch, context) -> None:
    from compute.node import ComputeNode
    from risingspark.barrier import AddJobs

    reads = Reads(block=True)
    monkeypatch.setattr(snapshot, "_read", reads)
    rt = runtime(rate=100_000)
    snapshot.run_snapshot_backfill(round_at(10, tmp_path, context), rt)
    node = ComputeNode(SimpleNamespace(sparkContext=context), ObjectStore(str(tmp_path)))
    node._jobs[rt.job.job_id] = rt
    generation = node.generation
    node._apply(AddJobs((rt.job,)))  # the read let go may still write through the caches at epoch 10
    assert node.generation != generation and node._jobs[rt.job.job_id].pending is None
    reads.release.set()


def test_a_limited_read_stays_in_its_round_where_meta_does_not_track_reads(tmp_path, monkeypatch, context) -> None:
    reads = Reads(block=False)
    monkeypatch.setattr(snapshot, "_read", reads)
    rt = runtime(rate=100_000)
    rnd = round_at(10, tmp_path, context, off_path=False)  # another resource group's round, say
    snapshot.run_snapshot_backfill(rnd, rt)
    assert rt.pending is None and [s.path for s in rnd.out.ssts] == ["hummock/2/0.parquet"]
    assert rnd.out.backfill[0].snapshot_done and rnd.out.backfill[0].reading_epoch is None
