"""Meta's side of snapshot backfill: fixing the snapshot, pinning its SSTs, and feeding the job the
upstream's change log after the snapshot, several epochs per round while it is far behind.

State per job, in the ``snapshot_backfill`` table (committed with the epochs that change it)::

    | job_id | upstream_id | snapshot_epoch | consumed_epoch | snapshot_done | unique_keys | total_rows |
    | ssts (the upstream's SSTs at the snapshot epoch) | splits (vnode ranges) |

While `snapshot_done` is false the pinned SSTs are never vacuumed; while the job exists, the
upstream's change logs newer than `consumed_epoch` are never truncated.
"""

from __future__ import annotations

import json
from collections.abc import Collection

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from meta.store.schema import change_logs, snapshot_backfill
from meta.store.store import MetaStore, Txn
from risingspark.barrier import BackfillReport, ChangeLogInfo, LogBatch, SnapshotState
from risingspark.snapshot_splits import MAX_SPLITS, SPLIT_TARGET_ROWS, plan_splits
from risingspark.storage.desc import HummockVersion, SstableInfo

# Change log one catch-up round consumes at most.
MAX_LOG_EPOCHS_PER_ROUND = 64
MAX_LOG_ROWS_PER_ROUND = 2_000_000


class SnapshotBackfills:
    def __init__(self, store: MetaStore) -> None:
        self._store = store

    def create(self, tx: Txn, job_id: int, upstream_id: int, version: HummockVersion, live_rows: int,
               split_rows: int = SPLIT_TARGET_ROWS, max_splits: int = MAX_SPLITS) -> None:
        """Fix the snapshot of a new job at the version's committed epoch; splits hold about
        `split_rows` rows (a rate-limited job's are single vnodes: `risingspark.snapshot_splits`)."""
        ssts = version.ssts(upstream_id)
        stored = sum(s.row_count for s in ssts)
        tombstones = sum(s.tombstone_count for s in ssts)
        # Each live key has at least one stored version: as many versions as live keys, and no
        # tombstone, means each version is a distinct live key, and the read needs no merge.
        unique = stored == live_rows and tombstones == 0
        tx.conn.execute(snapshot_backfill.insert().values(
            job_id=job_id, upstream_id=upstream_id, snapshot_epoch=version.committed_epoch,
            consumed_epoch=version.committed_epoch, snapshot_done=False, unique_keys=unique, total_rows=live_rows,
            ssts=json.dumps([s.to_json() for s in ssts]), splits=json.dumps(plan_splits(live_rows, split_rows, max_splits))))

    def load(self, job_id: int) -> SnapshotState | None:
        with self._store.begin() as conn:
            r = conn.execute(sa.select(snapshot_backfill).where(snapshot_backfill.c.job_id == job_id)).first()
        if r is None:
            return None
        return SnapshotState(r.snapshot_epoch, tuple(SstableInfo.from_json(s) for s in json.loads(r.ssts)),
                             r.unique_keys, tuple(tuple(s) for s in json.loads(r.splits)), r.consumed_epoch,
                             r.snapshot_done)

    def total_rows(self) -> dict[int, int]:
        with self._store.begin() as conn:
            return {r.job_id: int(r.total_rows) for r in conn.execute(
                sa.select(snapshot_backfill.c.job_id, snapshot_backfill.c.total_rows))}

    def log_batches(self, prev_epoch: int, *, only: set[int] | None = None, exclude: Collection[int] = (),
                    final: bool = True) -> list[LogBatch]:
        """For every job whose snapshot read is done (of `only`, if given; none of `exclude`): the
        next change logs to consume. `final=False` batches never let a job join the live stream."""
        out = []
        with self._store.begin() as conn:
            jobs = conn.execute(sa.select(snapshot_backfill).where(snapshot_backfill.c.snapshot_done)).all()
            for j in jobs:
                if j.job_id in exclude or (only is not None and j.job_id not in only):
                    continue
                rows = conn.execute(
                    sa.select(change_logs).where((change_logs.c.table_id == j.upstream_id)
                                                 & (change_logs.c.epoch > j.consumed_epoch)
                                                 & (change_logs.c.epoch <= prev_epoch))
                    .order_by(change_logs.c.epoch, change_logs.c.id)).all()
                logs: list[ChangeLogInfo] = []
                epochs, total, to_epoch = 0, 0, prev_epoch
                for i, r in enumerate(rows):
                    new_epoch = i == 0 or r.epoch != rows[i - 1].epoch
                    if new_epoch and logs and (epochs >= MAX_LOG_EPOCHS_PER_ROUND
                                               or total + r.row_count > MAX_LOG_ROWS_PER_ROUND):
                        to_epoch = rows[i - 1].epoch
                        break
                    epochs += int(new_epoch)
                    total += r.row_count
                    logs.append(ChangeLogInfo(r.table_id, r.epoch, r.path, r.row_count))
                out.append(LogBatch(j.job_id, j.consumed_epoch, to_epoch, tuple(logs), final))
        return out

    def commit(self, conn: Connection, report: BackfillReport) -> None:
        values: dict = {}
        if report.snapshot_done:
            values["snapshot_done"] = True
        if report.consumed_epoch is not None:
            values["consumed_epoch"] = report.consumed_epoch
        if values:
            conn.execute(snapshot_backfill.update().where(snapshot_backfill.c.job_id == report.job_id)
                         .values(**values))

    def remove(self, conn: Connection, job_ids: list[int]) -> None:
        conn.execute(snapshot_backfill.delete().where(snapshot_backfill.c.job_id.in_(job_ids)))

    def pinned_paths(self) -> set[str]:
        """SSTs snapshot reads still need: never vacuumed."""
        with self._store.begin() as conn:
            rows = conn.execute(sa.select(snapshot_backfill.c.ssts).where(~snapshot_backfill.c.snapshot_done)).all()
        return {s["path"] for r in rows for s in json.loads(r.ssts)}

    def oldest_needed_epoch(self) -> int | None:
        """Change logs of this epoch or newer must stay: a job has not consumed them yet."""
        with self._store.begin() as conn:
            oldest = conn.execute(sa.select(sa.func.min(snapshot_backfill.c.consumed_epoch))).scalar()
        return None if oldest is None else int(oldest) + 1
