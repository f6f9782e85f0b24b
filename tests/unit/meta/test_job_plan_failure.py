"""A creating job whose plan fails every round (Spark's analysis rejects it: the same each time, so
recovery cannot mend it) is cancelled after `JOB_PLAN_FAILURES` rounds, and its CREATE fails with
the error; the rest of the cluster goes on. A created job is kept (its data is the user's). Meta runs
its barrier loop against a compute node that fails the rounds a listed job is in (no Spark)."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from meta.barrier.manager import JOB_PLAN_FAILURES
from meta.service import MetaService
from meta.store.store import MetaStore
from risingspark.barrier import AddJobs, Barrier, DropJobs, EpochResult
from risingspark.catalog import JobStatus, RelationCatalog, RelationKind
from risingspark.errors import InternalError, RisingSparkError, job_plan_failed
from risingspark.storage.desc import StateTableDesc
from risingspark.storage.object_store import ObjectStore
from risingspark.stream_plan import StreamMaterialize, StreamTableScan, node_to_json
from risingspark.table_kind import ConflictBehavior
from support.meta_tables import create_table


class PlanFailingCompute:
    """Runs every round, but one that holds a job of `bad` fails as that job's plan would."""

    def __init__(self) -> None:
        self.bad: set[int] = set()
        self.jobs: set[int] = set()
        self.failed_rounds = 0
        self.rounds = threading.Semaphore(0)  # released by every round

    def reset(self) -> None:
        self.jobs.clear()

    def run_epoch(self, barrier: Barrier) -> EpochResult:
        for m in barrier.mutations:
            if isinstance(m, AddJobs):
                self.jobs |= {j.job_id for j in m.jobs}
            elif isinstance(m, DropJobs):
                self.jobs -= set(m.job_ids)
        self.rounds.release()
        for job_id in sorted(self.jobs & self.bad):
            self.failed_rounds += 1
            raise job_plan_failed(job_id, "m", "Spark rejected it: [DATATYPE_MISMATCH] scale must be foldable")
        return EpochResult(barrier.epoch.curr, (), (), {}, (), (), tuple(b.batch_id for b in barrier.dml))


@pytest.fixture
def cluster(tmp_path):
    store = MetaStore(f"sqlite:///{tmp_path / 'meta.db'}")
    store.upgrade()
    compute = PlanFailingCompute()
    meta = MetaService(store, ObjectStore(str(tmp_path / "objects")), compute)
    meta.params.set("barrier_interval_ms", 20)
    meta.start()
    yield meta, compute
    meta.stop()


def _view(meta: MetaService, status: JobStatus) -> RelationCatalog:
    """``CREATE MATERIALIZED VIEW m AS SELECT * FROM src`` in `status` (the compute node here runs no
    plan: it only needs one that scans `src`)."""
    src = create_table(meta, "src")
    rid = meta.allocate_ids(1)
    desc = StateTableDesc(rid, src.fields, src.pk, src.pk)
    plan = StreamMaterialize(fields=src.fields, stream_key=src.pk, table=desc, conflict=ConflictBehavior.NO_CHECK,
                             input=StreamTableScan(fields=src.fields, stream_key=src.pk, upstream_id=src.id,
                                                   upstream_name="src", upstream_desc=src.state_tables[0]))
    return replace(src, id=rid, name="m", kind=RelationKind.MATERIALIZED_VIEW, status=status, plan=node_to_json(plan),
                   state_tables=(desc,), dependencies=(src.id,), definition="CREATE MATERIALIZED VIEW m AS SELECT ...")


def test_a_creating_job_whose_plan_fails_is_cancelled_and_its_create_fails(cluster) -> None:
    meta, compute = cluster
    rel = _view(meta, JobStatus.CREATING)
    compute.bad.add(rel.id)
    rel = meta.create_relation(rel)
    give_up = threading.Event()
    timer = threading.Timer(60, give_up.set)  # (a CREATE left waiting fails with a cancel instead)
    timer.start()
    with pytest.raises(RisingSparkError) as failed:
        meta.wait_created(rel.id, give_up)
    timer.cancel()
    assert isinstance(failed.value, InternalError)
    assert failed.value.message == ('the plan of materialized view "m" cannot run: Spark rejected it: '
                                    "[DATATYPE_MISMATCH] scale must be foldable")
    assert rel.id not in meta.catalog_snapshot().relations
    assert compute.failed_rounds == JOB_PLAN_FAILURES
    # the cluster goes on: rounds commit again, DML of another table is consumed
    other = create_table(meta, "t")
    meta.submit_dml(other.id, "dml/a.parquet", 3)
    meta.flush(timeout=30)
    assert compute.failed_rounds == JOB_PLAN_FAILURES


def test_a_created_job_whose_plan_fails_is_kept(cluster) -> None:
    meta, compute = cluster
    rel = meta.create_relation(_view(meta, JobStatus.CREATED))
    compute.bad.add(rel.id)
    meta.barriers.request_recovery()  # (a recovery re-adds every job, this one too)
    while compute.failed_rounds <= JOB_PLAN_FAILURES:  # one round past where a creating job goes
        assert compute.rounds.acquire(timeout=60)
    assert rel.id in meta.catalog_snapshot().relations
