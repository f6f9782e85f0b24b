"""The frontend's DML log (`frontend.dml_log`): records read back after a reopen, a record cut by a
crash ends the log, segments roll and go once recorded, one process per log; and through a frontend
with a real meta service over SQLite: a durable statement is acknowledged once logged, before meta
records it, and one acknowledged before a crash is recorded at the next start, once."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pyarrow as pa
import pytest

from frontend import dml_commit, dml_log
from frontend.dml_log import DmlLog, encode_rows
from frontend.session import Frontend, Session, _Running
from meta.service import MetaService
from meta.store.store import MetaStore
from risingspark.errors import InternalError
from risingspark.storage.object_store import ObjectStore
from risingspark.types import INT8, VARCHAR, Field
from support.meta_tables import create_table, sqlite_meta


def _rows(i: int) -> pa.Table:
    return pa.table({"k": pa.array([i], pa.int64()), "v": pa.array([f"row {i}"])})


def _logged(log: DmlLog, n: int, table_id: int = 7, first: int = 0) -> list[int]:
    seqs = [log.append(table_id, encode_rows(_rows(first + i))) for i in range(n)]
    log.sync(seqs[-1])
    return seqs


def test_records_survive_a_reopen_and_a_record_cut_by_a_crash_ends_the_log(tmp_path) -> None:
    log = DmlLog(tmp_path)
    assert _logged(log, 3) == [1, 2, 3]
    log.close()
    segment = tmp_path / "1.seg"
    data = segment.read_bytes()
    _, whole = dml_log._read_records(data)
    segment.write_bytes(data[:whole - 5] + bytes(len(data) - whole + 5))  # the last record's write was cut

    log = DmlLog(tmp_path)
    found = log.unrecorded(0)
    assert [(r.seq, r.table_id, r.rows) for r in found] == [(1, 7, _rows(0)), (2, 7, _rows(1))]
    assert _logged(log, 1, first=9) == [3]  # numbered on from the whole records, in a new segment
    log.close()

    log = DmlLog(tmp_path)  # the cut segment was truncated: the log reads whole again
    assert [(r.seq, r.rows) for r in log.unrecorded(1)] == [(2, _rows(1)), (3, _rows(9))]
    log.close()


def test_segments_are_written_whole_before_the_first_record(tmp_path, monkeypatch) -> None:
    """A segment has its full size, zeros, before a record goes in: an ``fdatasync`` after an
    append then changes no file size (no journal commit), as PostgreSQL's WAL segments. The zeros
    after the last record are the log's end, not a record cut by a crash."""
    monkeypatch.setattr(dml_log, "SEGMENT_BYTES", 64 << 10)
    log = DmlLog(tmp_path)
    _logged(log, 3)
    assert (tmp_path / "1.seg").stat().st_size == 64 << 10
    log.close()
    warnings = []
    monkeypatch.setattr(dml_log.logger, "warning", lambda *a: warnings.append(a))
    log = DmlLog(tmp_path)
    assert [r.seq for r in log.unrecorded(0)] == [1, 2, 3] and warnings == []
    assert _logged(log, 1) == [4]
    log.close()


def test_a_roll_takes_a_segment_whose_zeros_were_written_ahead(tmp_path, monkeypatch) -> None:
    """The next segment's zeros are written by a thread of their own, off the lock appends take (the
    event loop appends under it): a roll renames the spare."""
    monkeypatch.setattr(dml_log, "SEGMENT_BYTES", 1500)
    fills: list[str] = []
    fill = dml_log._fill_with_zeros
    monkeypatch.setattr(dml_log, "_fill_with_zeros", lambda fd, size: (fills.append(threading.current_thread().name),
                                                                      fill(fd, size))[1])
    log = DmlLog(tmp_path)
    for _ in range(20):
        with log._cond:
            while log._preparing is not None:  # (the test waits for the spare before each append)
                log._cond.wait()
        _logged(log, 1)
    assert len(list(tmp_path.glob("*.seg"))) > 3  # rolled several times
    assert fills and set(fills) == {"dml-log-spare"}
    assert all(p.stat().st_size >= 1500 for p in tmp_path.glob("*.seg"))
    log.close()
    log = DmlLog(tmp_path)
    assert [r.seq for r in log.unrecorded(0)] == list(range(1, 21))
    log.close()


