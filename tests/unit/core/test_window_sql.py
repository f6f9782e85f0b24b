"""The oracle's TUMBLE and HOP (tests/support/windows_sql.py), run on PostgreSQL alone over a few
rows whose windows are worked out by hand: epoch-aligned starts, a row on a window's edge, one
before the epoch's day turns, and a hop whose size is not twice the hop."""

from __future__ import annotations

import datetime as dt

import psycopg
import pytest

from support.windows_sql import hop, tumble

ROWS = [(1, "2026-01-01 00:00:00"), (2, "2026-01-01 00:00:09.999"), (3, "2026-01-01 00:00:10"),
        (4, "2026-01-01 00:00:13.5"), (5, "1999-12-31 23:59:59")]


def _ts(s: str) -> dt.datetime:
    return dt.datetime.fromisoformat(s)


@pytest.fixture
def pg(oracle_dsn: str):
    with psycopg.connect(oracle_dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS win_t")
        conn.execute("CREATE TABLE win_t (id INT, ts TIMESTAMP, v VARCHAR)")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO win_t VALUES (%s, %s, 'x')", [(i, _ts(t)) for i, t in ROWS])
        yield conn
        conn.execute("DROP TABLE win_t")


def test_tumble_assigns_each_row_its_epoch_aligned_window(pg: psycopg.Connection) -> None:
    got = pg.execute(f"SELECT id, v, window_start, window_end FROM {tumble('win_t', 'ts', 10)} "
                     "ORDER BY id").fetchall()
    assert got == [
        (1, "x", _ts("2026-01-01 00:00:00"), _ts("2026-01-01 00:00:10")),
        (2, "x", _ts("2026-01-01 00:00:00"), _ts("2026-01-01 00:00:10")),
        (3, "x", _ts("2026-01-01 00:00:10"), _ts("2026-01-01 00:00:20")),  # a start belongs to its window
        (4, "x", _ts("2026-01-01 00:00:10"), _ts("2026-01-01 00:00:20")),
        (5, "x", _ts("1999-12-31 23:59:50"), _ts("2000-01-01 00:00:00")),
    ]
    # the alias is the table's name by default, so qualified names keep working
    assert pg.execute(f"SELECT count(win_t.id) FROM {tumble('win_t', 'ts', 10)}").fetchone() == (5,)
    assert pg.execute(f"SELECT count(w.id) FROM {tumble('win_t', 'ts', 60, 'w')} "
                      "WHERE w.window_start = timestamp '2026-01-01 00:00:00'").fetchone() == (4,)


def test_hop_gives_a_row_every_window_that_holds_it(pg: psycopg.Connection) -> None:
    rows = pg.execute(f"SELECT win_t.id, window_start, window_end FROM {hop('win_t', 'ts', 2, 10)} "
                      "ORDER BY 1, 2").fetchall()
    starts: dict[int, list[dt.datetime]] = {}
    for i, start, end in rows:
        assert end - start == dt.timedelta(seconds=10)
        starts.setdefault(i, []).append(start)
    day = _ts("2026-01-01 00:00:00")
    assert starts[1] == [day + dt.timedelta(seconds=s) for s in (-8, -6, -4, -2, 0)]
    assert starts[2] == [day + dt.timedelta(seconds=s) for s in (0, 2, 4, 6, 8)]  # 9.999 s: not the one at 10
    assert starts[3] == [day + dt.timedelta(seconds=s) for s in (2, 4, 6, 8, 10)]  # not the one ending at 10
    assert starts[4] == [day + dt.timedelta(seconds=s) for s in (4, 6, 8, 10, 12)]
    assert starts[5] == [_ts("1999-12-31 23:59:50") + dt.timedelta(seconds=s) for s in (0, 2, 4, 6, 8)]


def test_hop_with_a_size_of_three_hops(pg: psycopg.Connection) -> None:
    rows = pg.execute(f"SELECT h.id, h.window_start, h.window_end FROM {hop('win_t', 'ts', 3, 9, 'h')} "
                      "WHERE h.id = 4 ORDER BY 2").fetchall()
    day = _ts("2026-01-01 00:00:00")  # 13.5 s: the starts 6, 9 and 12 (3 is over at 12)
    assert rows == [(4, day + dt.timedelta(seconds=s), day + dt.timedelta(seconds=s + 9)) for s in (6, 9, 12)]
    with pytest.raises(AssertionError):
        hop("win_t", "ts", 4, 10)
