"""`risingspark.vnode.vnode_of` (Spark's Murmur3 `hash()` in Python, used by index point lookups)
gives the vnode Spark computes with `vnode_expr` for every type a distribution key can have."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from risingspark.vnode import spark_hash, vnode_expr, vnode_of

pytestmark = pytest.mark.spark

CASES = [
    ("INT", [0, 1, -1, 42, 2**31 - 1, -(2**31), 123456]),
    ("SMALLINT", [0, 7, -32768, 32767]),
    ("BIGINT", [0, 1, -1, 2**40, -(2**63), 2**63 - 1]),
    ("BOOLEAN", [True, False]),
    ("DOUBLE", [0.0, -0.0, 1.5, -2.25, 1e300]),
    ("FLOAT", [0.0, 1.5, -3.25]),
    ("STRING", ["", "a", "ab", "abc", "abcd", "abcde", "héllo wörld", "ünïcödé ✓", "x" * 37]),
    ("DECIMAL(10,2)", [Decimal("0"), Decimal("10.50"), Decimal("-3.25"), Decimal("99999999.99")]),
    ("DECIMAL(38,2)", [Decimal("0"), Decimal("30.50"), Decimal("-1.01"), Decimal("123456789012345678901234.56"),
                       Decimal("1.28"), Decimal("-1.28"), Decimal("-1.29")]),
    ("DATE", [dt.date(1970, 1, 1), dt.date(2024, 2, 29), dt.date(1900, 12, 31)]),
    ("TIMESTAMP", [dt.datetime(2024, 1, 2, 3, 4, 5, 6), dt.datetime(1960, 1, 1)]),
]


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    from compute.spark import SparkSettings, create_spark_session

    existing = SparkSession.getActiveSession()
    session = create_spark_session(SparkSettings(master="local[1]", app_name="vnode-hash-test"))
    session.conf.set("spark.sql.session.timeZone", "UTC")
    yield session
    if existing is None:  # a session other tests started stays theirs
        session.stop()


def _spark_values(spark, spark_type: str, values: list) -> list[tuple[int, int]]:
    from pyspark.sql import functions as F

    df = spark.createDataFrame([(i, v) for i, v in enumerate(values)], f"i INT, v {spark_type}"
                               if spark_type != "TIMESTAMP" else "i INT, v TIMESTAMP_NTZ")
    rows = df.select("i", F.expr("hash(CAST(v AS " + spark_type + "))").alias("h"),
                     F.expr(vnode_expr(["v"], [spark_type])).alias("vnode")).collect()
    return [(r["h"], r["vnode"]) for r in sorted(rows, key=lambda r: r["i"])]


@pytest.mark.parametrize(("spark_type", "values"), CASES, ids=[c[0] for c in CASES])
def test_hash_matches_spark(spark, spark_type: str, values: list) -> None:
    expected = _spark_values(spark, spark_type, values)
    assert [(spark_hash([v], [spark_type]), vnode_of([v], [spark_type])) for v in values] == expected


def test_several_columns_and_nulls(spark) -> None:
    from pyspark.sql import functions as F

    rows = [(1, "a", Decimal("1.50")), (None, "b", None), (3, None, Decimal("-2.00"))]
    df = spark.createDataFrame(rows, "a INT, b STRING, c DECIMAL(38,2)")
    got = df.select(F.expr(vnode_expr(["a", "b", "c"], ["INT", "STRING", "DECIMAL(38,2)"])).alias("v")).collect()
    assert [r["v"] for r in got] == [vnode_of(list(r), ["INT", "STRING", "DECIMAL(38,2)"]) for r in rows]