def test_numbers_go_on_from_what_meta_recorded(tmp_path) -> None:
    log = DmlLog(tmp_path)
    _logged(log, 2)
    log.recorded(2)
    log.close()
    log = DmlLog(tmp_path)
    assert log.unrecorded(2) == []
    assert _logged(log, 1) == [3]  # not 1: meta's recorded record 2 would hide it from a replay
    log.close()


def test_segments_roll_and_go_once_every_record_is_recorded(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(dml_log, "SEGMENT_BYTES", 1500)
    log = DmlLog(tmp_path)
    _logged(log, 12)
    segments = sorted(int(p.stem) for p in tmp_path.glob("*.seg"))
    assert len(segments) > 2 and segments[0] == 1
    log.recorded(segments[2] - 1)  # the first two segments are recorded whole
    assert sorted(int(p.stem) for p in tmp_path.glob("*.seg")) == segments[2:]
    log.recorded(12)  # the current segment stays: appends go there
    assert sorted(int(p.stem) for p in tmp_path.glob("*.seg")) == segments[-1:]
    log.close()
    log = DmlLog(tmp_path)
    assert log.unrecorded(12) == [] and list(tmp_path.glob("*.seg")) == [tmp_path / "13.seg"]  # (appends' next)
    log.close()


def test_a_segment_without_records_at_open_is_not_kept_twice(tmp_path, monkeypatch) -> None:
    """A crash right after a segment was created leaves it empty; its name is the next record's, so
    the next roll creates it again: listed twice, a later `recorded` deleted it under newer records."""
    monkeypatch.setattr(dml_log, "SEGMENT_BYTES", 1500)
    log = DmlLog(tmp_path)
    _logged(log, 3)
    log.close()
    (tmp_path / "4.seg").touch()  # created by a roll, killed before its first record was written
    log = DmlLog(tmp_path)
    assert [r.seq for r in log.unrecorded(1)] == [2, 3]
    seqs = _logged(log, 12, first=4)  # rolls past 4.seg
    assert len(list(tmp_path.glob("*.seg"))) > 2
    log.recorded(seqs[0])  # record 4 only
    log.close()
    log = DmlLog(tmp_path)
    assert [r.seq for r in log.unrecorded(seqs[0])] == seqs[1:]
    log.close()


def test_a_failed_sync_breaks_the_log(tmp_path, monkeypatch) -> None:
    log = DmlLog(tmp_path)
    _logged(log, 1)

    def fail(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(dml_log.os, "fdatasync", fail)
    seq = log.append(7, encode_rows(_rows(1)))
    with pytest.raises(OSError):
        log.sync(seq)
    monkeypatch.undo()  # a later sync would succeed without the lost pages: the log stays broken
    assert log.broken
    with pytest.raises(InternalError, match="failed"):
        log.append(7, encode_rows(_rows(2)))
    log.close()


def test_one_process_at_a_time(tmp_path) -> None:
    log = DmlLog(tmp_path)
    with pytest.raises(InternalError, match="in use by another process"):
        DmlLog(tmp_path)
    log.close()
    DmlLog(tmp_path).close()


# ---- through a frontend ---------------------------------------------------------------------------
@pytest.fixture
def meta(tmp_path) -> Iterator[MetaService]:
    service = sqlite_meta(tmp_path)
    create_table(service, "t", (Field("k", INT8), Field("v", VARCHAR)))
    yield service


def _session(frontend: Frontend) -> Session:
    s = frontend.new_session()
    asyncio.run(s.startup({"user": "root", "database": "dev"}))
    return s


def _insert(session: Session, k: int) -> None:
    key = session._plan_key("INSERT INTO t VALUES ($1, $2)", [])
    session._run_planned(key, [k, f"v{k}"], _Running(key.text))


def _recorded(meta: MetaService) -> list[int]:
    """The keys of every DML batch meta recorded, in order."""
    with meta.store.engine.connect() as conn:
        paths = [p for (p,) in conn.exec_driver_sql("SELECT path FROM dml_batches ORDER BY id")]
    return [k for p in paths for k in meta.objects.read_parquet(p).column("k").to_pylist()]


def test_an_acknowledged_statement_is_recorded_after_a_crash_once(meta: MetaService, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(dml_commit, "ASYNC_COMMIT_DELAY_S", 3600.0)  # meta records nothing before the "crash"
    crashed = Frontend(meta, meta.objects, cache_bytes=1 << 20, workers=2, dml_log_dir=tmp_path / "log")
    session = _session(crashed)
    for k in range(3):
        _insert(session, k)  # durable (synchronous_commit is on): acknowledged once logged
    assert _recorded(meta) == []
    crashed.dml._log.close()  # type: ignore[union-attr]  # the process died: its lock is gone, nothing recorded

    monkeypatch.setattr(dml_commit, "ASYNC_COMMIT_DELAY_S", 0.0)
    restarted = Frontend(meta, meta.objects, cache_bytes=1 << 20, workers=2, dml_log_dir=tmp_path / "log")
    restarted.dml.drain(timeout=30)
    assert _recorded(meta) == [0, 1, 2]
    _insert(_session(restarted), 3)  # after the replayed ones
    restarted.close()
    assert _recorded(meta) == [0, 1, 2, 3]

    again = Frontend(meta, meta.objects, cache_bytes=1 << 20, workers=2, dml_log_dir=tmp_path / "log")
    assert again.dml.replay() == 0  # recorded with meta's watermark: nothing twice
    again.close()
    assert _recorded(meta) == [0, 1, 2, 3]


def test_a_statement_after_the_log_failed_waits_for_meta(meta: MetaService, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(dml_commit, "ASYNC_COMMIT_DELAY_S", 3600.0)  # nothing logged is recorded meanwhile
    frontend = Frontend(meta, meta.objects, cache_bytes=1 << 20, workers=2, dml_log_dir=tmp_path / "log")
    session = _session(frontend)
    _insert(session, 0)
    monkeypatch.setattr(dml_log.os, "fdatasync", lambda fd: (_ for _ in ()).throw(OSError(5, "Input/output error")))
    with pytest.raises(InternalError, match="could not sync the DML log"):
        _insert(session, 1)
    monkeypatch.setattr(dml_log.os, "fdatasync", lambda fd: None)
    _insert(session, 2)  # the log is broken: acknowledged once meta recorded it, with what was queued
    assert _recorded(meta) == [0, 1, 2]


def test_a_failed_log_write_falls_back_to_meta(meta: MetaService, tmp_path, monkeypatch) -> None:
    """A write to the log fails (the disk is full): the statement is acknowledged once meta recorded
    it, and so are the ones after (the log is broken)."""
    frontend = Frontend(meta, meta.objects, cache_bytes=1 << 20, workers=2, dml_log_dir=tmp_path / "log")
    session = _session(frontend)
    monkeypatch.setattr(dml_log.os, "pwrite", lambda *a: (_ for _ in ()).throw(OSError(28, "No space left on device")))
    _insert(session, 0)
    assert frontend.dml._log.broken and _recorded(meta) == [0]  # type: ignore[union-attr]
    _insert(session, 1)
    assert _recorded(meta) == [0, 1]
    frontend.close()


def test_a_commit_retried_after_a_lost_reply_records_logged_rows_once(meta: MetaService, tmp_path,
                                                                       monkeypatch) -> None:
    """Meta recorded the commit, its reply was lost, and a barrier consumed the batch (meta deleted
    it) before the retry: meta's log watermark, written with the batch, says it is recorded. The
    file also held an asynchronously committed statement's rows: recorded once too."""
    monkeypatch.setattr(dml_commit, "RETRY_S", (0.01, 0.02))
    monkeypatch.setattr(dml_commit, "ASYNC_COMMIT_DELAY_S", 0.2)  # both statements in one commit
    calls: list[list[str]] = []
    submit = meta.submit_dml_batches

    def lost_reply(batches, retried=False, log=None):
        receipts = submit(batches, retried, log)
        calls.append([b[1] for b in batches])
        if len(calls) == 1:
            consumed.extend(_recorded(meta))
            with meta.store.begin() as conn:  # consumed by a barrier and deleted, before the retry
                conn.exec_driver_sql("DELETE FROM dml_batches")
            raise ConnectionError("the reply was lost")
        return receipts

    consumed: list[int] = []
    monkeypatch.setattr(meta, "submit_dml_batches", lost_reply)
    frontend = Frontend(meta, meta.objects, cache_bytes=1 << 20, workers=2, dml_log_dir=tmp_path / "log")
    session = _session(frontend)
    session.vars.set("synchronous_commit", "off")
    _insert(session, 0)
    session.vars.set("synchronous_commit", "on")
    _insert(session, 1)  # logged
    frontend.close()  # (records the queue, retrying through failed commits)
    assert len(calls) == 2 and len(calls[0]) == 1  # one file, sent again
    assert consumed == [0, 1] and _recorded(meta) == [] and frontend.dml._queued_rows == 0


def test_a_retry_records_no_asynchronous_file_of_another_table_twice(meta: MetaService, tmp_path,
                                                                        monkeypatch) -> None:
    """An asynchronous statement into another table shared the commit with a logged one (two files):
    the reply was lost and a barrier consumed both before the retry. The watermark covers both files."""
    create_table(meta, "u", (Field("k", INT8), Field("v", VARCHAR)))
    monkeypatch.setattr(dml_commit, "RETRY_S", (0.01, 0.02))
    monkeypatch.setattr(dml_commit, "ASYNC_COMMIT_DELAY_S", 0.2)  # both statements in one commit
    calls: list[list[str]] = []
    consumed: list[int] = []
    submit = meta.submit_dml_batches

    def lost_reply(batches, retried=False, log=None):
        receipts = submit(batches, retried, log)
        calls.append([b[1] for b in batches])
        if len(calls) == 1:
            consumed.extend(_recorded(meta))
            with meta.store.begin() as conn:  # consumed by a barrier and deleted, before the retry
                conn.exec_driver_sql("DELETE FROM dml_batches")
            raise ConnectionError("the reply was lost")
        return receipts

    monkeypatch.setattr(meta, "submit_dml_batches", lost_reply)
    frontend = Frontend(meta, meta.objects, cache_bytes=1 << 20, workers=2, dml_log_dir=tmp_path / "log")
    session = _session(frontend)
    session.vars.set("synchronous_commit", "off")
    key = session._plan_key("INSERT INTO u VALUES ($1, $2)", [])
    session._run_planned(key, [7, "async"], _Running(key.text))
    session.vars.set("synchronous_commit", "on")
    _insert(session, 1)  # logged, into t
    frontend.close()
    assert len(calls) == 2 and len(calls[0]) == 2
    assert sorted(consumed) == [1, 7] and _recorded(meta) == [] and frontend.dml._queued_rows == 0


def test_a_logged_batch_whose_file_is_gone_before_the_retry_is_written_again(meta: MetaService, tmp_path,
                                                                            monkeypatch) -> None:
    """Meta was away longer than the object store's garbage retention: the full GC deleted the file a
    failed commit had written (nothing references it). The retry writes the rows again."""
    monkeypatch.setattr(dml_commit, "RETRY_S", (0.01, 0.02))
    calls: list[list[str]] = []
    submit = meta.submit_dml_batches

    def meta_away(batches, retried=False, log=None):
        calls.append([b[1] for b in batches])
        if len(calls) == 1:
            meta.objects.delete([b[1] for b in batches])  # unreferenced and old: collected
            raise ConnectionError("meta is unreachable")
        return submit(batches, retried, log)

    monkeypatch.setattr(meta, "submit_dml_batches", meta_away)
    frontend = Frontend(meta, meta.objects, cache_bytes=1 << 20, workers=2, dml_log_dir=tmp_path / "log")
    _insert(_session(frontend), 0)
    frontend.close()
    assert len(calls) == 2 and calls[0] != calls[1]
    assert _recorded(meta) == [0]


def test_a_negative_flush_delay_is_refused() -> None:
    with pytest.raises(ValueError, match="dml_flush_delay_ms must be at least 0, not -5"):
        dml_commit.GroupCommit(None, flush_delay_s=-0.005)


def test_the_log_of_a_process_the_frontend_no_longer_runs_is_replayed_and_removed(meta: MetaService, tmp_path,
                                                                                  monkeypatch) -> None:
    from frontend.processes import log_dir, orphaned_logs, replay_orphaned_logs

    root = str(tmp_path / "log")
    monkeypatch.setattr(dml_commit, "ASYNC_COMMIT_DELAY_S", 3600.0)  # meta records nothing before the "crash"
    second = Frontend(meta, meta.objects, cache_bytes=1 << 20, workers=2, dml_log_dir=log_dir(root, 1))
    session = _session(second)
    for k in range(3):
        _insert(session, k)  # acknowledged by process 1 of a frontend of two processes
    second.dml._log.close()  # type: ignore[union-attr]  # the frontend stopped before recording them
    assert log_dir(root, 0) == root and _recorded(meta) == []
    assert orphaned_logs(root, 2) == [] and orphaned_logs(root, 1) == [tmp_path / "log" / "process-1"]

    monkeypatch.setattr(dml_commit, "ASYNC_COMMIT_DELAY_S", 0.0)
    assert replay_orphaned_logs(meta, meta.objects, root, 1) == 3  # (the frontend started again with one)
    assert _recorded(meta) == [0, 1, 2]
    assert orphaned_logs(root, 1) == [] and not (tmp_path / "log" / "process-1").exists()


def test_a_log_written_for_another_cluster_is_refused(meta: MetaService, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(dml_commit, "ASYNC_COMMIT_DELAY_S", 3600.0)  # meta records nothing before the "crash"
    first = Frontend(meta, meta.objects, cache_bytes=1 << 20, workers=2, dml_log_dir=tmp_path / "log")
    assert meta.dml_log_open(first.dml._log.log_id, False) == 0  # type: ignore[union-attr]  # (registered at open)
    for k in range(2):
        _insert(_session(first), k)
    first.dml._log.close()  # type: ignore[union-attr]  # the frontend stopped before recording them

    # the same log directory, and a meta store made anew (its table t has the same id)
    store = MetaStore(f"sqlite:///{tmp_path / 'other-meta.db'}")
    store.upgrade()
    other = MetaService(store, ObjectStore(str(tmp_path / "other-objects")), None)
    create_table(other, "t", (Field("k", INT8), Field("v", VARCHAR)))
    with pytest.raises(InternalError, match="holds 2 statements this cluster has never recorded from it"):
        Frontend(other, other.objects, cache_bytes=1 << 20, workers=2, dml_log_dir=tmp_path / "log")
    assert _recorded(other) == []
    # the cluster it was written for still records them
    monkeypatch.setattr(dml_commit, "ASYNC_COMMIT_DELAY_S", 0.0)
    again = Frontend(meta, meta.objects, cache_bytes=1 << 20, workers=2, dml_log_dir=tmp_path / "log")
    again.dml.drain(timeout=30)
    assert _recorded(meta) == [0, 1]
    again.close()
