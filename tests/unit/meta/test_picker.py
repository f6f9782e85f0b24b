"""The leveled compaction pickers, as pure functions over level layouts: which level compacts, which
SSTs a task takes, when tombstones may go."""

from __future__ import annotations

from dataclasses import replace

from meta.compaction.level_selector import level_scores, level_targets, pending_compaction_bytes
from meta.compaction.picker import CompactionConfig, pick_compaction, pick_compactions
from risingspark.storage.desc import HummockVersion, SstableInfo, SubLevel, TableLevels

MB = 1 << 20


def key(k: int) -> bytes:
    return k.to_bytes(4, "big")


def sst(name: str, lo: int, hi: int, size: int, level: int = 0, sub_level: int = 0) -> SstableInfo:
    return SstableInfo(path=name, table_id=1, level=level, sub_level=sub_level, min_vnode=0, max_vnode=255,
                       min_epoch=1, max_epoch=1, row_count=10, tombstone_count=0, size_bytes=size,
                       min_key=key(lo), max_key=key(hi))


def l0(n: int, size: int = 10, ranges=((0, 999),), first: int = 100, prefix: str = "s") -> tuple[SubLevel, ...]:
    return tuple(SubLevel(first + i, tuple(sst(f"{prefix}{i}-{j}", lo, hi, size, 0, first + i)
                                           for j, (lo, hi) in enumerate(ranges)))
                 for i in range(n))


def run(level: int, bounds: list[int], size: int, prefix: str = "") -> tuple[SstableInfo, ...]:
    """SSTs of one level covering ``[bounds[i], bounds[i + 1] - 1]``."""
    return tuple(sst(f"{prefix or 'L' + str(level)}-{lo}", lo, hi - 1, size, level)
                 for lo, hi in zip(bounds, bounds[1:], strict=False))


def with_levels(l0_subs=(), table_id: int = 1, **by_level) -> TableLevels:
    depth = max((int(k[1:]) for k in by_level), default=0)
    return TableLevels(table_id, tuple(l0_subs), tuple(by_level.get(f"L{n}", ()) for n in range(1, depth + 1)))


CONFIG = CompactionConfig(l0_trigger_sub_levels=4, l0_keep_sub_levels=0, l0_intra_sub_levels=8,
                          l0_max_sub_levels=10, l0_to_base_size_ratio=0.1, max_level=4, level_size_ratio=10,
                          max_bytes_for_level_base=10 * MB, target_file_bytes=2 * MB,
                          max_compaction_bytes=64 * MB)


def test_defaults():
    c = CompactionConfig()
    assert (c.l0_trigger_sub_levels, c.l0_keep_sub_levels, c.max_level, c.level_size_ratio,
            c.max_bytes_for_level_base, c.target_file_bytes, c.max_compaction_bytes) == (8, 3, 6, 10, 64 * MB,
                                                                                         16 * MB, 256 * MB)


def test_a_small_table_compacts_l0_into_the_bottom_level():
    targets = level_targets(with_levels(), CONFIG)
    assert targets.base_level == 4
    levels = with_levels(l0(4, size=MB))
    task = pick_compaction(levels, CONFIG)
    assert task is not None and task.target_level == 4 and task.kind == "l0" and task.drop_tombstones
    assert task.l0_sub_levels == (100, 101, 102, 103)


def test_the_base_level_moves_up_as_the_table_grows():
    # bottom 500 MB: L3's target 50 MB > 10 MB, so the base is L2 (5 MB, at least the base bytes)
    levels = with_levels(L4=run(4, [0, 500, 1000], 250 * MB))
    targets = level_targets(levels, CONFIG)
    assert targets.base_level == 2
    assert targets.target_bytes == {2: 10 * MB, 3: 50 * MB, 4: 500 * MB}
    # 5 GB: the base is L1
    assert level_targets(with_levels(L4=run(4, [0, 1000], 5000 * MB)), CONFIG).base_level == 1
    # 50 MB: past the base bytes, so L3 becomes the base; 8 MB: the bottom is the base
    assert level_targets(with_levels(L4=run(4, [0, 1000], 50 * MB)), CONFIG).base_level == 3
    assert level_targets(with_levels(L4=run(4, [0, 1000], 8 * MB)), CONFIG).base_level == 4


