"""A batch query's result columns (names, order, types) and values are PostgreSQL's, and those of the
same query as a materialized view (`frontend.batch_types`): ``sum(int)`` a bigint, ``avg`` a
numeric, ``sum(real)`` a real, a window call named after its function, a USING join's column first
(`frontend.join_star`) — in the simple and the
extended protocol, and in a result streamed in batches."""

from __future__ import annotations

import psycopg
import pytest

from conftest import PlaygroundProcess
from support.oracle import normalize, rows_of

pytestmark = pytest.mark.e2e

COLUMNS = "k INT PRIMARY KEY, g INT, i INT, s SMALLINT, b BIGINT, n NUMERIC, r REAL, d DOUBLE PRECISION"
ROWS = ("SELECT x, x % 7, x * 37 % 1000 - 300, (x % 50)::SMALLINT, x::BIGINT * 1000003, (x * 0.37)::NUMERIC, "
        "(x % 9 + 0.5)::REAL, x / 4.0 FROM generate_series(1, {n}) AS x")
QUERIES = [
    "SELECT sum(i) AS si, sum(s) AS ss, sum(b) AS sb, sum(n) AS sn, sum(r) AS sr, sum(d) AS sd FROM {t}",
    "SELECT avg(i) AS ai, avg(s) AS a_s, avg(b) AS ab, avg(n) AS an, avg(r) AS ar, avg(d) AS ad FROM {t}",
    "SELECT g, sum(i) AS si, avg(i) AS ai, count(*) AS c, min(s) AS lo, max(b) AS hi FROM {t} GROUP BY g",
    "SELECT g, sum(i) * 2 AS twice, sum(i) + 1 AS plus FROM {t} WHERE k > 10 GROUP BY g HAVING count(*) > 3",
    "SELECT k, sum(i) OVER (PARTITION BY g) AS w FROM {t} WHERE k <= 50",
    "SELECT k, sum(i) OVER (PARTITION BY g), avg(n) OVER (PARTITION BY g) FROM {t} WHERE k <= 50 ORDER BY k LIMIT 20",
    "SELECT a.k, s.* FROM {t} AS a JOIN (SELECT g, sum(i) AS si, avg(b) FROM {t} GROUP BY g) AS s ON a.g = s.g "
    "WHERE a.k < 30",
    # the USING column first, as PostgreSQL lists it (DuckDB: in the left side's place)
    "SELECT * FROM {t} AS a JOIN (SELECT g, sum(i) AS si FROM {t} GROUP BY g) AS s USING (g) WHERE a.k < 30",
    "SELECT * FROM (SELECT k, i AS g FROM {t} WHERE k < 40) AS a NATURAL LEFT JOIN (SELECT g, avg(n) FROM {t} "
    "GROUP BY g) AS s ORDER BY 1 NULLS FIRST, 2",
]


def types_and_rows(conn: psycopg.Connection, query: str, *, prepare: bool = False
                   ) -> tuple[list[tuple[str, int]], list[tuple]]:
    cur = conn.cursor()
    cur.execute(query, prepare=prepare)
    columns = [(d.name, d.type_code) for d in cur.description]
    return columns, rows_of_cursor(cur)


def rows_of_cursor(cur: psycopg.Cursor) -> list[tuple]:
    return sorted((tuple(normalize(v) for v in r) for r in cur.fetchall()),
                  key=lambda r: tuple((x is None, str(type(x)), x) for x in r))


@pytest.fixture
def data(conn: psycopg.Connection, oracle_dsn: str):
    with psycopg.connect(oracle_dsn, autocommit=True) as pg:
        for c in (conn, pg):
            c.execute("DROP TABLE IF EXISTS bt_small")
            c.execute(f"CREATE TABLE bt_small ({COLUMNS})")
            c.execute("INSERT INTO bt_small " + ROWS.format(n=200))
        conn.execute("FLUSH")
        yield pg
        conn.execute("DROP TABLE bt_small CASCADE")


@pytest.mark.parametrize("prepare", [False, True], ids=["simple", "extended"])
def test_batch_aggregates_have_postgresqls_types_and_values(conn, data, prepare):
    for query in QUERIES:
        q = query.format(t="bt_small")
        got = types_and_rows(conn, q, prepare=prepare)
        want = types_and_rows(data, q)
        assert got == want, f"{q}\n  RisingSpark {got[0]} {got[1][:3]}\n  PostgreSQL  {want[0]} {want[1][:3]}"


def test_a_view_of_the_query_and_the_query_itself_agree(conn, data):
    query = QUERIES[2].format(t="bt_small")
    conn.execute(f"CREATE MATERIALIZED VIEW bt_view AS {query}")
    try:
        assert types_and_rows(conn, "SELECT * FROM bt_view") == types_and_rows(conn, query)
    finally:
        conn.execute("DROP MATERIALIZED VIEW bt_view")


def test_a_streamed_result_has_postgresqls_types(playground: PlaygroundProcess, oracle_dsn: str):
    """More rows than a result batch (65,536): the frontend sends them as a stream of batches."""
    query = "SELECT k, sum(i) OVER (PARTITION BY g) AS w, avg(i) OVER (PARTITION BY g) AS a FROM bt_big"
    with playground.connect() as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        for c in (conn, pg):
            c.execute("DROP TABLE IF EXISTS bt_big")
            c.execute(f"CREATE TABLE bt_big ({COLUMNS})")
            c.execute("INSERT INTO bt_big " + ROWS.format(n=70_000))
        conn.execute("FLUSH")
        try:
            got, want = types_and_rows(conn, query), types_and_rows(pg, query)
            assert got[0] == want[0] == [("k", 23), ("w", 20), ("a", 1700)]
            assert len(got[1]) == 70_000 and got[1] == want[1]
            assert rows_of(conn, "SELECT count(*) FROM bt_big") == [(70_000,)]
        finally:
            conn.execute("DROP TABLE bt_big")


def test_timestamptz_values_follow_the_sessions_time_zone(conn, oracle_dsn: str):
    """``SET TimeZone``: timestamptz text in the zone with its offset, and ``::date``, ``extract``
    and ``date_trunc`` of a timestamptz and an unzoned timestamptz literal computed in it
    (`frontend.pgwire.time_zone`)."""
    query = ("SELECT '2024-06-15 12:00:00+00'::timestamptz AS a, '2024-01-15 12:00:00'::timestamptz AS b, "
             "('2024-06-15 02:00:00+00'::timestamptz)::date AS c, "
             "extract(hour FROM '2024-06-15 12:00:00+00'::timestamptz) AS d, "
             "date_trunc('day', '2024-06-15 02:00:00+00'::timestamptz) AS e")

    def texts(c: psycopg.Connection) -> list[str]:
        return [v.isoformat() if hasattr(v, "isoformat") else str(v) for v in c.execute(query).fetchone()]

    with psycopg.connect(oracle_dsn, autocommit=True) as pg:
        for zone in ("Asia/Kolkata", "America/New_York"):
            for c in (conn, pg):
                c.execute(f"SET TimeZone = '{zone}'")
            assert texts(conn) == texts(pg), zone
    conn.execute("SET TimeZone = 'UTC'")
