"""psycopg 3 and psycopg2 against the playground: binary parameters of every supported type through a
table and back, prepared statements, executemany, pipeline mode, COPY FROM STDIN, server-side
cancel, DEALLOCATE, and transactions that auto-commit."""

from __future__ import annotations

import datetime as dt
import threading
import time
from decimal import Decimal

import psycopg
import psycopg2
import pytest
from psycopg import errors

from conftest import PG_ADMIN, PlaygroundProcess, unique_name

pytestmark = pytest.mark.e2e

UTC = dt.UTC
COLUMNS = ("k int primary key, a smallint, b int, c bigint, d real, e double precision, f numeric(20, 4), "
           "g boolean, h varchar, i date, j timestamp, l timestamptz")
ROWS = [
    (1, 1, 100_000, 1 << 40, 1.5, -1.25, Decimal("61.5000"), True, "héllo", dt.date(2024, 2, 29),
     dt.datetime(2024, 1, 2, 3, 4, 5, 6), dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
    (2, -32768, -7, -(1 << 62), None, 1e300, Decimal("-1234567890123456.0001"), False, "", dt.date(1970, 1, 1),
     dt.datetime(1999, 12, 31, 23, 59, 59), dt.datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC)),
    (3, None, None, None, None, None, None, None, None, None, None, None),
]


@pytest.fixture
def table(conn: psycopg.Connection) -> str:
    name = unique_name("pg_types")
    conn.execute(f"create table {name} ({COLUMNS})")
    return name


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_parameters_of_every_type_round_trip(conn: psycopg.Connection, table: str, binary: bool) -> None:
    with conn.cursor(binary=binary) as cur:
        cur.executemany(f"insert into {table} values ({', '.join(['%s'] * 12)})", ROWS)
        cur.execute("flush")
        cur.execute(f"select * from {table} order by k")
        assert cur.fetchall() == ROWS
        # parameters in WHERE, typed by the server from the column they meet
        cur.execute(f"select k from {table} where c = %s and i = %s and l = %s", (1 << 40, dt.date(2024, 2, 29),
                                                                                 ROWS[0][11]))
        assert cur.fetchall() == [(1,)]


def test_prepared_statements_and_deallocate(conn: psycopg.Connection, table: str) -> None:
    conn.execute(f"insert into {table} (k, b) values (1, 10), (2, 20), (3, 30)")
    conn.execute("flush")
    for i in range(8):  # psycopg prepares a statement run 5 times and more
        assert conn.execute(f"select b from {table} where k = %s", (i % 3 + 1,), prepare=True).fetchone() == \
            ((i % 3 + 1) * 10,)
    conn.execute("deallocate all")
    assert conn.execute(f"select count(*) from {table}").fetchone() == (3,)
    with pytest.raises(errors.InvalidSqlStatementName):
        conn.execute("deallocate nope")


def test_pipeline(conn: psycopg.Connection, table: str) -> None:
    with conn.pipeline():
        conn.execute(f"insert into {table} (k, h) values (%s, %s)", (1, "one"))
        conn.execute(f"insert into {table} (k, h) values (%s, %s)", (2, "two"))
        conn.execute("flush")
        cur = conn.execute(f"select h from {table} order by k")
        count = conn.execute(f"select count(*) from {table} where k > %s", (0,))
    assert cur.fetchall() == [("one",), ("two",)]
    assert count.fetchone() == (2,)
    # an error inside the pipeline fails it, and the connection goes on
    with pytest.raises(errors.UndefinedTable), conn.pipeline():
        conn.execute("select * from missing_in_pipeline")
        conn.execute("select 1")
    assert conn.execute("select 2").fetchone() == (2,)


