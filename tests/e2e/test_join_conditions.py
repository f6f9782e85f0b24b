"""Joins as RisingWave's SQL writes them, in materialized views equal to PostgreSQL: comma joins
with the join condition in WHERE (ordered by their equalities, whatever the FROM order), CROSS
JOIN, a join with a one-row side, NATURAL JOIN and USING (SELECT * with the merged columns first; a FULL join's as ``coalesce``),
``IS NOT DISTINCT FROM`` keys (NULL matches NULL), non-equi conditions beside an equi key, and an
outer join's ON condition over its nullable side — backfilled while random changes go on, and
maintained after."""

from __future__ import annotations

import random

import psycopg
import pytest

from conftest import PlaygroundProcess, unique_name
from support.oracle import assert_same, copy_table, use_strategy
from support.workloads import backfills_at_once

pytestmark = pytest.mark.e2e

# {o}: orders (id, cid, amount, region); {c}: customers (id, name, tier, region); {r}: regions
# (region, label) without a primary key; {k}: a 3-row table of tiers (tier, label); {w}: wide keys
# (id BIGINT, cid BIGINT, amount NUMERIC(10,1)), joined to the INT columns of the others.
QUERIES = {
    "comma_three": "SELECT o.id, c.name, r.label FROM {r} r, {o} o, {c} c "
                   "WHERE o.cid = c.id AND c.region = r.region AND o.amount > 20",
    "comma_residual": "SELECT o.id, c.id AS cid FROM {o} o, {c} c WHERE o.cid = c.id AND o.amount > c.tier * 20 "
                      "AND c.name <> 'c3'",
    "cross_join": "SELECT c.id, k.label FROM {c} c CROSS JOIN {k} k",
    "comma_cross_filter": "SELECT c.id, k.label FROM {c} c, {k} k WHERE c.tier >= k.tier",
    "singleton": "SELECT o.id, o.amount FROM {o} o, (SELECT avg(amount) AS a FROM {o}) s WHERE o.amount > s.a",
    "singleton_join_agg": "SELECT c.region, count(*) AS n FROM {c} c, (SELECT max(tier) AS m FROM {c}) s "
                          "WHERE c.tier = s.m GROUP BY c.region",
    "natural": "SELECT * FROM {c} NATURAL JOIN (SELECT id, region, amount FROM {o}) x",
    "using_star": "SELECT * FROM (SELECT id AS oid, region, amount FROM {o}) x JOIN (SELECT id AS cid, region, tier "
                  "FROM {c}) y USING (region) WHERE amount < 10",
    "using_left": "SELECT id, region, label FROM (SELECT id, region FROM {o}) x LEFT JOIN {r} USING (region)",
    # a FULL join's merged column is coalesce(left, right): in the star, in the select list, in WHERE
    "using_full_star": "SELECT * FROM (SELECT id AS oid, region, amount FROM {o}) x FULL JOIN {r} USING (region)",
    "natural_full": "SELECT region, oid, label FROM (SELECT id AS oid, region FROM {o}) x NATURAL FULL JOIN {r} "
                    "WHERE region IS NULL OR oid > 150",
    "not_distinct": "SELECT o.id AS oid, c.id AS cid FROM {o} o JOIN {c} c ON o.cid IS NOT DISTINCT FROM c.tier",
    "not_distinct_where": "SELECT o.id AS oid, r.label FROM {o} o, {r} r WHERE o.region IS NOT DISTINCT FROM r.region",
    "between_beside_key": "SELECT a.id AS a_id, b.id AS b_id FROM {o} a JOIN {o} b ON a.cid = b.cid "
                          "AND b.amount BETWEEN a.amount - 5 AND a.amount + 5 AND a.id <> b.id",
    "left_on_filter": "SELECT o.id, c.name FROM {o} o LEFT JOIN {c} c ON o.cid = c.id AND c.tier > 1",
    "right_where": "SELECT o.id AS oid, c.id AS cid FROM {o} o RIGHT JOIN {c} c ON o.cid = c.id WHERE c.tier < 3",
    "left_condition_both": "SELECT o.id, c.id AS cid FROM {o} o LEFT JOIN {c} c ON o.cid = c.id AND o.amount > c.tier * 30",
    "full_condition": "SELECT o.id AS oid, c.id AS cid FROM {o} o FULL JOIN {c} c ON o.cid = c.id AND o.region <> c.region",
    "exists_condition": "SELECT o.id FROM {o} o WHERE EXISTS (SELECT 1 FROM {o} o2 WHERE o2.cid = o.cid AND o2.id <> o.id)",
    "not_exists_condition": "SELECT o.id FROM {o} o WHERE o.cid IS NOT NULL AND NOT EXISTS (SELECT 1 FROM {o} o2 "
                            "WHERE o2.cid = o.cid AND o2.id <> o.id AND o2.amount > o.amount)",
    "or_factored": "SELECT o.id, c.name FROM {o} o, {c} c WHERE (o.cid = c.id AND o.amount > 50) "
                   "OR (c.id = o.cid AND c.tier = 1)",
    "not_in": "SELECT id FROM {o} WHERE cid NOT IN (SELECT tier FROM {c})",
    "not_in_no_nulls": "SELECT id FROM {c} WHERE id NOT IN (SELECT cid FROM {o} WHERE cid IS NOT NULL AND amount > 90)",
    # scalar subqueries
    "scalar_equal": "SELECT id, cid FROM {o} WHERE amount = (SELECT max(amount) FROM {o} WHERE region = 2)",
    "scalar_where": "SELECT id, amount FROM {o} WHERE amount > (SELECT avg(amount) FROM {o} WHERE region = 1)",
    "scalar_correlated": "SELECT o.id, o.amount FROM {o} o WHERE o.amount = (SELECT max(o2.amount) FROM {o} o2 "
                         "WHERE o2.cid = o.cid)",
    "scalar_correlated_expr": "SELECT c.id FROM {c} c WHERE c.tier * 30 < (SELECT 0.5 * avg(o.amount) FROM {o} o "
                              "WHERE o.cid = c.id AND o.region IS NOT NULL)",
    "scalar_having": "SELECT cid, sum(amount) AS total FROM {o} GROUP BY cid HAVING sum(amount) > "
                     "(SELECT sum(amount) * 0.08 FROM {o})",
    "scalar_in_or": "SELECT id FROM {c} WHERE tier IS NULL OR tier >= (SELECT max(tier) FROM {c})",
    # join keys of different types: both sides compare in the common type
    "key_bigint_int": "SELECT w.id, c.name FROM {w} w JOIN {c} c ON w.cid = c.id",
    "key_numeric_int_left": "SELECT o.id, w.id AS wid FROM {o} o LEFT JOIN {w} w ON o.amount = w.amount",
    "key_not_distinct_mixed": "SELECT w.id, c.id AS cid FROM {w} w JOIN {c} c ON w.cid IS NOT DISTINCT FROM c.tier",
    "scalar_equal_mixed": "SELECT id FROM {o} WHERE amount = (SELECT max(amount) FROM {w})",
}


