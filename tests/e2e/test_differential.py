"""The differential test: a corpus of materialized-view queries — filters, expressions, joins of
every kind, aggregates (min/max, DISTINCT, string_agg, array_agg, FILTER), subqueries, CTEs, unions, DISTINCT, semi
and anti joins, TopN and group TopN — each created
while random writes go on (so every view backfills under changes, with the backfill strategies in
turn), then compared with PostgreSQL over the same rows at several committed epochs.

The tables' rows and the DML stream come from a seeded generator (`SEED`; set
``RISINGSPARK_DIFF_SEED`` to replay another stream): inserts, updates of keys and values, deletes,
NULLs in join keys, grouping keys and values.
"""

from __future__ import annotations

import os
import random

import psycopg
import pytest

from conftest import PlaygroundProcess, unique_name
from support.oracle import assert_same, copy_table, use_strategy

pytestmark = pytest.mark.e2e

SEED = int(os.environ.get("RISINGSPARK_DIFF_SEED", "20261123"))
STRATEGIES = ["SNAPSHOT_BACKFILL", "ARRANGEMENT_BACKFILL", "NO_SHUFFLE_BACKFILL"]

# {o}: orders (id, cid, amount, region, note); {c}: customers (id, name, tier, region);
# {r}: regions (region, label), without a primary key.
CORPUS = {
    # projections, filters and expressions
    "filter_project": "SELECT id, amount * 2 AS a2, amount / 3 AS third FROM {o} WHERE region <> 1",
    "case_expr": "SELECT id, CASE WHEN amount > 50 THEN 'big' WHEN amount > 10 THEN 'mid' ELSE 'small' END AS size "
                 "FROM {o}",
    "casts": "SELECT id, CAST(amount AS NUMERIC) / 7 AS q, amount::varchar || '-' || coalesce(note, '?') AS s FROM {o}",
    "strings": "SELECT id, upper(note) AS u, length(note) AS l FROM {o} WHERE note LIKE 'n1%'",
    "math": "SELECT id, abs(amount - 50) AS d, round(amount / 3.0, 2) AS r, -amount / 7 AS q, amount % 7 AS m "
            "FROM {o}",
    "not_like": "SELECT id, note FROM {o} WHERE note NOT LIKE 'n1%' AND note NOT ILIKE 'N2%'",
    "nulls": "SELECT id, note IS NULL AS no_note, coalesce(cid, -1) AS c2 FROM {o} WHERE cid IS NULL OR cid > 5",
    "between_in": "SELECT id FROM {o} WHERE amount BETWEEN 10 AND 40 AND region IN (0, 2)",
    # aggregates
    "group_count": "SELECT cid, count(*) AS n, count(note) AS nn FROM {o} GROUP BY cid",
    "group_sum_avg": "SELECT region, sum(amount) AS s, avg(amount) AS a FROM {o} GROUP BY region",
    "group_expr": "SELECT amount % 5 AS bucket, count(*) AS n FROM {o} GROUP BY amount % 5",
    "group_two": "SELECT region, cid, sum(amount) AS s FROM {o} GROUP BY region, cid",
    "having": "SELECT cid, sum(amount) AS s FROM {o} GROUP BY cid HAVING count(*) > 2",
    "having_avg": "SELECT region, avg(amount) AS a FROM {o} GROUP BY region HAVING avg(amount) > 40",
    "global_agg": "SELECT count(*) AS n, sum(amount) AS s, avg(amount) AS a FROM {o}",
    "global_agg_empty": "SELECT count(*) AS n, sum(amount) AS s FROM {o} WHERE amount > 1000",
    "agg_expr": "SELECT region, sum(amount) * 2 + count(*) AS x FROM {o} GROUP BY region",
    "min_max": "SELECT cid, min(amount) AS lo, max(amount) AS hi FROM {o} GROUP BY cid",
    "count_distinct": "SELECT region, count(DISTINCT cid) AS k, sum(DISTINCT amount) AS sd FROM {o} GROUP BY region",
    "string_agg": "SELECT cid, string_agg(note, ',' ORDER BY id) AS notes FROM {o} GROUP BY cid",
    "string_agg_row_delimiter": "SELECT cid, string_agg(note, CASE WHEN amount > 50 THEN '+' WHEN amount > 20 THEN NULL "
                                "ELSE '-' END ORDER BY id) AS notes FROM {o} GROUP BY cid",
    "array_agg": "SELECT cid, array_agg(note ORDER BY id) AS notes, array_agg(DISTINCT region) AS regions FROM {o} "
                 "GROUP BY cid",
    "bool_aggs": "SELECT region, bool_and(amount > 5) AS all5, bool_or(note IS NULL) AS anynull FROM {o} "
                 "GROUP BY region",
    "global_min_max": "SELECT min(amount) AS lo, max(note) AS hi, count(DISTINCT region) AS k FROM {o}",
    "filter_agg": "SELECT region, count(*) FILTER (WHERE amount > 50) AS big FROM {o} GROUP BY region",
    # joins
    "inner": "SELECT o.id, o.amount, c.name FROM {o} o JOIN {c} c ON o.cid = c.id",
    "left": "SELECT o.id, c.name, c.tier FROM {o} o LEFT JOIN {c} c ON o.cid = c.id",
    "right": "SELECT c.id AS cid, o.id AS oid, o.amount FROM {o} o RIGHT JOIN {c} c ON o.cid = c.id",
    "full": "SELECT o.id AS oid, c.id AS cid, c.tier FROM {o} o FULL OUTER JOIN {c} c ON o.cid = c.id",
    "multi_key": "SELECT o.id, c.name FROM {o} o JOIN {c} c ON o.cid = c.id AND o.region = c.region",
    "residual": "SELECT o.id, c.name FROM {o} o JOIN {c} c ON o.cid = c.id AND o.amount > c.tier * 10",
    "self": "SELECT a.id AS a_id, b.id AS b_id FROM {o} a JOIN {o} b ON a.cid = b.cid AND a.id < b.id",
    "three_way": "SELECT o.id, c.name, r.label FROM {o} o JOIN {c} c ON o.cid = c.id "
                 "LEFT JOIN {r} r ON c.region = r.region",
    "join_agg": "SELECT c.tier, count(*) AS n, sum(o.amount) AS total FROM {o} o JOIN {c} c ON o.cid = c.id "
                "GROUP BY c.tier",
    "left_join_agg": "SELECT c.id, count(o.id) AS n, sum(o.amount) AS s FROM {c} c LEFT JOIN {o} o ON o.cid = c.id "
                     "GROUP BY c.id",
    "using": "SELECT o.id, c.name FROM {o} o JOIN {c} c USING (region) WHERE o.amount < 5",
    # subqueries and CTEs
    "subquery_filter": "SELECT s.cid, s.n FROM (SELECT cid, count(*) AS n FROM {o} GROUP BY cid) s WHERE s.n > 3",
    "subquery_join": "SELECT c.name, s.total FROM {c} c JOIN (SELECT cid, sum(amount) AS total FROM {o} GROUP BY cid) s "
                     "ON s.cid = c.id",
    "nested_agg": "SELECT n, count(*) AS k FROM (SELECT cid, count(*) AS n FROM {o} GROUP BY cid) s GROUP BY n",
    "cte": "WITH big AS (SELECT * FROM {o} WHERE amount > 30) SELECT region, count(*) AS n FROM big GROUP BY region",
    "cte_chain": "WITH a AS (SELECT id, cid, amount FROM {o} WHERE region = 0), b AS (SELECT cid, amount FROM a "
                 "WHERE amount > 10) SELECT b.cid, c.name, b.amount FROM b JOIN {c} c ON b.cid = c.id",
    "subquery_columns": "SELECT x, y FROM (SELECT id, amount FROM {o}) AS t(x, y) WHERE y > 90",
    # unions and DISTINCT
    "union_all": "SELECT id, region FROM {o} UNION ALL SELECT id, region FROM {c}",
    "union": "SELECT region FROM {o} UNION SELECT region FROM {c}",
    "union_three": "SELECT cid AS x FROM {o} UNION ALL SELECT id FROM {c} UNION ALL SELECT region FROM {r}",
    "union_types": "SELECT amount AS v FROM {o} UNION ALL SELECT tier::numeric / 2 FROM {c}",
    "agg_over_union": "SELECT region, count(*) AS n FROM (SELECT region FROM {o} UNION ALL SELECT region FROM {c}) u "
                      "GROUP BY region",
    "distinct": "SELECT DISTINCT cid, region FROM {o}",
    "distinct_expr": "SELECT DISTINCT amount % 7 AS m FROM {o}",
    "distinct_join": "SELECT DISTINCT c.tier, o.region FROM {o} o JOIN {c} c ON o.cid = c.id",
    # semi and anti joins
    "in_subquery": "SELECT id, amount FROM {o} WHERE cid IN (SELECT id FROM {c} WHERE tier = 1)",
    "exists": "SELECT id FROM {o} o WHERE EXISTS (SELECT 1 FROM {c} c WHERE c.id = o.cid AND c.tier > 0)",
    "not_exists": "SELECT id, cid FROM {o} o WHERE NOT EXISTS (SELECT 1 FROM {c} c WHERE c.id = o.cid)",
    "in_distinct": "SELECT c.id, c.name FROM {c} c WHERE c.id IN (SELECT DISTINCT cid FROM {o} WHERE amount > 50)",
    # TopN and group TopN
    "top_n": "SELECT id, amount FROM {o} ORDER BY amount DESC, id LIMIT 10",
    "top_n_offset": "SELECT id, cid FROM {o} WHERE region = 1 ORDER BY cid NULLS FIRST, id LIMIT 5 OFFSET 5",
    "top_n_agg": "SELECT cid, sum(amount) AS s FROM {o} GROUP BY cid ORDER BY s DESC NULLS LAST, cid LIMIT 3",
    "group_top_n": "SELECT id, cid, amount FROM (SELECT id, cid, amount, ROW_NUMBER() OVER (PARTITION BY cid "
                   "ORDER BY amount DESC, id) AS rn FROM {o}) t WHERE rn <= 2",
    "group_top_n_join": "SELECT name, id, rn FROM (SELECT c.name, o.id, ROW_NUMBER() OVER (PARTITION BY c.id "
                        "ORDER BY o.amount, o.id) AS rn FROM {o} o JOIN {c} c ON o.cid = c.id) t WHERE rn = 1",
}


