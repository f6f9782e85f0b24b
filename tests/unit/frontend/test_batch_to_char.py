"""``to_char(timestamp, template)`` in batch queries (`frontend.catalog.to_char`) against PostgreSQL
(the oracle): sqlglot's strftime translation got names, 12-hour clocks and padding wrong."""

from __future__ import annotations

import psycopg
import pytest
from catalog_session import make_session

from risingspark.errors import FeatureNotSupported

STAMPS = ["2024-03-05 15:04:05.123456", "2024-12-31 23:59:59", "2021-01-03 00:00:00.5", "1999-07-11 12:30:00"]
TEMPLATES = ["Mon DD YYYY HH:MI PM Day", "YYYY-MM-DD HH24:MI:SS.MS", "Month", "FMMonth FMDDth, YYYY", "Dy dy DY",
             "HH12 AM a.m.", "IYYY-IW ID", "WW W Q CC J DDD D", "US FF3 SSSS", '"Week" IW "of" YYYY', "rm RM",
             "Y,YYY YYY YY Y", "DDTH ddth", "hh24:mi:ss", "FMHH12:MI", "TMMonth", "mon MON"]


def test_to_char_formats_as_postgresql(oracle_dsn: str):
    session = make_session()
    items = [f"to_char('{s}'::timestamp, '{t}')" for s in STAMPS for t in TEMPLATES]
    items += ["to_char('2024-03-05'::date, 'DD Mon YYYY')", "to_char(NULL::timestamp, 'YYYY')",
              "to_char('2024-03-05'::timestamp, '')", "to_char('infinity'::timestamp, 'YYYY')"]
    query = "SELECT " + ", ".join(f"{item} AS c{i}" for i, item in enumerate(items))
    got = list(session.run_batch(session.parse_sql(query)).to_pylist()[0].values())
    with psycopg.connect(oracle_dsn) as pg:
        want = list(pg.execute(query).fetchone())
    assert list(zip(items, got, strict=True)) == list(zip(items, want, strict=True))


def test_time_zone_patterns_and_years_past_python_are_not_supported():
    session = make_session()
    with pytest.raises(FeatureNotSupported, match="TZ"):
        session.run_batch(session.parse_sql("SELECT to_char('2024-03-05'::timestamp, 'HH24 TZ')"))
    for stamp in ("12000-01-01",):  # (not a wrong year: Python's datetime holds 1 to 9999)
        with pytest.raises(FeatureNotSupported, match="year"):
            session.run_batch(session.parse_sql(f"SELECT to_char(TIMESTAMP '{stamp}', 'YYYY BC')"))
