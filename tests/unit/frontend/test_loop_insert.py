"""An INSERT of literals on the event loop (`frontend.loop_insert`), through a frontend with a real meta
service over SQLite and a real DML log: it runs without a statement thread, durable or not; what it
cannot take runs on a thread with the thread path's errors; statements queued in one pass of the loop
share one sync; slow syncs go to a thread; a failed sync fails the statement and later ones wait for
meta."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from frontend import dml_log, loop_insert
from frontend.loop_insert import MAX_TEXT, insert_on_loop
from frontend.pgwire.api import StatementResult
from frontend.session import Frontend, Session
from meta.service import MetaService
from risingspark.errors import InternalError, NotNullViolation
from risingspark.types import INT4, INT8, Field
from support.meta_tables import create_table, sqlite_meta

INSERT = "INSERT INTO t VALUES ($1, $2)"


class CountingPool(ThreadPoolExecutor):
    def __init__(self) -> None:
        super().__init__(2)
        self.submitted = 0

    def submit(self, *args, **kwargs):
        self.submitted += 1
        return super().submit(*args, **kwargs)


@pytest.fixture(autouse=True)
def quick_syncs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Syncs count as quick whatever the disk does: in loaded runs (CI, a test run beside) they
    averaged over 1 ms and went to a thread, as they should, failing the tests' counts of threads;
    which path slow syncs take is tested on its own (it sets the bound back)."""
    monkeypatch.setattr(loop_insert, "INLINE_SYNC_S", 60.0)


@pytest.fixture
def meta(tmp_path) -> Iterator[MetaService]:
    service = sqlite_meta(tmp_path)
    create_table(service, "t", (Field("k", INT8), Field("v", INT4)))
    yield service


@pytest.fixture
def frontend(meta: MetaService, tmp_path, monkeypatch) -> Iterator[Frontend]:
    fe = Frontend(meta, meta.objects, cache_bytes=1 << 20, workers=2, dml_log_dir=tmp_path / "log")
    pool = CountingPool()
    monkeypatch.setattr(fe, "pool", pool)
    assert fe.loop_sync is not None
    monkeypatch.setattr(fe.loop_sync, "_pool", pool)
    yield fe
    fe.close()
    pool.shutdown()


def _session(frontend: Frontend) -> Session:
    s = frontend.new_session()
    asyncio.run(s.startup({"user": "root", "database": "dev"}))
    return s


def _recorded(meta: MetaService) -> list[tuple[int, int]]:
    with meta.store.engine.connect() as conn:
        paths = [p for (p,) in conn.exec_driver_sql("SELECT path FROM dml_batches ORDER BY id")]
    return [(r["k"], r["v"]) for p in paths for r in meta.objects.read_parquet(p).select(["k", "v"]).to_pylist()]


def _run(session: Session, sql: str, params: list, oids: list[int] | None = None):
    return asyncio.run(session.execute(sql, [20, 23] if oids is None else oids, params))


def test_a_durable_insert_runs_on_the_event_loop_and_is_logged(frontend: Frontend, meta: MetaService) -> None:
    session = _session(frontend)
    pool = frontend.pool
    pool.submitted = 0  # (the session's startup read the catalog on it)
    for k in range(3):
        assert _run(session, INSERT, [k, k * 10]).tag == "INSERT 0 1"
    session.vars.set("synchronous_commit", "off")
    assert _run(session, "INSERT INTO t (v, k) VALUES (5, 3), (6, 4)", [], []).tag == "INSERT 0 2"
    assert pool.submitted == 0  # (CountingPool) no statement thread, no sync thread
    assert frontend.dml._log.written == 3  # type: ignore[union-attr]  # the durable ones are in the log
    frontend.dml.drain(timeout=30)
    assert _recorded(meta) == [(0, 0), (1, 10), (2, 20), (3, 5), (4, 6)]


def test_what_the_loop_cannot_take_runs_on_a_thread(frontend: Frontend, meta: MetaService) -> None:
    session = _session(frontend)
    pool = frontend.pool
    pool.submitted = 0  # (the session's startup read the catalog on it)
    _run(session, "INSERT INTO t VALUES (1, 1 + 1)", [], [])  # an expression
    assert pool.submitted == 1
    with pytest.raises(NotNullViolation, match='null value in column "k"'):
        _run(session, INSERT, [None, 1])  # the thread path's error
    assert pool.submitted == 2
    bulk = "INSERT INTO t VALUES " + ", ".join(f"({k}, 0)" for k in range(100, 600))  # (reading it takes ms)
    assert len(bulk) > MAX_TEXT and _run(session, bulk, [], []).tag == "INSERT 0 500"
    assert pool.submitted == 3
    session.vars.set("rw_implicit_flush", "true")  # (waits for a checkpoint: no barrier runs here)
    assert asyncio.run(insert_on_loop(session, session._plan_key(INSERT, [20, 23]), [2, 2])) is None
    frontend.dml.drain(timeout=30)
    assert _recorded(meta) == [(1, 2)] + [(k, 0) for k in range(100, 600)]


