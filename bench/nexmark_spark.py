"""RisingWave's Nexmark queries as plain Spark SQL batch jobs over the same rows (the baseline of
bench/nexmark.py's backfill times).

Each query's Spark text is its RisingWave text with explicit rewrites (``REWRITES``), each asserted to
apply:

* ``TUMBLE(t, ts, size)`` / ``HOP(t, ts, hop, size)`` become a FROM item over Spark's ``window()``
  (windows aligned to the Unix epoch, end exclusive, as RisingWave's), named ``t`` so ``t.col`` still
  resolves;
* ``to_char(ts, 'YYYY-MM-DD')`` becomes ``date_format(ts, 'yyyy-MM-dd')`` (PostgreSQL's ``HH`` is the
  12-hour hour (Spark ``hh``), ``MI`` the minute (``mm``) and ``mm`` the month (``MM``));
* ``(regexp_match(s, p))[2]`` becomes ``CASE WHEN s RLIKE p THEN regexp_extract(s, p, 2) END`` (NULL
  without a match, as PostgreSQL's);
* q102's ``COUNT(*) / COUNT(DISTINCT auction)`` divides integers (``div``), as PostgreSQL does;
* a double-quoted alias (q15, q16's ``"day"``) is back-quoted (Spark reads ``"..."`` as a string).

A query Spark cannot run is reported with Spark's error (``spark_error``) rather than timed.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

from nexmark_events import PROPORTION, SPARK, events_sql

from support.nexmark_queries import QUERIES


def tumble(table: str, ts: str, size_s: int) -> str:
    """A Spark FROM item equal to ``TUMBLE(table, ts, INTERVAL 'size_s' SECOND)``."""
    return (f"(SELECT *, w.start AS window_start, w.end AS window_end "
            f"FROM (SELECT *, window({ts}, '{size_s} seconds') AS w FROM {table})) AS {table}")


def hop(table: str, ts: str, hop_s: int, size_s: int) -> str:
    """A Spark FROM item equal to ``HOP(table, ts, INTERVAL 'hop_s' SECOND, INTERVAL 'size_s' SECOND)``."""
    return (f"(SELECT *, w.start AS window_start, w.end AS window_end "
            f"FROM (SELECT *, window({ts}, '{size_s} seconds', '{hop_s} seconds') AS w FROM {table})) AS {table}")


_HOP_BID = ("HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND)", hop("bid", "date_time", 2, 10))
_DAY = [("to_char(date_time, 'YYYY-MM-DD')", "date_format(date_time, 'yyyy-MM-dd')")]
_CHANNEL_ID = "(regexp_match(url, '(&|^)channel_id=([^&]*)'))[2]"

# query -> the (old, new) text replacements that make it Spark SQL; every old text must occur
REWRITES: dict[str, list[tuple[str, str]]] = {
    "q5": [_HOP_BID],
    "q5_unqualified": [_HOP_BID],
    "q7": [("TUMBLE(bid, date_time, INTERVAL '10' SECOND)", tumble("bid", "date_time", 10))],
    "q8": [("TUMBLE(person, date_time, INTERVAL '10' SECOND)", tumble("person", "date_time", 10)),
           ("TUMBLE(auction, date_time, INTERVAL '10' SECOND)", tumble("auction", "date_time", 10))],
    "q10": [("TO_CHAR(date_time, 'YYYY-MM-DD')", "date_format(date_time, 'yyyy-MM-dd')"),
            ("TO_CHAR(date_time, 'HH:MI')", "date_format(date_time, 'hh:mm')")],
    "q15": [*_DAY, ('as "day"', "AS `day`")],
    "q16": [*_DAY, ("to_char(date_time, 'HH:mm')", "date_format(date_time, 'hh:MM')"), ('as "day"', "AS `day`"),
            ('as "minute"', "AS `minute`")],
    "q17": _DAY,
    "q21": [(_CHANNEL_ID, "CASE WHEN url RLIKE '(&|^)channel_id=([^&]*)' "
                          "THEN regexp_extract(url, '(&|^)channel_id=([^&]*)', 2) END")],
    "q102": [("COUNT(*) / COUNT(DISTINCT auction)", "COUNT(*) div COUNT(DISTINCT auction)")],
}


def spark_sql(name: str) -> str:
    """The Spark SQL text of query ``name``.

    >>> "window(date_time, '10 seconds')" in spark_sql("q7")
    True
    """
    text = QUERIES[name]
    for old, new in REWRITES.get(name, []):
        assert old in text, f"{name}: the Spark rewrite of {old!r} did not apply"
        text = text.replace(old, new)
    return text


def write_tables(spark: Any, events: int, work: Path) -> dict[str, str]:
    """person, auction and bid of events 0 to ``events - 1`` as Parquet (the rows the playground
    holds); returns each table's path."""
    paths = {}
    for table in PROPORTION:
        paths[table] = str(work / f"{table}.parquet")
        spark.sql(events_sql(table, 0, events - 1, SPARK)).write.mode("overwrite").parquet(paths[table])
    return paths


def run_queries(spark: Any, paths: dict[str, str], names: list[str], work: Path) -> dict[str, dict]:
    """Each query as a batch job (read Parquet -> query -> write Parquet), timed; the first query runs
    once untimed before, to warm the JIT and the Parquet reader up."""
    for table, path in paths.items():
        spark.read.parquet(path).createOrReplaceTempView(table)
    # q14's count_char, as a Python function (the view runs RisingWave's JavaScript one)
    spark.udf.register("count_char", lambda s, c: None if s is None or c is None else s.count(c), "int")
    with contextlib.suppress(Exception):  # the query's own run below reports its error
        spark.sql(spark_sql(names[0])).write.mode("overwrite").parquet(str(work / "warm_up"))
    out: dict[str, dict] = {}
    for name in names:
        try:
            text = spark_sql(name)
            start = time.perf_counter()
            spark.sql(text).write.mode("overwrite").parquet(str(work / f"out_{name}"))
            elapsed = time.perf_counter() - start
            rows = spark.read.parquet(str(work / f"out_{name}")).count()
            out[name] = {"spark_batch_s": round(elapsed, 2), "spark_rows": rows}
        except Exception as e:  # noqa: BLE001 - recorded in the result: one query's failure is a finding
            out[name] = {"spark_error": f"{type(e).__name__}: {' '.join(str(e).split())[:400]}"}
    return out
