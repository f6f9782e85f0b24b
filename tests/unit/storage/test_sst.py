"""Writing and reading SSTs."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from risingspark.errors import InternalError
from risingspark.storage.cache import BlockCache
from risingspark.storage.desc import StateTableDesc
from risingspark.storage.object_store import ObjectStore
from risingspark.storage.sst import read_sst, sort_sst_rows, write_sst, write_ssts
from risingspark.types import INT4, VARCHAR, DataType, Field

NUM = DataType.parse("numeric(8,2)")
# storage order (v, id, price); pk = (id, v)
DESC = StateTableDesc(12, (Field("v", VARCHAR), Field("id", INT4), Field("price", NUM)), pk=(1, 0))


def raw_rows() -> pa.Table:
    """Unsorted rows with columns in another order and wider types than the SST schema."""
    return pa.table({
        "_tombstone": [False, True, False, False, False],
        "id": pa.array([2, 1, 1, 1, 3], pa.int64()),
        "price": [Decimal("1.5"), None, Decimal("2"), Decimal("3"), Decimal("4")],
        "_epoch": [7, 9, 7, 8, 3],
        "v": ["x", "a", "a", "a", "q"],
        "_vnode": pa.array([4, 4, 4, 4, 0], pa.int32()),
    })


@pytest.fixture
def store(tmp_path) -> ObjectStore:
    return ObjectStore(str(tmp_path))


def test_sort_sst_rows_orders_by_vnode_pk_and_newest_epoch_first():
    t = sort_sst_rows(DESC, raw_rows())
    assert t.schema.equals(DESC.sst_schema())
    assert t.schema.names == ["_vnode", "v", "id", "price", "_epoch", "_tombstone"]
    assert list(zip(t.column("_vnode").to_pylist(), t.column("id").to_pylist(), t.column("v").to_pylist(),
                    t.column("_epoch").to_pylist(), strict=True)) == [
        (0, 3, "q", 3), (4, 1, "a", 9), (4, 1, "a", 8), (4, 1, "a", 7), (4, 2, "x", 7)]


def test_sort_sst_rows_rejects_missing_columns_and_unsafe_casts():
    with pytest.raises(InternalError, match="_tombstone"):
        sort_sst_rows(DESC, raw_rows().drop_columns(["_tombstone"]))
    too_big = raw_rows().set_column(1, "id", pa.array([2**40] * 5, pa.int64()))
    with pytest.raises(InternalError):
        sort_sst_rows(DESC, too_big)


def test_write_and_read_sst(store):
    info = write_sst(store, DESC, raw_rows(), "hummock/12/a.parquet", level=0, sub_level=9)
    assert (info.path, info.table_id, info.level, info.sub_level, info.sst_id) == ("hummock/12/a.parquet", 12,
                                                                                  0, 9, 0)
    assert (info.min_vnode, info.max_vnode, info.min_epoch, info.max_epoch) == (0, 4, 3, 9)
    assert (info.row_count, info.tombstone_count) == (5, 1)
    assert info.size_bytes == store.list("hummock/12")[0].size > 0
    back = read_sst(store, info.path, DESC)
    assert back.schema.equals(DESC.sst_schema())
    assert back.equals(sort_sst_rows(DESC, raw_rows()))
    meta = store.parquet_metadata(info.path)
    assert [c.column_index for c in meta.row_group(0).sorting_columns] == [0, 2, 1, 4]


def test_write_ssts_cuts_between_keys_into_disjoint_files(store):
    rows = raw_rows()  # keys in order: (0, 3, q), (4, 1, a) x3 versions, (4, 2, x)
    infos = write_ssts(store, DESC, rows, "hummock/12/e.parquet", level=0, sub_level=9, file_rows=2)
    # a cut after 2 rows would split the three versions of (4, 1, a): it waits for the next key
    assert [i.row_count for i in infos] == [4, 1]
    assert [i.path for i in infos] == ["hummock/12/e-0.parquet", "hummock/12/e-1.parquet"]
    assert infos[0].max_key < infos[1].min_key
    back = pa.concat_tables([read_sst(store, i.path, DESC) for i in infos])
    assert back.equals(sort_sst_rows(DESC, rows))
    (one,) = write_ssts(store, DESC, rows, "hummock/12/f.parquet", level=0, sub_level=9)
    assert one.path == "hummock/12/f.parquet" and one.row_count == 5
    assert write_ssts(store, DESC, rows.slice(0, 0), "hummock/12/g.parquet", level=0, sub_level=9) == []


def test_presorted_rows_are_written_as_given(store):
    rows = sort_sst_rows(DESC, raw_rows())
    info = write_sst(store, DESC, rows, "b.parquet", level=1, sub_level=0, presorted=True)
    assert read_sst(store, info.path, DESC).equals(rows)
    with pytest.raises(InternalError):
        write_sst(store, DESC, rows.slice(0, 0), "c.parquet", level=0, sub_level=1)
    assert not store.exists("c.parquet")


def test_read_through_cache_and_row_group_pruning(store):
    n = 1000
    rows = pa.table({"_vnode": pa.array([i // 100 for i in range(n)], pa.int16()), "v": ["s"] * n,
                     "id": list(range(n)), "price": pa.array([None] * n, NUM.to_arrow()),
                     "_epoch": [1] * n, "_tombstone": [False] * n})
    info = write_sst(store, DESC, rows, "big.parquet", level=0, sub_level=1, row_group_size=100)
    assert pq.ParquetFile(str(store.full_path(info.path))).metadata.num_row_groups == 10
    pruned = read_sst(store, info.path, DESC, vnodes=[3, 7])
    assert sorted(set(pruned.column("_vnode").to_pylist())) == [3, 7]
    cache = BlockCache(1 << 30)
    a = read_sst(store, info.path, DESC, cache=cache, vnodes=[3])
    b = read_sst(store, info.path, DESC, cache=cache)
    assert a is b and a.num_rows == n
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.entries) == (1, 1, 1)
