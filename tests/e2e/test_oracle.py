"""The correctness oracle: while an MV backfills over 500K rows, other connections run a random
stream of INSERT/UPDATE/DELETE; afterwards the MV (and an MV on it) equals PostgreSQL's answer to
the same query over the same final data — for each backfill strategy."""

from __future__ import annotations

import random
import threading
import time

import psycopg
import pytest

from conftest import PlaygroundProcess, unique_name
from support.oracle import STRATEGIES, assert_same, copy_table, use_strategy

pytestmark = pytest.mark.e2e

ROWS = 500_000
STATUSES = ("pending", "paid", "shipped", "cancelled")


def _random_dml(dsn: str, table: str, stop: threading.Event, seed: int, counts: dict[str, int],
                errors: list[BaseException]) -> None:
    rng = random.Random(seed)
    next_id = ROWS + 1 + seed * 1_000_000
    try:
        with psycopg.connect(dsn, autocommit=True) as c:
            while not stop.is_set():
                op = rng.random()
                if op < 0.4:
                    rows = ", ".join(
                        f"({next_id + i}, {rng.randrange(500)}, {rng.randrange(1, 100000) / 100}, "
                        f"'{rng.choice(STATUSES)}', '2024-03-01 00:00:00')" for i in range(rng.randrange(1, 20)))
                    next_id += 20
                    c.execute(f"INSERT INTO {table} VALUES {rows}")
                    counts["insert"] += 1
                elif op < 0.55:
                    # an insert over an existing key overwrites it
                    k = rng.randrange(1, ROWS)
                    c.execute(f"INSERT INTO {table} VALUES ({k}, {rng.randrange(500)}, 1.25, 'paid', '2024-01-01')")
                    counts["overwrite"] += 1
                elif op < 0.8:
                    lo = rng.randrange(1, ROWS)
                    c.execute(f"UPDATE {table} SET status = '{rng.choice(STATUSES)}', amount = amount + 1 "
                              f"WHERE id BETWEEN {lo} AND {lo + rng.randrange(0, 50)}")
                    counts["update"] += 1
                else:
                    lo = rng.randrange(1, ROWS)
                    c.execute(f"DELETE FROM {table} WHERE id BETWEEN {lo} AND {lo + rng.randrange(0, 30)}")
                    counts["delete"] += 1
                time.sleep(rng.random() * 0.05)
    except BaseException as e:  # reported by the test
        errors.append(e)


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_backfill_under_concurrent_dml_matches_postgres(playground: PlaygroundProcess, oracle_dsn: str,
                                                        strategy: str) -> None:
    t = unique_name("oracle_orders")
    with playground.connect() as conn:
        conn.execute(f"CREATE TABLE {t} (id BIGINT PRIMARY KEY, customer_id INT, amount NUMERIC(12,2), "
                     f"status VARCHAR, created_at TIMESTAMP)")
        conn.execute(f"INSERT INTO {t} SELECT i, i % 500, (i % 9973) / 100.0, "
                     f"CASE i % 4 WHEN 0 THEN 'pending' WHEN 1 THEN 'paid' WHEN 2 THEN 'shipped' ELSE 'cancelled' END,"
                     f" TIMESTAMP '2024-01-01' + i * INTERVAL '1 second' FROM generate_series(1, {ROWS}) AS g(i)")
        conn.execute("FLUSH")
        assert conn.execute(f"SELECT count(*) FROM {t}").fetchone() == (ROWS,)

        stop = threading.Event()
        counts = {"insert": 0, "overwrite": 0, "update": 0, "delete": 0}
        errors: list[BaseException] = []
        writers = [threading.Thread(target=_random_dml, args=(playground.dsn, t, stop, s, counts, errors))
                   for s in (1, 2)]
        for w in writers:
            w.start()
        mv = f"{t}_summary"
        mv2 = f"{t}_big"
        try:
            use_strategy(conn, strategy)
            # slow the backfill down so it spans many epochs of concurrent changes
            conn.execute("SET backfill_rate_limit = 50000")
            conn.execute(f"CREATE MATERIALIZED VIEW {mv} AS SELECT customer_id, COUNT(*) AS order_count, "
                         f"SUM(amount) AS total_amount, AVG(amount) AS avg_amount FROM {t} "
                         f"WHERE status <> 'cancelled' GROUP BY customer_id")
            conn.execute(f"CREATE MATERIALIZED VIEW {mv2} AS SELECT customer_id, total_amount FROM {mv} "
                         f"WHERE total_amount > 20000")
            paid = (f"CREATE MATERIALIZED VIEW {t}_paid AS SELECT id, customer_id, amount * 2 AS double_amount "
                    f"FROM {t} WHERE status = 'paid' AND amount > 10")
            plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + paid).fetchall())
            assert f"backfill_type: {strategy}" in plan, plan
            conn.execute(paid)
            time.sleep(2)
        finally:
            stop.set()
            for w in writers:
                w.join(60)
        assert not errors, errors
        assert sum(counts.values()) > 20, counts
        conn.execute("FLUSH")

        with psycopg.connect(oracle_dsn, autocommit=True) as pg:
            copy_table(conn, pg, t)
            q = (f"SELECT customer_id, COUNT(*) AS order_count, SUM(amount) AS total_amount, AVG(amount) AS avg_amount "
                 f"FROM {t} WHERE status <> 'cancelled' GROUP BY customer_id")
            assert assert_same(conn, pg, mv, q) > 300
            assert assert_same(conn, pg, mv2, f"SELECT customer_id, total_amount FROM ({q}) s "
                                              f"WHERE total_amount > 20000") > 0
            assert assert_same(conn, pg, f"{t}_paid", f"SELECT id, customer_id, amount * 2 AS double_amount "
                                                      f"FROM {t} WHERE status = 'paid' AND amount > 10") > 1000
