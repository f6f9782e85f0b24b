"""The DDL and query forms dbt and other clients rely on, against the playground: views, CREATE TABLE
AS, indexes on materialized views, ALTER ... RENAME TO, DROP ... CASCADE, COMMENT ON, three-part
names, row-value IN, several statements in one query, SHOW PROCESSLIST and KILL."""

from __future__ import annotations

import threading

import httpx
import psycopg
import pytest
from psycopg import errors

from conftest import PlaygroundProcess, unique_name

pytestmark = pytest.mark.e2e


@pytest.fixture
def schema(conn: psycopg.Connection) -> str:
    name = unique_name("ddl")
    conn.execute(f"create schema {name}")
    conn.execute(f"set search_path to {name}, public")
    return name


def _oracle(dsn: str, setup: list[str], query: str) -> list[tuple]:
    with psycopg.connect(dsn, autocommit=True) as pg:
        for sql in setup:
            pg.execute(sql)
        return pg.execute(query).fetchall()


def test_views(conn: psycopg.Connection, schema: str, oracle_dsn: str) -> None:
    conn.execute("create table t (id int primary key, name varchar, amount int)")
    conn.execute("insert into t values (1, 'a', 10), (2, 'b', 20), (3, 'a', 30)")
    conn.execute("flush")
    conn.execute("create view big as select id, name, amount * 2 as doubled from t where amount > 10")
    assert conn.execute("create view if not exists big as select 1").statusmessage == "CREATE_VIEW"
    conn.execute("create view named (k, total) as select name, sum(doubled) from big group by name")
    assert conn.execute("select * from big order by id").fetchall() == [(2, "b", 40), (3, "a", 60)]
    assert conn.execute("select k, total from named order by k").fetchall() == [("a", 60), ("b", 40)]
    # a view means the same thing whatever the reader's search path
    conn.execute("set search_path to public")
    assert conn.execute(f"select count(*) from {schema}.big").fetchone() == (2,)
    conn.execute(f"set search_path to {schema}, public")
    # a materialized view over a view
    conn.execute("create materialized view mv as select name, count(*) as n from big group by name")
    assert conn.execute("select name, n from mv order by name").fetchall() == [("a", 1), ("b", 1)]
    conn.execute("insert into t values (4, 'b', 50)")
    conn.execute("flush")
    assert conn.execute("select name, n from mv order by name").fetchall() == [("a", 1), ("b", 2)]
    # catalogs
    assert conn.execute("select table_type from information_schema.tables where table_schema = %s "
                        "and table_name = 'big'", (schema,)).fetchone() == ("VIEW",)
    assert conn.execute("select relkind from pg_class where relname = 'big'").fetchone() == ("v",)
    assert conn.execute("select definition from pg_views where viewname = 'named'").fetchone()[0].startswith(
        "select name, sum(doubled)")
    assert conn.execute("select column_name from information_schema.columns where table_schema = %s and "
                        "table_name = 'named' order by ordinal_position", (schema,)).fetchall() == [("k",), ("total",)]
    # column types as PostgreSQL gives them
    types = "select column_name, data_type from information_schema.columns where table_name = 'agg' {} " \
            "order by ordinal_position"
    conn.execute("create view agg as select name, sum(amount) as s, count(*) as c, max(id) as m from t group by name")
    assert conn.execute(types.format(f"and table_schema = '{schema}'")).fetchall() == _oracle(oracle_dsn, [
        "drop view if exists agg", "drop table if exists t", "create table t (id int primary key, name varchar, amount int)",
        "create view agg as select name, sum(amount) as s, count(*) as c, max(id) as m from t group by name"],
        types.format(""))
    assert conn.execute("show views").fetchall() == [("agg",), ("big",), ("named",)]
    assert conn.execute(f"show views from {schema}").fetchall() == [("agg",), ("big",), ("named",)]
    with pytest.raises(errors.WrongObjectType):
        conn.execute("insert into big values (9, 'x', 1)")
    with pytest.raises(errors.DuplicateTable):
        conn.execute("create view big as select 1")
    with pytest.raises(errors.UndefinedTable):
        conn.execute("create view broken as select * from missing")


