"""`compute.batch_query.uncancellable_operator`: the physical operators whose tasks a cancel does not
stop (a nested-loop join, a cartesian product), which auto mode runs locally instead."""

from __future__ import annotations

import pytest

from compute.batch_query import uncancellable_operator

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    from compute.spark import SparkSettings, create_spark_session

    started = SparkSession.getActiveSession() is None
    session = create_spark_session(SparkSettings(master="local[1]", app_name="batch-cancel-test"))
    yield session
    if started:  # (a session other tests started stays theirs)
        session.stop()


def test_nested_loop_joins_are_found_and_equi_joins_are_not(spark):
    spark.range(0, 1000).toDF("a").createOrReplaceTempView("bc_a")
    spark.range(0, 1000).toDF("b").createOrReplaceTempView("bc_b")
    found = {sql: uncancellable_operator(spark.sql(sql)) for sql in (
        "SELECT count(*) FROM bc_a, bc_b WHERE a < b",
        "SELECT count(*) FROM bc_a CROSS JOIN bc_b",
        "SELECT count(*) FROM bc_a JOIN bc_b ON a = b",
        "SELECT a, count(*) FROM bc_a GROUP BY a")}
    assert found["SELECT count(*) FROM bc_a, bc_b WHERE a < b"] in ("BroadcastNestedLoopJoin", "CartesianProduct")
    assert found["SELECT count(*) FROM bc_a CROSS JOIN bc_b"] in ("BroadcastNestedLoopJoin", "CartesianProduct")
    assert found["SELECT count(*) FROM bc_a JOIN bc_b ON a = b"] is None
    assert found["SELECT a, count(*) FROM bc_a GROUP BY a"] is None
    # the plan it looked at is the one the query runs with: collecting works as before
    assert spark.sql("SELECT count(*) AS n FROM bc_a, bc_b WHERE a < b").collect()[0]["n"] == 499_500
