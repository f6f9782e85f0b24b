"""Executor state caches: what they return equals a storage read, whichever worker ran the last write,
across compactions and recoveries."""

from __future__ import annotations

import dataclasses
import random

import pyarrow as pa
import pytest

from compute.cache import state_cache
from compute.cache.state_cache import CacheManager
from risingspark.storage.cache import BlockCache
from risingspark.storage.desc import SstableInfo, StateTableDesc
from risingspark.storage.mvcc import retain_versions
from risingspark.storage.object_store import ObjectStore
from risingspark.storage.reader import StateTableReader
from risingspark.storage.sst import read_sst, write_sst
from risingspark.types import INT4, INT8, VARCHAR, Field

POINT = StateTableDesc(3, (Field("id", INT8), Field("g", INT4), Field("s", VARCHAR)), pk=(0,), dist_key=(0,))
# a join side: keyed by (join key g, id), distributed by g
SIDE = StateTableDesc(4, (Field("g", INT4), Field("id", INT8), Field("s", VARCHAR)), pk=(0, 1), dist_key=(0,))


def sst_rows(desc: StateTableDesc, rows: list[tuple]) -> pa.Table:
    """(vnode, *values, epoch, tombstone) tuples in `desc`'s SST schema."""
    schema = desc.sst_schema()
    return pa.table([pa.array(c, t) for c, t in zip(zip(*rows, strict=True), schema.types, strict=True)],
                    names=schema.names)


def as_set(t: pa.Table) -> set[tuple]:
    return set(zip(*(t.column(n).to_pylist() for n in t.column_names), strict=True))


class World:
    """A state table written by epoch rounds whose tasks run on one of two workers at random."""

    def __init__(self, tmp_path, desc: StateTableDesc, seed: int, capacity: int = 1 << 30) -> None:
        self.store = ObjectStore(str(tmp_path))
        self.desc = desc
        self.rng = random.Random(seed)
        self.workers = [CacheManager(capacity), CacheManager(capacity)]
        self.reader = StateTableReader(self.store, BlockCache(1 << 28), metas=BlockCache(1 << 24))
        self.ssts: list[SstableInfo] = []
        self.epoch = 1  # the committed epoch: rounds read at it
        self.next = 2  # the epoch of the next round (epochs of failed rounds are never reused)
        self.generation = "g0"
        self.files = 0
        self.l0_compacted = 0  # meta's TableLevels.l0_compacted_epoch

    def cache(self, worker: int, prefix: int | None):
        cache = self.workers[worker].table(f"t{self.desc.table_id}", self.desc, prefix)
        cache.sync(self.reader, tuple(self.ssts), self.epoch, self.next, self.generation,
                   l0_compacted_epoch=self.l0_compacted)
        return cache

    def write(self, rows: list[tuple]) -> SstableInfo:
        self.files += 1  # meta numbers SSTs in the order it commits them, compactions' too
        info = write_sst(self.store, self.desc, sst_rows(self.desc, rows), f"t/{self.files}.parquet", level=0,
                         sub_level=self.next)
        return dataclasses.replace(info, sst_id=self.files)

    def commit(self, rows: list[tuple]) -> None:
        if rows:
            self.ssts.append(self.write(rows))
        self.epoch, self.next = self.next, self.next + 1

    def compact(self, keep: int = 0) -> None:
        """Merge every SST but the newest `keep` L0 sub-levels into one L1 SST, as the picker does."""
        old, kept = (self.ssts[:-keep], self.ssts[-keep:]) if keep else (self.ssts, [])
        inputs = [read_sst(self.store, s.path, self.desc) for s in old]
        merged = retain_versions(inputs, self.desc, None, drop_tombstones=True)
        self.files += 1
        out = write_sst(self.store, self.desc, merged, f"t/{self.files}.parquet", level=1, sub_level=0) \
            if merged.num_rows else None
        self.ssts = ([dataclasses.replace(out, sst_id=self.files)] if out else []) + kept
        self.l0_compacted = max([self.l0_compacted, *(s.sub_level for s in old if s.level == 0)])


