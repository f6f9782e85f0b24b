"""`rw_ddl_progress` read while the commit that finishes a job lands: the job shows either its last
progress or nothing (it is created), never 0 rows consumed. The commit marks the job CREATED and
then drops its progress; a reader that took the catalog before the first step must not see the
second (CI saw `0.00% (0/100000)` after `99.62%`)."""

from __future__ import annotations

import threading

from meta.service import MetaService
from meta.store.store import MetaStore
from risingspark.barrier import BackfillReport, EpochResult, VnodeProgress
from risingspark.catalog import JobStatus, RelationCatalog, RelationKind
from risingspark.storage.object_store import ObjectStore
from risingspark.types import INT8, Field


class _NoCompute:
    def reset(self) -> None:
        pass


class _CatalogThatFinishesTheJob:
    """The catalog, except that its first snapshot read lets the job's finishing commit run (and
    gives it two seconds to get through) before the reader goes on with the snapshot it took."""

    def __init__(self, meta: MetaService, job_id: int) -> None:
        self._real, self._meta, self._job_id = meta.catalog, meta, job_id
        self.finisher: threading.Thread | None = None

    def __getattr__(self, name: str):
        return getattr(self._real, name)

    @property
    def snapshot(self):
        snap = self._real.snapshot
        if self.finisher is None:
            self.finisher = threading.Thread(target=self._finish)
            self.finisher.start()
            self.finisher.join(timeout=2)
        return snap

    def _finish(self) -> None:
        with self._meta.store.transaction() as tx:  # as the barrier manager's commit does
            self._real.set_status(tx, self._job_id, JobStatus.CREATED)
        self._meta._after_commit(EpochResult(2, finished_jobs=(self._job_id,)))


def test_a_job_finishing_during_a_progress_read_never_shows_zero_rows(tmp_path) -> None:
    store = MetaStore(f"sqlite:///{tmp_path / 'meta.db'}")
    store.upgrade()
    meta = MetaService(store, ObjectStore(str(tmp_path / "objects")), _NoCompute())
    snap = meta.catalog_snapshot()
    db = snap.database("dev")
    schema = snap.schema(db.id, "public")
    fields = (Field("id", INT8),)
    t_id = meta.allocate_ids(2)
    mv_id = t_id + 1
    with store.transaction() as tx:
        meta.catalog.create_relation(tx, RelationCatalog(t_id, db.id, schema.id, "t", RelationKind.TABLE, fields,
                                                         (0,), (0,), "CREATE TABLE t"))
        meta.catalog.create_relation(tx, RelationCatalog(mv_id, db.id, schema.id, "m", RelationKind.MATERIALIZED_VIEW,
                                                         fields, (0,), (0,), "CREATE MATERIALIZED VIEW m",
                                                         JobStatus.CREATING, dependencies=(t_id,)))
    meta._after_commit(EpochResult(1, row_count_deltas={t_id: 1000}, backfill=(
        BackfillReport(mv_id, t_id, (VnodeProgress(0, (7,), False, 996),), rows_read=996),)))
    [before] = meta.ddl_progress()
    assert (before.consumed_rows, before.total_rows) == (996, 1000)

    finishing = _CatalogThatFinishesTheJob(meta, mv_id)
    meta.catalog = finishing
    try:
        during = meta.ddl_progress()
    finally:
        finishing.finisher.join()
        meta.catalog = finishing._real
    assert [(p.ddl_id, p.consumed_rows) for p in during] in ([], [(mv_id, 996)])
    assert meta.ddl_progress() == []
