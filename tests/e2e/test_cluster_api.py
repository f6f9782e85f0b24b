"""Meta's HTTP API and metrics, the cost of an idle epoch, compaction of L0 into L1, and every
supported column type flowing through an MV as PostgreSQL computes it."""

from __future__ import annotations

import re
import time

import httpx
import psycopg
import pytest

from conftest import PlaygroundProcess, unique_name
from support.oracle import assert_same, copy_table

pytestmark = pytest.mark.e2e


def _metric(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name):
            continue
        m = re.match(rf"{re.escape(name)}(\{{[^}}]*\}})? ([0-9.e+-]+)$", line)
        if m and all(f'{k}="{v}"' in (m.group(1) or "") for k, v in labels.items()):
            total += float(m.group(2))
    return total


def test_api_and_metrics(playground: PlaygroundProcess) -> None:
    base = f"http://127.0.0.1:{playground.meta_port}"
    t = unique_name("api")
    with playground.connect() as conn:
        conn.execute(f"CREATE TABLE {t} (a INT PRIMARY KEY, b INT)")
        conn.execute(f"INSERT INTO {t} VALUES (1, 1), (2, 2)")
        conn.execute("FLUSH")
    cluster = httpx.get(f"{base}/api/cluster").json()
    assert cluster["committed_epoch"] > 0 and cluster["system_params"]["barrier_interval_ms"] == 1000
    rels = {r["name"]: r for r in httpx.get(f"{base}/api/relations").json()}
    assert rels[t]["kind"] == "table" and rels[t]["status"] == "created"
    assert "/api/ddl_progress" in httpx.get(f"{base}/openapi.json").json()["paths"]
    metrics = httpx.get(f"{base}/metrics").text
    for series in ("risingspark_meta_barrier_duration_seconds_bucket", "risingspark_meta_committed_epoch",
                   "risingspark_dml_rows_total", "risingspark_compute_spark_jobs_total"):
        assert series in metrics, series
    assert _metric(metrics, "risingspark_dml_rows_total", job=t) == 2


def test_idle_epochs_run_no_spark_job(playground: PlaygroundProcess) -> None:
    base = f"http://127.0.0.1:{playground.meta_port}"
    before = httpx.get(f"{base}/metrics").text
    time.sleep(3.5)  # several barriers with nothing to do
    after = httpx.get(f"{base}/metrics").text
    assert _metric(after, "risingspark_compute_epoch_rounds_total") >= _metric(
        before, "risingspark_compute_epoch_rounds_total") + 2
    assert _metric(after, "risingspark_compute_spark_jobs_total") == _metric(
        before, "risingspark_compute_spark_jobs_total")


def test_l0_is_compacted_into_the_levels(playground: PlaygroundProcess) -> None:
    base = f"http://127.0.0.1:{playground.meta_port}"
    t = unique_name("compact")
    with playground.connect() as conn:
        conn.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT)")
        table_id = next(r["id"] for r in httpx.get(f"{base}/api/relations").json() if r["name"] == t)
        for i in range(12):  # one checkpoint each: twelve L0 sub-levels
            conn.execute(f"INSERT INTO {t} SELECT g, {i} FROM generate_series({i * 100}, {i * 100 + 149}) AS s(g)")
            conn.execute("FLUSH")  # (DML reads the committed state)
            conn.execute(f"DELETE FROM {t} WHERE k = {i * 100}")
            conn.execute("FLUSH")
        deadline = time.monotonic() + 60
        levels = httpx.get(f"{base}/api/tables/{table_id}/levels").json()
        # (the compactor may be one task behind the last inserts: wait until it has caught up)
        while (levels["sorted_ssts"] == 0 or levels["l0_sub_levels"] >= 8) and time.monotonic() < deadline:
            time.sleep(0.5)
            levels = httpx.get(f"{base}/api/tables/{table_id}/levels").json()
        assert levels["sorted_ssts"] > 0 and levels["l0_sub_levels"] < 8, levels
        # the merged data reads the same as the history that produced it
        rows = conn.execute(f"SELECT k, v FROM {t} ORDER BY k").fetchall()
        expected = {}
        for i in range(12):
            for g in range(i * 100, i * 100 + 150):
                expected[g] = i
            expected.pop(i * 100, None)
        assert rows == sorted(expected.items())
        assert levels["rows"] == len(expected)
        # rw_catalog.rw_hummock_sstables lists the same SSTs: L0 overlapping, the levels below as
        # sorted runs of disjoint key ranges
        ssts = conn.execute("SELECT level_id, level_type, key_range_left, key_range_right, file_size "
                            f"FROM rw_catalog.rw_hummock_sstables WHERE table_id = {table_id} "
                            "ORDER BY level_id, key_range_left").fetchall()
        now = httpx.get(f"{base}/api/tables/{table_id}/levels").json()
        by_level = {lv["level"]: (lv["ssts"], lv["size_bytes"]) for lv in now["levels"]}
        assert {lv: (sum(1 for r in ssts if r[0] == lv), sum(r[4] for r in ssts if r[0] == lv))
                for lv in {r[0] for r in ssts}} == by_level
        assert all(r[1] == ("OVERLAPPING" if r[0] == 0 else "NONOVERLAPPING") for r in ssts)
        for lv in by_level:
            run = [r for r in ssts if r[0] == lv and lv > 0]
            assert all(a[3] < b[2] for a, b in zip(run, run[1:], strict=False)), run
        assert all(bytes.fromhex(r[2]) <= bytes.fromhex(r[3]) for r in ssts)  # hex of the memcomparable keys
    metrics = httpx.get(f"{base}/metrics").text
    for series in ("risingspark_storage_flush_bytes_total", "risingspark_compaction_pending_bytes{",
                   "risingspark_storage_write_amplification", "risingspark_compaction_running_tasks"):
        assert series in metrics, series


