"""Write stall through a real playground: with a low threshold, a table's writers are held while a state
table it feeds has too deep an L0, compaction releases them, and no write is lost."""

from __future__ import annotations

import threading
import time

import httpx

from conftest import PlaygroundProcess, unique_name


def _stalls_total(meta_port: int, job: str) -> float:
    for line in httpx.get(f"http://127.0.0.1:{meta_port}/metrics").text.splitlines():
        if line.startswith("risingspark_storage_write_stalls_total{") and f'job="{job}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_writes_stall_on_a_deep_l0_and_resume_without_loss(playground: PlaygroundProcess) -> None:
    t, mv = unique_name("stalled"), unique_name("stalled_mv")
    with playground.connect() as conn:
        conn.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT)")
        conn.execute(f"CREATE MATERIALIZED VIEW {mv} AS SELECT v % 7 AS g, count(*) AS n, sum(k) AS s FROM {t} "
                     "GROUP BY v % 7")
        # one sub-level is already too deep: every checkpoint that writes the table stalls it until
        # compaction has moved its L0 down
        conn.execute("ALTER SYSTEM SET level0_stop_write_threshold_sub_level_number = 1")
        # barriers back to back: the stall is judged when a barrier takes the queued DML, and a quiet
        # machine's compaction emptied L0 within ~0.2 s of each commit, before a 1-s barrier came
        # (a CI run saw no stall at all)
        conn.execute("ALTER SYSTEM SET barrier_interval_ms = 50")
        try:
            seen: list[tuple] = []
            done = threading.Event()

            def watch() -> None:
                with playground.connect() as c:
                    while not done.is_set():
                        seen.extend(c.execute("SELECT table_name, l0_sub_levels FROM rw_catalog.rw_write_stalls")
                                    .fetchall())
                        time.sleep(0.1)

            watcher = threading.Thread(target=watch)
            watcher.start()
            try:
                for i in range(40):  # over several checkpoints
                    conn.execute(f"INSERT INTO {t} VALUES ({i}, {i * 3})")
                    time.sleep(0.15)
            finally:
                done.set()
                watcher.join()
            assert _stalls_total(playground.meta_port, t) >= 1
            assert any(name == t and depth >= 1 for name, depth in seen), seen[:5]
        finally:
            conn.execute("ALTER SYSTEM SET level0_stop_write_threshold_sub_level_number = DEFAULT")
            conn.execute("ALTER SYSTEM SET barrier_interval_ms = DEFAULT")
        conn.execute("FLUSH")
        assert conn.execute(f"SELECT count(*), sum(k) FROM {t}").fetchone() == (40, sum(range(40)))
        rows = conn.execute(f"SELECT g, n, s FROM {mv} ORDER BY g").fetchall()
        expected: dict[int, tuple[int, int]] = {}
        for i in range(40):
            n, s = expected.get(i * 3 % 7, (0, 0))
            expected[i * 3 % 7] = (n + 1, s + i)
        assert rows == [(g, n, s) for g, (n, s) in sorted(expected.items())]
        # released: nothing is stalled at the default threshold
        deadline = time.monotonic() + 30
        while conn.execute("SELECT count(*) FROM rw_catalog.rw_write_stalls").fetchone()[0]:
            assert time.monotonic() < deadline, "the stall was not released"
            time.sleep(0.5)
