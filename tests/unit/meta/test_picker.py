"""The L0 -> L1 compaction picker."""

from __future__ import annotations

from meta.compaction.picker import CompactionConfig, pick_compaction, pick_compactions
from risingspark.storage.desc import HummockVersion, SstableInfo, SubLevel, TableLevels


def sst(name: str, lo: int, hi: int, size: int, level: int = 0) -> SstableInfo:
    return SstableInfo(path=name, table_id=1, level=level, sub_level=0, min_vnode=lo, max_vnode=hi,
                       min_epoch=1, max_epoch=1, row_count=10, tombstone_count=0, size_bytes=size)


def l0(n: int, size: int = 10, ranges=((0, 9),)) -> tuple[SubLevel, ...]:
    return tuple(SubLevel(100 + i, tuple(sst(f"s{i}-{j}", lo, hi, size) for j, (lo, hi) in enumerate(ranges)))
                 for i in range(n))


L1 = (sst("a", 0, 3, 1000, 1), sst("b", 4, 9, 1000, 1), sst("c", 10, 19, 1000, 1), sst("d", 20, 255, 1000, 1))
CONFIG = CompactionConfig(l0_trigger_sub_levels=4, l0_max_sub_levels=10, l0_to_l1_size_ratio=0.1,
                          l0_keep_sub_levels=0)


def test_defaults():
    c = CompactionConfig()
    assert (c.l0_trigger_sub_levels, c.l0_max_sub_levels, c.l0_to_l1_size_ratio, c.target_file_rows,
            c.l0_keep_sub_levels) == (8, 64, 0.1, 262144, 3)


def test_the_newest_sub_levels_stay_in_l0():
    config = CompactionConfig(l0_trigger_sub_levels=4, l0_max_sub_levels=10, l0_keep_sub_levels=3)
    levels = TableLevels(1, l0(4, size=1000, ranges=((2, 5),)) + (SubLevel(200, (sst("new", 12, 12, 1000),)),),
                         L1)
    task = pick_compaction(levels, config)
    assert task is not None and task.l0_sub_levels == (100, 101)
    # only L1 SSTs overlapping the picked sub-levels are rewritten (c, 10..19, overlaps only "new")
    assert [s.path for s in task.input_ssts] == ["s0-0", "s1-0", "a", "b"]


def test_not_enough_sub_levels():
    assert pick_compaction(TableLevels(1, l0(3, size=10**6), L1), CONFIG) is None
    assert pick_compaction(TableLevels(1), CONFIG) is None


def test_size_ratio_gates_until_l0_is_too_deep():
    small = TableLevels(1, l0(4, size=50), L1)  # 200 bytes < 0.1 * 4000
    assert pick_compaction(small, CONFIG) is None
    assert pick_compaction(TableLevels(1, l0(4, size=100), L1), CONFIG) is not None  # 400 >= 400
    assert pick_compaction(TableLevels(1, l0(9, size=1), L1), CONFIG) is None
    deep = pick_compaction(TableLevels(1, l0(10, size=1), L1), CONFIG)
    assert deep is not None and len(deep.l0_sub_levels) == 10


def test_picks_all_l0_oldest_first_and_overlapping_l1():
    levels = TableLevels(1, l0(5, size=1000, ranges=((2, 5), (12, 12))), L1)
    task = pick_compaction(levels, CONFIG)
    assert task is not None
    assert task.table_id == 1 and task.target_level == 1 and task.drop_tombstones
    assert task.l0_sub_levels == (100, 101, 102, 103, 104)
    names = [s.path for s in task.input_ssts]
    assert names[:10] == [f"s{i}-{j}" for i in range(5) for j in range(2)]
    assert names[10:] == ["a", "b", "c"]  # d (20..255) overlaps no L0 SST
    assert task.input_bytes == 10 * 1000 + 3000 and task.input_rows == 13 * 10
    assert task.safe_epoch is None


def test_pick_compactions_over_a_version():
    version = HummockVersion(1, 50, {1: TableLevels(1, l0(4, size=1000), L1), 2: TableLevels(2, l0(1)),
                                     3: TableLevels(3, l0(6, size=1000))})
    assert [t.table_id for t in pick_compactions(version, CONFIG)] == [1, 3]
    tasks = pick_compactions(version, CONFIG, busy_tables=frozenset({1}), safe_epoch=40)
    assert [(t.table_id, t.safe_epoch, len(t.input_ssts)) for t in tasks] == [(3, 40, 6)]
