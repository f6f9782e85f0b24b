"""The first user story, through psycopg against one running playground: tables, DML, an MV that
backfills, updates and deletes reflected after FLUSH, an MV on an MV, catalog commands, errors."""

from __future__ import annotations

import re
from decimal import Decimal

import psycopg
import pytest
from psycopg import errors

from conftest import unique_name
from support.oracle import assert_same, copy_table

pytestmark = pytest.mark.e2e


def test_orders_story(conn: psycopg.Connection, oracle_dsn: str) -> None:
    t = unique_name("orders")
    conn.execute(f"CREATE TABLE {t} (id BIGINT PRIMARY KEY, customer_id INT, amount NUMERIC(12,2), "
                 f"status VARCHAR, created_at TIMESTAMP)")
    cur = conn.execute(f"INSERT INTO {t} VALUES (1, 42, 10.50, 'pending', '2024-01-01 10:00:00'), "
                       f"(2, 42, 20.25, 'paid', '2024-01-02 10:00:00'), (3, 7, 5, 'cancelled', '2024-01-03')")
    assert cur.rowcount == 3
    cur = conn.execute(f"INSERT INTO {t} SELECT i, i % 50, (i % 997) + 0.25, "
                       f"CASE WHEN i % 7 = 0 THEN 'cancelled' ELSE 'paid' END, "
                       f"TIMESTAMP '2024-01-01' + i * INTERVAL '1 minute' FROM generate_series(10, 20009) AS g(i)")
    assert cur.rowcount == 20000
    conn.execute("FLUSH")
    assert conn.execute(f"SELECT count(*) FROM {t}").fetchone() == (20003,)

    mv = f"{t}_summary"
    conn.execute(f"CREATE MATERIALIZED VIEW {mv} AS SELECT customer_id, COUNT(*) AS order_count, "
                 f"SUM(amount) AS total_amount FROM {t} WHERE status <> 'cancelled' GROUP BY customer_id")
    before = conn.execute(f"SELECT order_count, total_amount FROM {mv} WHERE customer_id = 42").fetchone()
    conn.execute(f"UPDATE {t} SET status = 'cancelled' WHERE id = 1")
    conn.execute(f"DELETE FROM {t} WHERE id = 2")
    conn.execute("FLUSH")
    after = conn.execute(f"SELECT order_count, total_amount FROM {mv} WHERE customer_id = 42").fetchone()
    assert after == (before[0] - 2, before[1] - Decimal("30.75"))

    big = f"{t}_big"
    conn.execute(f"CREATE MATERIALIZED VIEW {big} AS SELECT * FROM {mv} WHERE total_amount > 100000")
    conn.execute(f"INSERT INTO {t} VALUES (100000, 42, 99999.99, 'paid', '2024-02-01')")
    conn.execute("FLUSH")

    with psycopg.connect(oracle_dsn, autocommit=True) as pg:
        copy_table(conn, pg, t)
        query = (f"SELECT customer_id, COUNT(*) AS order_count, SUM(amount) AS total_amount FROM {t} "
                 f"WHERE status <> 'cancelled' GROUP BY customer_id")
        assert assert_same(conn, pg, mv, query) == 50
        n = assert_same(conn, pg, big, f"SELECT * FROM ({query}) s WHERE total_amount > 100000")
        assert n > 0
    names = [r[0] for r in conn.execute("SHOW MATERIALIZED VIEWS").fetchall()]
    assert mv in names and big in names
    assert t in [r[0] for r in conn.execute("SHOW TABLES").fetchall()]


