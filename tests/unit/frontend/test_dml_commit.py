"""Group commit (`frontend.dml_commit`): concurrent writers share commits to meta, each gets its own
receipt once its batch is recorded, errors reach every writer of the failed group, and a writer alone
commits at once. Small statements' rows are written by the commit, one file per run of one table;
asynchronous commit returns at once, keeps the order, retries a failed commit (FLUSH reports it) and
bounds its queue."""

from __future__ import annotations

import threading
import time

import pyarrow as pa
import pytest

from frontend import dml_commit
from frontend.dml_commit import GroupCommit
from risingspark.barrier import DmlReceipt
from risingspark.errors import QueryCanceled


class SlowMeta:
    """Records batches like meta, taking `seconds` per call (a commit's fsync)."""

    def __init__(self, seconds: float = 0.05) -> None:
        self.seconds = seconds
        self.calls: list[list[tuple[int, str, int]]] = []
        self.retried: list[bool] = []  # per successful call: whether the commit said it retries
        self.fail_paths: set[str] = set()
        self._next = 1
        self._lock = threading.Lock()
        self.active = 0
        self.most_active = 0

    def submit_dml_batches(self, batches: list[tuple[int, str, int]], retried: bool = False) -> list[DmlReceipt]:
        with self._lock:
            self.active += 1
            self.most_active = max(self.most_active, self.active)
        try:
            time.sleep(self.seconds)
            if any(b[1] in self.fail_paths for b in batches):
                raise OSError("disk full")
            with self._lock:
                self.calls.append([tuple(b[:3]) for b in batches])
                self.retried.append(retried)
                first, self._next = self._next, self._next + len(batches)
            return [DmlReceipt(first + i, False) for i in range(len(batches))]
        finally:
            with self._lock:
                self.active -= 1


def test_concurrent_writers_share_commits_and_get_their_own_receipts():
    meta = SlowMeta()
    commit = GroupCommit(meta)
    receipts: dict[str, int] = {}

    def writer(i: int) -> None:
        for j in range(5):
            path = f"w{i}-{j}"
            receipts[path] = commit.submit(i, path, 1).batch_id

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    recorded = {b[1]: n for n, b in enumerate((b for call in meta.calls for b in call), start=1)}
    assert receipts == recorded  # every writer got the id meta gave its batch
    assert len(receipts) == 80 and len(meta.calls) < 40  # shared commits
    assert meta.most_active == 1  # one commit at a time
    for call in meta.calls:  # a writer's batches in its order
        for i in range(16):
            mine = [b[1] for b in call if b[1].startswith(f"w{i}-")]
            assert mine == sorted(mine)


def test_a_writer_alone_commits_at_once():
    meta = SlowMeta(0)
    commit = GroupCommit(meta)
    assert [commit.submit(7, f"p{i}", 3).batch_id for i in range(3)] == [1, 2, 3]
    assert meta.calls == [[(7, "p0", 3)], [(7, "p1", 3)], [(7, "p2", 3)]]


def test_every_writer_of_a_failed_group_gets_the_error():
    meta = SlowMeta(0.2)
    meta.fail_paths.add("bad")
    commit = GroupCommit(meta)
    results: dict[str, object] = {}

    def writer(path: str) -> None:
        try:
            results[path] = commit.submit(1, path, 1).batch_id
        except OSError as e:
            results[path] = e

    first = threading.Thread(target=writer, args=("first",))
    first.start()
    time.sleep(0.05)  # "first" commits alone; these two wait, then go together
    others = [threading.Thread(target=writer, args=(p,)) for p in ("bad", "good")]
    for t in others:
        t.start()
    for t in [first, *others]:
        t.join()
    assert results["first"] == 1
    assert isinstance(results["bad"], OSError) and isinstance(results["good"], OSError)
    assert commit.submit(1, "after", 1).batch_id == 2  # the group commit goes on
    with pytest.raises(OSError, match="disk full"):
        commit.submit(1, "bad", 1)


# ---- in-memory batches and asynchronous commit ----------------------------------------------------

class FlakyMeta(SlowMeta):
    """Meta whose first `failures` calls fail (the meta store unreachable)."""

    def __init__(self, failures: int) -> None:
        super().__init__(0)
        self.failures_left = failures

    def submit_dml_batches(self, batches: list[tuple[int, str, int]], retried: bool = False) -> list[DmlReceipt]:
        with self._lock:
            fail, self.failures_left = self.failures_left > 0, max(self.failures_left - 1, 0)
        if fail:
            raise OSError("meta store unreachable")
        return super().submit_dml_batches(batches, retried)


class GatedMeta(SlowMeta):
    """Meta whose commits wait until `gate` is set."""

    def __init__(self) -> None:
        super().__init__(0)
        self.gate = threading.Event()

    def submit_dml_batches(self, batches: list[tuple[int, str, int]], retried: bool = False) -> list[DmlReceipt]:
        self.gate.wait()
        return super().submit_dml_batches(batches, retried)


class RecordingStore:
    """An object store's `write_parquet` that keeps the tables written, by path."""

    def __init__(self) -> None:
        self.files: dict[str, pa.Table] = {}

    def write_parquet(self, path: str, table: pa.Table) -> int:
        self.files[path] = table
        return table.nbytes


