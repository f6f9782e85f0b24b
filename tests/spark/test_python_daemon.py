"""The compute node's Python worker daemon (`compute.python_daemon`) in a real Spark session: a
reused worker collects the young generations after each task, not its whole heap (PySpark's own
daemon runs a full ``gc.collect()`` after every task, which cost a loaded node most of its CPU).
When it does make a full collection: `tests/unit/compute/test_python_daemon_rule.py`."""

from __future__ import annotations

from collections import defaultdict

import pytest

pytestmark = pytest.mark.spark

TASKS = 6


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    from compute.spark import SparkSettings, create_spark_session

    existing = SparkSession.getActiveSession()
    if existing is not None:  # one worker must run every task in turn: a session of our own
        pytest.skip("another module's SparkSession is still active")
    session = create_spark_session(SparkSettings(master="local[1]", app_name="python-daemon-test"))
    yield session
    session.stop()


def test_a_reused_worker_collects_young_generations_only(spark) -> None:
    def _collections(_: object) -> list[tuple[int, int, int]]:  # in the worker (pickled by value)
        import gc
        import os

        stats = gc.get_stats()
        return [(os.getpid(), stats[1]["collections"], stats[2]["collections"])]

    assert spark.sparkContext.getConf().get("spark.python.daemon.module") == "compute.python_daemon"
    seen: dict[int, list[tuple[int, int]]] = defaultdict(list)
    # a worker's first task is followed by a full collection (its memory grew from nothing)
    spark.sparkContext.parallelize([0], 1).flatMap(_collections).collect()
    for _ in range(TASKS):  # one task a job, one after the other: the idle worker is reused
        for pid, young, full in spark.sparkContext.parallelize([0], 1).flatMap(_collections).collect():
            seen[pid].append((young, full))
    pid, counts = max(seen.items(), key=lambda kv: len(kv[1]))
    assert len(counts) >= TASKS - 1, f"the worker was not reused: {dict(seen)}"
    young = [y for y, _ in counts]
    full = [f for _, f in counts]
    # after each task the daemon collected generation 1 (and 0) ...
    assert all(b > a for a, b in zip(young, young[1:], strict=False)), young
    # ... and not a full one: PySpark's daemon makes one after every task (the interpreter's own
    # full passes, which may still come, need far more allocation than these tasks make)
    assert full[-1] - full[0] < len(full) - 1, full

