"""``extract`` / ``date_part`` of seconds, milliseconds and the epoch keep their fractions
(`frontend.catalog.extract`), as PostgreSQL (the oracle) gives them."""

from __future__ import annotations

import psycopg
from catalog_session import make_session

SOURCES = ["'2024-01-01 10:00:59.5'::timestamp", "'2024-01-31 10:20:30.123456'::timestamp",
           "'2024-01-31 10:20:30.25+00'::timestamptz", "'10:20:30.25'::time", "'1969-12-31 23:59:58.75'::timestamp"]
FIELDS = ["extract(second FROM {x})", "extract(milliseconds FROM {x})", "date_part('second', {x})",
          "date_part('milliseconds', {x})", "extract(minute FROM {x})"]
EPOCHS = ["extract(epoch FROM {x})", "date_part('epoch', {x})"]


def test_fractions_are_postgresqls(oracle_dsn: str):
    session = make_session()
    items = [f.format(x=x) for x in SOURCES for f in FIELDS + (EPOCHS if not x.endswith("::time") else [])]
    items += ["extract(epoch FROM '2024-01-31'::date)", "date_part('epoch', '2024-01-31'::date)"]
    query = "SELECT " + ", ".join(f"{item} AS c{i}" for i, item in enumerate(items))
    got = list(session.run_batch(session.parse_sql(query)).to_pylist()[0].values())
    with psycopg.connect(oracle_dsn) as pg:
        pg.execute("SET TimeZone = 'UTC'")
        want = list(pg.execute(query).fetchone())
    assert [(i, g) for i, g in zip(items, got, strict=True)] == [(i, w) for i, w in zip(items, want, strict=True)]