def test_create_table_as(conn: psycopg.Connection, schema: str, oracle_dsn: str) -> None:
    conn.execute("create table src (id int primary key, v numeric(10, 2), s varchar)")
    conn.execute("insert into src values (1, 1.50, 'x'), (2, 2.25, null), (3, null, 'z')")
    conn.execute("flush")
    cur = conn.execute("create table copy as select id, v * 2 as v2, s from src where id > 1")
    assert cur.statusmessage == "SELECT 2"
    conn.execute("flush")
    assert conn.execute("select * from copy order by id").fetchall() == \
        _oracle(oracle_dsn, ["drop table if exists src", "create table src (id int primary key, v numeric(10, 2), s varchar)",
                             "insert into src values (1, 1.50, 'x'), (2, 2.25, null), (3, null, 'z')"],
                "select id, v * 2 as v2, s from src where id > 1 order by id")
    assert conn.execute("create table if not exists copy as select 1").statusmessage == "CREATE_TABLE"
    # a table like any other: writable, no primary key (a hidden row id)
    conn.execute("insert into copy values (9, 1, 'n')")
    conn.execute("flush")
    assert conn.execute("select count(*) from copy").fetchone() == (3,)
    assert conn.execute("select column_name, data_type from information_schema.columns where table_name = 'copy' "
                        "and table_schema = %s order by ordinal_position", (schema,)).fetchall() == \
        [("id", "integer"), ("v2", "numeric"), ("s", "character varying")]


def test_index_on_materialized_view(conn: psycopg.Connection, schema: str) -> None:
    conn.execute("create table orders (id int primary key, customer int, amount int)")
    conn.execute("insert into orders select g, g % 7, g from generate_series(1, 200) g")
    conn.execute("flush")
    conn.execute("create materialized view per_customer as select customer, sum(amount) as total, count(*) as n "
                 "from orders group by customer")
    assert conn.execute("create index idx_total on per_customer (total) include (customer)").statusmessage == \
        "CREATE_INDEX"
    assert conn.execute("create index if not exists idx_total on per_customer (n)").statusmessage == "CREATE_INDEX"
    conn.execute(f'create index "idx_N" on "dev"."{schema}"."per_customer" (n) distributed by (n)')
    rows = conn.execute("select i.name, i.primary_table_id = m.id, i.indkey from rw_indexes i join "
                        "rw_materialized_views m on m.name = 'per_customer' and m.schema_id = i.schema_id "
                        "order by i.name").fetchall()
    assert rows == [("idx_N", True, [2, 0, 1]), ("idx_total", True, [1, 0])]
    assert conn.execute("select indexname, indexdef from pg_indexes where tablename = 'per_customer' "
                        "order by 1").fetchall() == [
        ("idx_N", f"CREATE INDEX idx_N ON {schema}.per_customer USING btree (n)"),
        ("idx_total", f"CREATE INDEX idx_total ON {schema}.per_customer USING btree (total)")]
    assert conn.execute("select c.relkind, i.indnkeyatts, i.indisprimary from pg_index i join pg_class c "
                        "on c.oid = i.indexrelid where c.relname = 'idx_total'").fetchone() == ("i", 1, False)
    # an index is kept up to date like any materialized view, and queries on its table are unchanged
    conn.execute("insert into orders values (1000, 3, 5)")
    conn.execute("flush")
    assert conn.execute("select total, n from per_customer where customer = 3").fetchone() == (2934, 30)
    with pytest.raises(errors.UndefinedColumn):
        conn.execute("create index bad on per_customer (nope)")
    with pytest.raises(errors.WrongObjectType):
        conn.execute("select * from idx_total")
    with pytest.raises(errors.WrongObjectType):
        conn.execute("create materialized view over_index as select * from idx_total")
    # dropping the materialized view drops its indexes
    conn.execute("drop materialized view per_customer")
    assert conn.execute("select count(*) from rw_indexes where schema_id = "
                        "(select id from rw_schemas where name = %s)", (schema,)).fetchone() == (0,)


def test_rename(conn: psycopg.Connection, schema: str) -> None:
    conn.execute("create table t (id int primary key, v int)")
    conn.execute("insert into t values (1, 10)")
    conn.execute("flush")
    conn.execute("create view v as select id, v from t")
    conn.execute("create materialized view m as select count(*) as n from t")
    conn.execute("create index i on m (n)")
    assert conn.execute(f'alter table "dev"."{schema}"."t" rename to "t2"').statusmessage == "ALTER_TABLE"
    assert conn.execute("alter view v rename to v2").statusmessage == "ALTER_VIEW"
    assert conn.execute("alter materialized view m rename to m2").statusmessage == "ALTER_MATERIALIZED_VIEW"
    assert conn.execute("alter index i rename to i2").statusmessage == "ALTER_INDEX"
    # the view follows its renamed table; the materialized view keeps streaming from it
    assert conn.execute("select * from v2").fetchall() == [(1, 10)]
    conn.execute("insert into t2 values (2, 20)")
    conn.execute("flush")
    assert conn.execute("select n from m2").fetchone() == (2,)
    assert conn.execute("select name from rw_indexes where name like 'i%%' and schema_id = "
                        "(select id from rw_schemas where name = %s)", (schema,)).fetchall() == [("i2",)]
    with pytest.raises(errors.UndefinedTable):
        conn.execute("select * from t")
    with pytest.raises(errors.DuplicateTable):
        conn.execute("alter table t2 rename to v2")
    with pytest.raises(errors.WrongObjectType):
        conn.execute("alter view t2 rename to t3")


