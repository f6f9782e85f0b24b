"""Key queries (`frontend.key_query`) against the full path on random data, and the plan cache
(`frontend.plan_cache`) that keeps them.

Three relations live in real SSTs (several L0 sub-levels over a level 1, versions and tombstones, an
SST newer than the pinned epoch): a table keyed by one BIGINT, one keyed by (INT, VARCHAR) and
distributed by its first column, and one keyed by (VARCHAR, INT) and distributed by its second (a
prefix lookup by the first must try every vnode). Every statement runs through the session (plan
cache, key lookup) and through the full path (DuckDB over the merged relation); both answer the same
rows, names and types, and a Python model of the rows agrees.
"""

from __future__ import annotations

import asyncio
import random
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pyarrow as pa
import pytest
import sqlglot
from catalog_session import DB, OTHER, PUBLIC, FakeMeta

from frontend.metrics import KEY_QUERIES
from frontend.parser import DIALECT
from frontend.pgwire.datarows import encode_rows
from frontend.plan_cache import ConstantPlan, FullPlan, KeyPlan, PlanCache, PlanKey
from frontend.session import Frontend, columns_of, substitute_params
from meta.catalog import CatalogSnapshot
from risingspark.catalog import RelationCatalog, RelationKind
from risingspark.errors import ProtocolViolation, UndefinedColumn
from risingspark.storage.desc import HummockVersion, StateTableDesc, SubLevel, TableLevels
from risingspark.storage.object_store import ObjectStore
from risingspark.storage.point_get import WouldRead
from risingspark.storage.sst import write_sst
from risingspark.types import INT4, INT8, VARCHAR, Field
from risingspark.vnode import vnode_of

PINNED = 5  # the version's committed epoch; epoch 6's SST holds versions the queries must not see


def table(rel_id: int, name: str, fields: tuple[Field, ...], pk: tuple[int, ...], dist: tuple[int, ...],
          schema_id: int = PUBLIC) -> RelationCatalog:
    desc = StateTableDesc(rel_id, fields, pk, dist)
    return RelationCatalog(rel_id, DB, schema_id, name, RelationKind.TABLE, fields, pk, dist, f"CREATE TABLE {name}",
                           state_tables=(desc,))


ACCOUNTS = table(2001, "accounts", (Field("id", INT8), Field("name", VARCHAR), Field("balance", INT4)), (0,), (0,))
LINES = table(2002, "lines", (Field("k", INT4), Field("name", VARCHAR), Field("v", INT4)), (0, 1), (0,))
TAGS = table(2003, "tags", (Field("name", VARCHAR), Field("n", INT4), Field("v", INT4)), (0, 1), (1,))
SHADOW = table(2004, "accounts", (Field("id", INT8), Field("note", VARCHAR)), (0,), (0,), schema_id=OTHER)
# CREATE INDEX by_v ON lines (v): keyed by (v, k, name), distributed by v
BY_V = replace(table(2005, "by_v", (Field("v", INT4), Field("k", INT4), Field("name", VARCHAR)), (0, 1, 2), (0,)),
               kind=RelationKind.INDEX, dependencies=(LINES.id,))
NAMES = ["ann", "bob", "cy", "dé", "e'e", ""]


def random_key(rel: RelationCatalog, rng: random.Random) -> tuple:
    if rel is ACCOUNTS or rel is SHADOW:
        return (rng.randint(-20, 200),)
    if rel is LINES:
        return (rng.randint(0, 15), rng.choice(NAMES))
    return (rng.choice(NAMES), rng.randint(-3, 12))


def random_value(rel: RelationCatalog, key: tuple, rng: random.Random) -> tuple:
    if rel is ACCOUNTS:
        return (key[0], rng.choice(NAMES), rng.choice([None, rng.randint(-1000, 1000)]))
    if rel is SHADOW:
        return (key[0], f"note {rng.randint(0, 9)}")
    return (*key, rng.randint(-50, 50))


