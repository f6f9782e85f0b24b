"""Date/time/interval arithmetic, extract / date_part / to_char, the string functions of Nexmark and
TPC-H, and NaN / ±Infinity in float columns, in materialized views compared with PostgreSQL.

One table of random rows — dates and timestamps at month ends and in leap years, NULLs, signed day
offsets, Nexmark-like URLs, floats with NaN, Infinity, -Infinity and -0 — gets views created over
it, then random inserts, updates and deletes; after each round every view equals PostgreSQL's
answer to its query over the same rows. Intervals are compared as the text each server prints (not
as Python timedeltas, in which '1 mon' and '30 days' are equal).
"""

from __future__ import annotations

import datetime as dt
import os
import random

import psycopg
import pytest
from psycopg.types.string import TextLoader

from conftest import PlaygroundProcess, unique_name
from support.oracle import assert_same, copy_table

pytestmark = pytest.mark.e2e

SEED = int(os.environ.get("RISINGSPARK_DATETIME_SEED", "20261126"))
INTERVAL_OID = 1186

VIEWS = {
    # TPC-H style constants and filters: date ± interval is a timestamp
    "tpch_filters": "SELECT id, d FROM {t} WHERE d <= date '2024-12-01' - interval '71' day "
                    "AND d >= date '1996-07-01' AND d < date '2024-01-01' + interval '3' month",
    "tpch_year": "SELECT extract(year from d) AS y, count(*) AS c, sum(n) AS s FROM {t} "
                 "WHERE d < date '2020-01-01' + interval '1' year GROUP BY extract(year from d)",
    "date_arith": "SELECT id, d - interval '71' day AS a, d + interval '1' year AS b, d + interval '3' month AS c, "
                  "d - interval '1 mon' AS c2, d + n AS e, d - n AS f, n + d AS g, d - date '2020-02-29' AS h FROM {t}",
    "ts_arith": "SELECT id, ts + INTERVAL '1' HOUR AS a, ts - INTERVAL '10' SECOND AS b, "
                "ts + interval '1 day 2 hours' AS c, ts - interval '1 mon -3 days 00:00:00.25' AS e, "
                "ts + INTERVAL '5' MINUTE AS f, tz + interval '1 year 1 mon' AS g, ts + (ts2 - ts) AS h FROM {t}",
    "intervals": "SELECT id, ts - ts2 AS a, d - ts AS b, ts2 - d AS c, tz - ts AS e, "
                 "(ts - ts2) + interval '1 mon -2 days' AS f, -(ts - ts2) AS g, interval '1 day 2 hours' AS h, "
                 "(ts - ts2) - interval '-1 year 3 days 04:05' AS i FROM {t}",
    "interval_filter": "SELECT id, ts - ts2 AS a FROM {t} WHERE ts - ts2 > interval '1 day' "
                       "OR ts2 - ts BETWEEN interval '-3 hours' AND '30 days' OR ts - ts2 = interval '1 mon'",
    "extract_ts": "SELECT id, extract(year from ts) AS y, extract(month from ts) AS mo, extract(day from ts) AS dd, "
                  "extract(hour from ts) AS h, extract(minute from ts) AS mi, extract(second from ts) AS s, "
                  "extract(millisecond from ts) AS ms, extract(microsecond from ts) AS us, extract(dow from ts) AS dw, "
                  "extract(isodow from ts) AS idw, extract(doy from ts) AS dy, extract(week from ts) AS w, "
                  "extract(quarter from ts) AS q, extract(epoch from ts) AS ep, extract(decade from ts) AS de, "
                  "extract(century from ts) AS ce, extract(millennium from ts) AS mil, "
                  "extract(isoyear from ts) AS iy FROM {t}",
    "extract_date": "SELECT id, extract(year from d) AS y, extract(dow from d) AS dw, extract(isodow from d) AS idw, "
                    "extract(doy from d) AS dy, extract(week from d) AS w, extract(epoch from d) AS ep, "
                    "extract(isoyear from d) AS iy, extract(quarter from d) AS q FROM {t}",
    "date_part": "SELECT id, date_part('hour', ts) AS h, date_part('second', ts) AS s, date_part('epoch', ts) AS ep, "
                 "date_part('dow', d) AS dw, date_part('minute', d) AS mi, date_part('doy', ts) AS dy FROM {t}",
    "extract_interval": "SELECT id, extract(epoch from ts - ts2) AS ep, extract(day from ts - ts2) AS dd, "
                        "extract(hour from ts - ts2) AS h, extract(minute from ts2 - ts) AS mi, "
                        "extract(second from ts2 - ts) AS s, date_part('epoch', ts2 - d) AS ep2 FROM {t}",
    "to_char": "SELECT id, to_char(ts, 'YYYY-MM-DD') AS a, to_char(ts, 'HH:MI') AS b, to_char(ts, 'HH24:MI') AS c, "
               "to_char(ts, 'HH:mm') AS e, to_char(ts, 'Mon Month Dy Day AM pm MS US') AS f, "
               "to_char(d, 'FMDDth \"of\" FMMonth YYYY, DDD D') AS g, to_char(ts, 'IYYY-IW ID Q WW J SSSS CC') AS h, "
               "to_char(ts, 'FMHH12:MI:SS a.m. MONTH month DY xyz') AS i FROM {t}",
    "nexmark_strings": "SELECT id, split_part(url, '/', 4) AS dir1, split_part(url, '/', -1) AS last, "
                       "(regexp_match(url, '(&|^)channel_id=([^&]*)'))[2] AS channel, lower(url) AS lo, "
                       "upper(split_part(url, '/', 3)) AS up, substring(url from 1 for 5) AS sub1, "
                       "substring(url from n for 4) AS sub2, substr(url, 9) AS sub3, position('/' in url) AS pos, "
                       "strpos(url, 'channel') AS sp, replace(url, 'https', 'http') AS rep, left(url, 5) AS l1, "
                       "left(url, -40) AS l2, right(url, 6) AS r1, right(url, -30) AS r2 FROM {t}",
    "more_strings": "SELECT id, ltrim(url, 'hts:/') AS lt, rtrim(url, 'mth.') AS rt, btrim(url, 'hm') AS bt, "
                    "trim(both 'h' from url) AS tb, lpad(split_part(url, '/', 4), 6, '*') AS lp, "
                    "rpad(split_part(url, '/', 4), 6, 'xy') AS rp, lpad(url, n) AS lp2, repeat(split_part(url, '/', 5), "
                    "2) AS rep, reverse(split_part(url, '/', 4)) AS rev, md5(url) AS h, "
                    "concat(split_part(url, '/', 4), NULL, n) AS cc FROM {t}",
    "nexmark_q14": "SELECT id, CASE WHEN extract(hour from ts) >= 8 AND extract(hour from ts) <= 18 THEN 'dayTime' "
                   "WHEN extract(hour from ts) <= 6 OR extract(hour from ts) >= 20 THEN 'nightTime' ELSE 'otherTime' "
                   "END AS bidtimetype, to_char(ts, 'YYYY-MM-DD') AS dt, to_char(ts, 'HH:MI') AS tm FROM {t} "
                   "WHERE f > 1.0",
    # NaN is greater than every other value and equal to itself
    "float_groups": "SELECT g, max(f) AS mx, min(f) AS mn, max(r) AS rx, min(r) AS rn, count(*) AS c FROM {t} GROUP BY g",
    "float_keys": "SELECT r, count(*) AS c FROM {t} GROUP BY r",
    "float_top_desc": "SELECT id, f FROM {t} ORDER BY f DESC, id LIMIT 6",
    "float_top_asc": "SELECT id, r FROM {t} ORDER BY r, id LIMIT 6",
    "float_filter": "SELECT id, f, r FROM {t} WHERE f = 'NaN' OR f > 1e300 OR r < -1e30 OR f = 0",
}

