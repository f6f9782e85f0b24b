"""INTERSECT, EXCEPT (and ALL), UNION CORRESPONDING, GROUPING SETS / ROLLUP / CUBE with grouping(),
DISTINCT ON and subqueries in FROM without an alias, in materialized views equal to PostgreSQL — rows with duplicates and NULLs, backfilled while random
changes go on, and maintained after. CORRESPONDING is RisingWave's (PostgreSQL has none): its oracle
is the same union over the corresponding columns written out."""

from __future__ import annotations

import random

import psycopg
import pytest

from conftest import PlaygroundProcess, unique_name
from support.oracle import assert_same, copy_table
from support.workloads import backfills_at_once

pytestmark = pytest.mark.e2e

# (view query, PostgreSQL's query for the same rows); {a}, {b}: (id, x, y) with repeated (x, y)
QUERIES = {
    "intersect": ("SELECT x, y FROM {a} INTERSECT SELECT x, y FROM {b}", None),
    "except": ("SELECT x, y FROM {a} EXCEPT SELECT x, y FROM {b}", None),
    "intersect_all": ("SELECT x, y FROM {a} INTERSECT ALL SELECT x, y FROM {b}", None),
    "except_all": ("SELECT x, y FROM {a} EXCEPT ALL SELECT x, y FROM {b}", None),
    "except_types": ("SELECT x FROM {a} EXCEPT SELECT y::numeric / 2 FROM {b}", None),
    "nested": ("SELECT x FROM {a} UNION ALL SELECT x FROM {b} EXCEPT SELECT y FROM {b}", None),
    "agg_over_except_all": ("SELECT x, count(*) AS n FROM (SELECT x, y FROM {a} EXCEPT ALL SELECT x, y FROM {b}) d "
                            "GROUP BY x", None),
    "corresponding": ("SELECT id, x, y FROM {a} UNION CORRESPONDING SELECT y, x FROM {b}",
                      "SELECT x, y FROM {a} UNION SELECT x, y FROM {b}"),
    "corresponding_by": ("SELECT id, x, y FROM {a} UNION ALL CORRESPONDING BY (y) SELECT y, x FROM {b}",
                         "SELECT y FROM {a} UNION ALL SELECT y FROM {b}"),
    "no_alias": ("SELECT x, n FROM (SELECT x, count(*) AS n FROM {a} GROUP BY x) WHERE n > 1",
                 "SELECT x, n FROM (SELECT x, count(*) AS n FROM {a} GROUP BY x) AS s WHERE n > 1"),
    "rollup": ("SELECT x, y, count(*) AS n, sum(id) AS s, grouping(x, y) AS g FROM {a} GROUP BY ROLLUP (x, y)", None),
    "cube": ("SELECT x, y, count(*) AS n FROM {a} GROUP BY CUBE (x, y) HAVING count(*) > 1", None),
    "grouping_sets": ("SELECT x, y, max(id) AS m, grouping(y) AS gy FROM {b} GROUP BY GROUPING SETS ((x), (y), ())",
                      None),
    "group_plus_rollup": ("SELECT x, y, count(*) AS n FROM {a} GROUP BY x, ROLLUP (y)", None),
    "distinct_on": ("SELECT DISTINCT ON (x) x, id, y FROM {a} ORDER BY x, id DESC", None),
    "distinct_on_expr": ("SELECT DISTINCT ON (x % 2) x % 2 AS parity, id FROM {b} ORDER BY x % 2, y, id", None),
}


def _dml(conn: psycopg.Connection, rng: random.Random, a: str, b: str) -> None:
    for _ in range(25):
        t = rng.choice([a, b])
        r = rng.random()
        value = rng.choice(["NULL", 0, 1, 2, 3])
        if r < 0.45:
            conn.execute(f"INSERT INTO {t} VALUES ({rng.randrange(1000, 9000)}, {value}, {rng.choice(['NULL', 0, 1])})")
        elif r < 0.7:
            conn.execute(f"UPDATE {t} SET x = {value} WHERE id = {rng.randrange(1, 60)}")
        else:
            conn.execute(f"DELETE FROM {t} WHERE id = {rng.randrange(1, 60)}")


def test_set_operations_match_postgres(playground: PlaygroundProcess, oracle_dsn: str) -> None:
    rng = random.Random(14)
    a, b = unique_name("sa"), unique_name("sb")
    with playground.connect() as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        for t in (a, b):
            conn.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, x INT, y INT)")
        conn.execute(f"INSERT INTO {a} SELECT i, CASE WHEN i % 9 = 0 THEN NULL ELSE i % 4 END, i % 2 "
                     f"FROM generate_series(1, 60) AS s(i)")
        conn.execute(f"INSERT INTO {b} SELECT i, CASE WHEN i % 7 = 0 THEN NULL ELSE i % 3 END, i % 2 "
                     f"FROM generate_series(1, 40) AS s(i)")
        conn.execute("FLUSH")
        with backfills_at_once(conn):  # each view backfills under the writes after its CREATE
            conn.execute("SET background_ddl = true")
            for name, (q, _) in QUERIES.items():
                conn.execute(f"CREATE MATERIALIZED VIEW {a}_{name} AS {q.format(a=a, b=b)}")
                _dml(conn, rng, a, b)
            conn.execute("WAIT")
        for _ in range(2):
            _dml(conn, rng, a, b)
            conn.execute("FLUSH")
            for t in (a, b):
                copy_table(conn, pg, t)
            failures = []
            for name, (q, oracle) in QUERIES.items():
                try:
                    assert_same(conn, pg, f"{a}_{name}", (oracle or q).format(a=a, b=b))
                except AssertionError as e:
                    failures.append(f"{name}: {e}")
            assert not failures, "\n".join(failures)
        for t in (a, b):
            conn.execute(f"DROP TABLE {t} CASCADE")


def test_corresponding_errors(playground: PlaygroundProcess) -> None:
    a = unique_name("sc")
    with playground.connect() as conn:
        conn.execute(f"CREATE TABLE {a} (id INT PRIMARY KEY, x INT, y INT)")
        with pytest.raises(psycopg.errors.InvalidColumnReference, match="not in both inputs"):
            conn.execute(f"CREATE MATERIALIZED VIEW {a}_bad AS SELECT x FROM {a} UNION CORRESPONDING BY (y) "
                         f"SELECT y FROM {a}")
        with pytest.raises(psycopg.errors.InvalidColumnReference, match="no column name in common"):
            conn.execute(f"CREATE MATERIALIZED VIEW {a}_bad AS SELECT x FROM {a} UNION CORRESPONDING SELECT y FROM {a}")
        conn.execute(f"DROP TABLE {a} CASCADE")