Changes = dict[tuple, tuple | None]  # key (the state table's pk) -> the row in its field order, None: deleted


def random_epochs(rel: RelationCatalog, rng: random.Random) -> list[Changes]:
    """Random upserts and deletes of epochs 1..6."""
    epochs = []
    for epoch in range(1, 7):
        changes: Changes = {}
        for _ in range(150 if epoch == 1 else 25):
            key = random_key(rel, rng)
            changes[key] = None if epoch > 1 and rng.random() < 0.3 else random_value(rel, key, rng)
        epochs.append(changes)
    return epochs


def index_epochs(epochs: list[Changes], columns: list[int]) -> list[Changes]:
    """The same changes in an index keyed by `columns` of the rows, then the rows' key (the rows
    hold nothing else): the old entry of an updated or deleted row is deleted."""
    state: dict[tuple, tuple] = {}
    out = []
    for changes in epochs:
        moved: Changes = {}
        for key, row in changes.items():
            old = state.pop(key, None)
            if old is not None:
                moved[(*[old[c] for c in columns], *key)] = None
            if row is not None:
                state[key] = row
                moved[(*[row[c] for c in columns], *key)] = (*[row[c] for c in columns], *key)
        out.append(moved)
    return out


def live_rows(epochs: list[Changes]) -> dict[tuple, tuple]:
    rows: dict[tuple, tuple] = {}
    for changes in epochs[:PINNED]:
        for key, row in changes.items():
            if row is None:
                rows.pop(key, None)
            else:
                rows[key] = row
    return rows


def write_epochs(store: ObjectStore, desc: StateTableDesc, epochs: list[Changes]) -> TableLevels:
    """Epoch 1 as level 1, each later epoch as an L0 sub-level."""
    dist_types = [desc.fields[i].type.to_spark() for i in desc.dist_key]
    schema = desc.sst_schema()
    l0, base = [], ()
    for epoch, changes in enumerate(epochs, start=1):
        rows = []
        for key, row in changes.items():
            if row is None:
                full: list = [None] * len(desc.fields)
                for value, position in zip(key, desc.pk, strict=True):
                    full[position] = value
                row = tuple(full)
            vnode = vnode_of([row[i] for i in desc.dist_key], dist_types)
            rows.append((vnode, *row, epoch, changes[key] is None))
        cols = list(zip(*rows, strict=True))
        data = pa.table([pa.array(c, t) for c, t in zip(cols, schema.types, strict=True)], names=schema.names)
        sst = write_sst(store, desc, data, f"t{desc.table_id}-e{epoch}.parquet", level=0 if epoch > 1 else 1,
                        sub_level=epoch, row_group_size=16)
        sst = replace(sst, min_epoch=epoch, max_epoch=epoch)
        if epoch == 1:
            base = ((replace(sst, level=1),),)
        else:
            l0.append(SubLevel(epoch, (sst,)))
    return TableLevels(desc.table_id, tuple(l0), base)


class StoredMeta(FakeMeta):
    def __init__(self, relations: list[RelationCatalog], version: HummockVersion) -> None:
        super().__init__(relations)
        self.version = version

    def pin_version(self) -> HummockVersion:
        return self.version


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    store = ObjectStore(str(tmp_path_factory.mktemp("key-query")))
    rng = random.Random(3)
    tables, models = {}, {}
    for rel in (ACCOUNTS, LINES, TAGS, SHADOW):
        epochs = random_epochs(rel, rng)
        tables[rel.id], models[rel.id] = write_epochs(store, rel.table_desc, epochs), live_rows(epochs)
        if rel is LINES:
            tables[BY_V.id] = write_epochs(store, BY_V.table_desc, index_epochs(epochs, [2]))
    meta = StoredMeta([ACCOUNTS, LINES, TAGS, SHADOW, BY_V], HummockVersion(9, PINNED, tables))
    frontend = Frontend(meta, store, cache_bytes=1 << 24, workers=2)
    yield frontend, models
    frontend.close()