def test_l0_into_the_base_level_takes_only_its_overlap_and_keeps_tombstones_above_data():
    base = run(2, [0, 250, 500, 750, 1000], 2 * MB)
    bottom = run(4, [0, 500, 1000], 250 * MB)
    levels = with_levels(l0(4, size=MB, ranges=((300, 600),)), L2=base, L4=bottom)
    task = pick_compaction(levels, CONFIG)
    assert task is not None and task.target_level == 2
    assert [s.path for s in task.input_ssts] == ["s0-0", "s1-0", "s2-0", "s3-0", "L2-250", "L2-500"]
    assert not task.drop_tombstones  # L4 holds older versions of those keys


def test_the_newest_sub_levels_stay_in_l0():
    levels = with_levels(l0(6, size=MB), L4=run(4, [0, 1000], MB))
    task = pick_compaction(levels, replace(CONFIG, l0_keep_sub_levels=3))
    assert task is not None and task.l0_sub_levels == (100, 101, 102)


def test_l0_waits_for_its_share_of_the_base_then_merges_within_l0():
    bottom = run(4, [0, 1000], 100 * MB)  # base L3 (10 MB target), fed by one 100 MB bottom
    base = run(3, [0, 1000], 8 * MB)
    shallow = with_levels(l0(5, size=100_000), L3=base, L4=bottom)  # 0.5 MB < 0.1 * 8 MB
    assert pick_compaction(shallow, CONFIG) is None
    deep = pick_compaction(with_levels(l0(8, size=100_000), L3=base, L4=bottom), CONFIG)
    assert deep is not None and deep.kind == "intra_l0" and deep.target_level == 0 and not deep.drop_tombstones
    assert deep.output_sub_level == deep.l0_sub_levels[-1]
    full = pick_compaction(with_levels(l0(4, size=MB), L3=base, L4=bottom), CONFIG)  # 4 MB >= 0.8 MB
    assert full is not None and full.kind == "l0" and full.target_level == 3
    too_deep = pick_compaction(with_levels(l0(10, size=1), L3=base, L4=bottom), CONFIG)
    assert too_deep is not None and too_deep.kind == "l0"


def test_intra_l0_tiers():
    """Older sub-levels join a merge while each is at most twice what the merge holds so far."""
    config = replace(CONFIG, l0_keep_sub_levels=3, l0_max_sub_levels=64)
    below = {"L3": run(3, [0, 1000], 8 * MB), "L4": run(4, [0, 1000], 100 * MB)}  # L0 -> L3 needs 0.8 MB

    def subs(sizes):
        return tuple(SubLevel(i, (sst(f"s{i}", 0, 999, size, 0, i),)) for i, size in enumerate(sizes))

    task = pick_compaction(with_levels(subs([4000, 2000, 10, 10, 10, 10, 10, 10, 10, 10, 10]), **below), config)
    assert task is not None and task.target_level == 0
    assert task.l0_sub_levels == (2, 3, 4, 5, 6, 7)  # not the big ones, nor the newest three
    task = pick_compaction(with_levels(subs([60, 30, 10, 10, 10, 10, 10, 10, 10, 10]), **below), config)
    assert task is not None and task.l0_sub_levels == (0, 1, 2, 3, 4, 5, 6)
    assert pick_compaction(with_levels(subs([10] * 7), **below), config) is None  # too shallow


def test_a_level_over_its_target_moves_one_file_down_with_its_overlap():
    # L3's target is 50 MB (bottom 500 MB); it holds 80 MB in 4 files
    l3 = (sst("a", 0, 99, 20 * MB, 3), sst("b", 100, 599, 20 * MB, 3), sst("c", 600, 649, 20 * MB, 3),
          sst("d", 650, 999, 20 * MB, 3))
    l4 = run(4, [0, 200, 400, 600, 800, 1000], 100 * MB)
    levels = with_levels(L3=l3, L4=l4)
    assert level_scores(levels, CONFIG, level_targets(levels, CONFIG))[0] == (80 / 50, 3)
    task = pick_compaction(levels, CONFIG)
    assert task is not None and task.kind == "level" and task.target_level == 4
    # the least overlap per byte wins: "a" and "c" rewrite one 100 MB L4 file each ("b" three, "d" two);
    # on a tie, the first in key order
    assert [s.path for s in task.input_ssts] == ["a", "L4-0"]
    assert task.drop_tombstones  # the bottom level


