"""A client's SELECT over a big relation streams (`frontend.batch_stream`): the relation is read from
its SSTs while DuckDB pulls it, and the result is produced while it is sent, against the same
queries run whole and a Python model of the rows.

One table lives in real SSTs (a level 1 in several files, L0 sub-levels with updates and deletes,
an SST newer than the pinned epoch). The streaming threshold (``rw_batch_stream_min_bytes``) is 0 bytes and batches hold 256 rows,
so a few thousand rows make many batches.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from catalog_session import DB, PUBLIC, FakeMeta

from frontend import batch, batch_stream
from frontend.pgwire.row_stream import RowStream
from frontend.session import Frontend
from risingspark.catalog import RelationCatalog, RelationKind
from risingspark.errors import QueryCanceled, RisingSparkError
from risingspark.storage.desc import HummockVersion, StateTableDesc, SubLevel, TableLevels
from risingspark.storage.object_store import ObjectStore
from risingspark.storage.sst import write_sst, write_ssts
from risingspark.types import INT4, INT8, VARCHAR, Field
from risingspark.vnode import vnode_of

PINNED = 4
FIELDS = (Field("id", INT8), Field("grp", INT4), Field("name", VARCHAR), Field("v", INT4))
DESC = StateTableDesc(3001, FIELDS, (0,), (0,))
ITEMS = RelationCatalog(3001, DB, PUBLIC, "items", RelationKind.TABLE, FIELDS, (0,), (0,), "CREATE TABLE items",
                        state_tables=(DESC,))
ROWS = 6000


def sst_table(changes: dict[int, tuple | None], epoch: int) -> pa.Table:
    """(id -> row or None for a delete) as SST rows of `epoch`, sorted by (vnode, id)."""
    rows = []
    for key, row in changes.items():
        full = row if row is not None else (key, None, None, None)
        rows.append((vnode_of([key], [INT8.to_spark()]), *full, epoch, row is None))
    rows.sort(key=lambda r: (r[0], r[1]))
    cols = list(zip(*rows, strict=True))
    schema = DESC.sst_schema()
    return pa.table([pa.array(c, t) for c, t in zip(cols, schema.types, strict=True)], names=schema.names)


class PinCountingMeta(FakeMeta):
    def __init__(self, version: HummockVersion) -> None:
        super().__init__([ITEMS])
        self.version = version
        self.pins = 0

    def pin_version(self) -> HummockVersion:
        self.pins += 1
        return self.version

    def unpin_version(self, version: HummockVersion) -> None:
        self.pins -= 1


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    store = ObjectStore(str(tmp_path_factory.mktemp("result-stream")))
    rng = random.Random(11)
    model: dict[int, tuple] = {}
    base = {i: (i, rng.randrange(7), f"n{rng.randrange(100)}", rng.randrange(-500, 500)) for i in range(ROWS)}
    model.update(base)
    l1 = write_ssts(store, DESC, sst_table(base, 1), "items-1.parquet", level=1, sub_level=0, file_rows=1500)
    subs = []
    for epoch in range(2, PINNED + 2):
        changes: dict[int, tuple | None] = {}
        for key in rng.sample(range(ROWS + 500), 400):
            changes[key] = None if rng.random() < 0.3 else (key, rng.randrange(7), "upd", rng.randrange(-500, 500))
        sst = write_sst(store, DESC, sst_table(changes, epoch), f"items-{epoch}.parquet", level=0, sub_level=epoch,
                        row_group_size=64)
        subs.append(SubLevel(epoch, (sst,)))
        if epoch <= PINNED:
            for key, row in changes.items():
                if row is None:
                    model.pop(key, None)
                else:
                    model[key] = row
    version = HummockVersion(3, PINNED, {DESC.table_id: TableLevels(DESC.table_id, tuple(subs), (tuple(l1),))})
    meta = PinCountingMeta(version)
    frontend = Frontend(meta, store, cache_bytes=1 << 26, workers=2)
    yield frontend, meta, model
    frontend.close()


@pytest.fixture
def streaming(stored, monkeypatch):
    frontend, meta, model = stored
    monkeypatch.setattr(batch_stream, "BATCH_ROWS", 256)
    reads = Counter()
    batches = frontend.engine.reader.batches

    def counted(*args, **kwargs):
        reads["scans"] += 1
        for b in batches(*args, **kwargs):
            reads["batches"] += 1
            yield b

    monkeypatch.setattr(frontend.engine.reader, "batches", counted)
    return frontend, meta, model, reads


def session(frontend: Frontend, min_bytes: int = 0):
    s = frontend.new_session()
    s.vars.set("rw_batch_stream_min_bytes", str(min_bytes))
    return s


def execute(frontend: Frontend, sql: str, min_bytes: int = 0):
    return asyncio.run(session(frontend, min_bytes).execute(sql, [], []))


def drain(rows) -> list[tuple]:
    if isinstance(rows, RowStream):
        parts = []
        while (part := rows.take(100)) is not None:
            parts.append(part)
        rows = pa.concat_tables(parts)
    return sorted(zip(*(c.to_pylist() for c in rows.columns), strict=True), key=repr)


def whole(frontend: Frontend, sql: str, monkeypatch) -> list[tuple]:
    """The same query read whole: no relation streamed, the result one table."""
    with monkeypatch.context() as m:
        m.setattr(batch_stream, "BATCH_ROWS", 1 << 30)
        result = execute(frontend, sql, min_bytes=1 << 60)
    assert isinstance(result.rows, pa.Table)
    return drain(result.rows)


def test_a_select_of_the_relation_streams_both_ends(streaming):
    frontend, meta, model, reads = streaming
    result = execute(frontend, "SELECT * FROM items")
    assert isinstance(result.rows, RowStream) and result.tag == "SELECT"
    assert [c.name for c in result.columns] == ["id", "grp", "name", "v"]
    assert meta.pins == 1  # (the stream holds the version it reads until it closes)
    assert drain(result.rows) == sorted(model.values(), key=repr)
    assert result.rows.closed and meta.pins == 0
    assert reads["scans"] == 1 and reads["batches"] > len(model) // 256 // 2


def test_a_stream_reads_its_relation_as_it_is_taken(streaming, monkeypatch):
    frontend, meta, model, reads = streaming
    # (a small table: let DuckDB run ahead of the client by a few rows only, not a megabyte)
    monkeypatch.setattr(batch_stream, "STREAM_BUFFER", "1KB")
    result = execute(frontend, "SELECT id, v FROM items WHERE v > -400")
    assert isinstance(result.rows, RowStream)
    first = result.rows.take(10)
    assert first is not None and first.num_rows == 10
    # rows come from storage as they are taken: far from every batch is read for the first ten
    assert 0 < reads["batches"] < len(model) // 256 // 2, reads
    result.rows.close()
    assert meta.pins == 0


@pytest.mark.parametrize("sql, streamed", [
    ("SELECT grp, count(*), sum(v), min(name) FROM items GROUP BY grp", True),
    ("SELECT * FROM items WHERE id % 7 = 3 ORDER BY v DESC, id LIMIT 500", True),
    ("SELECT count(DISTINCT name), count(DISTINCT grp), sum(v) FROM items", True),
    ("SELECT a.id, b.v FROM items a JOIN items b ON a.id = b.id + 1 WHERE a.grp = 2", False),
    ("WITH c AS (SELECT * FROM items) SELECT x.grp, count(*) FROM c x JOIN c y ON x.id = y.id GROUP BY x.grp",
     False),
    ("SELECT id FROM items WHERE v > (SELECT avg(v) FROM items)", False),
    ("SELECT grp, name FROM items UNION SELECT grp + 10, name FROM items", False),
])
def test_queries_stream_only_what_they_scan_once_and_agree_with_reading_whole(streaming, monkeypatch, sql, streamed):
    frontend, meta, model, reads = streaming
    want = whole(frontend, sql, monkeypatch)
    reads.clear()
    result = execute(frontend, sql)
    assert drain(result.rows) == want
    assert (reads["scans"] > 0) is streamed
    assert meta.pins == 0


def test_the_model_agrees_with_an_aggregate_over_a_streamed_relation(streaming):
    frontend, _, model, reads = streaming
    result = execute(frontend, "SELECT grp, count(*) AS n, sum(v) AS s FROM items GROUP BY grp")
    assert isinstance(result.rows, pa.Table) and reads["scans"] == 1  # (few groups: a table)
    want: dict[int, list[int]] = {}
    for _, grp, _, v in model.values():
        want.setdefault(grp, [0, 0])
        want[grp][0] += 1
        want[grp][1] += v
    assert {r[0]: [r[1], int(r[2])] for r in drain(result.rows)} == want


def test_a_cancel_stops_a_stream_and_lets_its_version_go(streaming):
    frontend, meta, _, _ = streaming
    s = session(frontend)
    result = asyncio.run(s.execute("SELECT * FROM items", [], []))
    assert isinstance(result.rows, RowStream) and result.rows.take(5) is not None
    s.cancel()
    with pytest.raises(QueryCanceled):
        while result.rows.take(256) is not None:
            pass
    assert result.rows.closed and meta.pins == 0


def test_a_small_relation_is_read_whole(stored, monkeypatch):
    frontend, meta, model = stored
    monkeypatch.setattr(batch_stream, "BATCH_ROWS", 256)
    calls = []
    monkeypatch.setattr(frontend.engine.reader, "batches", lambda *a, **kw: calls.append(1) or iter(()))
    result = asyncio.run(frontend.new_session().execute("SELECT id FROM items", [], []))  # (default: 64 MB)
    assert calls == [] and isinstance(result.rows, RowStream)  # (the result still streams)
    assert np.array_equal(np.sort(np.array([r[0] for r in drain(result.rows)])), np.sort(np.array(list(model))))
    assert meta.pins == 0


def test_an_error_while_rows_are_sent_has_its_sqlstate(streaming, monkeypatch):
    frontend, meta, _, _ = streaming
    # (the bad rows come after the first batch, and DuckDB runs ahead of the client by little: it
    # reports them through the Arrow stream)
    monkeypatch.setattr(batch_stream, "STREAM_BUFFER", "1KB")
    result = execute(frontend, "SELECT CAST(CASE WHEN id > 5500 THEN 'abc' ELSE '1' END AS INT) AS x "
                               "FROM (SELECT id FROM items ORDER BY id) AS t")
    assert isinstance(result.rows, RowStream)
    with pytest.raises(RisingSparkError) as e:
        while result.rows.take(100) is not None:
            pass
    assert e.value.sqlstate == "22P02" and 'invalid input syntax for type integer: "abc"' in e.value.message
    assert result.rows.closed and meta.pins == 0


def test_a_cancel_after_duckdb_was_interrupted_is_a_cancel(streaming):
    frontend, meta, _, _ = streaming
    s = session(frontend)
    result = asyncio.run(s.execute("SELECT * FROM items", [], []))
    assert isinstance(result.rows, RowStream)
    s.cancel()
    time.sleep(0.2)  # (the cancel watcher interrupts DuckDB within 50 ms)
    with pytest.raises(QueryCanceled):
        while result.rows.take(256) is not None:
            pass
    assert result.rows.closed and meta.pins == 0


def test_a_streamed_result_keeps_its_order(streaming):
    frontend, _, model, _ = streaming
    result = execute(frontend, "SELECT id, v FROM items ORDER BY v DESC, id")
    assert isinstance(result.rows, RowStream)
    got = []
    while (part := result.rows.take(1000)) is not None:
        got.extend(zip(part.column("id").to_pylist(), part.column("v").to_pylist(), strict=True))
    assert got == sorted(((r[0], r[3]) for r in model.values()), key=lambda r: (-r[1], r[0]))


def test_a_later_statement_cancelled_leaves_an_open_stream_alone(streaming):
    frontend, meta, model, _ = streaming
    s = session(frontend)
    first = asyncio.run(s.execute("SELECT * FROM items", [], []))  # (a portal's rows, left for later)
    assert isinstance(first.rows, RowStream)
    taken = first.rows.take(10)
    second = asyncio.run(s.execute("SELECT * FROM items WHERE v > 0", [], []))
    assert isinstance(second.rows, RowStream)
    s.cancel()  # (the running statement is the second)
    time.sleep(0.2)
    with pytest.raises(QueryCanceled):
        while second.rows.take(256) is not None:
            pass
    rest = drain(first.rows)
    assert taken is not None and sorted(drain(taken) + rest, key=repr) == sorted(model.values(), key=repr)
    assert first.rows.closed and meta.pins == 0


def test_a_query_duckdb_scans_twice_runs_again_with_tables(streaming, monkeypatch):
    # (no query found makes DuckDB 2.0 scan a relation named once twice; were one to, DuckDB fails
    # it, "already been consumed", and it runs again without streamed inputs)
    frontend, meta, model, reads = streaming
    engine = frontend.engine
    run, calls = engine._run, []

    def consumed_once(*args, stream_inputs=True, **kwargs):
        calls.append(stream_inputs)
        if stream_inputs:
            run(*args, stream_inputs=stream_inputs, **kwargs).close()  # (it streamed: the scan happened)
            raise batch._ConsumedTwice()
        return run(*args, stream_inputs=stream_inputs, **kwargs)

    monkeypatch.setattr(engine, "_run", consumed_once)
    result = execute(frontend, "SELECT * FROM items")
    assert calls == [True, False] and reads["scans"] == 1  # (the second run read the relation whole)
    assert drain(result.rows) == sorted(model.values(), key=repr) and meta.pins == 0
