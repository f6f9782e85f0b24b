"""Point query latency through an index, printed as JSON: the same ``WHERE city = constant`` query on
a table of N rows as a full scan, then with an index on ``city``; each warm (no write between
queries: the merged reads are cached) and after a write (a new version before every query, so the
merged-read caches miss).

Usage: python bench/index_lookup.py --port 4566 --rows 300000   (against a running playground)
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import psycopg

QUERY = "select id, v from bench_people where city = 'city 7'"


def _median_ms(conn: psycopg.Connection, runs: int, write: bool, next_id: list[int]) -> tuple[float, int]:
    times, count = [], 0
    for _ in range(runs):
        if write:
            next_id[0] += 1
            conn.execute(f"insert into bench_people values ({next_id[0]}, 'city 9', 0)")
            conn.execute("flush")
        started = time.perf_counter()
        count = len(conn.execute(QUERY).fetchall())
        times.append(time.perf_counter() - started)
    return round(statistics.median(times[2:]) * 1000, 1), count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=4566)
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with psycopg.connect(f"host=127.0.0.1 port={args.port} user=root dbname=dev", autocommit=True) as conn:
        conn.execute("drop table if exists bench_people cascade")
        conn.execute("create table bench_people (id int primary key, city varchar, v int)")
        conn.execute(f"insert into bench_people select g, 'city ' || (g % 1000), g "
                     f"from generate_series(1, {args.rows}) g")
        conn.execute("flush")
        next_id = [args.rows]
        out: dict[str, float | int] = {"rows": args.rows}
        out["scan_warm_ms"], matching = _median_ms(conn, args.runs, False, next_id)
        out["scan_after_write_ms"], _ = _median_ms(conn, args.runs, True, next_id)
        conn.execute("create index bench_people_by_city on bench_people (city)")
        out["index_warm_ms"], again = _median_ms(conn, args.runs, False, next_id)
        out["index_after_write_ms"], _ = _median_ms(conn, args.runs, True, next_id)
        assert matching == again, (matching, again)
        out["matching_rows"] = matching
        conn.execute("drop table bench_people cascade")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