def test_statements_of_one_pass_share_a_sync_and_slow_syncs_go_to_a_thread(frontend: Frontend, meta: MetaService,
                                                                         monkeypatch) -> None:
    """One sync for the statements of a pass of the loop; once the loop's syncs are slow, a thread
    syncs."""
    sessions = [_session(frontend) for _ in range(5)]
    frontend.pool.submitted = 0  # (CountingPool; the sessions' startups read the catalog on it)
    syncs = []
    real = dml_log.os.fdatasync
    monkeypatch.setattr(dml_log.os, "fdatasync", lambda fd: (syncs.append(fd), real(fd))[1])

    async def together(first: int) -> None:
        await asyncio.gather(*(s.execute(INSERT, [20, 23], [first + i, 0]) for i, s in enumerate(sessions)))

    asyncio.run(together(0))
    assert len(syncs) == 1 and frontend.pool.submitted == 0
    log = frontend.dml._log
    assert log is not None
    # (a bound far from a loaded machine's syncs: 300 ms is slow)
    monkeypatch.setattr(loop_insert, "INLINE_SYNC_S", 0.05)
    monkeypatch.setattr(loop_insert, "PROBE_S", 60.0)
    monkeypatch.setattr(dml_log.os, "fdatasync", lambda fd: (syncs.append(fd), time.sleep(0.3), real(fd))[2])
    asyncio.run(together(10))  # (a busy disk: the loop's pass syncs, slowly)
    assert len(syncs) == 2 and frontend.pool.submitted == 0
    asyncio.run(together(20))  # (then syncs go to a thread: `test_loop_syncs_come_back_after_a_quick_probe`)
    assert frontend.pool.submitted >= 1 and log.synced(log.written)
    frontend.dml.drain(timeout=30)
    assert sorted(k for k, _ in _recorded(meta)) == [k + i for k in (0, 10, 20) for i in range(5)]


def test_a_failed_sync_fails_the_statement_and_later_ones_wait_for_meta(frontend: Frontend, meta: MetaService,
                                                                         monkeypatch) -> None:
    session = _session(frontend)
    frontend.pool.submitted = 0  # (CountingPool; the session's startup read the catalog on it)
    monkeypatch.setattr(dml_log.os, "fdatasync", lambda fd: (_ for _ in ()).throw(OSError(5, "Input/output error")))
    with pytest.raises(InternalError, match="could not sync the DML log"):
        _run(session, INSERT, [1, 1])
    monkeypatch.setattr(dml_log.os, "fdatasync", lambda fd: None)
    assert _run(session, INSERT, [2, 2]).tag == "INSERT 0 1"  # the log is broken: on a thread, via meta
    assert frontend.pool.submitted == 1
    assert _recorded(meta) == [(1, 1), (2, 2)]  # (the first was queued: it may still be recorded, as said)



