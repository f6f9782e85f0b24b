"""A job's Spark plan is built once per shape and run every round with that round's arguments
(`compute.stream.round_args`): real `EpochRound`s on a local SparkSession over a local object store,
a table and a view over it, versions carried from round to round as meta commits them.

Each round's answer tells whether the round's own arguments reached the tasks: the files of its DML
(the rows it inserts), its epoch (the epoch of the SSTs it writes) and its committed SSTs (an insert
of a key the table holds is an update, weighing nothing, only if the table's task read the SSTs the
previous round wrote)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from compute.stream import dataflow
from compute.stream.round import EpochRound, JobRuntime
from risingspark.barrier import Barrier, DmlBatch, EpochResult, StreamJob
from risingspark.chunk import OP, SEQ, Op
from risingspark.epoch import EpochPair
from risingspark.storage.desc import HummockVersion, StateTableDesc, SubLevel, TableLevels
from risingspark.storage.object_store import ObjectStore
from risingspark.stream_plan import StreamDml, StreamFilter, StreamMaterialize, StreamTableScan
from risingspark.table_kind import ConflictBehavior
from risingspark.types import INT4, INT8, Field

pytestmark = pytest.mark.spark

FIELDS = (Field("id", INT8), Field("v", INT4))
TABLE = StateTableDesc(1, FIELDS, (0,), (0,))
VIEW = StateTableDesc(2, FIELDS, (0,), (0,))


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    from compute.spark import SparkSettings, create_spark_session

    existing = SparkSession.getActiveSession()
    session = create_spark_session(SparkSettings(master="local[1]", app_name="plan-reuse-test"))
    yield session
    if existing is None:  # a session other tests started stays theirs
        session.stop()


def jobs(predicate: str = "v > 10") -> list[JobRuntime]:
    table = StreamMaterialize(FIELDS, (0,), input=StreamDml(FIELDS, (0,), table_id=1), table=TABLE,
                              conflict=ConflictBehavior.OVERWRITE)
    scan = StreamTableScan(FIELDS, (0,), upstream_id=1, upstream_name="t", upstream_desc=TABLE)
    view = StreamMaterialize(FIELDS, (0,), input=StreamFilter(FIELDS, (0,), input=scan, predicate=predicate),
                             table=VIEW)
    return [JobRuntime(StreamJob(1, "t", table, 1, ()), 1), JobRuntime(StreamJob(2, "m", view, 1, (1,)), 1)]


class Cluster:
    """Rounds as meta runs them: each commits its SSTs into the next round's version."""

    def __init__(self, spark, store: ObjectStore) -> None:
        self.spark, self.store = spark, store
        self.version = HummockVersion(1, 0)
        self.epoch = 1
        self.batches = 0

    def round(self, runtimes: list[JobRuntime], *inserts: list[tuple[int, int]]) -> EpochResult:
        dml = []
        for rows in inserts:
            self.batches += 1
            path = f"dml/1/{self.batches}.parquet"
            self.store.write_parquet(path, pa.table({
                OP: pa.array([int(Op.INSERT)] * len(rows), pa.int8()),
                SEQ: pa.array(range(self.batches * 100, self.batches * 100 + len(rows)), pa.int64()),
                "id": pa.array([r[0] for r in rows], pa.int64()), "v": pa.array([r[1] for r in rows], pa.int32())}))
            dml.append(DmlBatch(self.batches, 1, path, len(rows)))
        epoch = EpochPair(self.epoch + 1, self.epoch)
        result = EpochRound(self.spark, self.store, Barrier(epoch, True, self.version, dml=tuple(dml)), 1.0) \
            .run(runtimes)
        tables = dict(self.version.tables)
        for t in {s.table_id for s in result.ssts}:
            old = tables.get(t) or TableLevels(t)
            added = tuple(s for s in result.ssts if s.table_id == t)
            tables[t] = TableLevels(t, (*old.l0, SubLevel(epoch.curr, added)))
        self.epoch += 1
        self.version = HummockVersion(self.version.id + 1, self.epoch, tables)
        return result