@pytest.mark.parametrize("seed", range(6))
def test_point_cache_equals_storage(tmp_path, seed):
    w = World(tmp_path, POINT, seed)
    ids = list(range(40))
    for _ in range(40):
        rows, caches = [], []
        for part in (0, 1):  # two partitions (even and odd vnodes), each on a random worker
            cache = w.cache(w.rng.randrange(2), None)
            keys = [i for i in w.rng.sample(ids, 12) if i % 2 == part]
            probe = pa.table({"_vnode": pa.array([i % 4 for i in keys], pa.int16()), "id": keys})
            got = cache.lookup(w.reader, tuple(w.ssts), w.epoch, probe)
            assert as_set(got) == as_set(w.reader.lookup(POINT, w.ssts, w.epoch, probe))
            mine = []
            for i in keys:
                dead = w.rng.random() < 0.3
                mine.append((i % 4, i, None if dead else w.rng.randrange(5), None if dead else f"s{w.rng.random()}",
                             w.next, dead))
            if mine:
                cache.write(sst_rows(POINT, mine), w.next)
            rows += mine
            caches.append(cache)
        roll = w.rng.random()
        if roll < 0.1:  # the round fails: nothing commits, recovery starts a new generation
            w.generation = f"g{w.next}"
            w.next += 1
            continue
        w.commit(rows)
        if roll > 0.85:
            w.compact(keep=w.rng.choice([0, 3]))
    hits = sum(c.counters.hits for m in w.workers for c in m._tables.values())
    assert hits > 0


@pytest.mark.parametrize("seed", range(6))
def test_prefix_cache_equals_storage(tmp_path, monkeypatch, seed):
    monkeypatch.setattr(state_cache, "APPLY_CHUNK_ROWS", 2)
    w = World(tmp_path, SIDE, seed)
    state: dict[tuple, tuple] = {}
    for _ in range(30):
        worker = w.rng.randrange(2)
        cache = w.cache(worker, 1)
        groups = w.rng.sample(range(6), 3)
        probe = pa.table({"_vnode": pa.array([g % 3 for g in groups], pa.int16()), "g": groups})
        got = cache.lookup(w.reader, tuple(w.ssts), w.epoch, probe)
        want = {r for k, r in state.items() if k[0] in groups}
        assert as_set(got) == want == as_set(w.reader.lookup(SIDE, w.ssts, w.epoch, probe, columns=["g"]))
        rows = []
        for _ in range(w.rng.randrange(1, 6)):
            g, i = w.rng.randrange(6), w.rng.randrange(8)
            if (g, i) in state and w.rng.random() < 0.4:
                rows.append((g % 3, g, i, None, w.next, True))
                del state[(g, i)]
            else:
                s = f"v{w.rng.randrange(100)}"
                rows.append((g % 3, g, i, s, w.next, False))
                state[(g, i)] = (g % 3, g, i, s)
        rows = list({(r[1], r[2]): r for r in rows}.values())
        cache.write(sst_rows(SIDE, rows), w.next)
        w.commit(rows)
        if w.rng.random() < 0.15:
            w.compact(keep=w.rng.choice([0, 3]))


def test_a_sibling_task_of_the_same_epoch_keeps_the_cache(tmp_path):
    w = World(tmp_path, POINT, 0)
    w.commit([(0, 1, 1, "a", 2, False), (1, 2, 1, "b", 2, False)])
    first = w.cache(0, None)
    first.lookup(w.reader, tuple(w.ssts), 2, pa.table({"_vnode": pa.array([0], pa.int16()), "id": [1]}))
    first.write(sst_rows(POINT, [(0, 1, 7, "a2", 3, False)]), 3)
    second = w.cache(0, None)  # another partition of epoch 3 on the same worker
    assert second is first and first.counters.take() == (0, 1)
    got = second.lookup(w.reader, tuple(w.ssts), 2, pa.table({"_vnode": pa.array([0], pa.int16()), "id": [1]}))
    assert as_set(got) == {(0, 1, 7, "a2")} and first.counters.take() == (1, 0)


def test_the_budget_bounds_memory(tmp_path):
    w = World(tmp_path, POINT, 0, capacity=20_000)
    w.commit([(i % 4, i, i, "x" * 50, 2, False) for i in range(2000)])
    cache = w.cache(0, None)
    probe = pa.table({"_vnode": pa.array([i % 4 for i in range(2000)], pa.int16()), "id": list(range(2000))})
    manager = w.workers[0]
    # a read of more keys than the budget holds (a bulk epoch) caches nothing
    assert cache.lookup(w.reader, tuple(w.ssts), 2, probe).num_rows == 2000 and len(manager) == 0
    for start in range(0, 2000, 100):
        assert cache.lookup(w.reader, tuple(w.ssts), 2, probe.slice(start, 100)).num_rows == 100
    assert 0 < manager.used_bytes <= 20_000 and manager.evictions > 0
    # what is left still answers correctly
    assert as_set(cache.lookup(w.reader, tuple(w.ssts), 2, probe.slice(1990))) == \
        {(i % 4, i, i, "x" * 50) for i in range(1990, 2000)}