class Writer:
    """A seeded stream of writes to the three tables."""

    def __init__(self, rng: random.Random, o: str, c: str, r: str) -> None:
        self.rng, self.o, self.c, self.r = rng, o, c, r
        self.next_id = 1000

    def note(self) -> str:
        return "NULL" if self.rng.random() < 0.15 else f"'n{self.rng.randrange(30)}'"

    def step(self, conn: psycopg.Connection, n: int = 20) -> None:
        rng, o, c = self.rng, self.o, self.c
        for _ in range(n):
            x = rng.random()
            if x < 0.25:
                self.next_id += 1
                conn.execute(f"INSERT INTO {o} VALUES ({self.next_id}, {rng.choice(['NULL', 1, 2, 3, 7, 9, 11])}, "
                             f"{rng.randrange(100)}, {rng.randrange(3)}, {self.note()})")
            elif x < 0.4:
                conn.execute(f"UPDATE {o} SET cid = {rng.choice(['NULL', rng.randrange(1, 12)])} "
                             f"WHERE id = {rng.randrange(1, 300)}")
            elif x < 0.5:
                conn.execute(f"UPDATE {o} SET amount = {rng.randrange(100)}, note = {self.note()} "
                             f"WHERE id = {rng.randrange(1, 300)}")
            elif x < 0.6:
                conn.execute(f"DELETE FROM {o} WHERE id = {rng.randrange(1, 300)}")
            elif x < 0.72:
                conn.execute(f"INSERT INTO {c} VALUES ({rng.randrange(1, 15)}, 'c{rng.randrange(99)}', "
                             f"{rng.randrange(0, 4)}, {rng.randrange(3)})")
            elif x < 0.84:
                conn.execute(f"UPDATE {c} SET tier = {rng.randrange(0, 4)} WHERE id = {rng.randrange(1, 12)}")
            elif x < 0.92:
                conn.execute(f"DELETE FROM {c} WHERE id = {rng.randrange(1, 12)}")
            elif x < 0.96:
                conn.execute(f"INSERT INTO {self.r} VALUES ({rng.randrange(4)}, 'l{rng.randrange(5)}')")
            else:
                conn.execute(f"DELETE FROM {self.r} WHERE label = 'l{rng.randrange(5)}'")


