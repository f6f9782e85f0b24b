"""min/max with deletes, DISTINCT aggregates, string_agg, array_agg, bool_and/bool_or and FILTER in materialized
views: created over existing data (so they backfill) under each backfill strategy, then updates and
deletes that remove the current minimum and maximum; MVs (and an MV on one of them) equal PostgreSQL."""

from __future__ import annotations

import psycopg
import pytest

from conftest import PlaygroundProcess, unique_name
from support.oracle import assert_same, copy_table, rows_of, use_strategy

pytestmark = pytest.mark.e2e

QUERIES = {
    "grouped": "SELECT g, min(x) AS lo, max(x) AS hi, min(s) AS smin, max(m) AS mmax, count(DISTINCT x) AS cd, "
               "sum(DISTINCT x) AS sd, avg(DISTINCT m) AS ad, bool_and(b) AS band, bool_or(b) AS bor, "
               "string_agg(s, ',' ORDER BY y DESC, id) AS sa, count(*) AS n, array_agg(x ORDER BY y DESC, id) AS xs "
               "FROM {t} GROUP BY g",
    "global": "SELECT min(x) AS lo, max(m) AS hi, count(DISTINCT s) AS cs, string_agg(s, '-' ORDER BY id) AS sa, "
              "bool_and(b) AS band, array_agg(DISTINCT s) AS ss FROM {t} WHERE x > 10",
    "filtered": "SELECT g, count(*) FILTER (WHERE b) AS nb, max(x) FILTER (WHERE s = 'a') AS xa, "
                "string_agg(DISTINCT s, '|' ORDER BY s DESC) AS ds, array_agg(m ORDER BY id) AS ms FROM {t} GROUP BY g "
                "HAVING min(y) < 3",
}
# an MV on the grouped MV, itself with materialized input states
ON_MV = "SELECT min(lo) AS lo, max(hi) AS hi, count(DISTINCT cd) AS kinds, string_agg(sa, ';' ORDER BY g) AS all_sa, " \
        "bool_or(band) AS any_band, array_agg(hi ORDER BY g DESC) AS his FROM {mv}"


def _rows(n: int) -> list[tuple]:
    out = []
    for i in range(1, n + 1):
        x = None if i % 11 == 0 else (i * 37) % 500
        s = None if i % 13 == 0 else "abcde"[i % 5] + ("x" if i % 3 == 0 else "")
        m = None if i % 7 == 0 else f"{(i * 53) % 1000 / 4:.2f}"
        b = None if i % 17 == 0 else (i % 5 != 0)
        out.append((i, i % 9, x, s, i % 4 if i % 19 else None, m, b))
    return out


def _sql_row(r: tuple) -> str:
    return "(" + ", ".join("NULL" if v is None else f"'{v}'" if isinstance(v, str) else str(v).lower()
                           if isinstance(v, bool) else str(v) for v in r) + ")"


