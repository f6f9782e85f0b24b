"""Joins in materialized views, incrementally maintained and backfilled, equal to PostgreSQL:
inner, left, right and full outer equi-joins, multi-column keys, a residual condition, a self-join,
a three-way join, and aggregation over a join — under random changes to every side."""

from __future__ import annotations

import random

import psycopg
import pytest

from conftest import PlaygroundProcess, unique_name
from support.oracle import assert_same, copy_table, use_strategy

pytestmark = pytest.mark.e2e

QUERIES = {
    "inner": "SELECT o.id, o.amount, c.name FROM {o} o JOIN {c} c ON o.cid = c.id",
    "left": "SELECT o.id, c.name, c.tier FROM {o} o LEFT JOIN {c} c ON o.cid = c.id",
    "right": "SELECT c.id AS cid, o.id AS oid, o.amount FROM {o} o RIGHT JOIN {c} c ON o.cid = c.id",
    "full": "SELECT o.id AS oid, c.id AS cid, c.tier FROM {o} o FULL OUTER JOIN {c} c ON o.cid = c.id",
    "multi_key": "SELECT o.id, c.name FROM {o} o JOIN {c} c ON o.cid = c.id AND o.region = c.region",
    "residual": "SELECT o.id, c.name FROM {o} o JOIN {c} c ON o.cid = c.id AND o.amount > c.tier * 10",
    "self": "SELECT a.id AS a_id, b.id AS b_id FROM {o} a JOIN {o} b ON a.cid = b.cid AND a.id < b.id",
    "three_way": "SELECT o.id, c.name, r.label FROM {o} o JOIN {c} c ON o.cid = c.id "
                 "LEFT JOIN {r} r ON c.region = r.region",
    "agg": "SELECT c.tier, count(*) AS n, sum(o.amount) AS total FROM {o} o JOIN {c} c ON o.cid = c.id "
           "GROUP BY c.tier",
}


def _dml(conn: psycopg.Connection, rng: random.Random, o: str, c: str) -> None:
    for _ in range(20):
        r = rng.random()
        if r < 0.3:
            conn.execute(f"INSERT INTO {o} VALUES ({rng.randrange(1000, 5000)}, {rng.choice(['NULL', 1, 2, 3, 7, 9])}, "
                         f"{rng.randrange(100)}, {rng.randrange(3)})")
        elif r < 0.5:
            conn.execute(f"UPDATE {o} SET cid = {rng.randrange(1, 12)} WHERE id = {rng.randrange(1, 300)}")
        elif r < 0.6:
            conn.execute(f"DELETE FROM {o} WHERE id = {rng.randrange(1, 300)}")
        elif r < 0.75:
            conn.execute(f"INSERT INTO {c} VALUES ({rng.randrange(1, 15)}, 'n{rng.randrange(99)}', "
                         f"{rng.randrange(1, 4)}, {rng.randrange(3)})")
        elif r < 0.9:
            conn.execute(f"UPDATE {c} SET tier = tier + 1 WHERE id = {rng.randrange(1, 12)}")
        else:
            conn.execute(f"DELETE FROM {c} WHERE id = {rng.randrange(1, 12)}")


@pytest.mark.parametrize("strategy", ["ARRANGEMENT_BACKFILL", "NO_SHUFFLE_BACKFILL"])
def test_joins_match_postgres(playground: PlaygroundProcess, oracle_dsn: str, strategy: str) -> None:
    rng = random.Random(strategy)
    o, c, r = unique_name("ord"), unique_name("cust"), unique_name("reg")
    with playground.connect() as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        use_strategy(conn, strategy)
        conn.execute(f"CREATE TABLE {o} (id INT PRIMARY KEY, cid INT, amount INT, region INT)")
        conn.execute(f"CREATE TABLE {c} (id INT PRIMARY KEY, name VARCHAR, tier INT, region INT)")
        conn.execute(f"CREATE TABLE {r} (region INT, label VARCHAR)")  # no primary key: a hidden row id
        conn.execute(f"INSERT INTO {o} SELECT i, CASE WHEN i % 13 = 0 THEN NULL ELSE i % 11 END, i % 97, i % 3 "
                     f"FROM generate_series(1, 300) AS s(i)")
        conn.execute(f"INSERT INTO {c} SELECT i, 'c' || i, i % 3, i % 3 FROM generate_series(1, 8) AS s(i)")
        conn.execute(f"INSERT INTO {r} VALUES (0, 'zero'), (1, 'one'), (1, 'uno')")
        conn.execute("FLUSH")
        for name, q in QUERIES.items():
            conn.execute(f"CREATE MATERIALIZED VIEW {o}_{name} AS {q.format(o=o, c=c, r=r)}")
            _dml(conn, rng, o, c)  # changes while the next views backfill
        for _ in range(3):
            _dml(conn, rng, o, c)
            conn.execute("FLUSH")
        conn.execute(f"DELETE FROM {r} WHERE label = 'uno'")
        conn.execute("FLUSH")
        for t in (o, c, r):
            copy_table(conn, pg, t)
        for name, q in QUERIES.items():
            assert_same(conn, pg, f"{o}_{name}", q.format(o=o, c=c, r=r))