def _built_metric(job: str) -> float:
    from prometheus_client import REGISTRY

    return sum(s.value for m in REGISTRY.collect() if m.name == "risingspark_compute_plans_built"
               for s in m.samples if s.name.endswith("_total") and s.labels.get("job") == job)


@pytest.fixture
def built(monkeypatch) -> list[str]:
    """The jobs whose plans were built, one name a build (a round without input builds nothing to run)."""
    names: list[str] = []
    build = dataflow.Dataflow._build

    def counted(self, plan):
        cached, df = build(self, plan)
        if cached.logical is not None:
            names.append(self.rt.job.name)
        return cached, df

    monkeypatch.setattr(dataflow.Dataflow, "_build", counted)
    return names


def test_a_plan_is_built_once_and_runs_each_round_with_its_arguments(spark, tmp_path, built) -> None:
    cluster, runtimes = Cluster(spark, ObjectStore(str(tmp_path))), jobs()
    metric_before = _built_metric("m")

    first = cluster.round(runtimes, [(1, 5), (2, 50), (3, 60)])
    assert first.row_count_deltas == {1: 3, 2: 2} and first.spark_jobs == 2
    assert {s.min_epoch for s in first.ssts} == {2}

    second = cluster.round(runtimes, [(4, 70), (1, 99)])  # id 1 is an update: the table read round 1's SSTs
    assert second.row_count_deltas == {1: 1, 2: 2}, "the tasks ran with another round's files or SSTs"
    assert {s.min_epoch for s in second.ssts} == {3}

    idle = cluster.round(runtimes)  # no input: no Spark job, no plan
    assert idle.spark_jobs == 0 and not idle.ssts

    third = cluster.round(runtimes, [(5, 7), (6, 80)])
    assert third.row_count_deltas == {1: 2, 2: 1}
    assert {s.min_epoch for s in third.ssts} == {5}
    assert sorted(built) == ["m", "t"], "each job's plan is built once, in its first round"
    assert _built_metric("m") - metric_before == 1
    assert all(len(rt.plans) == 2 for rt in runtimes)  # (with input, and without)

    # The view holds what PostgreSQL would answer: the rows of the table with v > 10.
    from risingspark.storage.reader import StateTableReader

    reader = StateTableReader(cluster.store)
    rows = reader.read(VIEW, cluster.version.ssts(2), cluster.version.committed_epoch).to_pylist()
    assert sorted((r["id"], r["v"]) for r in rows) == [(1, 99), (2, 50), (3, 60), (4, 70), (6, 80)]


def test_large_arguments_travel_as_a_file(spark, tmp_path, monkeypatch) -> None:
    from compute.stream import round_args

    monkeypatch.setattr(round_args, "INLINE_BYTES", 0)
    sent: list[str] = []
    encode = round_args.encode

    def recorded(*args):
        sent.append(encode(*args))
        return sent[-1]

    monkeypatch.setattr(dataflow, "encode", recorded)
    cluster, runtimes = Cluster(spark, ObjectStore(str(tmp_path))), jobs()
    assert cluster.round(runtimes, [(1, 5), (2, 50)]).row_count_deltas == {1: 2, 2: 1}
    assert cluster.round(runtimes, [(1, 60), (3, 70)]).row_count_deltas == {1: 1, 2: 2}
    assert len(sent) == 4 and all(v.startswith("file:") for v in sent), "the arguments went as files"
    assert not cluster.store.list("rounds"), "the files of the arguments are deleted after the job"


def test_a_nondeterministic_plan_is_built_every_round(spark, tmp_path, built) -> None:
    """Spark fixes ``rand()``'s seed when it analyzes a plan: a kept plan would draw the same numbers
    every round."""
    cluster, runtimes = Cluster(spark, ObjectStore(str(tmp_path))), jobs("v > 10 AND rand() < 2")
    for i in range(3):
        assert cluster.round(runtimes, [(i, 50)]).row_count_deltas == {1: 1, 2: 1}
    assert sorted(built) == ["m", "m", "m", "t"]
