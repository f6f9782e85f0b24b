"""The per-epoch change log files."""

from __future__ import annotations

import pyarrow as pa
import pytest

from risingspark.chunk import Op
from risingspark.errors import InternalError
from risingspark.storage.cache import BlockCache
from risingspark.storage.changelog import changelog_schema, read_changelog, write_changelog
from risingspark.storage.desc import StateTableDesc
from risingspark.storage.object_store import ObjectStore
from risingspark.types import INT8, VARCHAR, Field

DESC = StateTableDesc(21, (Field("id", INT8), Field("name", VARCHAR)), pk=(0,))


def chunk(ops: list[Op], ids: list[int], names: list[str | None]) -> pa.Table:
    # columns out of order and ops as plain ints: the writer conforms them
    return pa.table({"name": names, "_vnode": pa.array([i % 4 for i in ids], pa.int32()), "id": ids,
                     "_op": pa.array([int(o) for o in ops], pa.int64())})


def test_schema():
    s = changelog_schema(DESC)
    assert s.names == ["_op", "_vnode", "id", "name"]
    assert (s.field("_op").type, s.field("_vnode").type) == (pa.int8(), pa.int16())
    assert not s.field("_op").nullable and not s.field("_vnode").nullable


def test_round_trip_keeps_stream_order_across_epochs(tmp_path):
    store = ObjectStore(str(tmp_path))
    e1 = chunk([Op.INSERT, Op.INSERT, Op.UPDATE_DELETE, Op.UPDATE_INSERT], [5, 1, 5, 5], ["a", "b", "a", "A"])
    e2 = chunk([Op.DELETE], [1], [None])
    assert write_changelog(store, DESC, e1, "log/21/20.parquet") == 4
    assert write_changelog(store, DESC, e2, "log/21/30.parquet") == 1
    got = read_changelog(store, DESC, ["log/21/20.parquet", "log/21/30.parquet"])
    assert got.schema.equals(changelog_schema(DESC))
    assert got.column("_op").to_pylist() == [1, 1, 3, 4, 2]
    assert got.column("id").to_pylist() == [5, 1, 5, 5, 1]
    assert got.column("name").to_pylist() == ["a", "b", "a", "A", None]
    assert got.column("_vnode").to_pylist() == [1, 1, 1, 1, 1]
    cache = BlockCache(1 << 20)
    assert read_changelog(store, DESC, ["log/21/30.parquet"], cache=cache).num_rows == 1
    assert read_changelog(store, DESC, ["log/21/30.parquet"], cache=cache).num_rows == 1
    assert cache.stats().hits == 1
    assert read_changelog(store, DESC, []).num_rows == 0


def test_rejects_chunks_that_do_not_fit(tmp_path):
    store = ObjectStore(str(tmp_path))
    with pytest.raises(InternalError, match="_op"):
        write_changelog(store, DESC, chunk([Op.INSERT], [1], ["a"]).drop_columns(["_op"]), "x.parquet")
    with pytest.raises(InternalError):
        write_changelog(store, DESC, chunk([Op.INSERT], [1], ["a"]).set_column(
            3, "_op", pa.array([1000], pa.int64())), "x.parquet")
    assert not store.exists("x.parquet")
