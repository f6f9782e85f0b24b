"""The service-to-service codec: every message type survives the trip unchanged."""

from __future__ import annotations

import datetime as dt
import decimal
import math

import pytest

from risingspark.barrier import AddJobs, Barrier, EpochResult, ScanProgress, StreamJob, VnodeProgress
from risingspark.catalog import BackfillType, JobStatus, RelationCatalog, RelationKind
from risingspark.epoch import EpochPair
from risingspark.errors import RisingSparkError, UndefinedTable
from risingspark.rpc import dumps, error_body, loads
from risingspark.storage.desc import HummockVersion, SstableInfo, StateTableDesc, SubLevel, TableLevels
from risingspark.stream_plan import StreamDml, StreamMaterialize
from risingspark.types import INT8, VARCHAR, Field


def test_values_keep_their_types():
    values = [(1, "a"), {1: "x", (2, 3): None}, {"$tuple": 1}, dt.date(2024, 2, 29),
              dt.datetime(2024, 1, 1, 12, tzinfo=dt.UTC), dt.time(1, 2, 3), dt.timedelta(days=1, microseconds=5),
              decimal.Decimal("1.10"), b"\x00\xff", frozenset({1, 2}), [1.5, None, True]]
    for v in values:
        back = loads(dumps(v))
        assert back == v and type(back) is type(v), v
    assert math.isnan(loads(dumps(float("nan"))))


def test_barriers_and_results_round_trip():
    fields = (Field("id", INT8), Field("name", VARCHAR))
    desc = StateTableDesc(7, fields, (0,), (0,))
    plan = StreamMaterialize(fields=fields, stream_key=(0,), input=StreamDml(fields=fields, stream_key=(0,), table_id=7),
                             table=desc)
    sst = SstableInfo("hummock/7/a.parquet", 7, 0, 5, 0, 255, 1, 5, 10, 0, 1000, 3)
    version = HummockVersion(3, 5, {7: TableLevels(7, (SubLevel(5, (sst,)),), ())})
    job = StreamJob(7, "t", plan, 2, (), (ScanProgress(0, 1, (VnodeProgress(3, (10, "x", dt.date(2024, 1, 1)),
                                                                                   False, 4),)),))
    barrier = Barrier(EpochPair(6, 5), True, version, (AddJobs((job,)),))
    assert loads(dumps(barrier)) == barrier
    result = EpochResult(6, (sst,), row_count_deltas={7: 3}, finished_jobs=(7,))
    assert loads(dumps(result)) == result


def test_catalog_objects_round_trip():
    rel = RelationCatalog(1000, 1, 2, "mv", RelationKind.MATERIALIZED_VIEW, (Field("id", INT8),), (0,), (0,),
                          "CREATE MATERIALIZED VIEW mv AS SELECT 1", JobStatus.CREATING,
                          backfill_type=BackfillType.SNAPSHOT_BACKFILL, extra={"comment": "c"})
    back = loads(dumps(rel))
    assert back == rel and back.status is JobStatus.CREATING


def test_only_risingspark_types_can_be_named():
    with pytest.raises(TypeError):
        loads(b'{"$dc": "subprocess:Popen", "fields": {"args": "true"}}')
    with pytest.raises(TypeError):
        dumps(object())


def test_errors_keep_their_class_and_sqlstate():
    import json

    err = RisingSparkError.from_json(json.loads(error_body(UndefinedTable('relation "x" does not exist')))["$error"])
    assert isinstance(err, UndefinedTable) and err.sqlstate == "42P01"
