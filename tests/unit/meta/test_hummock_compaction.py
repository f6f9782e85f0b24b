"""Compactions committed to the meta store: L0 → the base level, a level into the next, and intra-L0
(sub-levels merged into one in their place), read back the same, in memory and after a restart of meta."""

from __future__ import annotations

import random
from dataclasses import replace

import pyarrow as pa

from compactor.runner import run_compaction
from meta.compaction.picker import CompactionConfig, pick_compaction
from meta.hummock import HummockManager
from meta.store.store import MetaStore
from risingspark.storage.desc import StateTableDesc
from risingspark.storage.object_store import ObjectStore
from risingspark.storage.reader import StateTableReader
from risingspark.storage.sst import write_sst
from risingspark.types import INT8, Field

DESC = StateTableDesc(5, (Field("id", INT8), Field("v", INT8)), pk=(0,), dist_key=(0,))
# (files this small are mostly footer: L0's bytes stand below the base's only with a high ratio)
CONFIG = CompactionConfig(l0_trigger_sub_levels=4, l0_max_sub_levels=64, l0_to_base_size_ratio=100,
                          l0_keep_sub_levels=3, l0_intra_sub_levels=8, max_level=3)


def rows(rng: random.Random, epoch: int, n: int) -> pa.Table:
    ids = rng.sample(range(400), n)
    dead = [rng.random() < 0.2 for _ in ids]
    return pa.table({"_vnode": pa.array([i % 16 for i in ids], pa.int16()), "id": ids,
                     "v": [None if d else rng.randrange(100) for d in dead], "_epoch": [epoch] * n,
                     "_tombstone": dead})


class Lsm:
    """A state table's LSM tree in a SQLite meta store and a local object store."""

    def __init__(self, tmp_path, seed: int) -> None:
        self.rng = random.Random(seed)
        self.store = MetaStore(f"sqlite:///{tmp_path / 'meta.db'}")
        self.store.upgrade()
        self.objects = ObjectStore(str(tmp_path / "objects"))
        self.hm = HummockManager(self.store, self.objects)
        self.reader = StateTableReader(self.objects)

    @property
    def levels(self):
        return self.hm.version.levels(DESC.table_id)

    def commit(self, epoch: int, n: int) -> None:
        sst = write_sst(self.objects, DESC, rows(self.rng, epoch, n), f"h/{epoch}.parquet", level=0, sub_level=epoch)
        with self.store.transaction() as tx:
            self.hm.commit_epoch(tx, epoch, [sst], [])

    def compact(self, config: CompactionConfig = CONFIG):
        task = pick_compaction(self.levels, config)
        assert task is not None
        outputs = run_compaction(self.objects, DESC, task, target_file_rows=100)
        with self.store.transaction() as tx:
            assert self.hm.commit_compaction(tx, DESC.table_id, list(task.input_ssts), outputs,
                                             task.target_level) is not None
        return task

    def restarted_levels(self):
        """The table's levels as a restarted meta loads them."""
        return HummockManager(self.store, self.objects).version.levels(DESC.table_id)


def test_intra_l0_merges_sub_levels_in_place(tmp_path):
    lsm = Lsm(tmp_path, 1)
    reader = lsm.reader
    epoch = 10
    for _ in range(5):
        lsm.commit(epoch, 300)
        epoch += 10
    first = lsm.compact(replace(CONFIG, l0_keep_sub_levels=0, l0_to_base_size_ratio=0))
    assert first.target_level == 3  # all of L0 into the bottom level of an empty table
    assert lsm.levels.l0_compacted_epoch == max(first.l0_sub_levels) == 50
    for _ in range(9):  # small sub-levels next to L1
        lsm.commit(epoch, 10)
        epoch += 10
    levels = lsm.levels
    before = {e: reader.read(DESC, levels.all_ssts(), e) for e in (55, epoch - 50, epoch)}
    task = lsm.compact()
    assert task.target_level == 0 and not task.drop_tombstones
    assert task.output_sub_level == task.l0_sub_levels[-1] and len(task.l0_sub_levels) == 6
    after = lsm.levels
    ids = [sub.sub_level_id for sub in after.l0]
    assert ids == sorted(ids) and ids[0] == task.output_sub_level and len(ids) == 1 + 3
    assert after.levels == levels.levels
    assert after.l0_compacted_epoch == 50  # an intra-L0 merge moves nothing out of L0
    for e, want in before.items():
        if e >= task.output_sub_level:  # reads at or after the merged epochs see the same rows
            assert reader.read(DESC, after.all_ssts(), e).equals(want), e
    # the merged sub-level survives a restart of meta
    assert lsm.restarted_levels() == after


def test_a_level_compacts_into_the_next_by_key_range(tmp_path):
    lsm = Lsm(tmp_path, 2)
    reader = lsm.reader
    config = replace(CONFIG, l0_keep_sub_levels=0, l0_to_base_size_ratio=0, max_bytes_for_level_base=1)
    for epoch in range(10, 50, 10):
        lsm.commit(epoch, 300)
    task = lsm.compact(config)
    assert task.kind == "l0" and task.target_level == 3
    bottom = sum(s.size_bytes for s in lsm.levels.level(3))
    config = replace(config, max_bytes_for_level_base=bottom // 5, target_file_bytes=bottom // 20)
    for epoch in range(50, 90, 10):
        lsm.commit(epoch, 300)
    task = lsm.compact(config)  # L3 is past the base bytes: L2 becomes the base
    assert task.kind == "l0" and task.target_level == 2 and not task.drop_tombstones  # L3 lies below
    before = reader.read(DESC, lsm.levels.all_ssts(), None)
    seen = set()
    while (task := pick_compaction(lsm.levels, config)) is not None and task.kind == "level":
        assert task.target_level == 3 and task.drop_tombstones
        seen.add(task.input_ssts[0].path)
        lsm.compact(config)
    assert seen  # L2 went down to L3 a file at a time
    after = lsm.levels
    for level in after.levels:
        assert all(a.max_key < b.min_key for a, b in zip(level, level[1:], strict=False))
    assert reader.read(DESC, after.all_ssts(), None).equals(before)
    # the levels and key ranges survive a restart of meta
    assert lsm.restarted_levels() == after


def test_a_round_committed_after_its_table_was_dropped_leaves_no_files(tmp_path):
    """A cancelled backfill's round in flight at the drop commits afterwards: its files are deleted at
    the next vacuum, and the table does not come back into the version."""
    lsm = Lsm(tmp_path, 7)
    lsm.commit(1, 20)
    with lsm.store.transaction() as tx:
        lsm.hm.drop_tables(tx, [DESC.table_id])
    lsm.commit(2, 20)  # (the round in flight)
    assert DESC.table_id not in lsm.hm.version.tables
    lsm.hm.vacuum()
    assert not list(lsm.objects.list("h"))
