"""Point and prefix lookups through SST block indexes and bloom filters, against a Python model."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from risingspark.storage.cache import BlockCache
from risingspark.storage.desc import StateTableDesc, SubLevel, TableLevels
from risingspark.storage.memcmp import encode_keys
from risingspark.storage.mvcc import merge_versions
from risingspark.storage.object_store import ObjectStore
from risingspark.storage.point_get import BlockReader, LookupKeys, edge_rows, lookup_rows, sorted_position
from risingspark.storage.reader import StateTableReader
from risingspark.storage.sst import bloom_prefix, write_sst, write_ssts
from risingspark.storage.sst_meta import SstMeta
from risingspark.types import INT4, INT8, VARCHAR, Field

# a join side's state: keyed by (join key, id), distributed by the join key
SIDE = StateTableDesc(7, (Field("k", INT4), Field("id", INT8), Field("s", VARCHAR)), pk=(0, 1), dist_key=(0,))
# a table keyed by (name, n): a string leads the key, ints that encode with trailing zero bytes follow
TABLE = StateTableDesc(8, (Field("name", VARCHAR), Field("n", INT8), Field("v", INT4)), pk=(0, 1), dist_key=(0, 1))


@pytest.fixture
def store(tmp_path) -> ObjectStore:
    return ObjectStore(str(tmp_path))


def side_rows(rows: list[tuple]) -> pa.Table:
    """(vnode, k, id, s, epoch, tombstone) tuples in SIDE's SST schema."""
    cols = list(zip(*rows, strict=True))
    return pa.table([pa.array(c, t) for c, t in zip(cols, SIDE.sst_schema().types, strict=True)],
                    names=SIDE.sst_schema().names)


def counting_reader(store: ObjectStore) -> tuple[StateTableReader, BlockCache]:
    blocks = BlockCache(1 << 30)
    return StateTableReader(store, blocks, metas=BlockCache(1 << 30)), blocks


def test_bloom_prefix_is_the_leading_distribution_key():
    assert bloom_prefix(SIDE) == 1
    assert bloom_prefix(TABLE) == 2
    assert bloom_prefix(StateTableDesc(9, SIDE.fields, pk=(0, 1), dist_key=(1,))) == 2
    assert bloom_prefix(StateTableDesc(9, SIDE.fields, pk=(0, 1))) == 2  # a singleton


def test_a_point_lookup_reads_one_block(store):
    rows = side_rows([(k % 8, k, i, f"s{k}-{i}", 5, False) for k in range(1000) for i in range(3)])
    sst = write_sst(store, SIDE, rows, "a.parquet", level=1, sub_level=0, row_group_size=50)
    reader, blocks = counting_reader(store)
    meta = reader.blocks.meta(sst.path)
    assert isinstance(meta, SstMeta) and meta.num_blocks == 60 and meta.bloom_prefix == 1
    got = reader.lookup(SIDE, [sst], 5, pa.table({"_vnode": pa.array([3], pa.int16()), "k": [403]}),
                        columns=["k"])
    assert got.column("s").to_pylist() == ["s403-0", "s403-1", "s403-2"]
    assert blocks.stats().misses <= 2  # the key's rows may straddle two blocks
    # a key the SST cannot hold: ruled out by the bloom filter or the key range, no block read
    before = blocks.stats().misses
    missing = reader.lookup(SIDE, [sst], 5, pa.table({"_vnode": pa.array([3, 0], pa.int16()), "k": [5003, -7]}),
                            columns=["k"])
    assert missing.num_rows == 0
    assert blocks.stats().misses - before <= 1  # a bloom false positive may read one


def test_versions_of_a_key_straddle_blocks(store):
    # 7 versions of (0, 5, 1), newest first in the file, cut into blocks of 2 rows
    rows = [(0, 4, 1, "before", 3, False)] + [(0, 5, 1, f"v{e}", e, e == 6) for e in range(1, 8)] + \
           [(0, 6, 1, "after", 3, False)]
    sst = write_sst(store, SIDE, side_rows(rows), "v.parquet", level=0, sub_level=7, row_group_size=2)
    reader, _ = counting_reader(store)
    keys = pa.table({"_vnode": pa.array([0], pa.int16()), "k": [5], "id": pa.array([1], pa.int64())})
    levels = TableLevels(SIDE.table_id, (SubLevel(7, (sst,)),))
    for epoch, want in [(7, ["v7"]), (6, []), (5, ["v5"]), (4, ["v4"]), (1, ["v1"]), (0, [])]:
        assert reader.lookup(SIDE, [sst], epoch, keys).column("s").to_pylist() == want, epoch
        # one key's `get`: its version at `epoch` is found in whichever block holds it
        assert reader.get(SIDE, levels, epoch, 0, [5, 1]).column("s").to_pylist() == want, epoch
        assert reader.get_values(SIDE, levels, epoch, 0, [5, 1], ["s", "id"]) == [(s, 1) for s in want], epoch


