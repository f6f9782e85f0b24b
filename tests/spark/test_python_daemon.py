"""The compute node's Python worker daemon (`compute.python_daemon`): a reused worker collects the
young generations after each task, never a full pass over its heap (PySpark's own daemon runs
``gc.collect()``, which cost a loaded node most of its CPU)."""

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
    session = create_spark_session(SparkSettings(master="local[1]", app_name="python-daemon-test"))
    yield session
    if existing is None:  # a session other tests started stays theirs
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


def test_a_worker_whose_memory_grew_by_half_makes_a_full_collection(spark) -> None:
    def _task(hold: bool | None):  # in the worker (pickled by value)
        def run(_: object) -> list[tuple[int, int, int]]:
            import builtins
            import gc
            import os

            stats = gc.get_stats()
            if hold:  # written, so resident: more than half again a worker's memory
                builtins._rs_test_hold = b"x" * (600 << 20)  # type: ignore[attr-defined]
            elif hold is False:
                del builtins._rs_test_hold  # type: ignore[attr-defined]
            return [(os.getpid(), stats[1]["collections"], stats[2]["collections"])]

        return run

    def reading(hold: bool | None) -> tuple[int, int, int]:
        return spark.sparkContext.parallelize([0], 1).flatMap(_task(hold)).collect()[0]

    reading(None)
    reading(None)  # the worker's first full collection (after its first task) is behind
    before = reading(True)
    after_growth = reading(False)
    after_release = reading(None)
    assert before[0] == after_growth[0] == after_release[0], "the worker was not reused"
    assert after_growth[2] > before[2], f"no full collection after the memory grew: {before}, {after_growth}"
    # releasing memory is no growth: no full collection after that task
    assert after_release[2] == after_growth[2]