@pytest.mark.parametrize("strategy", ["SNAPSHOT_BACKFILL", "ARRANGEMENT_BACKFILL", "NO_SHUFFLE_BACKFILL"])
def test_full_aggregates_match_postgres(playground: PlaygroundProcess, oracle_dsn: str, strategy: str) -> None:
    t = unique_name("fullagg")
    empty = f"{t}_empty"
    with playground.connect() as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        use_strategy(conn, strategy)
        for name in (t, empty):
            conn.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, g INT, x INT, s VARCHAR, y INT, "
                         f"m NUMERIC(10,2), b BOOLEAN)")
        conn.execute(f"INSERT INTO {t} VALUES " + ", ".join(_sql_row(r) for r in _rows(1500)))
        conn.execute("FLUSH")
        for name, q in QUERIES.items():
            conn.execute(f"CREATE MATERIALIZED VIEW {t}_{name} AS {q.format(t=t)}")
            conn.execute(f"CREATE MATERIALIZED VIEW {empty}_{name} AS {q.format(t=empty)}")
        conn.execute(f"CREATE MATERIALIZED VIEW {t}_on_mv AS {ON_MV.format(mv=f'{t}_grouped')}")
        plan = "\n".join(r[0] for r in conn.execute(
            f"EXPLAIN CREATE MATERIALIZED VIEW {t}_explained AS {QUERIES['grouped'].format(t=t)}").fetchall())
        assert "count(distinct x)" in plan and "string_agg(s, ',':Varchar order_by(y DESC, id ASC))" in plan
        assert "array_agg(x order_by(y DESC, id ASC))" in plan

        # remove the current extremes: of every group, by delete and by update, and a whole group
        extremes = conn.execute(f"SELECT g, min(x), max(x) FROM {t} GROUP BY g").fetchall()
        for g, lo, hi in extremes:
            conn.execute(f"DELETE FROM {t} WHERE g = %s AND x = %s", (g, lo))
            conn.execute(f"UPDATE {t} SET x = x - 250, s = 'zz', b = NOT b WHERE g = %s AND x = %s", (g, hi))
        conn.execute(f"DELETE FROM {t} WHERE g = 4")
        conn.execute(f"UPDATE {t} SET s = NULL, m = m + 1000 WHERE id % 10 = 3")
        conn.execute(f"INSERT INTO {t} VALUES (5001, 4, 7, 'a', 1, 1.50, true), (5002, 4, NULL, NULL, 2, NULL, NULL)")
        conn.execute("FLUSH")
        copy_table(conn, pg, t)
        copy_table(conn, pg, empty)
        for name, q in QUERIES.items():
            assert assert_same(conn, pg, f"{t}_{name}", q.format(t=t)) > 0
            assert_same(conn, pg, f"{empty}_{name}", q.format(t=empty))
        assert conn.execute(f"SELECT * FROM {empty}_global").fetchall() == [(None, None, 0, None, None, None)]
        # array_agg in batch queries too, in text and binary formats (int4[] and varchar[] columns)
        batch = f"SELECT g, array_agg(x ORDER BY id) AS xs, array_agg(s ORDER BY id DESC) AS ss FROM {t} GROUP BY g"
        assert rows_of(conn, batch) == rows_of(pg, batch)
        with conn.cursor(binary=True) as cur:
            cur.execute(batch + " ORDER BY g")
            assert [d.type_code for d in cur.description] == [23, 1007, 1015]
            assert sorted(cur.fetchall()) == sorted(pg.execute(batch).fetchall())
        pg.execute(f'DROP TABLE IF EXISTS "{t}_grouped_pg"')
        pg.execute(f'CREATE TABLE "{t}_grouped_pg" AS {QUERIES["grouped"].format(t=t)}')
        assert_same(conn, pg, f"{t}_on_mv", ON_MV.format(mv=f'"{t}_grouped_pg"'))

        # a global aggregate follows its input down to nothing and back
        conn.execute(f"DELETE FROM {t}")
        conn.execute("FLUSH")
        assert conn.execute(f"SELECT * FROM {t}_global").fetchall() == [(None, None, 0, None, None, None)]
        assert conn.execute(f"SELECT count(*) FROM {t}_grouped").fetchone() == (0,)
        conn.execute(f"INSERT INTO {t} VALUES (1, 1, 20, 'q', 1, 2.25, false), (2, 1, 30, 'q', 0, 1.00, true)")
        conn.execute("FLUSH")
        assert conn.execute(f"SELECT * FROM {t}_global").fetchall() == [(20, 2.25, 1, "q-q", False, ["q"])]
        assert conn.execute(f"SELECT lo, hi, cd, sa, band, bor, xs FROM {t}_grouped").fetchall() == [
            (20, 30, 2, "q,q", False, True, [20, 30])]


def test_unsupported_aggregates_fail_at_create(conn: psycopg.Connection) -> None:
    t = unique_name("aggerr")
    conn.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, s VARCHAR)")
    with pytest.raises(psycopg.errors.FeatureNotSupported, match="array_agg"):
        conn.execute(f"CREATE MATERIALIZED VIEW {t}_a AS SELECT array_agg(id) FILTER (WHERE s = 'a') FROM {t}")
    with pytest.raises(psycopg.errors.InvalidColumnReference):
        conn.execute(f"CREATE MATERIALIZED VIEW {t}_c AS SELECT string_agg(DISTINCT s, ',' ORDER BY id) FROM {t}")
    with pytest.raises(psycopg.errors.UndefinedTable):
        conn.execute(f"SELECT * FROM {t}_a")
    with pytest.raises(psycopg.errors.FeatureNotSupported, match="array"):
        conn.execute(f"CREATE TABLE {t}_arr (id INT PRIMARY KEY, xs INT[])")
    with pytest.raises(psycopg.errors.FeatureNotSupported, match="array"):
        conn.execute(f"CREATE TABLE {t}_ctas AS SELECT array_agg(id) AS ids FROM {t}")
    # a view is a stored query: array_agg works there as in any batch query
    conn.execute(f"CREATE VIEW {t}_v AS SELECT array_agg(id ORDER BY id) AS ids FROM {t}")
    conn.execute(f"INSERT INTO {t} VALUES (2, 'b'), (1, NULL)")
    conn.execute("FLUSH")
    assert conn.execute(f"SELECT ids FROM {t}_v").fetchall() == [([1, 2],)]