def new_session(frontend: Frontend, search_path: str | None = None):
    session = frontend.new_session()
    if search_path:
        session.vars.set("search_path", search_path)
    return session


def wire(columns, rows) -> list[bytes]:
    """Each row's DataRow in text and in binary (sorted: the paths' row orders may differ)."""
    tuples = rows if isinstance(rows, list) else [tuple(r.values()) for r in rows.to_pylist()]
    out = []
    for fmt in (0, 1):
        formats = [fmt] * len(columns)
        if isinstance(rows, list):
            out += sorted(encode_rows(columns, formats, [r]) for r in tuples)
        else:
            out += sorted(encode_rows(columns, formats, rows.slice(i, 1)) for i in range(rows.num_rows))
    return out


def run(session, sql: str, oids: list[int], params: list) -> tuple[list, list, list]:
    """Columns, rows and their DataRows of the statement through the session (a key query's rows may
    come as Python values: `KeyQuery.run`)."""
    result = asyncio.run(session.execute(sql, oids, params))
    rows = result.rows if isinstance(result.rows, list) else [tuple(r.values()) for r in result.rows.to_pylist()]
    return ([(c.name, c.type_oid, c.type_mod) for c in result.columns], sorted(rows, key=repr),
            wire(result.columns, result.rows))


def full_path(session, sql: str, oids: list[int], params: list) -> tuple[list, list, list]:
    rows = session.run_batch(sqlglot.parse_one(substitute_params(sql, params, oids), read=DIALECT))
    return ([(c.name, c.type_oid, c.type_mod) for c in columns_of(rows)],
            sorted((tuple(r.values()) for r in rows.to_pylist()), key=repr), wire(columns_of(rows), rows))


def key_queries() -> float:
    return KEY_QUERIES._value.get()


def statements(rng: random.Random):
    """(sql, param oids, params, the model's rows) of random key queries."""
    for _ in range(60):
        i = rng.randint(-20, 200)
        k, name, n = rng.randint(0, 15), rng.choice(NAMES), rng.randint(-3, 12)
        yield "SELECT * FROM accounts WHERE id = $1", [20], [i], (2001, lambda key, row, i=i: key == (i,))
        yield "SELECT id FROM accounts WHERE id = $1", [0], [f" {i} "], (2001, lambda key, row, i=i: key == (i,))
        yield f"SELECT id FROM accounts WHERE id = '{i}'", [], [], (2001, lambda key, row, i=i: key == (i,))
        yield (f"SELECT name AS who, a.balance FROM public.accounts a WHERE a.id = {i}", [], [],
               (2001, lambda key, row, i=i: key == (i,)))
        yield ("SELECT v, name FROM lines WHERE name = $2 AND k = $1", [23, 0], [k, name],
               (2002, lambda key, row, k=k, name=name: key == (k, name)))
        yield "SELECT lines.* FROM lines WHERE k = $1", [21], [k], (2002, lambda key, row, k=k: key[0] == k)
        yield "SELECT * FROM tags WHERE name = $1", [1043], [name], (2003, lambda key, row, name=name: key[0] == name)
        yield ("SELECT v FROM tags WHERE n = $2 AND name = $1", [0, 23], [name, n],
               (2003, lambda key, row, name=name, n=n: key == (name, n)))
        v = rng.randint(-50, 50)
        yield ("SELECT k, name FROM lines WHERE v = $1", [23], [v],  # through the index by_v
               (2002, lambda key, row, v=v: row[2] == v))


def test_key_queries_answer_as_the_full_path_on_random_data(stored):
    frontend, models = stored
    session = new_session(frontend)
    rng = random.Random(8)
    nonempty = 0
    for sql, oids, params, (rel_id, wanted) in statements(rng):
        before = key_queries()
        got = run(session, sql, oids, params)
        assert key_queries() == before + 1, sql  # answered by the key lookup
        assert got == full_path(session, sql, oids, params), (sql, params)
        assert len(got[1]) == sum(1 for key, row in models[rel_id].items() if wanted(key, row)), (sql, params)
        nonempty += bool(got[1])
    assert nonempty > 100  # most keys exist: the comparison is not of empty results
    assert isinstance(frontend.plans.get(session._plan_key("SELECT * FROM accounts WHERE id = $1", [20])), KeyPlan)