DATES = [dt.date(2024, 1, 31), dt.date(2024, 2, 29), dt.date(2023, 2, 28), dt.date(2020, 2, 29), dt.date(2023, 3, 31),
         dt.date(2024, 12, 31), dt.date(2021, 1, 3), dt.date(1996, 7, 1), dt.date(2000, 2, 29), dt.date(1999, 12, 31)]
FLOATS = ["'NaN'", "'Infinity'", "'-Infinity'", "'-0'", "0", "1.5", "-2.25", "1e308", "'nan'", "'-inFinity'"]
REALS = ["'NaN'", "'Infinity'", "'-Infinity'", "0", "1.5", "-2.25", "3e38", "-1e35"]


class Rows:
    """A seeded stream of rows and writes."""

    def __init__(self, rng: random.Random, table: str) -> None:
        self.rng, self.t = rng, table
        self.next_id = 0

    def date(self) -> dt.date | None:
        r = self.rng.random()
        if r < 0.1:
            return None
        if r < 0.55:
            return self.rng.choice(DATES)
        return dt.date(1995, 1, 1) + dt.timedelta(days=self.rng.randrange(12_000))

    def timestamp(self) -> dt.datetime | None:
        d = self.date()
        if d is None:
            return None
        micros = self.rng.choice([0, 0, self.rng.randrange(1_000_000), 999_999])
        return dt.datetime(d.year, d.month, d.day, self.rng.randrange(24), self.rng.randrange(60),
                           self.rng.randrange(60), micros)

    def url(self) -> str:
        r = self.rng.random()
        if r < 0.08:
            return "NULL"
        if r < 0.12:
            return "''"
        a, b = self.rng.choice(["item", "bid", "user"]), self.rng.choice(["x", "yy", ""])
        query = self.rng.choice(["query=1&channel_id=" + str(self.rng.randrange(50)), "channel_id=7&z=1",
                                 "channel_id=", "q=2", "a=1&channel_id=abc&b=2"])
        return f"'https://www.nexmark.com/{a}/{b}/item.htm?{query}'"

    def row(self) -> str:
        self.next_id += 1
        rng = self.rng
        ts, ts2 = self.timestamp(), self.timestamp()
        n = "NULL" if rng.random() < 0.1 else str(rng.randrange(-40, 41))
        f = "NULL" if rng.random() < 0.1 else rng.choice(FLOATS)
        r = "NULL" if rng.random() < 0.1 else rng.choice(REALS)
        return (f"({self.next_id}, {_lit(self.date())}, {_lit(ts)}, {_lit(ts2)}, {_lit(ts)}, {self.url()}, {f}, {r}, "
                f"{n}, {rng.randrange(4)})")

    def step(self, conn: psycopg.Connection, n: int) -> None:
        rng = self.rng
        for _ in range(n):
            x = rng.random()
            target = rng.randrange(1, self.next_id + 1)
            if x < 0.4:
                conn.execute(f"INSERT INTO {self.t} VALUES {self.row()}")
            elif x < 0.55:
                conn.execute(f"UPDATE {self.t} SET ts = {_lit(self.timestamp())}, d = {_lit(self.date())} "
                             f"WHERE id = {target}")
            elif x < 0.7:
                conn.execute(f"UPDATE {self.t} SET f = {rng.choice(FLOATS)}, r = {rng.choice(REALS)}, "
                             f"url = {self.url()} WHERE id = {target}")
            elif x < 0.8:
                conn.execute(f"UPDATE {self.t} SET n = {rng.randrange(-40, 41)}, ts2 = {_lit(self.timestamp())} "
                             f"WHERE id = {target}")
            else:
                conn.execute(f"DELETE FROM {self.t} WHERE id = {target}")


