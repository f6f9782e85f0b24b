"""The playground's DML log (`frontend.dml_log`): a durable INSERT returns once its row is in the
frontend's log, before meta records it; a kill -9 then loses nothing that returned: the next start
records the log's rows, once, and the table is PostgreSQL's answer for the same statements."""

from __future__ import annotations

import httpx
import psycopg
import pytest

from conftest import PlaygroundProcess

pytestmark = pytest.mark.e2e


def _queued_rows(pg: PlaygroundProcess) -> float:
    """Rows acknowledged and not yet recorded by meta (`risingspark_frontend_dml_queued_rows`)."""
    for line in httpx.get(f"http://127.0.0.1:{pg.meta_port}/metrics").text.splitlines():
        if line.startswith("risingspark_frontend_dml_queued_rows "):
            return float(line.split()[1])
    raise AssertionError("no risingspark_frontend_dml_queued_rows in /metrics")


def test_inserts_that_returned_survive_a_kill_before_meta_recorded_them(tmp_path, oracle_dsn: str) -> None:
    statements = ["CREATE TABLE t (k int PRIMARY KEY, v varchar)",
                  *[f"INSERT INTO t VALUES ({k}, 'v{k}')" for k in range(5)],
                  "UPDATE t SET v = 'updated' WHERE k = 2", "DELETE FROM t WHERE k = 4"]
    # meta records nothing for ten minutes: what returned is only in the log when the kill comes
    pg = PlaygroundProcess(tmp_path / "data", extra_args=["--dml-flush-delay-ms", "600000"]).start()
    try:
        with pg.connect() as c:
            c.execute(statements[0])
            for s in statements[1:6]:
                c.execute(s)  # synchronous_commit is on: durable once it returns
            assert _queued_rows(pg) == 5
        pg.kill()

        pg.extra_args = []
        pg.start()
        with pg.connect() as c:
            c.execute("FLUSH")
            for s in statements[6:]:  # (an UPDATE reads the rows it changes: they must be there)
                c.execute(s)
            c.execute("FLUSH")
            ours = sorted(c.execute("SELECT k, v FROM t").fetchall())
        with psycopg.connect(oracle_dsn, autocommit=True) as oracle:  # (a database of this test's own)
            for s in statements:
                oracle.execute(s)
            expected = sorted(oracle.execute("SELECT k, v FROM t").fetchall())
        assert ours == expected == [(0, "v0"), (1, "v1"), (2, "updated"), (3, "v3")]

        pg.stop()  # a clean stop, and a start: nothing is recorded twice
        pg.start()
        with pg.connect() as c:
            c.execute("FLUSH")
            assert sorted(c.execute("SELECT k, v FROM t").fetchall()) == expected
    finally:
        pg.stop()