def test_a_bulk_write_updates_only_the_entries_held(tmp_path):
    w = World(tmp_path, POINT, 0)
    w.commit([(i % 4, i, 0, "old", 2, False) for i in range(10)])
    cache = w.cache(0, None)
    held = pa.table({"_vnode": pa.array([1, 2], pa.int16()), "id": [1, 2]})
    cache.lookup(w.reader, tuple(w.ssts), w.epoch, held)
    bulk = [(i % 4, i, 1, "new", 3, i == 2) for i in range(500)]  # many more rows than entries
    cache.write(sst_rows(POINT, bulk), 3)
    assert len(w.workers[0]) == 2
    got = cache.lookup(w.reader, tuple(w.ssts), w.epoch, held)
    assert as_set(got) == {(1, 1, 1, "new")} and cache.counters.take() == (2, 2)


def test_a_group_too_big_for_its_share_is_not_cached(tmp_path):
    w = World(tmp_path, SIDE, 0, capacity=16_000)  # a prefix entry may take 2,000 bytes
    w.commit([(0, 1, i, "x" * 20, 2, False) for i in range(100)] + [(1, 2, 0, "y", 2, False)])
    cache = w.cache(0, 1)
    probe = pa.table({"_vnode": pa.array([0, 1], pa.int16()), "g": [1, 2]})
    assert cache.lookup(w.reader, tuple(w.ssts), w.epoch, probe).num_rows == 101
    assert len(w.workers[0]) == 1  # only the small group
    # a held group that grows past its share is dropped, and still read right
    cache.write(sst_rows(SIDE, [(1, 2, i, "z" * 20, 3, False) for i in range(1, 100)]), 3)
    assert len(w.workers[0]) == 0


def test_a_compaction_that_drops_a_tombstone_clears_a_lagging_cache(tmp_path):
    """A write that only deleted leaves no row in a compaction's output: the cache cannot catch up
    on it from the output's epochs, and must start over."""
    w = World(tmp_path, POINT, 0)
    probe = pa.table({"_vnode": pa.array([1], pa.int16()), "id": [1]})
    w.commit([(1, 1, 10, "a", w.next, False)])
    for _ in range(3):
        w.commit([(2, 100 + w.next, 0, "b", w.next, False)])
    cache = w.cache(0, None)
    assert as_set(cache.lookup(w.reader, tuple(w.ssts), w.epoch, probe)) == {(1, 1, 10, "a")}
    w.commit([(1, 1, None, None, w.next, True)])  # another worker deletes the key
    for _ in range(3):
        w.commit([(2, 100 + w.next, 0, "b", w.next, False)])
    w.compact(keep=3)  # the delete leaves L0, and with it every trace of the key
    cache = w.cache(0, None)
    assert as_set(cache.lookup(w.reader, tuple(w.ssts), w.epoch, probe)) == set()


def test_a_compaction_that_writes_nothing_clears_a_lagging_cache(tmp_path):
    """Every key of the compacted SSTs deleted: no output SST tells the cache a compaction ran, but
    meta's `l0_compacted_epoch` does."""
    w = World(tmp_path, POINT, 0)
    probe = pa.table({"_vnode": pa.array([1], pa.int16()), "id": [1]})
    w.commit([(1, 1, 10, "a", w.next, False)])
    cache = w.cache(0, None)
    assert as_set(cache.lookup(w.reader, tuple(w.ssts), w.epoch, probe)) == {(1, 1, 10, "a")}
    w.commit([(1, 1, None, None, w.next, True)])  # another worker deletes the key
    w.compact(keep=0)  # and the table is empty: nothing is written
    assert w.ssts == [] and w.l0_compacted == w.epoch
    cache = w.cache(0, None)
    assert as_set(cache.lookup(w.reader, tuple(w.ssts), w.epoch, probe)) == set()


def test_a_retried_task_does_not_read_its_failed_attempts_writes(tmp_path):
    w = World(tmp_path, POINT, 0)
    w.commit([(1, 1, 10, "a", w.next, False)])
    probe = pa.table({"_vnode": pa.array([1], pa.int16()), "id": [1]})
    cache = w.workers[0].table("t3", POINT)
    for retry in (False, True):
        cache.sync(w.reader, tuple(w.ssts), w.epoch, w.next, w.generation, partition=0, retry=retry,
                   l0_compacted_epoch=w.l0_compacted)
        assert as_set(cache.lookup(w.reader, tuple(w.ssts), w.epoch, probe)) == {(1, 1, 10, "a")}
        cache.write(sst_rows(POINT, [(1, 1, 99, "attempt", w.next, False)]), w.next)  # then the task fails
    # a resubmitted stage's task (attempt 0 again) of a partition that already ran here this epoch
    cache.sync(w.reader, tuple(w.ssts), w.epoch, w.next, w.generation, partition=0,
               l0_compacted_epoch=w.l0_compacted)
    assert as_set(cache.lookup(w.reader, tuple(w.ssts), w.epoch, probe)) == {(1, 1, 10, "a")}
