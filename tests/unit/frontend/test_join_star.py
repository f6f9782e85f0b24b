"""``SELECT *`` over USING and NATURAL joins (`frontend.join_star`): DuckDB, given the expanded
query, answers with PostgreSQL's columns, in its order, and its rows (PostgreSQL is the oracle)."""

from __future__ import annotations

import duckdb
import psycopg
import pytest
import sqlglot

from frontend.batch import _bound_columns
from frontend.join_star import expand_join_stars

TABLES = """
CREATE TABLE a (v INT, id INT, x INT);
CREATE TABLE b (w INT, id INT, x INT);
CREATE TABLE c (id INT, k INT, x INT);
INSERT INTO a VALUES (1, 1, 10), (2, 2, 20), (3, NULL, 30), (4, 4, NULL);
INSERT INTO b VALUES (5, 1, 10), (6, 3, 30), (7, NULL, 30), (8, 4, 40);
INSERT INTO c VALUES (1, 7, 10), (3, 1, 30), (9, 2, 20);
"""

QUERIES = [
    "SELECT * FROM a JOIN b USING (id)",
    "SELECT * FROM a LEFT JOIN b USING (id)",
    "SELECT * FROM a RIGHT JOIN b USING (id)",
    "SELECT * FROM a FULL JOIN b USING (id)",
    "SELECT * FROM a JOIN b USING (id, x)",
    "SELECT * FROM a JOIN b USING (x, id)",
    "SELECT * FROM a NATURAL JOIN b",
    "SELECT * FROM a NATURAL FULL JOIN b",
    "SELECT * FROM a AS l NATURAL RIGHT JOIN b AS r",
    "SELECT * FROM a JOIN b USING (id) JOIN c ON c.k = a.v",
    "SELECT * FROM a LEFT JOIN b USING (id) FULL JOIN c USING (id)",
    "SELECT * FROM c, a JOIN b USING (id)",
    "SELECT * FROM a CROSS JOIN (SELECT 7 AS w) AS d JOIN b USING (w)",
    "SELECT *, a.v * 10 AS v10 FROM a JOIN b USING (id)",
    "SELECT * FROM (SELECT * FROM a NATURAL JOIN b) AS s FULL JOIN c USING (id)",
    "SELECT * FROM a JOIN b USING (id) ORDER BY 1, 2",
    "SELECT * FROM a JOIN b USING (id) UNION ALL SELECT * FROM a JOIN b USING (id) ORDER BY 1",
    "WITH q AS (SELECT id, v FROM a) SELECT * FROM q JOIN b USING (id)",
    "SELECT t.* FROM (SELECT * FROM a NATURAL FULL JOIN b) AS t WHERE t.id > 1",
    "WITH RECURSIVE r(id) AS (SELECT 1 UNION ALL SELECT id + 1 FROM r WHERE id < 3) SELECT * FROM a JOIN r USING (id)",
]


@pytest.fixture(scope="module")
def engines(oracle_dsn: str):
    con = duckdb.connect()
    con.execute(TABLES)
    with psycopg.connect(oracle_dsn, autocommit=True) as pg:
        pg.execute("CREATE SCHEMA join_star")
        pg.execute("SET search_path = join_star")
        pg.execute(TABLES)
        yield con, pg
        pg.execute("DROP SCHEMA join_star CASCADE")


@pytest.mark.parametrize("sql", QUERIES)
def test_star_over_a_merging_join_lists_postgresqls_columns(engines, sql: str):
    con, pg = engines
    query = expand_join_stars(sqlglot.parse_one(sql, read="postgres"), _bound_columns(con))
    rel = con.sql(query.sql(dialect="duckdb"))
    got_names, got = rel.columns, rel.fetchall()
    cur = pg.execute(sql)
    want_names, want = [d.name for d in cur.description], cur.fetchall()
    assert got_names == want_names
    key = lambda row: tuple((v is None, v) for v in row)  # noqa: E731
    if "ORDER BY" in sql:  # (ties aside: both order by the same leading columns)
        assert [r[:2] for r in got] == [r[:2] for r in want]
    assert sorted(got, key=key) == sorted(want, key=key)


def test_what_cannot_be_expanded_is_left_to_duckdb(engines):
    con, _ = engines
    for sql in ["SELECT * FROM a JOIN (b JOIN c USING (x)) USING (id)",  # parenthesized: no alias
                "SELECT * FROM a JOIN b USING (nothing)"]:  # DuckDB reports the error
        query = sqlglot.parse_one(sql, read="postgres")
        assert expand_join_stars(query.copy(), _bound_columns(con)) == query