def test_drop_cascade(conn: psycopg.Connection, schema: str) -> None:
    conn.execute("create table t (id int primary key, v int)")
    conn.execute("create view v as select * from t")
    conn.execute("create materialized view m as select count(*) as n from v")
    conn.execute("create index i on m (n)")
    with pytest.raises(errors.DependentObjectsStillExist) as info:
        conn.execute("drop table t")
    assert info.value.diag.message_detail == "view v depends on table t"
    with pytest.raises(errors.DependentObjectsStillExist):
        conn.execute("drop view v")
    # a failed DROP drops nothing, indexes included
    assert conn.execute("select count(*) from rw_indexes i join rw_schemas s on s.id = i.schema_id "
                        "where i.name = 'i' and s.name = %s", (schema,)).fetchone() == (1,)
    with pytest.raises(errors.WrongObjectType):
        conn.execute("drop view m")
    cur = conn.execute(f'drop view if exists "dev"."{schema}"."nope" cascade')
    assert cur.statusmessage == "DROP_VIEW"
    conn.execute("drop table t cascade")
    assert conn.execute("select count(*) from rw_relations where schema_id = (select id from rw_schemas "
                        "where name = %s)", (schema,)).fetchone() == (0,)
    conn.execute("create table t (id int)")
    with pytest.raises(errors.DependentObjectsStillExist):
        conn.execute(f"drop schema {schema}")
    conn.execute("set search_path to public")
    conn.execute(f"drop schema {schema} cascade")
    assert conn.execute("select count(*) from rw_schemas where name = %s", (schema,)).fetchone() == (0,)
    conn.execute(f"drop schema if exists {schema}")


def test_comments(conn: psycopg.Connection, schema: str) -> None:
    conn.execute("create table t (id int primary key, v int)")
    conn.execute("create materialized view m as select id, v from t")
    conn.execute("create view w as select id from t")
    # as RisingWave (and dbt's persist_docs): COMMENT ON TABLE names any relation
    conn.execute(f"""comment on table "dev"."{schema}"."m" is 'the mv''s text'""")
    conn.execute("comment on view w is 'a view'")
    conn.execute(f'comment on column "{schema}"."m".v is \'value\'')
    assert conn.execute("select obj_description('m'::regclass), obj_description('w'::regclass), "
                        "col_description('m'::regclass, 2)").fetchone() == ("the mv's text", "a view", "value")
    with pytest.raises(errors.WrongObjectType):
        conn.execute("comment on view m is 'x'")


def test_three_part_names_and_row_value_in(conn: psycopg.Connection, schema: str, oracle_dsn: str) -> None:
    setup = ["create table a (x int, y int, z varchar)", "create table b (x int, y int)",
             "insert into a values (1, 1, 'p'), (1, 2, 'q'), (2, 1, 'r'), (null, 1, 's')",
             "insert into b values (1, 2), (2, 1), (3, 3)"]
    for sql in setup:
        conn.execute(sql.replace("create table ", f'create table "dev"."{schema}".'))
    conn.execute("flush")
    query = "select z from a where (x, y) in (select x, y from b) order by z"
    assert conn.execute(query).fetchall() == _oracle(
        oracle_dsn, ["drop table if exists a, b", *setup], query) == [("q",), ("r",)]
    assert conn.execute(f"select count(*) from dev.{schema}.a where (x, y) not in (select x, y from b)") \
        .fetchone() == _oracle(oracle_dsn, [], "select count(*) from a where (x, y) not in (select x, y from b)")[0]
    assert conn.execute("select count(*) from a where (x, y) in ((1, 1), (2, 1))").fetchone() == (2,)
    conn.execute(f'delete from "dev"."{schema}"."a" where (x) in (select (x) from b where y = 2)')
    conn.execute("flush")
    assert conn.execute("select z from a order by z").fetchall() == [("r",), ("s",)]
    with pytest.raises(errors.FeatureNotSupported):
        conn.execute(f"select * from otherdb.{schema}.a")


