"""The compaction runner: merging L0 and a level into SSTs of the target level, cut between keys."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest

from compactor.runner import file_rows, run_compaction
from meta.compaction.picker import CompactionConfig, CompactionTask, pick_compaction
from risingspark.storage.desc import StateTableDesc, SubLevel, TableLevels
from risingspark.storage.object_store import ObjectStore
from risingspark.storage.reader import StateTableReader
from risingspark.storage.sst import read_sst, split_at_keys, write_sst
from risingspark.types import INT8, VARCHAR, Field

DESC = StateTableDesc(8, (Field("id", INT8), Field("tag", VARCHAR), Field("val", INT8)), pk=(0, 1))
SCHEMA = DESC.sst_schema()


def rows(data: list[tuple]) -> pa.Table:
    """(vnode, id, tag, val, epoch, tombstone) tuples."""
    cols = list(zip(*data, strict=True))
    return pa.table([pa.array(c, t) for c, t in zip(cols, SCHEMA.types, strict=True)], schema=SCHEMA)


def build_levels(store: ObjectStore, seed: int, sub_levels: int = 9) -> TableLevels:
    """A base L1 run (vnode-aligned files) plus random L0 sub-levels of updates and deletes."""
    rng = random.Random(seed)
    keys = sorted({(rng.randrange(32), rng.randrange(100), rng.choice(["p", "q", "pq"])) for _ in range(600)})
    base = [(v, i, t, rng.randrange(10**6), 1, False) for v, i, t in keys]
    l1 = []
    for lo in range(0, 32, 8):
        part = [r for r in base if lo <= r[0] < lo + 8]
        l1.append(write_sst(store, DESC, rows(part), f"hummock/8/base-{lo}.parquet", level=1, sub_level=0))
    subs = []
    for s in range(sub_levels):
        epoch = 10 + s
        lo = rng.randrange(24)  # each sub-level touches a band of vnodes
        data = [(v, i, t, None if rng.random() < 0.3 else rng.randrange(10**6), epoch, False)
                for v, i, t in rng.sample(keys, 120) if lo <= v < lo + 8]
        data = [(v, i, t, x, e, x is None) for v, i, t, x, e, _ in data]
        data += [(lo, 1000 + s, "new", s, epoch, False)]  # a fresh key
        subs.append(SubLevel(epoch, (write_sst(store, DESC, rows(data), f"hummock/8/l0-{epoch}.parquet",
                                               level=0, sub_level=epoch),)))
    return TableLevels(8, tuple(subs), (tuple(l1),))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_compaction_preserves_reads_and_drops_tombstones(tmp_path, seed):
    store = ObjectStore(str(tmp_path))
    levels = build_levels(store, seed)
    task = pick_compaction(levels, CompactionConfig(l0_trigger_sub_levels=8))
    assert task is not None
    reader = StateTableReader(store)
    before = reader.read(DESC, levels.all_ssts(), None)
    outputs = run_compaction(store, DESC, task, target_file_rows=150)
    assert outputs
    picked = {s.path for s in task.input_ssts}
    # the newest sub-levels stay in L0, over the output
    new_ssts = [s for s in levels.all_ssts() if s.path not in picked] + outputs
    assert reader.read(DESC, new_ssts, None).equals(before)

    for info in outputs:
        assert info.level == 1 and info.sub_level == 0 and info.table_id == 8
        assert info.path.startswith("hummock/8/c-") and "-l1" in info.path and info.path.endswith(".parquet")
        assert info.tombstone_count == 0
        t = read_sst(store, info.path, DESC)
        assert not any(t.column("_tombstone").to_pylist())
        assert info.row_count == t.num_rows
        assert info.row_count <= 150
        keys = read_sst(store, info.path, DESC, with_key=True).column("_key").to_pylist()
        assert (info.min_key, info.max_key) == (keys[0], keys[-1])
    # a sorted run: key ranges ordered and disjoint (the unpicked L1 SSTs among them)
    spans = sorted(s.key_range for s in new_ssts if s.level == 1)
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:], strict=False))
    # rows keep the epoch of the version they came from
    epochs = set()
    for info in outputs:
        epochs |= set(read_sst(store, info.path, DESC).column("_epoch").to_pylist())
    assert 1 in epochs and len(epochs) > 2


def test_everything_deleted_yields_no_files(tmp_path):
    store = ObjectStore(str(tmp_path))
    a = write_sst(store, DESC, rows([(1, 1, "x", 5, 1, False), (2, 2, "x", 6, 1, False)]), "a.parquet",
                  level=0, sub_level=1)
    b = write_sst(store, DESC, rows([(1, 1, "x", None, 2, True), (2, 2, "x", None, 2, True)]), "b.parquet",
                  level=0, sub_level=2)
    task = CompactionTask(table_id=8, input_ssts=(a, b), l0_sub_levels=(1, 2))
    assert run_compaction(store, DESC, task) == []
    kept = run_compaction(store, DESC, CompactionTask(8, (a, b), drop_tombstones=False))
    assert [s.tombstone_count for s in kept] == [2]


def test_safe_epoch_keeps_versions_readers_may_still_need(tmp_path):
    store = ObjectStore(str(tmp_path))
    levels = build_levels(store, 9)
    task = pick_compaction(levels, CompactionConfig(l0_trigger_sub_levels=8), safe_epoch=14)
    assert task is not None
    outputs = run_compaction(store, DESC, task)
    assert sum(o.row_count for o in outputs) < task.input_rows  # older versions were dropped
    picked = {s.path for s in task.input_ssts}
    # the newest sub-levels stay in L0, over the output
    new_ssts = [s for s in levels.all_ssts() if s.path not in picked] + outputs
    reader = StateTableReader(store)
    for epoch in (14, 15, 16, 18, None):
        assert reader.read(DESC, new_ssts, epoch).equals(reader.read(DESC, levels.all_ssts(), epoch))


def test_a_keys_versions_stay_in_one_file(tmp_path):
    store = ObjectStore(str(tmp_path))
    data = [(3, i, "a", i * 10 + e, e, False) for i in range(20) for e in (1, 2, 3)]  # three versions per key
    sst = write_sst(store, DESC, rows(data), "x.parquet", level=0, sub_level=1)
    out = run_compaction(store, DESC, CompactionTask(8, (sst,), safe_epoch=0), target_file_rows=10)
    assert [s.row_count for s in out] == [12, 12, 12, 12, 12]  # 4 keys of 3 versions: the cut waits for a new key
    assert all(a.max_key < b.min_key for a, b in zip(out, out[1:], strict=False))


def test_split_at_keys():
    assert split_at_keys(np.array([], dtype=bool), 3) == []
    assert split_at_keys(np.array([False, True, True, True]), 2) == [(0, 4)]
    assert split_at_keys(np.array([False] * 5), 2) == [(0, 2), (2, 4), (4, 5)]
    assert split_at_keys(np.array([False, False, True, True, False]), 2) == [(0, 4), (4, 5)]


def test_file_rows_follow_the_target_bytes():
    task = CompactionTask(8, (write_sst_info(1000, 100_000),))
    assert file_rows(task, 10_000, 1 << 20) == 100  # 100 bytes a row
    assert file_rows(task, 10_000, 50) == 50
    assert file_rows(task, None, 77) == 77


def write_sst_info(rows: int, size: int):
    from risingspark.storage.desc import SstableInfo

    return SstableInfo("p", 8, 0, 1, 0, 0, 1, 1, rows, 0, size)


def test_outputs_start_with_the_tasks_prefix(tmp_path):
    """The scheduler names a task's outputs, so the full GC can keep those of tasks in flight."""
    store = ObjectStore(str(tmp_path))
    task = pick_compaction(build_levels(store, 4), CompactionConfig(l0_trigger_sub_levels=8))
    assert task is not None
    outputs = run_compaction(store, DESC, replace(task, output_prefix="hummock/8/c7-abc"), target_file_rows=150)
    assert len(outputs) > 1 and all(s.path.startswith("hummock/8/c7-abc-l") for s in outputs)