def test_copy_from_stdin(conn: psycopg.Connection, table: str) -> None:
    with conn.cursor() as cur:
        with cur.copy(f"copy {table} (k, b, h, i) from stdin") as copy:
            for k in range(1, 2001):
                copy.write_row((k, k * 2, f"row {k}", dt.date(2024, 1, 1) + dt.timedelta(days=k % 30)))
        assert cur.rowcount == 2000
        with cur.copy(f"copy {table} (k, h) from stdin with (format csv, header true)") as copy:
            copy.write('k,h\n5001,"quoted, text"\n5002,\n')
    conn.execute("flush")
    assert conn.execute(f"select count(*), sum(b), max(i) from {table}").fetchone() == \
        (2002, sum(k * 2 for k in range(1, 2001)), dt.date(2024, 1, 30))
    assert conn.execute(f"select h from {table} where k >= 5001 order by k").fetchall() == [("quoted, text",), (None,)]
    with pytest.raises(errors.UndefinedColumn), conn.cursor() as cur, cur.copy(f"copy {table} (nope) from stdin"):
        pass
    assert conn.execute("select 1").fetchone() == (1,)


def test_cancel_a_long_query(playground: PlaygroundProcess) -> None:
    with playground.connect() as conn:
        long_query = "select count(*) from generate_series(1, 100000) a, generate_series(1, 100000) b where a <> b"
        started = threading.Event()
        result: list[BaseException] = []

        def run() -> None:
            started.set()
            try:
                conn.execute(long_query)
            except BaseException as e:  # noqa: BLE001 - handed to the test thread
                result.append(e)

        worker = threading.Thread(target=run)
        worker.start()
        started.wait()
        with playground.connect() as watcher:
            while not any(r[6] == long_query for r in watcher.execute("show processlist").fetchall()):
                pass
        conn.cancel_safe()
        worker.join()
        assert len(result) == 1 and isinstance(result[0], errors.QueryCanceled)
        assert conn.execute("select 1").fetchone() == (1,)


def test_statement_timeout(playground: PlaygroundProcess) -> None:
    """``SET statement_timeout`` takes PostgreSQL's units and stops a statement that runs longer,
    with PostgreSQL's error; the session goes on, and 0 turns it off."""
    long_query = "select count(*) from generate_series(1, 100000) a, generate_series(1, 100000) b where a <> b"
    with playground.connect() as conn:
        conn.execute("SET statement_timeout = '300ms'")
        assert conn.execute("SHOW statement_timeout").fetchone() == ("300ms",)
        started = time.monotonic()
        with pytest.raises(errors.QueryCanceled, match="canceling statement due to statement timeout"):
            conn.execute(long_query)
        assert time.monotonic() - started < 30
        assert conn.execute("select 1").fetchone() == (1,)  # a short statement is not hit
        with pytest.raises(errors.InvalidParameterValue, match='Valid units|invalid value'):
            conn.execute("SET statement_timeout = '1 fortnight'")
        conn.execute("SET statement_timeout = '1min'")
        assert conn.execute("SHOW statement_timeout").fetchone() == ("1min",)
        conn.execute("SET statement_timeout = 0")
        assert conn.execute("select count(*) from generate_series(1, 1000)").fetchone() == (1000,)


def test_transactions_auto_commit(playground: PlaygroundProcess, table: str) -> None:
    with psycopg.connect(playground.dsn) as conn:  # not autocommit: psycopg sends BEGIN
        conn.execute(f"insert into {table} (k) values (1)")
        with pytest.raises(errors.UndefinedTable):
            conn.execute("select * from nope")
        conn.rollback()
        conn.execute("flush")
        with conn.transaction():
            conn.execute("savepoint s")
            conn.execute("rollback to savepoint s")
            assert conn.execute(f"select count(*) from {table}").fetchone() == (1,)


def test_psycopg2(playground: PlaygroundProcess, table: str) -> None:
    conn = psycopg2.connect(host="127.0.0.1", port=playground.port, user="root", dbname="dev")
    try:
        cur = conn.cursor()
        cur.executemany(f"insert into {table} values ({', '.join(['%s'] * 12)})", ROWS)
        cur.execute("flush")
        cur.execute(f"select * from {table} order by k")
        got = cur.fetchall()
        assert [r[:10] for r in got] == [r[:10] for r in ROWS]
        try:
            cur.execute("select * from nope")
        except psycopg2.errors.UndefinedTable:
            conn.rollback()
        cur.execute("select count(*) from %s" % table)  # noqa: UP031 - a name, not a value
        assert cur.fetchone() == (3,)
        conn.commit()
    finally:
        conn.close()