@pytest.mark.parametrize(("sql", "oids", "params"), [
    ("SELECT * FROM accounts WHERE id = $1 OR id = 2", [20], [1]),  # not a conjunction of equalities
    ("SELECT * FROM accounts WHERE balance = $1", [23], [5]),  # not the key
    ("SELECT * FROM lines WHERE name = $1", [0], ["ann"]),  # not a prefix of the key
    ("SELECT count(*) FROM accounts WHERE id = $1", [20], [3]),  # not a plain column
    ("SELECT * FROM accounts WHERE id = $1 ORDER BY name", [20], [3]),
    ("SELECT DISTINCT name FROM lines WHERE k = $1", [23], [3]),
    ("SELECT * FROM accounts WHERE id = $1", [0], ["3.0"]),  # text that is no integer, for an integer column
    ("SELECT * FROM accounts WHERE id = $1", [20], [None]),
    ("SELECT * FROM lines WHERE k = $1", [20], [1 << 40]),  # out of the INT column's range
    ("SELECT * FROM accounts WHERE id = 2.0", [], []),
    ("SELECT * FROM lines WHERE k = $1", [25], ["3"]),  # a text parameter for an integer key
])
def test_other_statements_take_the_full_path(stored, sql, oids, params):
    frontend, _ = stored
    session = new_session(frontend)
    before = key_queries()
    assert run(session, sql, oids, params) == full_path(session, sql, oids, params)
    assert key_queries() == before


def test_parameter_zero_is_no_parameter(stored):
    frontend, _ = stored
    with pytest.raises(ProtocolViolation, match=r"there is no parameter \$0"):
        run(new_session(frontend), "SELECT * FROM accounts WHERE id = $0", [20], [1])


def test_unquoted_user_is_the_current_user_not_a_column(tmp_path):
    users = table(2010, "u", (Field("user", VARCHAR), Field("v", INT4)), (0,), (0,))
    store = ObjectStore(str(tmp_path))
    epochs = [{("root",): ("root", 1), ("ann",): ("ann", 2)}]
    meta = StoredMeta([users], HummockVersion(9, PINNED, {users.id: write_epochs(store, users.table_desc, epochs)}))
    frontend = Frontend(meta, store, cache_bytes=1 << 22, workers=2)
    try:
        session = new_session(frontend)
        before = key_queries()
        # unquoted, `user` is the session's user (root) in the select list and in the WHERE
        assert run(session, "SELECT user, v FROM u WHERE \"user\" = 'ann'", [], [])[1] == [("root", 2)]
        assert run(session, "SELECT v FROM u WHERE user = 'ann'", [], [])[1] == []
        assert key_queries() == before
        assert run(session, "SELECT \"user\", v FROM u WHERE \"user\" = 'ann'", [], [])[1] == [("ann", 2)]
        assert key_queries() == before + 1
    finally:
        frontend.close()


def test_an_unknown_column_fails_as_on_the_full_path(stored):
    frontend, _ = stored
    with pytest.raises(UndefinedColumn):
        run(new_session(frontend), "SELECT nope FROM accounts WHERE id = $1", [20], [1])


def test_the_limit_of_a_prefix_query(stored):
    frontend, models = stored
    session = new_session(frontend)
    k = max(range(16), key=lambda k: sum(1 for key in models[2002] if key[0] == k))
    everything = run(session, "SELECT * FROM lines WHERE k = $1", [23], [k])[1]
    assert len(everything) > 2
    limited = run(session, "SELECT * FROM lines WHERE k = $1 LIMIT 2", [23], [k])[1]
    assert len(limited) == 2 and set(limited) <= set(everything)


