"""The compute node's service of distributed queries (`compute.batch_query.BatchQueryService`), over a
runner that stands in for Spark: rows travel as an Arrow IPC stream, a cancel reaches a running
query and one that has not arrived yet."""

from __future__ import annotations

import threading
import time

import pyarrow as pa
import pytest

from compute.batch_query import BatchQueryService
from risingspark.errors import QueryCanceled


class Runner:
    """Returns one row, or waits until cancelled."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.cancellable: list[bool] = []

    def run(self, sql: str, relations: list, cancel: threading.Event, cancellable: bool = False,
            time_zone: str | None = None) -> pa.Table:
        self.started.set()
        self.cancellable.append(cancellable)
        if sql == "wait":
            while not cancel.wait(0.01):
                pass
        if cancel.is_set():
            raise QueryCanceled("canceling statement due to user request")
        return pa.table({"n": pa.array([7], pa.int64())})

    def explain(self, sql: str, relations: list) -> str:
        return f"plan of {sql}"


def test_rows_as_an_arrow_stream():
    runner = Runner()
    service = BatchQueryService(runner)  # type: ignore[arg-type]
    data = service.methods()["run_batch_query"]("q1", "select", [])
    assert pa.ipc.open_stream(pa.py_buffer(data)).read_all().to_pylist() == [{"n": 7}]
    service.methods()["run_batch_query"]("q2", "select", [], True)  # (auto mode's frontend sends the flag)
    assert runner.cancellable == [False, True]
    assert service.methods()["explain_batch_query"]("x", []) == "plan of x"


def test_a_cancel_reaches_a_running_query_and_one_not_yet_arrived():
    runner = Runner()
    service = BatchQueryService(runner)  # type: ignore[arg-type]
    errors = []

    def run() -> None:
        try:
            service.run("q2", "wait", [])
        except QueryCanceled as e:
            errors.append(e)

    t = threading.Thread(target=run)
    t.start()
    assert runner.started.wait(5)
    time.sleep(0.05)
    assert service.cancel("q2") is True
    t.join(5)
    assert len(errors) == 1 and not t.is_alive()
    assert service.cancel("q3") is False  # overtook its query
    with pytest.raises(QueryCanceled):
        service.run("q3", "select", [])
    assert service.run("q4", "select", [])  # later queries run