# Parameters whose type is not the column's: the fast path reads plain literals, the typed statement
# answers where they would store something else (a double's 2.5 into an integer rounds to even).
CONVERTED = "k int primary key, a smallint, b int, f numeric(10, 2), d real, h varchar, g boolean"
CONVERTED_ROWS = [
    (1, 7, 2.5, 3, 0.1, 42, True),
    (2, Decimal("2.5"), 3.5, Decimal("1.005"), 1, 1.5, False),
    (3, "12", -2.5, 1e3, Decimal("0.25"), "x", "t"),
    (4, None, 1 << 20, 0.125, 1e-3, None, None),
]
OUT_OF_RANGE = [(5, 70_000, 1, 1, 1, "a", True), (6, 1, 1 << 40, 1, 1, "a", True), (7, 1, 1, 1e9, 1, "a", True)]


@pytest.mark.parametrize("commit", ["on", "off"])
def test_parameterized_inserts_store_what_postgres_stores(conn: psycopg.Connection, oracle_dsn: str,
                                                          commit: str) -> None:
    name = unique_name("converted")
    conn.execute(f"SET synchronous_commit = {commit}")
    with psycopg.connect(oracle_dsn, autocommit=True) as pg:
        for c in (conn, pg):
            c.execute(f"create table {name} ({CONVERTED})")
            for row in CONVERTED_ROWS:
                c.execute(f"insert into {name} values (%s, %s, %s, %s, %s, %s, %s)", row)
        for row in OUT_OF_RANGE:  # the same error as PostgreSQL's, and nothing stored
            with pytest.raises(psycopg.Error) as ours:
                conn.execute(f"insert into {name} values (%s, %s, %s, %s, %s, %s, %s)", row)
            with pytest.raises(psycopg.Error) as theirs:
                pg.execute(f"insert into {name} values (%s, %s, %s, %s, %s, %s, %s)", row)
            assert (ours.value.sqlstate, str(ours.value)) == (theirs.value.sqlstate, str(theirs.value))
        conn.execute("flush")
        query = f"select * from {name} order by k"
        assert conn.execute(query).fetchall() == pg.execute(query).fetchall()
        pg.execute(f"drop table {name}")
    conn.execute(f"drop table {name}")


def test_asynchronous_commit_as_postgres_shows_it_and_flush_sees_every_write(playground: PlaygroundProcess,
                                                                            table: str) -> None:
    with psycopg.connect(PG_ADMIN, autocommit=True) as pg:
        values = ("off", "on", "local", "remote_write", "remote_apply", "true", "no", "1")
        for v in values:
            pg.execute(f"SET synchronous_commit = {v}")
            shown = pg.execute("SHOW synchronous_commit").fetchone()
            with playground.connect() as c:
                c.execute(f"SET synchronous_commit = {v}")
                assert c.execute("SHOW synchronous_commit").fetchone() == shown
        with pytest.raises(psycopg.Error) as theirs:
            pg.execute("SET synchronous_commit = sometimes")
    with playground.connect() as c, pytest.raises(psycopg.Error) as ours:
        c.execute("SET synchronous_commit = sometimes")
    assert (ours.value.sqlstate, str(ours.value), ours.value.diag.message_hint) == \
        (theirs.value.sqlstate, str(theirs.value), theirs.value.diag.message_hint)

    # four connections write asynchronously (each row twice: the later write wins, so the order held);
    # one FLUSH makes every acknowledged write visible
    def write(first: int) -> None:
        with playground.connect() as c:
            c.execute("SET synchronous_commit = off")
            for k in range(first, first + 250):
                c.execute(f"insert into {table} (k, b) values (%s, %s)", (k, -1))
                c.execute(f"insert into {table} (k, b) values (%s, %s)", (k, k % 7))

    writers = [threading.Thread(target=write, args=(i * 1000,)) for i in range(4)]
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    with playground.connect() as c:
        c.execute("flush")
        assert c.execute(f"select count(*), sum(b), min(b) from {table}").fetchone() == \
            (1000, sum(k % 7 for i in range(4) for k in range(i * 1000, i * 1000 + 250)), 0)


