"""StateTableReader: read, lookup and the backfill snapshot scan, against a Python model of MVCC."""

from __future__ import annotations

import random
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from risingspark.errors import InvalidParameterValue
from risingspark.storage.cache import BlockCache
from risingspark.storage.desc import StateTableDesc
from risingspark.storage.mvcc import merge_versions
from risingspark.storage.object_store import ObjectStore
from risingspark.storage.reader import StateTableReader, read_schema, slice_vnodes
from risingspark.storage.sst import read_sst, write_sst
from risingspark.types import INT8, VARCHAR, DataType, Field

DESC = StateTableDesc(5, (Field("k1", INT8), Field("v", INT8), Field("k2", VARCHAR)), pk=(0, 2))
NUM = DataType.parse("numeric(12,2)")
SST_COLS = ["_vnode", "k1", "v", "k2", "_epoch", "_tombstone"]


def sst_rows(rows: list[tuple]) -> pa.Table:
    """Rows as (vnode, k1, v, k2, epoch, tombstone) tuples."""
    cols = list(zip(*rows, strict=True)) if rows else [[]] * 6
    return pa.table([pa.array(c, t) for c, t in zip(cols, DESC.sst_schema().types, strict=True)],
                    names=SST_COLS)


class History:
    """A random history of writes to DESC stored as L0 sub-levels and L1 SSTs, and its model."""

    def __init__(self, store: ObjectStore, seed: int, *, epochs: int = 12, keys: int = 300,
                 vnodes: int = 16, block_rows: int = 64) -> None:
        rng = random.Random(seed)
        self.versions: list[tuple] = []  # every version written: (vnode, k1, v, k2, epoch, tomb)
        key_space = [(rng.randrange(vnodes), rng.randrange(50), rng.choice("abcdefg") * rng.randrange(1, 4))
                     for _ in range(keys)]
        key_space = sorted(set(key_space))
        self.ssts = []
        self.epochs = list(range(10, 10 + 10 * epochs, 10))
        pending: list[tuple] = []
        for i, epoch in enumerate(self.epochs):
            for vn, k1, k2 in rng.sample(key_space, rng.randrange(1, len(key_space) // 2)):
                tomb = rng.random() < 0.25
                self.versions.append((vn, k1, None if tomb else rng.randrange(1000), k2, epoch, tomb))
                pending.append(self.versions[-1])
            # Some files hold two epochs (several versions of a key in one SST); some sub-levels
            # are split in two files by vnode.
            if rng.random() < 0.4 and i + 1 < len(self.epochs):
                continue
            level = 1 if i < 3 else 0
            split = rng.randrange(vnodes)
            parts = [[r for r in pending if r[0] < split], [r for r in pending if r[0] >= split]]
            if level == 1:  # an old, already-compacted run: newest version per key only
                parts = [[r for r in merged_model(pending, None, keep_tombstones=False)]]
            for j, part in enumerate(parts):
                if part:
                    self.ssts.append(write_sst(store, DESC, sst_rows(part), f"h/5/{epoch}-{j}.parquet",
                                               level=level, sub_level=epoch if level == 0 else 0,
                                               row_group_size=block_rows))
            if level == 1:
                self.versions = [r for r in self.versions if r not in pending] + parts[0]
            pending = []


def merged_model(versions: list[tuple], epoch: int | None, *, keep_tombstones: bool = False) -> list[tuple]:
    newest: dict[tuple, tuple] = {}
    for r in versions:
        if epoch is not None and r[4] > epoch:
            continue
        key = (r[0], r[1], r[3])
        if key not in newest or newest[key][4] < r[4]:
            newest[key] = r
    return [newest[k] for k in sorted(newest) if keep_tombstones or not newest[k][5]]


def live(rows: list[tuple]) -> list[tuple]:
    """Model rows in the read shape (_vnode, k1, v, k2)."""
    return [r[:4] for r in rows]


def as_tuples(table: pa.Table) -> list[tuple]:
    return list(zip(*(table.column(n).to_pylist() for n in table.column_names), strict=True))


@pytest.fixture
def store(tmp_path) -> ObjectStore:
    return ObjectStore(str(tmp_path))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_read_matches_model_at_every_epoch(store, seed):
    h = History(store, seed)
    reader = StateTableReader(store, BlockCache(1 << 30))
    for epoch in [5, *h.epochs, None]:
        got = reader.read(DESC, h.ssts, epoch)
        assert got.schema.names == ["_vnode", "k1", "v", "k2"]
        assert as_tuples(got) == live(merged_model(h.versions, epoch))
    vnodes = {1, 2, 7, 15}
    got = reader.read(DESC, h.ssts, h.epochs[-1], vnodes=vnodes)
    assert as_tuples(got) == [r for r in live(merged_model(h.versions, None)) if r[0] in vnodes]


def test_read_skips_files_by_vnode_and_epoch(store):
    a = write_sst(store, DESC, sst_rows([(1, 1, 1, "a", 10, False)]), "a.parquet", level=0, sub_level=10)
    b = write_sst(store, DESC, sst_rows([(9, 1, 1, "a", 20, False)]), "b.parquet", level=0, sub_level=20)
    store.delete(["b.parquet"])  # reading b would fail: it must be skipped
    reader = StateTableReader(store)
    assert as_tuples(reader.read(DESC, [a, b], 30, vnodes=[0, 1, 2])) == [(1, 1, 1, "a")]
    assert as_tuples(reader.read(DESC, [a, b], 15)) == [(1, 1, 1, "a")]
    with pytest.raises(FileNotFoundError):
        reader.read(DESC, [a, b], 30)


def test_slice_vnodes():
    t = sst_rows([(v, i, 0, "x", 1, False) for i, v in enumerate([0, 0, 2, 3, 3, 5])])
    assert slice_vnodes(t, np.array([0, 2, 3, 5])) is t
    assert slice_vnodes(t, np.array([3])).column("k1").to_pylist() == [3, 4]
    assert slice_vnodes(t, np.array([0, 1, 5, 9])).column("k1").to_pylist() == [0, 1, 5]
    assert slice_vnodes(t, np.array([4])).num_rows == 0


@pytest.mark.parametrize("seed", [4, 5])
def test_lookup(store, seed):
    h = History(store, seed)
    reader = StateTableReader(store)
    rng = random.Random(seed)
    everything = merged_model(h.versions, None, keep_tombstones=True)
    probe = rng.sample(everything, 40) + [(3, 999, None, "zz", 0, False)]
    keys = pa.table({"_vnode": pa.array([r[0] for r in probe], pa.int16()), "k2": [r[3] for r in probe],
                     "k1": [r[1] for r in probe]})
    for epoch in (h.epochs[2], h.epochs[-1]):
        want = {(r[0], r[1], r[3]) for r in probe}
        expected = [r for r in live(merged_model(h.versions, epoch)) if (r[0], r[1], r[3]) in want]
        assert as_tuples(reader.lookup(DESC, h.ssts, epoch, keys)) == expected
    empty = reader.lookup(DESC, h.ssts, None, keys.slice(0, 0))
    assert empty.num_rows == 0 and empty.schema.equals(read_schema(DESC))


def test_lookup_null_and_decimal_keys(store):
    desc = StateTableDesc(6, (Field("g", VARCHAR), Field("d", NUM), Field("n", INT8)), pk=(0, 1))
    rows = pa.table({"_vnode": pa.array([0, 0, 0, 1], pa.int16()), "g": ["a", None, None, "a"],
                     "d": pa.array([Decimal("1.50"), Decimal("1.50"), None, Decimal("2")], NUM.to_arrow()),
                     "n": [1, 2, 3, 4], "_epoch": [1, 1, 1, 1], "_tombstone": [False] * 4})
    sst = write_sst(store, desc, rows, "t.parquet", level=0, sub_level=1)
    keys = pa.table({"_vnode": pa.array([0, 0, 1], pa.int16()), "g": [None, None, "b"],
                     "d": pa.array([Decimal("1.5"), None, Decimal("2")], NUM.to_arrow())})
    got = StateTableReader(store).lookup(desc, [sst], 1, keys)
    assert got.column("n").to_pylist() == [2, 3]


def test_lookup_many_keys(store):
    n = 200_000
    rng = np.random.default_rng(0)
    k1 = np.arange(n)
    vn = np.sort(rng.integers(0, 256, n)).astype(np.int16)
    rows = pa.table({"_vnode": vn, "k1": k1, "v": k1, "k2": pa.array(["x"] * n),
                     "_epoch": np.full(n, 1), "_tombstone": np.zeros(n, bool)})
    sst = write_sst(store, DESC, rows, "big.parquet", level=1, sub_level=0)
    pick = rng.choice(n, 100_000, replace=False)
    keys = pa.table({"_vnode": vn[pick], "k1": k1[pick], "k2": pa.array(["x"] * len(pick))})
    got = StateTableReader(store).lookup(DESC, [sst], 1, keys)
    assert sorted(got.column("k1").to_pylist()) == sorted(k1[pick].tolist())


def scan_all(reader: StateTableReader, ssts, epoch, vnodes, limit, desc=DESC):
    """Scan from scratch until every vnode is finished, checking progress; returns all rows and calls."""
    positions: dict[int, tuple | None] = dict.fromkeys(vnodes)
    parts, calls = [], 0
    while positions:
        res = reader.scan_after(desc, ssts, epoch, positions, limit)
        calls += 1
        assert calls < 10_000
        rows = as_tuples(res.rows)
        for v, old in positions.items():
            mine = [r for r in rows if r[0] == v]
            assert res.rows_per_vnode[v] == len(mine)
            if v in res.finished:
                continue
            new = res.positions[v]  # an unfinished vnode always advances
            assert old is None or new > old
            assert all(old is None or (r[1], r[3]) > old for r in mine)
            assert all((r[1], r[3]) <= new for r in mine)
        assert set(res.positions) <= set(positions)
        parts.extend(rows)
        positions = {v: res.positions.get(v, p) for v, p in positions.items() if v not in res.finished}
    return parts, calls


@pytest.mark.parametrize("seed", range(6))
def test_scan_after_reads_every_live_row_once(store, seed):
    # blocks of 1..64 rows: a vnode's scan stops short of its rows at the end of the blocks it read
    h = History(store, seed, keys=400, block_rows=[1, 2, 3, 5, 64, 64][seed])
    reader = StateTableReader(store, BlockCache(1 << 30))
    rng = random.Random(seed)
    epoch = rng.choice([h.epochs[len(h.epochs) // 2], h.epochs[-1]])
    limit = rng.choice([1, 2, 3, 7])
    rows, calls = scan_all(reader, h.ssts, epoch, range(20), limit)
    # each live row exactly once (vnodes 16..19 hold no data and finish at once)
    assert sorted(rows, key=lambda r: (r[0], r[1], r[3])) == live(merged_model(h.versions, epoch))
    assert calls > 3


def test_scan_after_edge_cases(store):
    sst = write_sst(store, DESC, sst_rows([(1, 1, 1, "a", 10, False), (1, 2, None, "a", 10, True),
                                           (1, 3, 3, "a", 10, False)]), "a.parquet", level=0, sub_level=10)
    reader = StateTableReader(store)
    res = reader.scan_after(DESC, [sst], 10, {0: None, 1: (3, "a"), 2: (1, "z")}, 5)
    assert res.finished == {0, 1, 2} and res.positions == {} and res.rows.num_rows == 0
    res = reader.scan_after(DESC, [sst], 10, {1: (1, "a")}, 1)
    assert res.rows.num_rows == 0 and res.positions == {1: (2, "a")} and res.finished == set()
    res = reader.scan_after(DESC, [sst], 10, {1: (2, "a")}, 1)
    assert as_tuples(res.rows) == [(1, 3, 3, "a")] and res.finished == {1}
    assert res.positions == {1: (3, "a")}
    assert reader.scan_after(DESC, [sst], 10, {}, 3).rows.num_rows == 0
    with pytest.raises(InvalidParameterValue):
        reader.scan_after(DESC, [sst], 10, {1: None}, 0)


def test_scan_after_respects_epoch_and_versions_in_one_file(store):
    # key (1,'a') has versions at 30 (tombstone), 20 and 10 in one file; newer versions are invisible
    sst = write_sst(store, DESC, sst_rows([(0, 1, None, "a", 30, True), (0, 1, 20, "a", 20, False),
                                           (0, 1, 10, "a", 10, False), (0, 2, 99, "a", 40, False),
                                           (0, 3, 5, "a", 5, False)]), "a.parquet", level=0, sub_level=40)
    reader = StateTableReader(store)
    for limit in (1, 2, 10):
        assert scan_all(reader, [sst], 25, [0], limit)[0] == [(0, 1, 20, "a"), (0, 3, 5, "a")]
        assert scan_all(reader, [sst], 40, [0], limit)[0] == [(0, 2, 99, "a"), (0, 3, 5, "a")]
        assert scan_all(reader, [sst], 15, [0], limit)[0] == [(0, 1, 10, "a"), (0, 3, 5, "a")]


def test_scan_after_covers_a_million_rows_once(store):
    n = 1_000_000
    rng = np.random.default_rng(1)
    ssts = []
    for f in range(4):  # four overlapping files, every vnode in each
        m = n // 4
        vn = np.sort(rng.integers(0, 256, m)).astype(np.int16)
        k1 = rng.integers(0, 10**9, m)
        t = pa.table({"_vnode": vn, "k1": k1, "v": k1, "k2": pa.array(["k"] * m),
                      "_epoch": np.full(m, 10 + f), "_tombstone": rng.random(m) < 0.05})
        ssts.append(write_sst(store, DESC, t, f"m{f}.parquet", level=0, sub_level=10 + f))
    reader = StateTableReader(store, BlockCache(1 << 31))
    rows, calls = scan_all_fast(reader, ssts, 100, range(256), 400)
    expected = merge_versions([read_sst(store, s.path, DESC) for s in ssts], DESC, 100)
    assert rows == expected.num_rows
    assert calls > 1


def scan_all_fast(reader, ssts, epoch, vnodes, limit):
    positions: dict[int, tuple | None] = dict.fromkeys(vnodes)
    total, calls = 0, 0
    while positions:
        res = reader.scan_after(DESC, ssts, epoch, positions, limit)
        total += res.rows.num_rows
        calls += 1
        positions = {v: res.positions.get(v, p) for v, p in positions.items() if v not in res.finished}
    return total, calls


def test_singleton_table_without_pk(store):
    desc = StateTableDesc(7, (Field("total", INT8),), pk=())

    def mk(total: int, epoch: int) -> pa.Table:
        return pa.table({"_vnode": pa.array([0], pa.int16()), "total": [total], "_epoch": [epoch],
                         "_tombstone": [False]})

    a = write_sst(store, desc, mk(5, 10), "a.parquet", level=0, sub_level=10)
    b = write_sst(store, desc, mk(8, 20), "b.parquet", level=0, sub_level=20)
    reader = StateTableReader(store)
    assert reader.read(desc, [a, b], 15).column("total").to_pylist() == [5]
    assert reader.read(desc, [a, b], 20).column("total").to_pylist() == [8]
    keys = pa.table({"_vnode": pa.array([0], pa.int16())})
    assert reader.lookup(desc, [a, b], 25, keys).column("total").to_pylist() == [8]
    res = reader.scan_after(desc, [a, b], 25, {0: None}, 1)
    assert res.rows.column("total").to_pylist() == [8] and res.positions == {0: ()} and res.finished == {0}
    res = reader.scan_after(desc, [a, b], 25, {0: ()}, 1)
    assert res.rows.num_rows == 0 and res.finished == {0}


def test_scan_after_reads_the_blocks_it_needs(store):
    """A step of a backfill scan of a big SST costs its rows, not the file: a few blocks per vnode."""
    n = 200_000
    vn = (np.arange(n) * 4 // n).astype(np.int16)  # 4 vnodes, 50K rows each
    rows = pa.table({"_vnode": vn, "k1": np.arange(n), "v": np.arange(n), "k2": pa.array(["x"] * n),
                     "_epoch": np.full(n, 1), "_tombstone": np.zeros(n, bool)})
    sst = write_sst(store, DESC, rows, "big.parquet", level=1, sub_level=0, row_group_size=1000)
    cache = BlockCache(1 << 30)
    reader = StateTableReader(store, cache)
    res = reader.scan_after(DESC, [sst], 1, {0: None, 1: (60_000, "x"), 2: (149_999, "x"), 3: None}, 5)
    assert res.positions == {0: (4, "x"), 1: (60_005, "x"), 3: (150_004, "x")}
    assert res.finished == {2}  # its position was its last row
    assert cache.stats().misses <= 4 * 2  # of the file's 200 blocks


@pytest.mark.parametrize("seed", range(5))
def test_batches_read_every_live_row_once_a_bounded_batch_at_a_time(store, seed):
    # (the read a client's SELECT of a big relation streams: `frontend.batch_stream`)
    h = History(store, seed, keys=400, block_rows=[1, 3, 8, 64, 64][seed])
    reader = StateTableReader(store, BlockCache(1 << 30))
    rng = random.Random(seed)
    epoch = rng.choice([h.epochs[len(h.epochs) // 2], h.epochs[-1], None])
    per_batch = rng.choice([1, 5, 20, 1000])
    batches = list(reader.batches(DESC, h.ssts, epoch, rows_per_batch=per_batch))
    assert all(b.schema == read_schema(DESC) for b in batches)
    rows = [r for b in batches for r in as_tuples(b)]
    assert sorted(rows, key=lambda r: (r[0], r[1], r[3])) == live(merged_model(h.versions, epoch))
    # a batch is at most a batch from each SST (the versions an SST holds past the others' bounds
    # are left for the next read)
    assert max(b.num_rows for b in batches) <= per_batch * len(h.ssts)
    if per_batch < 20:
        assert len(batches) > len(rows) // (per_batch * len(h.ssts))
        assert max(b.num_rows for b in batches) < len(rows)


def test_batches_of_nothing(store):
    reader = StateTableReader(store, BlockCache(1 << 20))
    assert list(reader.batches(DESC, [], None)) == []
    sst = write_sst(store, DESC, sst_rows([(1, 1, None, "a", 10, True)]), "t.parquet", level=0, sub_level=10)
    assert list(reader.batches(DESC, [sst], None)) == []  # (only a tombstone: no batch at all)
    assert list(reader.batches(DESC, [sst], 5)) == []  # (nothing visible at the epoch)


def test_batches_through_a_cache_of_their_own(store):
    h = History(store, 7, keys=400, block_rows=8)
    cache = BlockCache(1 << 30)
    reader = StateTableReader(store, cache)
    want = live(merged_model(h.versions, None))
    rows = [r for b in reader.batches(DESC, h.ssts, None, rows_per_batch=50, private_cache_bytes=1 << 20)
            for r in as_tuples(b)]
    assert sorted(rows, key=lambda r: (r[0], r[1], r[3])) == want
    assert len(cache) == 0  # (a scan of a whole relation keeps nothing of it in the reader's cache)
    list(reader.batches(DESC, h.ssts, None, rows_per_batch=50))
    assert len(cache) > 0  # (by default it does, as every read)
    cached = len(cache)
    rows = [r for b in reader.batches(DESC, h.ssts, None, rows_per_batch=50, private_cache_bytes=0)
            for r in as_tuples(b)]
    assert sorted(rows, key=lambda r: (r[0], r[1], r[3])) == want and len(cache) == cached
