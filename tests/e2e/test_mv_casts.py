"""Materialized views answer casts and functions as PostgreSQL does where Spark's own semantics
differ: a numeric or double cast to an integer rounds (Spark truncates), ``round`` of a double rounds
half to even, ``concat`` writes a boolean as ``t``/``f``, an unconstrained numeric's text has no
trailing zeros, ``greatest``/``least`` bind (they failed with an internal error) — after a backfill
and after changes."""

from __future__ import annotations

import psycopg
import pytest

from conftest import PlaygroundProcess, unique_name
from support.oracle import assert_same, copy_table

pytestmark = pytest.mark.e2e


def test_casts_and_functions_in_a_view_are_postgresqls(playground: PlaygroundProcess, oracle_dsn: str) -> None:
    t, m = unique_name("mvc_t"), unique_name("mvc_m")
    query = (f"SELECT id, n::int AS ni, n::bigint AS nb, n::smallint AS ns, d::int AS di, round(d) AS rd, "
             f"round(n) AS rn, concat(g, k, b) AS c, n::varchar AS nt, nc::varchar AS nct, greatest(k, 1) AS gk, "
             f"least(n, 2.0) AS ln, (nc * 2)::varchar AS nc2 FROM {t}")
    with playground.connect() as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        conn.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, n NUMERIC, nc NUMERIC(10, 2), d DOUBLE PRECISION, "
                     f"g VARCHAR, k INT, b BOOLEAN)")
        conn.execute(f"INSERT INTO {t} VALUES (1, 2.5, 2.5, 0.5, 'a', 0, true), (2, 3.5, 3.25, 1.5, 'b', 3, false), "
                     f"(3, -2.5, -2, -0.5, NULL, -4, NULL), (4, 2.7, 0.1, 2.5, 'd', 7, true), "
                     f"(5, 0.125, NULL, -2.5, 'e', NULL, false), (6, 1000, 1000, 3.49, 'f', 1, true)")
        conn.execute(f"CREATE MATERIALIZED VIEW {m} AS {query}")
        conn.execute(f"INSERT INTO {t} VALUES (7, 4.5, 4.5, 3.5, 'g', 2, false), (8, -7.5, -7.5, -1.5, 'h', 5, true)")
        conn.execute(f"UPDATE {t} SET n = 0.5, d = 4.5, b = NOT b WHERE id = 1")
        conn.execute(f"DELETE FROM {t} WHERE id = 6")
        conn.execute("FLUSH")
        copy_table(conn, pg, t)
        assert assert_same(conn, pg, m, query) == 7
