"""A job's plan shape (`EpochRound.plan_shape`, `compute.stream.round_args`): what its Spark plan
depends on besides the round's arguments, so that a kept plan is never run for another shape and a
job has few shapes."""

from __future__ import annotations

from types import SimpleNamespace

from compute.stream.round import EpochRound, JobRuntime
from risingspark.barrier import Barrier, ChangeLogInfo, DmlBatch, StreamJob, VnodeProgress
from risingspark.epoch import EpochPair
from risingspark.storage.desc import HummockVersion, StateTableDesc
from risingspark.storage.object_store import ObjectStore
from risingspark.stream_plan import (
    StreamChangeLog,
    StreamDml,
    StreamMaterialize,
    StreamTableScan,
    StreamUnion,
)
from risingspark.types import INT8, Field

FIELDS = (Field("id", INT8),)
CORES = 4


def desc(table_id: int) -> StateTableDesc:
    return StateTableDesc(table_id, FIELDS, (0,))


def a_round(tmp_path, dml_files: int = 0, log_files: dict[int, int] | None = None) -> EpochRound:
    dml = tuple(DmlBatch(i, 1, f"dml/1/{i}.parquet", 1) for i in range(dml_files))
    rnd = EpochRound(SimpleNamespace(sparkContext=SimpleNamespace(defaultParallelism=CORES)),
                     ObjectStore(str(tmp_path)), Barrier(EpochPair(10, 9), True, HummockVersion(1, 9), dml=dml), 1.0)
    for table_id, n in (log_files or {}).items():
        for i in range(n):
            rnd.adopt(SimpleNamespace(ssts=[], change_logs=[ChangeLogInfo(table_id, 9, f"log/{table_id}/{i}", 1)],
                                      row_deltas={}, rows_in={}, spark_jobs=0, cache_hits=0, cache_misses=0))
    return rnd


def view(*reads: int, changelog: bool = False) -> JobRuntime:
    scans = tuple(StreamTableScan(FIELDS, (0,), upstream_id=r, upstream_desc=desc(r)) for r in reads)
    source = scans[0] if len(scans) == 1 else StreamUnion(FIELDS, (0,), branches=scans)
    if changelog:
        source = StreamChangeLog(FIELDS, (0,), input=source)
    return JobRuntime(StreamJob(9, "m", StreamMaterialize(FIELDS, (0,), input=source, table=desc(9)), 2, reads), 2)


def test_a_leaf_is_read_by_none_one_or_all_cores(tmp_path) -> None:
    table = JobRuntime(StreamJob(1, "t", StreamMaterialize(FIELDS, (0,), input=StreamDml(FIELDS, (0,), table_id=1),
                                                           table=desc(1)), 2, ()), 2)
    widths = [a_round(tmp_path, dml_files=n).plan_shape(table)[-1] for n in (0, 1, 2, 3, 9)]  # type: ignore[index]
    assert widths == [(0,), (1,), (CORES,), (CORES,), (CORES,)]


def test_the_shape_follows_each_leaf_and_the_backfill(tmp_path) -> None:
    rt = view(1, 2)
    shapes = {a_round(tmp_path, log_files=logs).plan_shape(rt) for logs in
              ({}, {1: 1}, {2: 1}, {1: 1, 2: 1}, {1: 2, 2: 1}, {1: 7, 2: 5}, {1: 3, 2: 2})}
    assert len(shapes) == 6  # (the last two are one shape)
    rt.progress = {0: [VnodeProgress(0, None, False, 0)], 1: [VnodeProgress(0, None, False, 0)]}
    backfilling = a_round(tmp_path, log_files={1: 1}).plan_shape(rt)
    assert backfilling not in shapes and backfilling == a_round(tmp_path).plan_shape(rt)  # (its scans always read)


def test_a_plan_with_the_epoch_in_it_has_no_shape(tmp_path) -> None:
    assert a_round(tmp_path, log_files={1: 1}).plan_shape(view(1, changelog=True)) is None
