"""min and max through the cache of each group's extreme keys, against a plain recomputation over
random histories of inserts, updates and deletes (retractions of the current result included),
with tasks landing on either of two workers, small runs, small blocks and compactions."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from compute.cache import extreme_cache
from compute.cache.extreme_cache import ExtremeCache
from compute.cache.state_cache import CacheManager
from compute.executor.agg_extreme import fold_extreme
from compute.executor.hash_agg import AggCallSpec
from risingspark.storage.cache import BlockCache
from risingspark.storage.desc import StateTableDesc
from risingspark.storage.memcmp import encode_keys
from risingspark.storage.mvcc import retain_versions
from risingspark.storage.object_store import ObjectStore
from risingspark.storage.reader import StateTableReader
from risingspark.storage.sst import read_sst, write_sst
from risingspark.types import INT4, INT8, Field

DESC = StateTableDesc(9, (Field("_g0", INT4), Field("_arg0", INT8), Field("_sk0", INT8)), pk=(0, 1, 2),
                      dist_key=(0,))


def call(kind: str) -> AggCallSpec:
    return AggCallSpec(kind, "_arg0", INT8, INT8, "out", input_state=DESC)


def vnode(g: int) -> int:
    return g % 3


@pytest.mark.parametrize("kind", ["min", "max"])
@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("budget", [1 << 26, 1500])  # a tiny budget refuses and evicts runs mid-task
def test_min_max_follow_a_recomputation(tmp_path, monkeypatch, kind, seed, budget):
    monkeypatch.setattr(extreme_cache, "RUN_CAPACITY", 3)
    monkeypatch.setattr(extreme_cache, "LOAD_BLOCKS", 1)
    monkeypatch.setattr(extreme_cache, "APPLY_CHUNK_ROWS", 3)  # writes apply (and settle) a few rows at a time
    rng = random.Random(seed)
    store = ObjectStore(str(tmp_path))
    reader = StateTableReader(store, BlockCache(1 << 26), metas=BlockCache(1 << 22))
    workers = [CacheManager(budget), CacheManager(budget)]
    spec = call(kind)
    rows: dict[int, tuple[int, int]] = {}  # input row id -> (group, value)
    ssts = []
    prev, epoch, files = 1, 2, 0
    compacted = 0  # meta's TableLevels.l0_compacted_epoch
    pick = max if kind == "max" else min

    def result(g: int, state: dict[int, tuple[int, int]]) -> int | None:
        values = [v for gg, v in state.values() if gg == g]
        return pick(values) if values else None

    for _ in range(40):
        start = dict(rows)
        changes: dict[tuple[int, int, int], int] = {}
        touched = set()
        if rng.random() < 0.15 and rows:  # the group's most extreme rows all go at once
            g = rng.choice([g for g, _ in rows.values()])
            mine = sorted((v, rid) for rid, (gg, v) in rows.items() if gg == g)
            for v, rid in (mine[-6:] if kind == "max" else mine[:6]):
                changes[(g, v, rid)] = changes.get((g, v, rid), 0) - 1
                touched.add(g)
                del rows[rid]
        for _ in range(rng.randrange(1, 12)):
            rid = rng.randrange(60)
            old = rows.get(rid)
            if old is not None and (rng.random() < 0.5 or old[1] == result(old[0], rows)):  # often the result goes
                changes[(old[0], old[1], rid)] = changes.get((old[0], old[1], rid), 0) - 1
                touched.add(old[0])
                del rows[rid]
            if rid not in rows and rng.random() < 0.7:  # a row inserted (or its update's new image)
                g, v = rng.randrange(4), rng.randrange(-20, 20)
                changes[(g, v, rid)] = changes.get((g, v, rid), 0) + 1
                touched.add(g)
                rows[rid] = (g, v)
        changes = {k: c for k, c in changes.items() if c}
        if not touched:
            continue
        before = {g: result(g, start) for g in touched}
        after = {g: result(g, rows) for g in touched}
        delta = pa.table({"_vnode": pa.array([vnode(g) for g, _, _ in changes], pa.int16()),
                          "_g0": pa.array([g for g, _, _ in changes], pa.int32()),
                          "_arg0": pa.array([v for _, v, _ in changes], pa.int64()),
                          "_sk0": pa.array([r for _, _, r in changes], pa.int64()),
                          "_count": pa.array(list(changes.values()), pa.int64())})
        groups = pa.table({"_vnode": pa.array([vnode(g) for g in sorted(touched)], pa.int16()),
                           "_g0": pa.array(sorted(touched), pa.int32())})
        manager = rng.choice(workers)
        cache = manager.table(f"t{DESC.table_id}", DESC, 1, kind=ExtremeCache, descending=kind == "max")
        assert isinstance(cache, ExtremeCache)
        cache.sync(reader, tuple(ssts), prev, epoch, "g", l0_compacted_epoch=compacted)
        out = fold_extreme(("_g0",), spec, groups, delta, cache, reader, ssts, prev, epoch)
        assert out.before.to_pylist() == [before[g] for g in sorted(touched)]
        assert out.after.to_pylist() == [after[g] for g in sorted(touched)]
        if out.state_rows.num_rows:
            files += 1
            ssts.append(write_sst(store, DESC, out.state_rows, f"x/{files}.parquet", level=0, sub_level=epoch,
                                  row_group_size=rng.choice([1, 2, 3])))
        prev, epoch = epoch, epoch + 1
        # the next epoch's "before" must be this epoch's "after": checked through a fresh worker
        check = CacheManager(1 << 26).table("fresh", DESC, 1, kind=ExtremeCache, descending=kind == "max")
        assert isinstance(check, ExtremeCache)
        check.sync(reader, tuple(ssts), prev, epoch, "g", l0_compacted_epoch=compacted)
        runs = check.runs(reader, ssts, prev, groups)
        keys = encode_keys(groups.column("_vnode"), [groups.column("_g0")]).to_pylist()
        assert [runs[k].extreme(kind == "max") for k in keys] == [after[g] for g in sorted(touched)]
        if rng.random() < 0.15 and len(ssts) > 4:  # compact all but the newest three sub-levels
            old, keep = ssts[:-3], ssts[-3:]
            compacted = max([compacted, *(s.sub_level for s in old if s.level == 0)])  # as meta records it
            merged = retain_versions([read_sst(store, s.path, DESC) for s in old], DESC, None, drop_tombstones=True)
            files += 1
            ssts = ([write_sst(store, DESC, merged, f"x/{files}.parquet", level=1, sub_level=0,
                               row_group_size=2)] if merged.num_rows else []) + keep


def test_global_max_of_an_emptied_run(tmp_path, monkeypatch):
    """A global aggregate's one group (vnode 0, no group key): its run empties and reloads whole."""
    monkeypatch.setattr(extreme_cache, "RUN_CAPACITY", 2)
    desc = StateTableDesc(10, (Field("_arg0", INT8), Field("_sk0", INT8)), pk=(0, 1))
    spec = AggCallSpec("max", "_arg0", INT8, INT8, "out", input_state=desc)
    store = ObjectStore(str(tmp_path))
    reader = StateTableReader(store, BlockCache(1 << 24), metas=BlockCache(1 << 20))
    cache = CacheManager(1 << 24).table("g", desc, 0, kind=ExtremeCache, descending=True)
    assert isinstance(cache, ExtremeCache)
    groups = pa.table({"_vnode": pa.array([0], pa.int16())})
    ssts = []

    def epoch(prev: int, cur: int, values: list[int], counts: list[int]) -> tuple:
        delta = pa.table({"_vnode": pa.array([0] * len(values), pa.int16()), "_arg0": values, "_sk0": values,
                          "_count": counts})
        cache.sync(reader, tuple(ssts), prev, cur, "g", l0_compacted_epoch=0)  # never compacted
        out = fold_extreme((), spec, groups, delta, cache, reader, ssts, prev, cur)
        ssts.append(write_sst(store, desc, out.state_rows, f"g/{cur}.parquet", level=0, sub_level=cur,
                              row_group_size=2))
        return out.before.to_pylist()[0], out.after.to_pylist()[0]

    assert epoch(1, 2, list(range(10)), [1] * 10) == (None, 9)
    assert epoch(2, 3, [9, 8, 7, 6, 5], [-1] * 5) == (9, 4)  # more than the run held
    assert epoch(3, 4, [4, 3, 2, 1, 0], [-1] * 5) == (4, None)
    assert epoch(4, 5, [3], [1]) == (None, 3)
