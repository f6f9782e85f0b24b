"""``INTERVAL '...'`` literals as PostgreSQL reads them (`frontend.dialect.whole_intervals`): sqlglot
kept only the first quantity of ``'1 day 02:00:00'`` and dropped ``ago``. Batch queries against
PostgreSQL (the oracle), and the text rewrite itself."""

from __future__ import annotations

import psycopg
from catalog_session import make_session

from frontend.dialect import whole_intervals
from risingspark.interval import Interval

LITERALS = ["INTERVAL '1 day 02:00:00'", "INTERVAL '2 hours ago'", "INTERVAL '3 days 04:05:06.789'",
            "INTERVAL '1 year 02:00'", "INTERVAL '1 day 2 hours ago'", "INTERVAL '@ 3 minutes'",
            "INTERVAL '90' MINUTE", "INTERVAL '5 minutes'", "interval  '1.5 hours'", "INTERVAL 'P1D'", "INTERVAL 'PT1M'"]


def test_interval_literals_have_postgresqls_values(oracle_dsn: str):
    session = make_session()
    query = "SELECT " + ", ".join(f"{lit} AS c{i}" for i, lit in enumerate(LITERALS)) + \
            ", '2024-01-01'::timestamp + INTERVAL '1 day 02:00:00' AS shifted"
    row = session.run_batch(session.parse_sql(query)).to_pylist()[0]
    got = [Interval.from_value(row[f"c{i}"]).pg_text() for i in range(len(LITERALS))] + [str(row["shifted"])]
    as_text = "SELECT " + ", ".join(f"({lit})::text" for lit in LITERALS) + \
              ", ('2024-01-01'::timestamp + INTERVAL '1 day 02:00:00')::text"
    with psycopg.connect(oracle_dsn) as pg:
        pg.execute("SET IntervalStyle = postgres")
        want = list(pg.execute(as_text).fetchone())
    assert got == want


def test_only_literals_sqlglot_would_shorten_are_rewritten():
    assert whole_intervals("SELECT now() - INTERVAL '1 day 02:00', interval '3 days', INTERVAL '1' DAY, "
                           "'interval ''1 day 2:00'''") == \
        "SELECT now() - CAST('1 day 02:00' AS INTERVAL), interval '3 days', INTERVAL '1' DAY, 'interval ''1 day 2:00'''"
    assert whole_intervals("SELECT INTERVAL 'it''s 2 hours ago'") == "SELECT CAST('it''s 2 hours ago' AS INTERVAL)"
    assert whole_intervals("SELECT 1") == "SELECT 1"
    assert whole_intervals("SELECT INTERVAL '1 day 02:00' x") == "SELECT CAST('1 day 02:00' AS INTERVAL) x"  # (an alias)
    assert whole_intervals("SELECT INTERVAL 'P1D'") == "SELECT INTERVAL 'P1D'"  # (ISO 8601: kept whole)