def test_an_append_that_would_roll_the_segment_runs_on_a_thread(frontend: Frontend, meta: MetaService,
                                                                  monkeypatch) -> None:
    """A roll of the log's segment syncs and renames files under the commit lock: the loop leaves
    such an append to a thread."""
    session = _session(frontend)
    frontend.pool.submitted = 0  # (CountingPool; the session's startup read the catalog on it)
    log = frontend.dml._log
    assert log is not None
    start = log._fd_bytes
    _run(session, INSERT, [0, 0])
    record = log._fd_bytes - start  # (the statement's record, with its head)
    monkeypatch.setattr(dml_log, "SEGMENT_BYTES", log._fd_bytes + 2 * record + record // 2)
    # (syncs slower than 1 ms, on a busy machine, would go to a thread too: only the roll is counted)
    monkeypatch.setattr(loop_insert, "INLINE_SYNC_S", 60.0)
    for k in range(1, 5):
        _run(session, INSERT, [k, k])
    assert frontend.pool.submitted == 1  # the third rolled, on a thread; the others on the loop
    frontend.dml.drain(timeout=30)
    assert _recorded(meta) == [(k, k) for k in range(5)]


def test_a_cancelled_insert_is_cancelled_not_failed(frontend: Frontend, monkeypatch) -> None:
    """A connection closed (the server stopping) while its INSERT waits for the sync: the task ends
    cancelled, not with an error sent to a client that is gone."""
    session = _session(frontend)
    log = frontend.dml._log
    assert log is not None
    monkeypatch.setattr(loop_insert, "INLINE_SYNC_S", 0.001)
    assert frontend.loop_sync is not None
    monkeypatch.setattr(frontend.loop_sync, "sync_seconds", 1.0)  # (synced on a thread)
    monkeypatch.setattr(frontend.loop_sync, "_probe_at", time.monotonic() + 60)
    monkeypatch.setattr(dml_log.os, "fdatasync", lambda fd: time.sleep(0.5))

    async def cancelled() -> None:
        task = asyncio.ensure_future(session.execute(INSERT, [20, 23], [1, 1]))
        await asyncio.sleep(0.1)
        task.cancel()
        await task

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(cancelled())


def _answer_now(session: Session, params: list) -> StatementResult | None:
    return session.answer_now(INSERT, [20, 23], params)


def _when_ready(result: StatementResult) -> list[BaseException | None]:
    """`result.ready`'s callback, in a loop that runs until it came (`LoopSync` schedules on it)."""
    got: list[BaseException | None] = []

    async def wait() -> None:
        assert result.ready is not None
        result.ready(got.append)
        while not got:
            await asyncio.sleep(0.01)

    asyncio.run(asyncio.wait_for(wait(), 30))
    return got


def test_an_insert_answered_at_once_is_ready_once_its_record_is_synced(frontend: Frontend, meta: MetaService,
                                                                      monkeypatch) -> None:
    """`Session.answer_now` of a compiled single-row INSERT (what the wire server answers as it
    arrives): the rows are queued once, and the result is `ready` after the sync; an asynchronous one
    is answered at once; a table whose writes are held and a statement not compiled yet are left to
    `execute`."""
    session = _session(frontend)
    log = frontend.dml._log
    assert log is not None
    assert _answer_now(session, [0, 0]) is None  # (not compiled yet: nothing queued)
    _run(session, INSERT, [1, 10])
    syncs = []
    real = dml_log.os.fdatasync
    monkeypatch.setattr(dml_log.os, "fdatasync", lambda fd: (syncs.append(fd), real(fd))[1])
    result = _answer_now(session, [2, 20])
    assert result is not None and result.tag == "INSERT 0 1" and result.ready is not None
    assert not log.synced(log.written) and not syncs  # (queued and written; not answered yet)
    assert _when_ready(result) == [None] and len(syncs) == 1 and log.synced(log.written)
    session.vars.set("synchronous_commit", "off")
    result = _answer_now(session, [3, 30])
    assert result is not None and result.ready is None and len(syncs) == 1
    session.vars.set("synchronous_commit", "on")
    monkeypatch.setattr(frontend.dml, "stalled", lambda table_id: True)
    assert _answer_now(session, [4, 40]) is None  # (`execute` waits the stall out)
    frontend.dml.drain(timeout=30)
    assert _recorded(meta) == [(1, 10), (2, 20), (3, 30)]


def test_an_insert_answered_at_once_gets_the_sync_s_error(frontend: Frontend, meta: MetaService,
                                                          monkeypatch) -> None:
    session = _session(frontend)
    _run(session, INSERT, [1, 10])
    monkeypatch.setattr(dml_log.os, "fdatasync", lambda fd: (_ for _ in ()).throw(OSError(5, "Input/output error")))
    result = _answer_now(session, [2, 20])
    assert result is not None
    [error] = _when_ready(result)
    assert isinstance(error, InternalError) and "could not sync the DML log" in str(error)


class _Disk:
    """A DML log (what `LoopSync` asks of one) whose syncs take `seconds` of the clock `now`."""

    def __init__(self, now: list[float]) -> None:
        self.now, self.seconds = now, 0.0001
        self.written = self._synced = 0
        self.syncing = False
        self.on_loop: list[bool] = []  # per sync: whether the event loop's thread ran it

    def synced(self, seq: int) -> bool:
        return self._synced >= seq

    def sync(self, seq: int) -> None:
        self.now[0] += self.seconds
        self._synced = max(self._synced, seq)
        self.on_loop.append(threading.current_thread() is threading.main_thread())


def test_loop_syncs_come_back_after_a_quick_probe_and_slow_probes_back_off(monkeypatch) -> None:
    """Slow syncs on the loop send the next ones to a thread; after `PROBE_S` a pass syncs on the loop
    again (a probe), after twice as long once a probe found the disk slow, and a quick probe brings
    the syncs back to the loop. A fake clock: the syncs' durations and the waits are exact."""
    monkeypatch.setattr(loop_insert, "INLINE_SYNC_S", 0.005)  # (the module's own, which `quick_syncs` set aside)
    now = [0.0]
    monkeypatch.setattr(loop_insert.time, "monotonic", lambda: now[0])
    disk = _Disk(now)
    pool = ThreadPoolExecutor(1)
    syncs = loop_insert.LoopSync(disk, pool)  # type: ignore[arg-type]

    async def statement(after: float = 0.0) -> bool:
        now[0] += after
        disk.written += 1
        await syncs.wait(disk.written)
        return disk.on_loop[-1]

    async def run() -> list[bool]:
        on_loop = [await statement()]
        disk.seconds = 0.05  # (a busy disk: 50 ms, over INLINE_SYNC_S)
        on_loop += [await statement(), await statement()]
        on_loop += [await statement(after=loop_insert.PROBE_S)]  # the probe: slow
        on_loop += [await statement(after=loop_insert.PROBE_S)]  # (not yet: twice as long now)
        on_loop += [await statement(after=loop_insert.PROBE_S * 1.1)]  # the next probe: slow
        disk.seconds = 0.0001
        on_loop += [await statement(after=loop_insert.PROBE_S * 4.1), await statement()]  # quick: back
        return on_loop

    assert asyncio.run(run()) == [True, True, False, True, False, True, True, True]
    pool.shutdown()