def _rows(*values: int, extra: bool = False) -> pa.Table:
    cols = {"v": pa.array(values, pa.int64())}
    if extra:
        cols["w"] = pa.nulls(len(values), pa.int64())
    return pa.table(cols)


def _recorded(meta: SlowMeta, store: RecordingStore) -> list[tuple[int, list[int]]]:
    """Every recorded batch in order: its table and the values of its file (or of its path)."""
    out = []
    for call in meta.calls:
        for table_id, path, rows, *_ in call:
            values = store.files[path].column("v").to_pylist() if path in store.files else [int(path)]
            assert len(values) == rows
            out.append((table_id, values))
    return out


def _until(check, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline
        time.sleep(0.001)


def test_concurrent_small_statements_share_one_file_per_table_run():
    meta, store = SlowMeta(0.5), RecordingStore()
    commit = GroupCommit(meta, store)
    first = threading.Thread(target=commit.submit_rows, args=(1, _rows(0)))
    first.start()
    _until(lambda: meta.active == 1)
    # these arrive while the first commit runs, each queued before the next starts: one group, in this order
    rest = [(1, _rows(1)), (1, _rows(2, 3)), (2, _rows(4)), (1, _rows(5)), (1, _rows(6, extra=True))]
    threads = []
    for i, (table_id, rows) in enumerate(rest):
        threads.append(threading.Thread(target=commit.submit_rows, args=(table_id, rows)))
        threads[-1].start()
        _until(lambda i=i: len(commit._pending) == i + 1)  # noqa: SLF001
    for t in [first, *threads]:
        t.join()
    # the run of table 1 is one file, table 2 breaks it, a new column (ALTER TABLE) starts another
    assert _recorded(meta, store) == [(1, [0]), (1, [1, 2, 3]), (2, [4]), (1, [5]), (1, [6])]
    assert len(meta.calls) == 2


def test_asynchronous_statements_return_at_once_and_drain_records_them_in_order():
    meta, store = GatedMeta(), RecordingStore()
    commit = GroupCommit(meta, store)
    writer = threading.Thread(target=lambda: [commit.submit_rows(1, _rows(i), durable=False) for i in range(50)])
    writer.start()
    writer.join(timeout=30)
    assert not writer.is_alive() and meta.calls == []  # all returned while no commit could end
    meta.gate.set()
    commit.submit(1, "50", 1)  # a durable statement after them: recorded after them
    commit.drain()
    assert [v for _, values in _recorded(meta, store) for v in values] == list(range(51))
    assert len(meta.calls) <= 3  # the queue went in groups, not one commit per statement


def test_flush_does_not_wait_for_the_gathering_delay():
    """The flusher gathers statements for its delay before a commit; a FLUSH (`drain`) cuts it short."""
    meta, store = SlowMeta(0), RecordingStore()
    commit = GroupCommit(meta, store, flush_delay_s=3600.0)
    commit.submit_rows(1, _rows(1), durable=False)
    commit.drain(timeout=60)
    assert _recorded(meta, store) == [(1, [1])]  # (within the timeout: a TimeoutError otherwise)


def test_statements_queued_while_the_flusher_gathers_do_not_wake_it():
    """Each wake-up of a gathering flusher costs the statement's thread and the flusher's (~80 µs of
    CPU a single-row INSERT, measured in-process); the flusher wakes for the first batch only, and at
    the end of its delay."""
    meta, store = SlowMeta(0), RecordingStore()
    commit = GroupCommit(meta, store, flush_delay_s=3600.0)
    commit.queue_rows(1, _rows(0), durable=False)
    time.sleep(0.3)  # (the flusher took it: it gathers for an hour)
    wakes = []
    notify_all = commit._cond.notify_all
    commit._cond.notify_all = lambda: (wakes.append(1), notify_all())  # type: ignore[method-assign]
    for i in range(1, 100):
        assert commit.queue_rows(1, _rows(i), durable=False) == 0
    assert wakes == []
    commit.drain(timeout=60)
    assert [v for _, values in _recorded(meta, store) for v in values] == list(range(100))
    _until(lambda: commit._flusher_idle)
    commit.queue_rows(1, _rows(100), durable=False)  # (the idle flusher is woken for the next one)
    assert wakes and commit.drain(timeout=60) is None
    assert [v for _, values in _recorded(meta, store) for v in values] == list(range(101))


def test_a_failed_asynchronous_commit_is_retried_and_flush_reports_it(monkeypatch):
    monkeypatch.setattr(dml_commit, "RETRY_S", (0.01, 0.02))
    meta, store = FlakyMeta(failures=3), RecordingStore()
    commit = GroupCommit(meta, store)
    commit.submit_rows(1, _rows(1), durable=False)
    with pytest.raises(OSError, match="meta store unreachable"):
        commit.drain()  # FLUSH while the commit cannot be made: its error, not a silent success
    meta.failures_left = 0
    deadline = time.monotonic() + 5
    while True:  # the flusher's retry records it
        try:
            commit.drain()
            break
        except OSError:
            assert time.monotonic() < deadline
            time.sleep(0.01)
    assert _recorded(meta, store) == [(1, [1])]
    commit.close()


def test_a_durable_statement_in_a_failed_group_fails_and_queued_rows_stay_queued(monkeypatch):
    monkeypatch.setattr(dml_commit, "RETRY_S", (0.3, 0.3))
    meta, store = FlakyMeta(failures=2), RecordingStore()
    commit = GroupCommit(meta, store)
    commit.submit_rows(1, _rows(1), durable=False)
    time.sleep(0.1)  # the flusher's commit failed; it waits before retrying
    with pytest.raises(OSError, match="meta store unreachable"):
        commit.submit_rows(1, _rows(2))  # leads a commit of the queued batch and its own: fails
    commit.drain(timeout=5)  # the queued batch is retried and recorded; the failed statement's is not
    assert _recorded(meta, store) == [(1, [1])]


def test_the_queue_is_bounded(monkeypatch):
    monkeypatch.setattr(dml_commit, "MAX_QUEUED_ROWS", 4)
    meta, store = GatedMeta(), RecordingStore()
    commit = GroupCommit(meta, store)
    commit.submit_rows(1, _rows(0, 1, 2), durable=False)  # the flusher's commit of these waits on the gate
    commit.submit_rows(1, _rows(3, 4, 5), durable=False)  # queued: 6 rows, past the bound
    writer = threading.Thread(target=commit.submit_rows, args=(1, _rows(6)), kwargs={"durable": False})
    writer.start()
    writer.join(timeout=0.5)
    assert writer.is_alive()  # waits for the flusher
    meta.gate.set()
    writer.join(timeout=30)
    assert not writer.is_alive()
    commit.drain()
    assert [v for _, values in _recorded(meta, store) for v in values] == list(range(7))


def test_a_writer_waiting_for_room_in_a_full_queue_is_cancelled_with_nothing_written(monkeypatch):
    monkeypatch.setattr(dml_commit, "MAX_QUEUED_ROWS", 4)
    meta, store = GatedMeta(), RecordingStore()
    commit = GroupCommit(meta, store)
    commit.submit_rows(1, _rows(0, 1, 2), durable=False)  # the flusher's commit of these waits on the gate
    commit.submit_rows(1, _rows(3, 4, 5), durable=False)  # queued: 6 rows, past the bound
    cancel, outcome = threading.Event(), []

    def write() -> None:
        try:
            commit.submit_rows(1, _rows(6), cancel=cancel)
            outcome.append("written")
        except QueryCanceled as e:
            outcome.append(e.sqlstate)

    writer = threading.Thread(target=write)
    writer.start()
    writer.join(timeout=0.5)
    assert writer.is_alive()  # waits for room (meta is down)
    cancel.set()  # a CancelRequest, or the statement timeout
    writer.join(timeout=5)
    assert outcome == ["57014"]
    meta.gate.set()
    commit.drain()
    assert [v for _, values in _recorded(meta, store) for v in values] == list(range(6))  # not 6


def test_flush_waits_for_queued_rows_a_failed_durable_group_put_back(monkeypatch):
    """A durable statement leads a commit of the queued batch and its own, which fails: the queued
    batch goes back to the queue, and a drain begun before must not count the failed statement's
    batch as the end of its wait."""
    monkeypatch.setattr(dml_commit, "RETRY_S", (0.3, 0.3))
    meta, store = FlakyMeta(failures=2), RecordingStore()
    commit = GroupCommit(meta, store)
    commit.submit_rows(1, _rows(1), durable=False)
    with pytest.raises(OSError):
        commit.drain()  # the flusher's first commit fails
    with pytest.raises(OSError):
        commit.submit_rows(1, _rows(2))  # leads [queued, own]: fails; the queued one is retried
    commit.drain(timeout=5)
    assert _recorded(meta, store) == [(1, [1])]


def test_a_retried_commit_records_the_same_file():
    meta, store = FlakyMeta(failures=1), RecordingStore()
    commit = GroupCommit(meta, store)
    commit.submit_rows(1, _rows(1), durable=False)
    deadline = time.monotonic() + 5
    while not meta.calls:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert len(store.files) == 1  # the failed attempt's file is the one recorded, not a second copy
    assert meta.calls == [[(1, next(iter(store.files)), 1)]]
    assert meta.retried == [True]  # meta is told, so it looks the path up
    commit.submit_rows(1, _rows(2))
    assert meta.retried == [True, False]  # a first attempt costs meta no lookup


def test_close_records_the_queue_through_failures_and_later_writes_wait():
    meta, store = FlakyMeta(failures=3), RecordingStore()
    commit = GroupCommit(meta, store)
    commit.submit_rows(1, _rows(1), durable=False)
    commit.close(timeout=10)  # retries until recorded, where one failure used to end it
    assert _recorded(meta, store) == [(1, [1])]
    assert commit.submit_rows(1, _rows(2), durable=False) is not None  # closed: recorded before it returns
    assert _recorded(meta, store) == [(1, [1]), (1, [2])]
