"""A job whose plan Spark's analysis rejects fails the round as that job's own failure: the error
names the job (`job_id`, which meta counts to cancel a creating job, `meta.barrier.manager`) and says
what Spark said; any other failure of the round stays as it was."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from pyspark.errors import AnalysisException

from compute.stream import dataflow
from compute.stream.round import EpochRound, JobRuntime
from risingspark.barrier import Barrier, StreamJob
from risingspark.epoch import EpochPair
from risingspark.errors import InternalError, RisingSparkError
from risingspark.storage.desc import HummockVersion, StateTableDesc
from risingspark.storage.object_store import ObjectStore
from risingspark.stream_plan import StreamMaterialize, StreamTableScan
from risingspark.types import INT8, Field

FIELDS = (Field("id", INT8),)


def _round(tmp_path) -> tuple[EpochRound, JobRuntime]:
    scan = StreamTableScan(FIELDS, (0,), upstream_id=1, upstream_desc=StateTableDesc(1, FIELDS, (0,)))
    plan = StreamMaterialize(FIELDS, (0,), input=scan, table=StateTableDesc(2, FIELDS, (0,)))
    rt = JobRuntime(StreamJob(2, "m", plan, 2, (1,)), 2, None)
    barrier = Barrier(EpochPair(10, 9), True, HummockVersion(1, 9))
    spark = SimpleNamespace(sparkContext=SimpleNamespace(defaultParallelism=2))
    return EpochRound(spark, ObjectStore(str(tmp_path)), barrier, 1.0), rt


def test_a_plan_spark_rejects_fails_the_round_naming_the_job(tmp_path, monkeypatch) -> None:
    def rejected(self) -> bool:
        raise AnalysisException('[DATATYPE_MISMATCH.NON_FOLDABLE_INPUT] Cannot resolve "round(x, n)"\nplan...')

    monkeypatch.setattr(dataflow.Dataflow, "run", rejected)
    rnd, rt = _round(tmp_path)
    with pytest.raises(InternalError) as failed:
        rnd.run([rt])
    assert failed.value.job_id == 2
    assert failed.value.message == ('the plan of materialized view "m" cannot run: Spark rejected it: '
                                    '[DATATYPE_MISMATCH.NON_FOLDABLE_INPUT] Cannot resolve "round(x, n)"')
    # it crosses RPC with the job (meta's barrier loop gets it from a compute node's answer)
    assert RisingSparkError.from_json(failed.value.to_json()).job_id == 2


def test_other_failures_of_a_round_name_no_job(tmp_path, monkeypatch) -> None:
    def lost(self) -> bool:
        raise RuntimeError("a Python worker crashed")

    monkeypatch.setattr(dataflow.Dataflow, "run", lost)
    rnd, rt = _round(tmp_path)
    with pytest.raises(RuntimeError, match="worker crashed"):
        rnd.run([rt])