def _dml(conn: psycopg.Connection, rng: random.Random, o: str, c: str, k: str, w: str) -> None:
    for _ in range(20):
        r = rng.random()
        if r < 0.3:
            conn.execute(f"INSERT INTO {o} VALUES ({rng.randrange(1000, 5000)}, {rng.choice(['NULL', 1, 2, 3, 7, 9])}, "
                         f"{rng.randrange(100)}, {rng.choice(['NULL', 0, 1, 2])})")
        elif r < 0.45:
            conn.execute(f"UPDATE {o} SET cid = {rng.choice(['NULL', rng.randrange(1, 12)])} "
                         f"WHERE id = {rng.randrange(1, 200)}")
        elif r < 0.55:
            conn.execute(f"UPDATE {o} SET amount = {rng.randrange(100)} WHERE id = {rng.randrange(1, 200)}")
        elif r < 0.62:
            conn.execute(f"DELETE FROM {o} WHERE id = {rng.randrange(1, 200)}")
        elif r < 0.75:
            conn.execute(f"INSERT INTO {c} VALUES ({rng.randrange(1, 15)}, 'c{rng.randrange(9)}', "
                         f"{rng.choice(['NULL', 1, 2, 3])}, {rng.randrange(3)})")
        elif r < 0.87:
            conn.execute(f"UPDATE {c} SET tier = {rng.choice(['NULL', 0, 1, 2, 3, 4])} WHERE id = {rng.randrange(1, 12)}")
        elif r < 0.93:
            conn.execute(f"DELETE FROM {c} WHERE id = {rng.randrange(1, 12)}")
        else:
            conn.execute(f"UPDATE {k} SET label = 'k{rng.randrange(9)}' WHERE tier = {rng.randrange(3)}")
    conn.execute(f"INSERT INTO {w} VALUES ({rng.randrange(100, 10**10)}, {rng.choice(['NULL', 1, 2, 5000000000])}, "
                 f"{rng.choice(['NULL', '7', '7.5', '96.0'])})")
    conn.execute(f"UPDATE {w} SET amount = amount + 1 WHERE id = {rng.randrange(1, 40)}")


