"""The frontend's DML log (`frontend.dml_log`): records read back after a reopen, a record cut by a
crash ends the log, segments roll and go once recorded, one process per log; and through a frontend
with a real meta service over SQLite: a durable statement is acknowledged once logged, before meta
records it, and one acknowledged before a crash is recorded at the next start, once."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pyarrow as pa
import pytest

from frontend import dml_commit, dml_log
from frontend.dml_log import DmlLog
from frontend.session import Frontend, Session, _Running
from meta.service import MetaService
from meta.store.store import MetaStore
from risingspark.errors import InternalError
from risingspark.storage.object_store import ObjectStore
from risingspark.types import INT8, VARCHAR, Field
from support.meta_tables import create_table


def _rows(i: int) -> pa.Table:
    return pa.table({"k": pa.array([i], pa.int64()), "v": pa.array([f"row {i}"])})


def _logged(log: DmlLog, n: int, table_id: int = 7) -> list[int]:
    seqs = [log.write(table_id, _rows(i)) for i in range(n)]
    log.sync(seqs[-1])
    return seqs


def test_records_survive_a_reopen_and_a_record_cut_by_a_crash_ends_the_log(tmp_path) -> None:
    log = DmlLog(tmp_path)
    assert _logged(log, 3) == [1, 2, 3]
    log.close()
    segment = tmp_path / "1.seg"
    segment.write_bytes(segment.read_bytes()[:-5])  # the last record's write was cut

    log = DmlLog(tmp_path)
    found = log.unrecorded(0)
    assert [(r.seq, r.table_id, r.rows) for r in found] == [(1, 7, _rows(0)), (2, 7, _rows(1))]
    assert log.write(7, _rows(9)) == 3  # numbered on from the whole records, in a new segment
    log.sync(3)
    log.close()

    log = DmlLog(tmp_path)  # the cut segment was truncated: the log reads whole again
    assert [(r.seq, r.rows) for r in log.unrecorded(1)] == [(2, _rows(1)), (3, _rows(9))]
    log.close()


def test_numbers_go_on_from_what_meta_recorded(tmp_path) -> None:
    log = DmlLog(tmp_path)
    _logged(log, 2)
    log.recorded(2)
    log.close()
    log = DmlLog(tmp_path)
    assert log.unrecorded(2) == []
    assert log.write(7, _rows(0)) == 3  # not 1: meta's recorded record 2 would hide it from a replay
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
    assert log.unrecorded(12) == [] and list(tmp_path.glob("*.seg")) == []
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
    store = MetaStore(f"sqlite:///{tmp_path / 'meta.db'}")
    store.upgrade()
    service = MetaService(store, ObjectStore(str(tmp_path / "objects")), None)
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
