"""Compactions committed to the meta store: L0 → L1, and intra-L0 (sub-levels merged into one in their
place), read back the same, in memory and after a restart of meta."""

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
# (files this small are mostly footer: L0's bytes stand below L1's only with a high ratio)
CONFIG = CompactionConfig(l0_trigger_sub_levels=4, l0_max_sub_levels=64, l0_to_l1_size_ratio=100,
                          l0_keep_sub_levels=3, l0_intra_sub_levels=8)


def rows(rng: random.Random, epoch: int, n: int) -> pa.Table:
    ids = rng.sample(range(400), n)
    dead = [rng.random() < 0.2 for _ in ids]
    return pa.table({"_vnode": pa.array([i % 16 for i in ids], pa.int16()), "id": ids,
                     "v": [None if d else rng.randrange(100) for d in dead], "_epoch": [epoch] * n,
                     "_tombstone": dead})


def commit(hm: HummockManager, store: MetaStore, objects: ObjectStore, rng: random.Random, epoch: int, n: int) -> None:
    sst = write_sst(objects, DESC, rows(rng, epoch, n), f"h/{epoch}.parquet", level=0, sub_level=epoch)
    with store.transaction() as tx:
        hm.commit_epoch(tx, epoch, [sst], [])


def compact(hm: HummockManager, store: MetaStore, objects: ObjectStore, config: CompactionConfig = CONFIG):
    task = pick_compaction(hm.version.levels(DESC.table_id), config)
    assert task is not None
    outputs = run_compaction(objects, DESC, task, target_file_rows=100)
    with store.transaction() as tx:
        assert hm.commit_compaction(tx, DESC.table_id, list(task.input_ssts), outputs) is not None
    return task


def test_intra_l0_merges_sub_levels_in_place(tmp_path):
    rng = random.Random(1)
    store = MetaStore(f"sqlite:///{tmp_path / 'meta.db'}")
    store.upgrade()
    objects = ObjectStore(str(tmp_path / "objects"))
    hm = HummockManager(store, objects)
    reader = StateTableReader(objects)
    epoch = 10
    for _ in range(5):
        commit(hm, store, objects, rng, epoch, 300)
        epoch += 10
    first = compact(hm, store, objects, replace(CONFIG, l0_keep_sub_levels=0, l0_to_l1_size_ratio=0))  # all of L0 into an empty L1
    assert first.target_level == 1
    for _ in range(9):  # small sub-levels next to L1
        commit(hm, store, objects, rng, epoch, 10)
        epoch += 10
    levels = hm.version.levels(DESC.table_id)
    before = {e: reader.read(DESC, levels.all_ssts(), e) for e in (55, epoch - 50, epoch)}
    task = compact(hm, store, objects)
    assert task.target_level == 0 and not task.drop_tombstones
    assert task.output_sub_level == task.l0_sub_levels[-1] and len(task.l0_sub_levels) == 6
    after = hm.version.levels(DESC.table_id)
    ids = [sub.sub_level_id for sub in after.l0]
    assert ids == sorted(ids) and ids[0] == task.output_sub_level and len(ids) == 1 + 3
    assert after.l1 == levels.l1
    for e, want in before.items():
        if e >= task.output_sub_level:  # reads at or after the merged epochs see the same rows
            assert reader.read(DESC, after.all_ssts(), e).equals(want), e
    # the merged sub-level survives a restart of meta
    assert HummockManager(store, objects).version.levels(DESC.table_id) == after


def test_intra_l0_tiers():
    """Older sub-levels join a merge while each is at most twice what the merge holds so far."""
    from risingspark.storage.desc import SstableInfo, SubLevel, TableLevels

    def sub(i: int, size: int) -> SubLevel:
        return SubLevel(i, (SstableInfo(f"s{i}", 5, 0, i, 0, 255, i, i, 10, 0, size),))

    l1 = (SstableInfo("l1", 5, 1, 0, 0, 255, 1, 1, 10, 0, 10**9),)
    sizes = [4000, 2000, 10, 10, 10, 10, 10, 10, 10, 10, 10]
    task = pick_compaction(TableLevels(5, tuple(sub(i, s) for i, s in enumerate(sizes)), l1), CONFIG)
    assert task is not None and task.target_level == 0
    assert task.l0_sub_levels == (2, 3, 4, 5, 6, 7)  # not the big ones, nor the newest three
    sizes = [60, 30, 10, 10, 10, 10, 10, 10, 10, 10]
    task = pick_compaction(TableLevels(5, tuple(sub(i, s) for i, s in enumerate(sizes)), l1), CONFIG)
    assert task is not None and task.l0_sub_levels == (0, 1, 2, 3, 4, 5, 6)
    assert pick_compaction(TableLevels(5, tuple(sub(i, 10) for i in range(7)), l1), CONFIG) is None  # too shallow