def test_primary_key_conflict_overwrites(conn: psycopg.Connection) -> None:
    t = unique_name("kv")
    conn.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v VARCHAR)")
    conn.execute(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    conn.execute(f"INSERT INTO {t} VALUES (1, 'c'), (1, 'd')")
    conn.execute("FLUSH")
    assert conn.execute(f"SELECT k, v FROM {t} ORDER BY k").fetchall() == [(1, "d"), (2, "b")]


def test_table_without_primary_key_keeps_duplicates(conn: psycopg.Connection) -> None:
    t = unique_name("log")
    conn.execute(f"CREATE TABLE {t} (msg VARCHAR, n INT)")
    conn.execute(f"INSERT INTO {t} VALUES ('x', 1), ('x', 1), ('y', 2)")
    mv = f"{t}_counts"
    conn.execute("FLUSH")
    conn.execute(f"CREATE MATERIALIZED VIEW {mv} AS SELECT msg, count(*) AS c, sum(n) AS s FROM {t} GROUP BY msg")
    assert conn.execute(f"SELECT * FROM {mv} ORDER BY msg").fetchall() == [("x", 2, 2), ("y", 1, 2)]
    # SELECT * shows no hidden row id
    assert [d.name for d in conn.execute(f"SELECT * FROM {t}").description] == ["msg", "n"]
    conn.execute(f"DELETE FROM {t} WHERE msg = 'x'")
    conn.execute("FLUSH")
    assert conn.execute(f"SELECT * FROM {mv}").fetchall() == [("y", 1, 2)]


def test_drop_respects_dependencies(conn: psycopg.Connection) -> None:
    t = unique_name("dep")
    conn.execute(f"CREATE TABLE {t} (a INT PRIMARY KEY, b INT)")
    conn.execute(f"CREATE MATERIALIZED VIEW {t}_m1 AS SELECT a, b FROM {t} WHERE b > 0")
    conn.execute(f"CREATE MATERIALIZED VIEW {t}_m2 AS SELECT b, count(*) AS c FROM {t}_m1 GROUP BY b")
    with pytest.raises(errors.DependentObjectsStillExist):
        conn.execute(f"DROP TABLE {t}")
    with pytest.raises(errors.DependentObjectsStillExist):
        conn.execute(f"DROP MATERIALIZED VIEW {t}_m1")
    with pytest.raises(errors.WrongObjectType):
        conn.execute(f"DROP TABLE {t}_m1")
    conn.execute(f"DROP MATERIALIZED VIEW {t}_m1 CASCADE")
    with pytest.raises(errors.UndefinedTable):
        conn.execute(f"SELECT * FROM {t}_m2")
    conn.execute(f"DROP TABLE {t}")
    conn.execute(f"DROP TABLE IF EXISTS {t}")
    with pytest.raises(errors.UndefinedTable):
        conn.execute(f"DROP TABLE {t}")


def test_if_not_exists_and_duplicates(conn: psycopg.Connection) -> None:
    t = unique_name("dup")
    conn.execute(f"CREATE TABLE {t} (a INT)")
    with pytest.raises(errors.DuplicateTable):
        conn.execute(f"CREATE TABLE {t} (a INT)")
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary))
    conn.execute(f"CREATE TABLE IF NOT EXISTS {t} (a INT)")
    conn.execute(f"CREATE MATERIALIZED VIEW {t}_mv AS SELECT a FROM {t}")
    conn.execute(f"CREATE MATERIALIZED VIEW IF NOT EXISTS {t}_mv AS SELECT a FROM {t}")
    assert any("already exists" in n for n in notices)


def test_errors_carry_sqlstates(conn: psycopg.Connection) -> None:
    with pytest.raises(errors.UndefinedTable, match='relation "no_such_table" does not exist'):
        conn.execute("SELECT * FROM no_such_table")
    with pytest.raises(errors.SyntaxError):
        conn.execute("SELEC 1")
    t = unique_name("err")
    conn.execute(f"CREATE TABLE {t} (a INT PRIMARY KEY, b VARCHAR)")
    with pytest.raises(errors.UndefinedColumn):
        conn.execute(f"SELECT nope FROM {t}")
    with pytest.raises(errors.NotNullViolation):
        conn.execute(f"INSERT INTO {t} VALUES (NULL, 'x')")
    with pytest.raises(errors.InvalidTextRepresentation):
        conn.execute(f"INSERT INTO {t} VALUES ('abc', 'x')")
    with pytest.raises(errors.FeatureNotSupported):
        conn.execute(f"CREATE MATERIALIZED VIEW {t}_bad AS SELECT a, ntile(2) OVER (ORDER BY a) AS r FROM {t}")
    with pytest.raises(errors.UndefinedObject):
        conn.execute("SET no_such_setting = 1")
    # the session still works after errors
    assert conn.execute("SELECT 1").fetchone() == (1,)


def test_session_variables(conn: psycopg.Connection) -> None:
    conn.execute("SET streaming_parallelism = 1")
    assert conn.execute("SHOW streaming_parallelism").fetchone() == ("1",)
    conn.execute("SET streaming_parallelism TO DEFAULT")
    assert conn.execute("SHOW streaming_parallelism").fetchone() == ("default",)
    version = conn.execute("SELECT version()").fetchone()[0]
    assert re.match(r"PostgreSQL 13\.14\.0", version)


def test_extended_protocol_parameters(conn: psycopg.Connection) -> None:
    t = unique_name("params")
    conn.execute(f"CREATE TABLE {t} (id BIGINT PRIMARY KEY, name VARCHAR, amount NUMERIC(10,2))")
    with conn.cursor() as cur:
        cur.executemany(f"INSERT INTO {t} VALUES (%s, %s, %s)",
                        [(i, f"n'{i}", Decimal(i) / 4) for i in range(20)])
    conn.execute("FLUSH")
    row = conn.execute(f"SELECT name, amount FROM {t} WHERE id = %s", (7,)).fetchone()
    assert row == ("n'7", Decimal("1.75"))


def test_implicit_flush_reads_own_writes(conn: psycopg.Connection) -> None:
    t = unique_name("ryw")
    conn.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, v VARCHAR)")
    conn.execute("SET rw_implicit_flush = true")
    conn.execute(f"INSERT INTO {t} VALUES (1, 'a')")
    assert conn.execute(f"UPDATE {t} SET v = 'b' WHERE id = 1").rowcount == 1
    assert conn.execute(f"SELECT v FROM {t}").fetchall() == [("b",)]
    assert conn.execute(f"DELETE FROM {t} WHERE id = 1").rowcount == 1
    assert conn.execute(f"SELECT count(*) FROM {t}").fetchone() == (0,)