@pytest.mark.parametrize("seed", range(8))
def test_lookup_matches_the_model(store, seed):
    rng = random.Random(seed)
    names = [None, "", "a", "a\x00", "ab", "abcdefgh", "abcdefghi", "é"]
    numbers = [None, 0, 1, 255, 256, -1, 65536, -(2**63), 2**63 - 1]
    versions: list[tuple] = []  # (vnode, name, n, v, epoch, tombstone)
    ssts = []
    for epoch in range(1, 13):
        batch = {}
        for _ in range(rng.randrange(1, 60)):
            name, n = rng.choice(names), rng.choice(numbers)
            vnode = len(repr((name, n))) % 4
            tomb = rng.random() < 0.2
            batch[(vnode, name, n)] = (vnode, name, n, None if tomb else rng.randrange(100), epoch, tomb)
        versions += batch.values()
        t = pa.table([pa.array(c, ty) for c, ty in zip(zip(*batch.values(), strict=True),
                                                        TABLE.sst_schema().types, strict=True)],
                     names=TABLE.sst_schema().names)
        ssts.append(write_sst(store, TABLE, t, f"m/{epoch}.parquet", level=0, sub_level=epoch,
                              row_group_size=rng.choice([1, 2, 3, 7, 100])))
    # every version of every key in one level of small SSTs with disjoint key ranges (a compaction's)
    merged = write_ssts(store, TABLE, pa.table([pa.array(c, ty) for c, ty in zip(
        zip(*versions, strict=True), TABLE.sst_schema().types, strict=True)], names=TABLE.sst_schema().names),
        "m/all.parquet", level=1, sub_level=0, file_rows=rng.choice([5, 9, 20]))
    assert len(merged) > 3
    l0 = TableLevels(TABLE.table_id, tuple(SubLevel(s.sub_level, (s,)) for s in ssts))
    below = TableLevels(TABLE.table_id, (), (tuple(merged),))
    reader = StateTableReader(store, BlockCache(1 << 30), metas=BlockCache(1 << 20))
    everything = sorted({(r[0], r[1], r[2]) for r in versions}, key=repr)
    for epoch in (3, 8, 12):
        newest: dict = {}
        for r in versions:
            if r[4] <= epoch and ((r[0], r[1], r[2]) not in newest or newest[(r[0], r[1], r[2])][4] < r[4]):
                newest[(r[0], r[1], r[2])] = r
        probe = rng.sample(everything, 25) + [(1, "zzz", 3)]
        keys = pa.table({"_vnode": pa.array([p[0] for p in probe], pa.int16()), "name": [p[1] for p in probe],
                         "n": pa.array([p[2] for p in probe], pa.int64())})
        got = reader.lookup(TABLE, ssts, epoch, keys)
        want = {k: r for k, r in newest.items() if k in set(probe) and not r[5]}
        # one key at a time, encoded and merged in Python (a point query's `get`): the same rows,
        # from the L0 SSTs and from the level below
        for p in probe:
            for levels in (l0, below):
                one = reader.get(TABLE, levels, epoch, p[0], [p[1], p[2]])
                assert one is not None and one.schema == got.schema
                assert [tuple(r.values()) for r in one.to_pylist()] == \
                    ([(p[0], p[1], p[2], want[p][3])] if p in want else []), (p, epoch)
        assert sorted(zip(got.column("_vnode").to_pylist(), got.column("name").to_pylist(),
                          got.column("n").to_pylist(), got.column("v").to_pylist(), strict=True), key=repr) == \
            sorted(((k[0], k[1], k[2], r[3]) for k, r in want.items()), key=repr)
        # a prefix lookup by name returns every live key of those names
        prefix = pa.table({"_vnode": pa.array([p[0] for p in probe], pa.int16()), "name": [p[1] for p in probe]})
        got = reader.lookup(TABLE, ssts, epoch, prefix, columns=["name"])
        wanted = {(p[0], p[1]) for p in probe}
        assert sorted(zip(got.column("name").to_pylist(), got.column("n").to_pylist(), strict=True), key=repr) == \
            sorted(((k[1], k[2]) for k, r in newest.items() if (k[0], k[1]) in wanted and not r[5]), key=repr)


def test_lookup_reads_files_without_an_index(store):
    """SSTs written before the index existed (no ``_key``, one row group) are read whole."""
    rows = side_rows([(1, 2, 3, "old", 4, False), (1, 2, 4, "older", 4, False)])
    store.write_parquet("legacy.parquet", rows)
    fresh = write_sst(store, SIDE, side_rows([(1, 2, 4, "new", 5, False)]), "new.parquet", level=0, sub_level=5)
    # (an SST written before SSTs carried keys has no key range in its info either)
    legacy = replace(fresh, path="legacy.parquet", min_epoch=4, max_epoch=4, level=1, sub_level=0, min_key=b"",
                     max_key=b"")
    assert not BlockReader(store, None, None).meta("legacy.parquet").indexed
    got = StateTableReader(store).lookup(SIDE, [legacy, fresh], 5,
                                         pa.table({"_vnode": pa.array([1], pa.int16()), "k": [2]}), columns=["k"])
    assert got.column("s").to_pylist() == ["old", "new"]