def test_list_parameters_as_postgres_takes_them(conn: psycopg.Connection, oracle_dsn: str) -> None:
    """A Python list is an array parameter (``= ANY(%s)``), sent in text format (``{1,3}``)."""
    name = unique_name("lists")
    queries = [(f"select k from {name} where k = any(%s) order by k", ([1, 3, 99],)),
               (f"select k from {name} where c = any(%s) order by k", ([1 << 40, -5],)),
               (f"select k from {name} where h = any(%s) order by k", (["b", 'q"uo,te', "zz"],)),
               (f"select k from {name} where d = any(%s) order by k", ([0.5, 2.5],)),
               (f"select k from {name} where k <> all(%s) order by k", ([2],)),
               ("select %s::int[]", ([1, None, 3],))]
    with psycopg.connect(oracle_dsn, autocommit=True) as pg:
        for c in (conn, pg):
            c.execute(f"create table {name} (k int primary key, c bigint, h varchar, d double precision)")
            c.execute(f"insert into {name} values (1, {1 << 40}, 'a', 0.5), (2, 2, 'b', 1.5), "
                      f"(3, -5, 'q\"uo,te', 2.5)")
        conn.execute("flush")
        for sql, params in queries:
            assert conn.execute(sql, params).fetchall() == pg.execute(sql, params).fetchall(), sql
        pg.execute(f"drop table {name}")
    conn.execute(f"drop table {name}")


def test_discard_all_and_transactional_settings_as_postgresql(playground: PlaygroundProcess, oracle_dsn: str) -> None:
    """What a connection pooler relies on between clients: DISCARD ALL resets every setting to what the
    client connected with and drops the prepared statements (refused in a transaction block, 25001);
    and a rolled-back SET, a SET LOCAL — what PostgreSQL does, over the wire."""
    seen = {}
    for name, dsn in (("risingspark", playground.dsn), ("postgresql", oracle_dsn)):
        with psycopg.connect(dsn, autocommit=True, application_name="rs_app",
                             options="-c statement_timeout=7s") as c:
            zone = c.execute("SHOW TimeZone").fetchone()[0]
            c.execute("SET TimeZone = 'Asia/Kolkata'")
            c.execute("SET statement_timeout = '5s'")
            c.execute("SET application_name = 'other'")
            with pytest.raises(errors.InvalidParameterValue):  # (outside a block: a WARNING, and still checked)
                c.execute("SET LOCAL statement_timeout = 'abc'")
            assert c.pgconn.prepare(b"rs_discard_s1", b"SELECT 1").status == psycopg.pq.ExecStatus.COMMAND_OK
            assert c.pgconn.exec_prepared(b"rs_discard_s1", []).status == psycopg.pq.ExecStatus.TUPLES_OK
            c.execute("BEGIN")
            with pytest.raises(errors.ActiveSqlTransaction, match="DISCARD ALL cannot run inside a transaction block"):
                c.execute("DISCARD ALL")
            c.execute("ROLLBACK")
            c.execute("DISCARD ALL")
            after = c.pgconn.exec_prepared(b"rs_discard_s1", [])
            c.execute("BEGIN")
            c.execute("SET LOCAL statement_timeout = '2s'")
            local = c.execute("SHOW statement_timeout").fetchone()[0]
            c.execute("SET statement_timeout = '3s'")
            c.execute("ROLLBACK")
            seen[name] = (c.execute("SHOW TimeZone").fetchone()[0] == zone, c.execute("SHOW statement_timeout").fetchone(),
                          c.execute("SHOW application_name").fetchone(),
                          after.error_field(psycopg.pq.DiagnosticField.SQLSTATE), local)
    assert seen["risingspark"] == seen["postgresql"] == (True, ("7s",), ("rs_app",), b"26000", "2s")