def test_busy_ssts_are_not_picked_and_disjoint_tasks_run_at_once():
    l3 = tuple(sst(f"u{i}", i * 100, i * 100 + 99, 20 * MB, 3) for i in range(10))  # 200 MB > 50 MB target
    l4 = run(4, [0, 250, 500, 750, 1000], 125 * MB)
    version = HummockVersion(1, 50, {1: with_levels(L3=l3, L4=l4)})
    tasks = pick_compactions(version, CONFIG)
    assert len(tasks) == 4  # one per L4 file: each L3 file overlaps one L4 file, and they conflict there
    inputs = [s.path for t in tasks for s in t.input_ssts]
    assert len(inputs) == len(set(inputs))
    # with every L4 file busy nothing can go down
    busy = frozenset(s.path for s in l4)
    assert pick_compaction(version.tables[1], CONFIG, busy=busy) is None


def test_l0_waits_while_its_base_files_are_busy():
    base = run(3, [0, 1000], 8 * MB)
    levels = with_levels(l0(4, size=MB), L3=base, L4=run(4, [0, 1000], 100 * MB))
    assert pick_compaction(levels, CONFIG, busy=frozenset({"L3-0"})) is None
    deep = with_levels(l0(8, size=MB), L3=base, L4=run(4, [0, 1000], 100 * MB))
    task = pick_compaction(deep, CONFIG, busy=frozenset({"L3-0"}))
    assert task is not None and task.kind == "intra_l0"
    # an L0 task in flight on the oldest sub-level keeps other L0 -> base tasks out, but newer
    # sub-levels may merge among themselves beside it
    beside = pick_compaction(deep, CONFIG, busy=frozenset({"s0-0"}))
    assert beside is not None and beside.kind == "intra_l0" and beside.l0_sub_levels == tuple(range(101, 108))
    assert pick_compaction(deep, CONFIG, busy=frozenset({"s7-0"})) is None  # the newest is busy: nothing to merge


def test_pick_compactions_over_a_version():
    version = HummockVersion(1, 50, {1: with_levels(l0(4, size=MB, prefix="a")),
                                     2: with_levels(l0(1, prefix="b"), table_id=2),
                                     3: with_levels(l0(6, size=MB, prefix="c"), table_id=3)})
    tasks = pick_compactions(version, CONFIG, safe_epoch=40)
    assert [(t.table_id, t.safe_epoch, len(t.input_ssts)) for t in tasks] == [(1, 40, 4), (3, 40, 6)]


def test_a_big_sub_level_of_disjoint_ssts_goes_down_a_run_at_a_time():
    # one checkpoint wrote 4 x 30 MB of SSTs; a task takes at most 64 MB
    big = SubLevel(100, tuple(sst(f"b{i}", i * 250, i * 250 + 249, 30 * MB, 0, 100) for i in (2, 0, 3, 1)))
    base = run(3, [0, 250, 500, 750, 1000], 2 * MB)
    levels = with_levels((big, *l0(3, size=MB, first=101)), L3=base, L4=run(4, [0, 1000], 100 * MB))
    task = pick_compaction(levels, replace(CONFIG, l0_keep_sub_levels=3))
    assert task is not None and task.kind == "l0" and task.target_level == 3
    assert [s.path for s in task.input_ssts] == ["b0", "b1", "L3-0", "L3-250"]  # a key run, and its overlap
    assert task.l0_sub_levels == ()  # the sub-level stays in L0 with b2 and b3
    # two tasks' SSTs side by side (each task writes keys of every vnode): by first key, a run
    pairs = SubLevel(100, tuple(sst(f"p{t}{i}", i * 250 + t, i * 250 + 249 - t, 30 * MB, 0, 100)
                                for t in (0, 1) for i in range(4)))
    task = pick_compaction(with_levels((pairs,), L3=base, L4=run(4, [0, 1000], 100 * MB)), CONFIG)
    assert task is not None and task.l0_sub_levels == ()
    assert [s.path for s in task.input_ssts] == ["p00", "p10", "L3-0"]


def test_pending_bytes_count_l0_when_due_and_levels_past_their_targets():
    l3 = (sst("a", 0, 499, 40 * MB, 3), sst("b", 500, 999, 40 * MB, 3))  # 80 MB, target 50 MB
    l4 = run(4, [0, 1000], 500 * MB)
    assert pending_compaction_bytes(with_levels(l0(3, size=MB), L3=l3, L4=l4), CONFIG) == 30 * MB
    assert pending_compaction_bytes(with_levels(l0(4, size=MB), L3=l3, L4=l4), CONFIG) == 34 * MB
    assert pending_compaction_bytes(with_levels(L4=l4), CONFIG) == 0  # the bottom never compacts down