def test_plans_follow_the_search_path_and_the_catalog_version(stored):
    frontend, _ = stored
    public, other = new_session(frontend), new_session(frontend, "other, public")
    sql = "SELECT * FROM accounts WHERE id = $1"
    columns = [c for c, _, _ in run(public, sql, [20], [3])[0]]
    assert columns == ["id", "name", "balance"]
    assert [c for c, _, _ in run(other, sql, [20], [3])[0]] == ["id", "note"]  # other.accounts
    # DDL bumps the catalog version: the plan compiled at the old one is not used. Here accounts was
    # dropped and other.accounts moved to public (ALTER TABLE ... SET SCHEMA)
    meta = frontend.meta
    old = meta.snapshot
    relations = {k: v for k, v in old.relations.items() if k != ACCOUNTS.id}
    relations[SHADOW.id] = replace(SHADOW, schema_id=PUBLIC)
    meta.snapshot = CatalogSnapshot(old.version + 1, old.databases, old.schemas, relations)
    try:
        assert [c for c, _, _ in run(public, sql, [20], [3])[0]] == ["id", "note"]
        plan = frontend.plans.get(public._plan_key(sql, [20]), old.version + 1)
        assert isinstance(plan, KeyPlan) and plan.catalog_version == old.version + 1
    finally:
        meta.snapshot = old


def test_a_constant_select_runs_once(stored, monkeypatch):
    frontend, _ = stored
    session = new_session(frontend)
    calls = []
    run_batch = frontend.engine.stream  # (a client's query: its rows produced while they are sent)
    monkeypatch.setattr(frontend.engine, "stream", lambda *a, **kw: calls.append(1) or run_batch(*a, **kw))
    first = asyncio.run(session.execute("SELECT 1", [], []))
    again = asyncio.run(new_session(frontend).execute("SELECT 1", [], []))
    assert calls == [1]
    assert first.rows.to_pylist() == again.rows.to_pylist() == [{"?column?": 1}]
    assert [c.name for c in again.columns] == ["?column?"] and again.tag == "SELECT 1"
    assert isinstance(frontend.plans.get(session._plan_key("SELECT 1", [])), ConstantPlan)
    asyncio.run(session.execute("SELECT now() IS NOT NULL", [], []))
    asyncio.run(session.execute("SELECT now() IS NOT NULL", [], []))
    assert len(calls) == 3  # not a constant: runs every time


def test_the_cache_keys_and_capacity():
    cache = PlanCache(capacity=2)
    key = PlanKey("SELECT 1", (), "dev", "root", ("public",))
    cache.put(key, FullPlan(1))
    assert cache.get(key, 1) == FullPlan(1) and cache.get(key, 2) is None
    assert cache.get(replace(key, user="ann"), 1) is None and cache.get(replace(key, database="d2"), 1) is None
    cache.put(replace(key, text="a"), FullPlan(1))
    cache.put(replace(key, text="b"), FullPlan(1))
    assert len(cache) == 2 and cache.get(key, 1) is None  # least recently used out


class CountingPool(ThreadPoolExecutor):
    def __init__(self) -> None:
        super().__init__(1)
        self.submitted = 0

    def submit(self, *args, **kwargs):
        self.submitted += 1
        return super().submit(*args, **kwargs)


def test_a_point_query_runs_on_the_event_loop_once_its_blocks_are_cached(stored, monkeypatch):
    frontend, _ = stored
    pool = CountingPool()
    monkeypatch.setattr(frontend, "key_pool", pool)
    blocks = frontend.engine.reader.blocks
    session = new_session(frontend)
    sql = "SELECT balance FROM accounts a WHERE a.id = $1"
    first = run(session, sql, [20], [7])  # compiled (on the shared pool: not yet known as a key query)
    assert pool.submitted == 0
    blocks.block_cache.clear()
    blocks.meta_cache.clear()
    assert run(session, sql, [20], [7]) == first  # not cached: read from the files on the key pool
    assert pool.submitted == 1
    assert run(session, sql, [20], [7]) == first == full_path(session, sql, [20], [7])  # cached: on the loop
    assert pool.submitted == 1
    # a prefix (every vnode, maybe many rows) is never looked up on the loop
    prefix = "SELECT v FROM lines l WHERE l.k = $1"
    for _ in range(3):
        run(session, prefix, [23], [3])
    assert pool.submitted == 3
    pool.shutdown()