PARTS = 3  # the corpus runs in parts, each over its own tables: an epoch round runs every live view


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 40


@pytest.mark.parametrize("part", range(PARTS))
def test_corpus_matches_postgres(playground: PlaygroundProcess, oracle_dsn: str, part: int) -> None:
    items = list(CORPUS.items())
    first, stop = part * len(items) // PARTS, (part + 1) * len(items) // PARTS
    rng = random.Random(SEED + part)
    o, c, r = unique_name("dorders"), unique_name("dcust"), unique_name("dreg")
    names = {"o": o, "c": c, "r": r}
    with playground.connect() as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        conn.execute(f"CREATE TABLE {o} (id INT PRIMARY KEY, cid INT, amount INT, region INT, note VARCHAR)")
        conn.execute(f"CREATE TABLE {c} (id INT PRIMARY KEY, name VARCHAR, tier INT, region INT)")
        conn.execute(f"CREATE TABLE {r} (region INT, label VARCHAR)")
        conn.execute(f"INSERT INTO {o} SELECT i, CASE WHEN i % 13 = 0 THEN NULL ELSE i % 11 END, i % 97, i % 3, "
                     f"CASE WHEN i % 7 = 0 THEN NULL ELSE 'n' || (i % 30) END FROM generate_series(1, 300) AS s(i)")
        conn.execute(f"INSERT INTO {c} SELECT i, 'c' || i, i % 4, i % 3 FROM generate_series(1, 8) AS s(i)")
        conn.execute(f"INSERT INTO {r} VALUES (0, 'l0'), (1, 'l1'), (1, 'l2'), (2, 'l3')")
        conn.execute("FLUSH")
        writer = Writer(rng, o, c, r)
        views = {}
        # background DDL: the views backfill together, each under the writes that follow its CREATE
        conn.execute("SET background_ddl = true")
        for i, (name, q) in enumerate(items[first:stop], start=first):
            use_strategy(conn, STRATEGIES[i % len(STRATEGIES)])
            mv = f"{o}_{name}"
            conn.execute(f"CREATE MATERIALIZED VIEW {mv} AS {q.format(**names)}")
            views[mv] = q.format(**names)
            writer.step(conn, 8)
        conn.execute("WAIT")
        conn.execute("SET background_ddl = false")
        for _round in range(3):
            writer.step(conn, 30)
            conn.execute("FLUSH")
            for t in (o, c, r):
                copy_table(conn, pg, t)
            failures = []
            for mv, q in views.items():
                try:
                    assert_same(conn, pg, mv, q)
                except AssertionError as e:
                    failures.append(str(e))
            assert not failures, f"round {_round}:\n" + "\n".join(failures)
        for t in (o, c, r):  # the next part's rounds do not run these views
            conn.execute(f"DROP TABLE {t} CASCADE")
