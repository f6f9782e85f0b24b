"""A frontend of two processes on one port (`risingspark frontend --processes 2`) in a cluster of
separate services: connections spread over both, each a frontend node of meta; a client's cancel
reaches the statement whichever process the kernel gives the cancel's connection to; a FLUSH on one
process makes what the other acknowledged visible; rows both insert at once into a keyless table all
stay (their row ids differ); SHOW PROCESSLIST, pg_stat_activity and KILL reach
the sessions of both; MVs equal PostgreSQL's answer."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import psycopg
import pytest

from support.cluster import LocalCluster
from support.oracle import assert_same, copy_table

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, meta_store_url) -> Iterator[LocalCluster]:
    base = tmp_path_factory.mktemp("frontend_processes")
    with LocalCluster(base, meta_store_url=meta_store_url("frontend_processes")) as c:
        c.meta()
        c.compute()
        c.compactor()
        # (statements the DML log acknowledged reach meta only after 10 s unless a FLUSH asks for them)
        c.frontend(("--processes", "2", "--dml-log-dir", str(base / "dml-log"), "--dml-flush-delay-ms", "10000"))
        yield c


@pytest.fixture(scope="module")
def by_process(cluster: LocalCluster) -> Iterator[dict[int, list[psycopg.Connection]]]:
    """24 connections to the port, by the process that serves each (its backend pid says which)."""
    fe = next(s for s in cluster.services if s.kind == "frontend")
    conns = [cluster.connect(fe) for _ in range(24)]
    out: dict[int, list[psycopg.Connection]] = {0: [], 1: []}
    for c in conns:
        out[(c.info.backend_pid - 1) % 2].append(c)
    yield out
    for c in conns:
        c.close()


def test_connections_spread_over_both_processes(cluster: LocalCluster, by_process) -> None:
    # (the kernel hashes each connection to one of the two sockets: all 24 on one has odds of 2^-23)
    assert by_process[0] and by_process[1]
    assert sorted(n["kind"] for n in cluster.nodes()) == ["compactor", "compute", "frontend", "frontend"]


def test_a_flush_on_one_process_makes_the_others_statements_visible(by_process, oracle_dsn: str) -> None:
    a, b = by_process[0][0], by_process[1][0]
    with psycopg.connect(oracle_dsn, autocommit=True) as pg:
        a.execute("CREATE TABLE fp_orders (id INT PRIMARY KEY, customer VARCHAR, amount INT)")
        a.execute("CREATE MATERIALIZED VIEW fp_totals AS SELECT customer, count(*) AS n, sum(amount) AS total "
                  "FROM fp_orders GROUP BY customer")
        for i in range(40):  # single-row durable INSERTs: acknowledged once in process 0's DML log
            a.execute("INSERT INTO fp_orders VALUES (%s, %s, %s)", (i, f"c{i % 3}", i * 7))
        b.execute("UPDATE fp_orders SET amount = amount + 1 WHERE id < 5")  # (process 1's own)
        b.execute("FLUSH")
        assert b.execute("SELECT count(*) FROM fp_orders").fetchone() == (40,)
        copy_table(a, pg, "fp_orders")
        assert_same(b, pg, "fp_totals", "SELECT customer, count(*), sum(amount) FROM fp_orders GROUP BY customer")


def test_rows_both_processes_insert_at_once_into_a_keyless_table_all_stay(by_process) -> None:
    """Each process makes the hidden row ids of its rows: two bulk INSERTs started together draw ids
    from overlapping clock ranges (a block of n ids spans n / 4096 ms), so only the process's own
    slot in the ids keeps them apart (with one slot for all, rows overwrote each other)."""
    a, b = by_process[0][2], by_process[1][2]
    a.execute("CREATE TABLE fp_events (v INT)")
    start = threading.Barrier(2)
    failures: list[BaseException] = []

    def load(conn: psycopg.Connection, first: int) -> None:
        try:
            start.wait(30)
            conn.execute(f"INSERT INTO fp_events SELECT g FROM generate_series({first}, {first + 299_999}) AS g(g)")
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            failures.append(e)

    loaders = [threading.Thread(target=load, args=(conn, first)) for conn, first in ((a, 0), (b, 300_000))]
    for t in loaders:
        t.start()
    for t in loaders:
        t.join(300)
    assert not failures, failures
    b.execute("FLUSH")
    assert a.execute("SELECT count(*), count(DISTINCT v) FROM fp_events").fetchone() == (600_000, 600_000)


def test_a_cancel_reaches_the_statement_through_either_process(by_process) -> None:
    conns = by_process[0][:3] + by_process[1][:3]
    conns[0].execute("CREATE TABLE fp_big (id INT)")
    conns[0].execute("INSERT INTO fp_big SELECT g FROM generate_series(1, 3000) AS g(g)")
    conns[0].execute("FLUSH")
    for conn in conns:
        # the cancel goes out on a connection of its own, which the kernel gives to either process:
        # over six cancels, both processes pass one on to the other (odds of missing that: 2^-5)
        cur = conn.cursor()
        with pytest.raises(psycopg.errors.QueryCanceled):
            for i, _ in enumerate(cur.stream("SELECT * FROM fp_big CROSS JOIN generate_series(1, 1000) AS s(i)")):
                if i == 10:
                    conn.cancel()
        assert conn.execute("SELECT count(*) FROM fp_big").fetchone() == (3000,)


def test_processlist_and_kill_reach_every_process(by_process) -> None:
    asking = by_process[1][0]
    everyone = {c.info.backend_pid for conns in by_process.values() for c in conns}
    listed = {int(r[1]) for r in asking.execute("SHOW PROCESSLIST").fetchall()}
    assert everyone <= listed  # (the sessions of process 0 too)
    active = {pid for (pid,) in asking.execute("SELECT pid FROM pg_stat_activity").fetchall()}
    assert everyone <= active
    # a statement of process 0, killed from process 1
    victim = by_process[0][1]
    long_query = "select count(*) from generate_series(1, 100000) a, generate_series(1, 100000) b where a.a <> b.b"
    failure: list[BaseException] = []

    def run() -> None:
        try:
            victim.execute(long_query)
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            failure.append(e)

    worker = threading.Thread(target=run)
    worker.start()
    try:
        deadline = time.monotonic() + 60
        while not any(r[6] == long_query for r in asking.execute("SHOW PROCESSLIST").fetchall()):
            assert time.monotonic() < deadline and worker.is_alive()
            time.sleep(0.05)
        assert asking.execute(f"KILL {victim.info.backend_pid}").statusmessage == "KILL"
    finally:
        worker.join(120)
    assert len(failure) == 1 and isinstance(failure[0], psycopg.errors.QueryCanceled)
    assert victim.execute("SELECT 1").fetchone() == (1,)
    with pytest.raises(psycopg.errors.UndefinedObject):
        asking.execute("KILL 999998")  # (an id of process 1's numbering that no session has)
    with pytest.raises(psycopg.errors.UndefinedObject):
        asking.execute("KILL 999999")  # (of process 0's: answered there)
