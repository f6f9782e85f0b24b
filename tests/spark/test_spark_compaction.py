"""A compaction task run as a Spark job (`compactor.spark_job`) gives the same rows, byte for byte,
as the same task run in the compactor process (`compactor.runner`), and its outputs form a sorted
run (key-ordered, disjoint SSTs)."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from compactor.runner import run_compaction
from compactor.spark_job import KeyRange, plan_ranges, run_compaction_on_spark
from meta.compaction.task import CompactionTask
from risingspark.chunk import KEY
from risingspark.storage.desc import StateTableDesc
from risingspark.storage.object_store import ObjectStore
from risingspark.storage.point_get import BlockReader
from risingspark.storage.sst import read_sst, write_sst, write_ssts
from risingspark.types import INT8, VARCHAR, Field

pytestmark = pytest.mark.spark

DESC = StateTableDesc(9, (Field("id", INT8), Field("tag", VARCHAR), Field("val", INT8)), pk=(0, 1))
SCHEMA = DESC.sst_schema()
TAGS = ["", "a", "ab", "abc", "zz", "é", "x" * 40]


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    from compute.spark import SparkSettings, create_spark_session

    existing = SparkSession.getActiveSession()
    session = create_spark_session(SparkSettings(master="local[2]", app_name="spark-compaction-test"))
    yield session
    if existing is None:
        session.stop()


def rows(data: list[tuple]) -> pa.Table:
    """(vnode, id, tag, val, epoch, tombstone) tuples."""
    cols = list(zip(*data, strict=True))
    return pa.table([pa.array(c, t) for c, t in zip(cols, SCHEMA.types, strict=True)], schema=SCHEMA)


def inputs(store: ObjectStore, seed: int) -> tuple:
    """An L1 run of several SSTs, six L0 sub-levels of upserts and deletes over its keys, and a newest
    sub-level holding three versions of each of its keys (as an intra-L0 merge under a pinned epoch
    leaves them): a key's versions straddle its blocks, whose first keys are the cut candidates."""
    rng = random.Random(seed)
    keys = sorted({(rng.randrange(256), rng.randrange(500), rng.choice(TAGS)) for _ in range(30_000)})
    base = [(v, i, t, rng.randrange(10**6), 1, False) for v, i, t in keys]
    l1 = write_ssts(store, DESC, rows(base), "hummock/9/base.parquet", level=1, sub_level=0, file_rows=6_000)
    l0 = []
    for s in range(6):
        epoch = 10 + s
        data = [(v, i, t, None, epoch, True) if rng.random() < 0.25 else (v, i, t, rng.randrange(10**6), epoch, False)
                for v, i, t in rng.sample(keys, 4_000)]
        data += [(rng.randrange(256), 1000 + k, f"new{s}", k, epoch, False) for k in range(300)]
        l0.append(write_sst(store, DESC, rows(data), f"hummock/9/l0-{epoch}.parquet", level=0, sub_level=epoch))
    versions = [(v, i, t, rng.randrange(10**6), epoch, False) for v, i, t in rng.sample(keys, 3_000)
                for epoch in (20, 21, 22)]
    l0.append(write_sst(store, DESC, rows(versions), "hummock/9/l0-22.parquet", level=0, sub_level=22))
    return tuple(l0), tuple(l1)


def all_rows(store: ObjectStore, ssts) -> pa.Table:
    return pa.concat_tables([read_sst(store, s.path, DESC) for s in ssts])


@pytest.mark.parametrize(("seed", "safe_epoch", "drop"), [(1, None, True), (2, 12, False), (3, 13, True),
                                                         (6, 21, True)])
def test_spark_job_gives_the_local_runs_rows(tmp_path, spark, seed, safe_epoch, drop):
    store = ObjectStore(str(tmp_path))
    l0, l1 = inputs(store, seed)
    task = CompactionTask(9, l0 + l1, target_level=1, drop_tombstones=drop, safe_epoch=safe_epoch, task_id=seed)
    local = run_compaction(store, DESC, task, target_file_rows=5_000)
    on_spark = run_compaction_on_spark(spark, store, DESC, task, file_rows=5_000, min_split_rows=8_000)

    expected, got = all_rows(store, local), all_rows(store, on_spark)
    assert got.num_rows == expected.num_rows > 0
    assert got.equals(expected), "the Spark job's rows differ from the local run's"
    # the rows changed from the inputs: versions were merged, tombstones dropped (when allowed)
    assert expected.num_rows < task.input_rows
    if safe_epoch is not None and safe_epoch < 22:  # several versions of a key are kept
        keys = expected.select(["_vnode", "id", "tag"]).to_pylist()
        assert len({tuple(k.values()) for k in keys}) < len(keys)
    # the job ran as several ranges, and its outputs are a sorted run of disjoint SSTs
    assert len({s.path.rsplit("-s", 1)[1].split("-")[0] for s in on_spark}) > 1
    for a, b in zip(on_spark, on_spark[1:], strict=False):
        assert a.max_key < b.min_key
    assert all(s.level == 1 for s in on_spark)


def test_ranges_cover_the_key_space_at_block_keys(tmp_path):
    store = ObjectStore(str(tmp_path))
    l0, l1 = inputs(store, 4)
    task = CompactionTask(9, l0 + l1)
    ranges = plan_ranges(BlockReader(store, None, None), task, max_splits=6, min_split_rows=8_000)
    assert len(ranges) == 6
    assert ranges[0].lo == b"" and ranges[-1].hi is None
    for a, b in zip(ranges, ranges[1:], strict=False):
        assert a.hi == b.lo and a.lo < a.hi
    # rows per range are about equal (each within 2× of the mean)
    keys = np.concatenate([read_sst(store, s.path, DESC, with_key=True).column(KEY).to_numpy(zero_copy_only=False)
                           .astype(bytes) for s in task.input_ssts])
    counts = [int(((keys >= r.lo) & ((keys < r.hi) if r.hi is not None else True)).sum()) for r in ranges]
    assert sum(counts) == len(keys)
    assert max(counts) < 2 * len(keys) / len(ranges) and min(counts) > len(keys) / len(ranges) / 2
    # too few rows for a split: one range
    assert plan_ranges(BlockReader(store, None, None), task, max_splits=6, min_split_rows=10**9) == [KeyRange(b"", None)]


def test_a_failed_job_leaves_no_output(tmp_path, spark):
    store = ObjectStore(str(tmp_path))
    l0, l1 = inputs(store, 5)
    task = CompactionTask(9, l0 + l1, target_level=1, task_id=5)
    # the data pages in the middle of one input are garbage (its footer, and so the split, are fine):
    # the ranges that read them fail, the others write their SSTs
    victim = tmp_path / l1[len(l1) // 2].path
    data = bytearray(victim.read_bytes())
    data[len(data) // 3: len(data) // 2] = b"\xab" * (len(data) // 2 - len(data) // 3)
    victim.write_bytes(bytes(data))
    before = {o.path for o in store.list("hummock")}
    with pytest.raises(Exception):  # noqa: B017 - Spark wraps the executor's error
        run_compaction_on_spark(spark, store, DESC, task, file_rows=5_000, min_split_rows=8_000)
    assert {o.path for o in store.list("hummock")} == before