def test_several_statements_in_one_query(conn: psycopg.Connection, schema: str) -> None:
    conn.execute("set rw_implicit_flush to true; create table t (id int); insert into t values (1), (2); "
                 "create view v as select count(*) as n from t")
    assert conn.execute("select n from v").fetchone() == (2,)


def test_show_processlist_and_kill(playground: PlaygroundProcess, conn: psycopg.Connection) -> None:
    pid = conn.execute("select pg_backend_pid()").fetchone()[0]
    rows = conn.execute("show processlist").fetchall()
    assert [d.name for d in conn.execute("show processlist").description] == \
        ["Worker Id", "Id", "User", "Host", "Database", "Time", "Info"]
    assert any(r[1] == str(pid) and r[6] == "show processlist" for r in rows)
    long_query = "select count(*) from generate_series(1, 100000) a, generate_series(1, 100000) b where a.a <> b.b"
    failure: list[BaseException] = []

    def run() -> None:
        with playground.connect() as other:
            try:
                other.execute(long_query)
            except BaseException as e:  # noqa: BLE001 - handed to the test thread
                failure.append(e)

    worker = threading.Thread(target=run)
    worker.start()
    target = None
    while target is None and worker.is_alive():
        target = next((r[1] for r in conn.execute("show processlist").fetchall() if r[6] == long_query), None)
    assert target is not None
    assert conn.execute(f"kill {target}").statusmessage == "KILL"
    worker.join()
    assert len(failure) == 1 and isinstance(failure[0], errors.QueryCanceled)
    with pytest.raises(errors.UndefinedObject):
        conn.execute("kill 999999")


def _index_lookups(playground: PlaygroundProcess, index: str) -> float:
    text = httpx.get(f"http://127.0.0.1:{playground.meta_port}/metrics", timeout=30).text
    for line in text.splitlines():
        if line.startswith("risingspark_frontend_index_lookups_total{") and f'index="{index}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def _key_queries(playground: PlaygroundProcess) -> float:
    text = httpx.get(f"http://127.0.0.1:{playground.meta_port}/metrics", timeout=30).text
    return next((float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                 if line.startswith("risingspark_frontend_key_queries_total ")), 0.0)


def test_point_queries_read_one_vnode_of_an_index(playground: PlaygroundProcess, conn: psycopg.Connection,
                                                   schema: str, oracle_dsn: str) -> None:
    setup = ["create table people (id int primary key, city varchar, score numeric(10, 2), born date)",
             "insert into people select g, 'city ' || (g % 37), (g % 101) * 1.25, "
             "make_date(2000, 1 + g % 12, 1 + g % 28) from generate_series(1, 3000) g"]
    for sql in setup:
        conn.execute(sql)
    conn.execute("flush")
    conn.execute("create index people_by_city on people (city)")
    conn.execute("create index people_by_score on people (score, born)")
    _oracle(oracle_dsn, ["drop table if exists people", *setup], "select 1")
    queries = ["select id, score from people where city = 'city 7' order by id",
               "select count(*), sum(score) from people where city = 'city 36' and id > 100",
               "select p.id from people p where p.score = 12.50 and p.born = '2000-03-11' order by 1",
               "select id from people where city = 'nowhere'"]
    # the last one is a key query (`frontend/key_query.py`): a prefix lookup in people_by_city's key
    for q, key_query in zip(queries, [False, False, False, True], strict=True):
        before = (_index_lookups(playground, "people_by_city"), _index_lookups(playground, "people_by_score"))
        keyed = _key_queries(playground)
        assert conn.execute(q).fetchall() == _oracle(oracle_dsn, [], q), q
        after = (_index_lookups(playground, "people_by_city"), _index_lookups(playground, "people_by_score"))
        assert (sum(after), _key_queries(playground)) == (sum(before) + (not key_query), keyed + key_query), q
    # the index follows updates of its table
    conn.execute("update people set city = 'moved' where id in (7, 44)")
    conn.execute("flush")
    assert conn.execute("select id from people where city = 'moved' order by id").fetchall() == [(7,), (44,)]
    assert conn.execute("select count(*) from people where city = 'city 7'").fetchone() == (79,)
    # not a point query on the index columns: a scan of the table
    before = _index_lookups(playground, "people_by_score")
    assert conn.execute("select count(*) from people where score = 12.50").fetchone() == \
        _oracle(oracle_dsn, [], "select count(*) from people where score = 12.50")[0]
    assert _index_lookups(playground, "people_by_score") == before