STRATEGIES = ["ARRANGEMENT_BACKFILL", "SNAPSHOT_BACKFILL", "NO_SHUFFLE_BACKFILL"]


def test_join_conditions_match_postgres(playground: PlaygroundProcess, oracle_dsn: str) -> None:
    """Each view backfills with one of the strategies in turn."""
    rng = random.Random(14)
    o, c, r, k, w = unique_name("jo"), unique_name("jc"), unique_name("jr"), unique_name("jk"), unique_name("jw")
    names = {"o": o, "c": c, "r": r, "k": k, "w": w}
    with playground.connect() as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        conn.execute(f"CREATE TABLE {o} (id INT PRIMARY KEY, cid INT, amount INT, region INT)")
        conn.execute(f"CREATE TABLE {c} (id INT PRIMARY KEY, name VARCHAR, tier INT, region INT)")
        conn.execute(f"CREATE TABLE {r} (region INT, label VARCHAR)")
        conn.execute(f"CREATE TABLE {k} (tier INT PRIMARY KEY, label VARCHAR)")
        conn.execute(f"CREATE TABLE {w} (id BIGINT PRIMARY KEY, cid BIGINT, amount NUMERIC(10,1))")
        conn.execute(f"INSERT INTO {w} SELECT i, CASE WHEN i % 7 = 0 THEN NULL ELSE i % 9 END, "
                     f"CASE WHEN i % 5 = 0 THEN NULL ELSE (i % 97) + (i % 2) * 0.5 END FROM generate_series(1, 60) AS s(i)")
        conn.execute(f"INSERT INTO {o} SELECT i, CASE WHEN i % 13 = 0 THEN NULL ELSE i % 11 END, i % 97, "
                     f"CASE WHEN i % 17 = 0 THEN NULL ELSE i % 3 END FROM generate_series(1, 200) AS s(i)")
        conn.execute(f"INSERT INTO {c} SELECT i, 'c' || i, CASE WHEN i = 5 THEN NULL ELSE i % 3 END, i % 3 "
                     f"FROM generate_series(1, 8) AS s(i)")
        conn.execute(f"INSERT INTO {r} VALUES (0, 'zero'), (1, 'one'), (1, 'uno'), (NULL, 'none')")
        conn.execute(f"INSERT INTO {k} VALUES (0, 'bronze'), (1, 'silver'), (2, 'gold')")
        conn.execute("FLUSH")
        with backfills_at_once(conn):  # each view backfills under the writes after its CREATE
            conn.execute("SET background_ddl = true")
            for i, (name, q) in enumerate(QUERIES.items()):
                use_strategy(conn, STRATEGIES[i % len(STRATEGIES)])
                conn.execute(f"CREATE MATERIALIZED VIEW {o}_{name} AS {q.format(**names)}")
                _dml(conn, rng, o, c, k, w)  # changes while the views backfill
            conn.execute("WAIT")
        for _ in range(2):
            _dml(conn, rng, o, c, k, w)
            conn.execute("FLUSH")
            for t in (o, c, r, k, w):
                copy_table(conn, pg, t)
            failures = []
            for name, q in QUERIES.items():
                try:
                    assert_same(conn, pg, f"{o}_{name}", q.format(**names))
                except AssertionError as e:
                    failures.append(f"{name}: {e}")
            assert not failures, "\n".join(failures)
        for t in (o, c, r, k, w):
            conn.execute(f"DROP TABLE {t} CASCADE")


def test_select_star_of_natural_join_orders_columns_as_postgres(playground: PlaygroundProcess) -> None:
    a, b = unique_name("na"), unique_name("nb")
    with playground.connect() as conn:
        conn.execute(f"CREATE TABLE {a} (x INT, k INT, y INT)")
        conn.execute(f"CREATE TABLE {b} (z INT, k INT, x INT)")
        conn.execute(f"CREATE MATERIALIZED VIEW {a}_n AS SELECT * FROM {a} NATURAL JOIN {b}")
        cols = [d.name for d in conn.execute(f"SELECT * FROM {a}_n").description]
        assert cols == ["x", "k", "y", "z"]  # PostgreSQL: the common columns in the left's order, then the rest
        conn.execute(f"DROP TABLE {a} CASCADE")
        conn.execute(f"DROP TABLE {b} CASCADE")