def _lit(v: object) -> str:
    return "NULL" if v is None else f"'{v}'"


def _interval_as_text(conn: psycopg.Connection) -> None:
    conn.adapters.register_loader(INTERVAL_OID, TextLoader)


def test_datetime_and_string_functions_match_postgres(playground: PlaygroundProcess, oracle_dsn: str) -> None:
    rng = random.Random(SEED)
    t = unique_name("dtf")
    rows = Rows(rng, t)
    with playground.connect() as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        pg.execute("SET TimeZone = 'UTC'")
        _interval_as_text(conn)
        _interval_as_text(pg)
        conn.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, d DATE, ts TIMESTAMP, ts2 TIMESTAMP, tz TIMESTAMPTZ, "
                     f"url VARCHAR, f DOUBLE PRECISION, r REAL, n INT, g INT)")
        conn.execute(f"INSERT INTO {t} VALUES " + ", ".join(rows.row() for _ in range(150)))
        conn.execute("FLUSH")
        for name, q in VIEWS.items():
            conn.execute(f"CREATE MATERIALIZED VIEW {t}_{name} AS {q.format(t=t)}")
        types = dict(conn.execute("SELECT column_name, data_type FROM information_schema.columns "
                                  "WHERE table_name = %s", (f"{t}_intervals",)).fetchall())
        assert types["a"] == "interval" and types["h"] == "interval"
        for round_ in range(3):
            if round_:
                rows.step(conn, 40)
            conn.execute("FLUSH")
            copy_table(conn, pg, t)
            failures = []
            for name, q in VIEWS.items():
                try:
                    n = assert_same(conn, pg, f"{t}_{name}", q.format(t=t))
                    assert n > 0 or name in ("interval_filter",), f"{name}: no rows, the view tests nothing"
                except AssertionError as e:
                    failures.append(str(e))
            assert not failures, f"round {round_}:\n" + "\n".join(failures)
        # the stored intervals read back as PostgreSQL prints them, over the wire and in batch queries
        got = conn.execute(f"SELECT h FROM {t}_intervals LIMIT 1").fetchone()
        assert got == ("1 day 02:00:00",)


@pytest.mark.parametrize(("ddl", "words"), [
    ("CREATE MATERIALIZED VIEW {t}_bad AS SELECT ts - ts2 AS x, count(*) AS c FROM {t} GROUP BY ts - ts2",
     "as a key"),
    ("CREATE MATERIALIZED VIEW {t}_bad AS SELECT (ts - ts2) * 2 AS x FROM {t}", "interval arithmetic"),
    ("CREATE MATERIALIZED VIEW {t}_bad AS SELECT to_char(ts, 'HH24 TZ') AS x FROM {t}", '"TZ"'),
    ("CREATE MATERIALIZED VIEW {t}_bad AS SELECT extract(hour from d) AS x FROM {t}", "not supported for type date"),
    ("INSERT INTO {t} (id, v) VALUES (1, 'NaN')", "NaN or Infinity"),
    ("INSERT INTO {t} (id, v) VALUES (2, '-Infinity'), (3, 1.5)", "NaN or Infinity"),
    ("CREATE TABLE {t}_bad (i interval)", "interval columns in tables"),
])
def test_unsupported_fails_with_0a000(playground: PlaygroundProcess, ddl: str, words: str) -> None:
    t = unique_name("dtu")
    with playground.connect() as conn:
        conn.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, d DATE, ts TIMESTAMP, ts2 TIMESTAMP, v NUMERIC)")
        with pytest.raises(psycopg.errors.FeatureNotSupported, match=words):
            conn.execute(ddl.format(t=t))
        conn.execute(f"DROP TABLE {t} CASCADE")