def test_every_type_through_an_mv(playground: PlaygroundProcess, oracle_dsn: str) -> None:
    t = unique_name("types")
    with playground.connect() as conn:
        conn.execute(f"CREATE TABLE {t} (id BIGINT PRIMARY KEY, s SMALLINT, i INT, f REAL, d DOUBLE PRECISION, "
                     f"n NUMERIC(10,3), b BOOLEAN, v VARCHAR, x TEXT, dt DATE, ts TIMESTAMP)")
        conn.execute(f"INSERT INTO {t} VALUES "
                     f"(1, 1, 10, 1.5, 2.25, 3.125, true, 'a', 'x', '2024-01-01', '2024-01-01 10:00:00'), "
                     f"(2, -2, 20, -0.5, 1e10, -1.5, false, 'b', 'y', '2024-02-29', '2024-02-29 23:59:59.5'), "
                     f"(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), "
                     f"(4, 4, 40, 4.0, 4.0, 4.0, true, 'it''s', '', '1999-12-31', '2000-01-01 00:00:00')")
        conn.execute("FLUSH")
        mv = f"{t}_mv"
        conn.execute(f"CREATE MATERIALIZED VIEW {mv} AS SELECT id, s + 1 AS s1, i * 2 AS i2, f, d / 2 AS d2, "
                     f"n * 2 AS n2, NOT b AS nb, v || x AS vx, dt, ts, i / 3 AS idiv, i % 3 AS imod "
                     f"FROM {t} WHERE id <> 4 OR b")
        agg = f"{t}_agg"
        conn.execute(f"CREATE MATERIALIZED VIEW {agg} AS SELECT b, count(*) AS c, sum(s) AS ss, sum(i) AS si, "
                     f"sum(n) AS sn, avg(i) AS ai, avg(d) AS ad, count(v) AS cv FROM {t} GROUP BY b")
        conn.execute(f"UPDATE {t} SET n = n + 1, v = 'changed' WHERE id = 2")
        conn.execute(f"INSERT INTO {t} VALUES (5, 5, 50, 5.5, 5.5, 5.5, false, 'e', 'e', '2024-05-05', "
                     f"'2024-05-05 05:05:05')")
        conn.execute("FLUSH")
        with psycopg.connect(oracle_dsn, autocommit=True) as pg:
            copy_table(conn, pg, t)
            assert assert_same(conn, pg, mv, f"SELECT id, s + 1 AS s1, i * 2 AS i2, f, d / 2 AS d2, n * 2 AS n2, "
                                             f"NOT b AS nb, v || x AS vx, dt, ts, i / 3 AS idiv, i % 3 AS imod "
                                             f"FROM {t} WHERE id <> 4 OR b") == 5
            assert assert_same(conn, pg, agg, f"SELECT b, count(*) AS c, sum(s) AS ss, sum(i) AS si, sum(n) AS sn, "
                                              f"avg(i) AS ai, avg(d) AS ad, count(v) AS cv FROM {t} GROUP BY b") == 3


def test_a_failing_expression_yields_null_and_the_stream_goes_on(playground: PlaygroundProcess) -> None:
    t = unique_name("div")
    with playground.connect() as conn:
        conn.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, a INT, b INT, s VARCHAR)")
        conn.execute(f"INSERT INTO {t} VALUES (1, 7, 2, '5'), (2, 7, 0, 'x'), (3, 2147483647, 1, '6')")
        conn.execute("FLUSH")
        conn.execute(f"CREATE MATERIALIZED VIEW {t}_q AS SELECT id, a / b AS q, a + b AS total, "
                     f"CAST(s AS INT) AS n FROM {t}")
        conn.execute(f"INSERT INTO {t} VALUES (4, 9, 0, '8'), (5, 9, 3, '9')")
        conn.execute("FLUSH")
        assert conn.execute(f"SELECT * FROM {t}_q ORDER BY id").fetchall() == [
            (1, 3, 9, 5), (2, None, 7, None), (3, 2147483647, None, 6), (4, None, 9, 8), (5, 3, 12, 9)]
