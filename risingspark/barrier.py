"""What meta sends to a compute node each epoch (`Barrier`) and what the node reports back
(`EpochResult`): the messages of the barrier protocol.

Meta injects barrier E with the DML batches that arrived since the last barrier and an optional
mutation; the compute node runs one epoch round and reports the files it wrote and the backfill
progress it made; meta then commits all of it in one meta-store transaction (`meta.barrier`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from risingspark.epoch import EpochPair
from risingspark.storage.desc import HummockVersion, SstableInfo
from risingspark.stream_plan import StreamNode


@dataclass(frozen=True)
class VnodeProgress:
    """Backfill state of one upstream vnode: ``| vnode | pk... | backfill_finished | row_count |``.
    `position` is the last upstream key consumed, None before the first read."""

    vnode: int
    position: tuple | None
    finished: bool
    row_count: int


@dataclass(frozen=True)
class ScanProgress:
    """The backfill state of one scan of a job (scans are numbered in plan order: a join has two)."""

    scan_id: int
    upstream_id: int
    vnodes: tuple[VnodeProgress, ...]


@dataclass(frozen=True)
class SnapshotState:
    """A snapshot backfill (as RisingWave's `SnapshotBackfillExecutor`): the upstream is read at
    `snapshot_epoch` from the SSTs it had then (pinned until the read is done), one vnode-range split
    per epoch round; upstream changes after it are consumed from the change log afterwards.

    Attributes:
        ssts: the upstream's SSTs at the snapshot epoch.
        unique_keys: every stored version is a distinct live key (no merge needed).
        splits: inclusive vnode ranges read one at a time; a split is done when all its vnodes are
            finished in the job's per-vnode progress.
        consumed_epoch: the newest upstream epoch whose changes the job has applied.
    """

    snapshot_epoch: int
    ssts: tuple[SstableInfo, ...]
    unique_keys: bool
    splits: tuple[tuple[int, int], ...]
    consumed_epoch: int
    snapshot_done: bool = False


@dataclass(frozen=True)
class StreamJob:
    """A streaming job as a compute node runs it (a table's DML job, or an MV).

    `backfill` holds the per-vnode progress of each scan of a creating job, None once it is created.
    `backfill_order` holds ``(before, after)`` upstream relation ids (`risingspark.backfill_order`).
    """

    job_id: int
    name: str
    plan: StreamNode
    parallelism: int
    upstream_ids: tuple[int, ...]
    backfill: tuple[ScanProgress, ...] | None = None
    backfill_rate_limit: int | None = None
    snapshot: SnapshotState | None = None
    backfill_order: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class AddJobs:
    """Start jobs (a new MV, a new table, or every job after a recovery)."""

    jobs: tuple[StreamJob, ...]


@dataclass(frozen=True)
class DropJobs:
    job_ids: tuple[int, ...]


@dataclass(frozen=True)
class Throttle:
    """Change the backfill rate limit of running jobs (None: unlimited)."""

    rates: tuple[tuple[int, int | None], ...]


Mutation = AddJobs | DropJobs | Throttle


@dataclass(frozen=True)
class DmlBatch:
    """DML rows a frontend made durable in the object store before answering the client."""

    batch_id: int
    table_id: int
    path: str
    row_count: int


@dataclass(frozen=True)
class DmlReceipt:
    """Meta's answer to a recorded DML batch: its id, and whether its table's writes are held (a write
    stall, `meta.compaction.write_stall`): the writer then waits until they are not."""

    batch_id: int
    stalled: bool


@dataclass(frozen=True)
class ChangeLogInfo:
    table_id: int
    epoch: int
    path: str
    row_count: int


@dataclass(frozen=True)
class LogBatch:
    """Change logs a snapshot-backfill job consumes this round: every upstream log of epochs in
    ``(from_epoch, to_epoch]``. `to_epoch` equal to the barrier's previous epoch means the job has
    caught up and also consumes this epoch's changes in the round, unless `final` is false: a
    serverless backfiller never runs the upstream's round, so it catches up only to the committed
    epoch, and the job joins the live stream after its migration to the default resource group."""

    job_id: int
    from_epoch: int
    to_epoch: int
    logs: tuple[ChangeLogInfo, ...]
    final: bool = True


@dataclass(frozen=True)
class Barrier:
    epoch: EpochPair
    checkpoint: bool
    version: HummockVersion
    mutations: tuple[Mutation, ...] = ()
    dml: tuple[DmlBatch, ...] = ()
    recovery: bool = False
    log_batches: tuple[LogBatch, ...] = ()
    # Meta keeps what a snapshot read running off the barrier's path needs (`BackfillReport.reading_epoch`)
    # for these jobs: a rate-limited read may outlive the round. Otherwise every read stays in its round.
    reads_off_path: bool = False


@dataclass(frozen=True)
class BackfillReport:
    """Backfill progress of one job in one round. For a snapshot backfill, `consumed_epoch` is the
    newest upstream epoch applied and `snapshot_done` says the snapshot read is complete.
    `reading_epoch`: a snapshot read started by the round of that epoch is still running off the
    barrier's path (`compute.stream.snapshot`): that round's version must stay pinned and its epoch
    outstanding (its files not garbage) until a report of the job no longer says so."""

    job_id: int
    upstream_id: int
    vnodes: tuple[VnodeProgress, ...]
    rows_read: int
    forwarded_rows: int = 0
    scan_id: int = 0
    consumed_epoch: int | None = None
    snapshot_done: bool = False
    reading_epoch: int | None = None


@dataclass(frozen=True)
class EpochResult:
    """What one epoch round produced. Nothing in it is visible until meta commits the epoch."""

    epoch: int
    ssts: tuple[SstableInfo, ...] = ()
    change_logs: tuple[ChangeLogInfo, ...] = ()
    row_count_deltas: dict[int, int] = field(default_factory=dict)
    backfill: tuple[BackfillReport, ...] = ()
    finished_jobs: tuple[int, ...] = ()
    consumed_dml: tuple[int, ...] = ()
    spark_jobs: int = 0
    rows_in: dict[int, int] = field(default_factory=dict)
    cache_hits: int = 0  # keys the stateful executors found in their state caches ...
    cache_misses: int = 0  # ... and read from storage