def test_index_lives_in_the_footer(store):
    sst = write_sst(store, SIDE, side_rows([(0, 1, 1, "x", 1, False)]), "f.parquet", level=0, sub_level=1)
    footer = pq.read_metadata(store.full_path(sst.path))
    assert b"risingspark.sst" in footer.metadata
    assert "_key" in footer.schema.names
    keys = LookupKeys.of(SIDE, pa.table({"_vnode": pa.array([0, 0], pa.int16()), "k": [1, 1]}), 1)
    assert len(keys) == 1  # deduplicated
    parts = lookup_rows(BlockReader(store, None, None), SIDE, [sst], 1, keys)
    assert [p.num_rows for p in parts] == [1]


@pytest.mark.parametrize("seed", range(6))
def test_edge_rows_are_exact_past_their_bound(store, seed):
    """A bounded read at one end of each group: past the bound it returns exactly the full read."""
    rng = random.Random(seed)
    ssts = []
    for epoch in range(1, 9):
        rows = {}
        for _ in range(rng.randrange(5, 80)):
            k, i = rng.randrange(6), rng.randrange(40)
            dead = rng.random() < 0.3
            rows[(k, i)] = (k % 3, k, i, None if dead else f"e{epoch}", epoch, dead)
        ssts.append(write_sst(store, SIDE, side_rows(list(rows.values())), f"e/{epoch}.parquet",
                              level=1 if epoch == 1 else 0, sub_level=0 if epoch == 1 else epoch,
                              row_group_size=rng.choice([1, 2, 3, 5])))
    reader = StateTableReader(store, BlockCache(1 << 26), metas=BlockCache(1 << 20))
    groups = pa.table({"_vnode": pa.array([k % 3 for k in range(7)], pa.int16()), "k": list(range(7))})
    keys = LookupKeys.of(SIDE, groups, 1)
    for epoch in (4, 8):
        full = reader.lookup(SIDE, ssts, epoch, groups, columns=["k"])
        full_keys = encode_keys(full.column("_vnode"), [full.column("k"), full.column("id")]).to_pylist()
        for blocks, from_end in [(1, True), (2, True), (1, False), (3, False)]:
            edge = edge_rows(reader.blocks, SIDE, ssts, epoch, keys, blocks, from_end)
            merged = merge_versions([edge.rows], SIDE, epoch)
            got = set(zip(merged.column("k").to_pylist(), merged.column("id").to_pylist(),
                          merged.column("s").to_pylist(), strict=True))
            want = set()
            for key, k, i, s in zip(full_keys, full.column("k").to_pylist(), full.column("id").to_pylist(),
                                    full.column("s").to_pylist(), strict=True):
                bound = dict(zip(keys.rows.column("k").to_pylist(), edge.bounds, strict=True))[k]
                if bound is None or (key > bound if from_end else key < bound):
                    want.add((k, i, s))
            assert got == want, (epoch, blocks, from_end)
            assert any(b is not None for b in edge.bounds) or got == set(
                zip(full.column("k").to_pylist(), full.column("id").to_pylist(), full.column("s").to_pylist(),
                    strict=True))


def test_a_point_lookup_opens_only_the_ssts_whose_key_range_holds_it(store):
    """Below L0 a level's SSTs have disjoint key ranges: one key opens one of them (its index is
    read), whatever the level holds."""
    ssts = []
    for part in range(20):  # 20 SSTs of one level, 50 keys each, in key order
        rows = side_rows([(3, k, 1, f"s{k}", 5, False) for k in range(part * 50, part * 50 + 50)])
        ssts.append(write_sst(store, SIDE, rows, f"l1-{part}.parquet", level=1, sub_level=0))
    reader = StateTableReader(store, BlockCache(1 << 30), metas=BlockCache(1 << 30))
    got = reader.lookup(SIDE, ssts, 5, pa.table({"_vnode": pa.array([3], pa.int16()), "k": [777]}), columns=["k"])
    assert got.column("s").to_pylist() == ["s777"]
    assert len(reader.blocks.meta_cache) == 1  # the SST of keys 750..799 only
    many = reader.lookup(SIDE, ssts, 5, pa.table({"_vnode": pa.array([3] * 10, pa.int16()),
                                                  "k": list(range(0, 1000, 100))}), columns=["k"])
    assert many.column("s").to_pylist() == [f"s{k}" for k in range(0, 1000, 100)]  # (more keys: vectorized)


def test_a_search_with_a_needle_longer_than_the_keys_agrees_with_numpy():
    """`sorted_position` searches a prefix of a longer needle (numpy would cast the whole array to the
    needle's width first: O(n) a search); its answer is numpy's, trailing zero bytes included."""
    rng = random.Random(7)
    for _ in range(2000):
        width = rng.randint(1, 6)
        keys = np.array(sorted({bytes(rng.choice([0, 1, 2, 255]) for _ in range(rng.randint(0, width)))
                                for _ in range(rng.randint(1, 12))}), dtype=f"S{width}")
        keys.sort()
        needle = bytes(rng.choice([0, 1, 2, 255]) for _ in range(rng.randint(0, width + 3)))
        for side in ("left", "right"):
            assert sorted_position(keys, needle, side) == int(np.searchsorted(keys, needle, side=side)), \
                (keys, needle, side)
