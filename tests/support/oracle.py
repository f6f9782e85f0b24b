"""The correctness oracle: the same data and query in PostgreSQL, compared with an MV."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

import psycopg

TYPES = {"bigint": "bigint", "integer": "integer", "smallint": "smallint", "numeric": "numeric",
         "character varying": "varchar", "timestamp without time zone": "timestamp", "date": "date",
         "boolean": "boolean", "double precision": "double precision", "real": "real", "interval": "interval",
         "timestamp with time zone": "timestamptz"}


def normalize(v):
    """Values compare by meaning: numerics to 6 decimal places (avg keeps 10 fractional digits,
    PostgreSQL 16, so the 9th may round differently), floats to 9
    significant digits, NaN to a value equal to itself."""
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, Decimal):
        return v.quantize(Decimal("1e-6")).normalize() + 0
    if isinstance(v, float):
        return float(f"{v:.9g}")
    if isinstance(v, dt.datetime):
        return v.replace(tzinfo=None)
    if isinstance(v, list):  # arrays: hashable, elements compared by meaning
        return tuple(normalize(x) for x in v)
    return v


def rows_of(conn: psycopg.Connection, query: str) -> list[tuple]:
    return sorted((tuple(normalize(v) for v in r) for r in conn.execute(query).fetchall()),
                  key=lambda r: tuple((x is None, str(type(x)), x) for x in r))


def copy_table(rs: psycopg.Connection, pg: psycopg.Connection, table: str) -> int:
    """Recreate `table` in PostgreSQL with RisingSpark's visible columns and current rows."""
    cols = rs.execute("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = %s "
                      "ORDER BY ordinal_position", (table,)).fetchall()
    assert cols, f"table {table} has no columns in information_schema"
    ddl = ", ".join(f'"{n}" {TYPES.get(t.split("(")[0], t)}' for n, t in cols)
    pg.execute(f'DROP TABLE IF EXISTS "{table}"')
    pg.execute(f'CREATE TABLE "{table}" ({ddl})')
    rows = rs.execute(f'SELECT {", ".join(chr(34) + n + chr(34) for n, _ in cols)} FROM "{table}"').fetchall()
    with pg.cursor() as cur, cur.copy(f'COPY "{table}" FROM STDIN') as copy:
        for r in rows:
            copy.write_row(r)
    return len(rows)


def assert_same(rs: psycopg.Connection, pg: psycopg.Connection, mv: str, query: str) -> int:
    """The MV's rows equal PostgreSQL's answer to `query`; returns the row count."""
    got = rows_of(rs, f'SELECT * FROM "{mv}"')
    want = rows_of(pg, query)
    if got != want:
        missing = [r for r in want if r not in set(got)][:5]
        extra = [r for r in got if r not in set(want)][:5]
        raise AssertionError(f"MV {mv} differs from PostgreSQL: {len(got)} rows vs {len(want)}; "
                             f"missing {missing}, unexpected {extra}")
    return len(got)


# Session settings that force each backfill strategy, as RisingWave's session variables.
STRATEGIES = {
    "SNAPSHOT_BACKFILL": ("SET streaming_use_snapshot_backfill = true",),
    "ARRANGEMENT_BACKFILL": ("SET streaming_use_snapshot_backfill = false",
                             "SET streaming_use_arrangement_backfill = true"),
    "NO_SHUFFLE_BACKFILL": ("SET streaming_use_snapshot_backfill = false",
                            "SET streaming_use_arrangement_backfill = false"),
}


def use_strategy(conn: psycopg.Connection, strategy: str) -> None:
    for stmt in STRATEGIES[strategy]:
        conn.execute(stmt)