def test_a_read_of_a_file_in_cached_only_mode_is_refused(stored):
    frontend, _ = stored
    blocks = frontend.engine.reader.blocks
    blocks.block_cache.clear()
    blocks.meta_cache.clear()
    sst = frontend.meta.version.ssts(ACCOUNTS.id)[0]
    with blocks.cached_only(), pytest.raises(WouldRead):
        blocks.meta(sst.path)
    meta = blocks.meta(sst.path)  # (outside the mode: read and cached)
    with blocks.cached_only():
        assert blocks.meta(sst.path) is meta
        with pytest.raises(WouldRead):
            blocks.blocks(ACCOUNTS.table_desc, sst.path, meta, [0])
    blocks.blocks(ACCOUNTS.table_desc, sst.path, meta, [0])
    with blocks.cached_only():
        assert list(blocks.blocks(ACCOUNTS.table_desc, sst.path, meta, [0])) == [0]


def test_a_point_query_answers_with_python_values(stored):
    # (the value path: no Arrow table for one row; its DataRows equal the full path's, in text and
    # binary, in the random test above)
    frontend, models = stored
    session = new_session(frontend)
    key = next(iter(models[2001]))
    point = asyncio.run(session.execute("SELECT name, balance FROM accounts WHERE id = $1", [20], [key[0]]))
    assert point.rows == [tuple(models[2001][key][1:])] and point.tag == "SELECT 1"
    missing = asyncio.run(session.execute("SELECT name, balance FROM accounts WHERE id = $1", [20], [10_000]))
    assert missing.rows == [] and missing.tag == "SELECT 0"
    prefix = asyncio.run(session.execute("SELECT * FROM lines WHERE k = $1", [23], [3]))
    assert isinstance(prefix.rows, pa.Table)  # (a prefix: up to every vnode's rows, as a table)


def test_answered_at_once_as_execute_answers(stored):
    """`Session.answer_now` (what the wire server answers an execution with as it arrives) gives
    `execute`'s result for a constant and a cached point query, and None for what must wait: a
    statement not compiled yet, one that takes the full path, a prefix, blocks not cached."""
    frontend, _ = stored
    session = new_session(frontend)
    point = "SELECT name, balance FROM accounts WHERE id = $1"
    assert session.answer_now(point, [20], [7]) is None  # (not compiled yet)
    rng = random.Random(4)
    for sql, oids, params, _ in statements(rng):
        run(session, sql, oids, params)  # (compiled; blocks cached)
        now = session.answer_now(sql, oids, params)
        expected = asyncio.run(session.execute(sql, oids, params))
        prefixes = ("SELECT lines.* FROM lines WHERE k = $1", "SELECT * FROM tags WHERE name = $1",
                    "SELECT k, name FROM lines WHERE v = $1")
        if sql not in prefixes:  # (every key column given: a point query)
            assert now is not None, sql
            assert (now.tag, now.columns, now.rows) == (expected.tag, expected.columns, expected.rows), (sql, params)
        else:
            assert now is None, sql  # (a prefix: up to every vnode's rows, on a thread)
    run(session, "SELECT 1", [], [])
    assert session.answer_now("SELECT 1", [], []).rows.to_pylist() == [{"?column?": 1}]
    full = "SELECT * FROM accounts WHERE balance = $1"
    run(session, full, [23], [5])
    assert session.answer_now(full, [23], [5]) is None
    blocks = frontend.engine.reader.blocks
    blocks.block_cache.clear()
    blocks.meta_cache.clear()
    assert session.answer_now(point, [20], [7]) is None  # (its blocks would be read from files)
