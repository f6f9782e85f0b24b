"""Meta's barrier loop and commits against both meta-store backends (SQLite and PostgreSQL), with a
compute node that reports scripted epoch results (no Spark): DML delivery and consumption, atomic
commits, recovery after a failed round, and the version surviving a restart of meta."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import psycopg
import pytest

from meta.service import MetaService
from meta.store.store import MetaStore
from risingspark.barrier import AddJobs, Barrier, EpochResult
from risingspark.storage.desc import SstableInfo
from risingspark.storage.object_store import ObjectStore
from support.meta_tables import create_table

PG_ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"


class ScriptedCompute:
    """Reports what a compute node would: consumed DML, one SST per epoch with input, row counts."""

    def __init__(self) -> None:
        self.barriers: list[Barrier] = []
        self.resets = 0
        self.fail_next = threading.Event()

    def reset(self) -> None:
        self.resets += 1

    def run_epoch(self, barrier: Barrier) -> EpochResult:
        self.barriers.append(barrier)
        # fails the next round that carries DML: a periodic round without any may come first
        if self.fail_next.is_set() and barrier.dml:
            self.fail_next.clear()
            raise RuntimeError("injected failure of a Spark job")
        ssts, deltas = [], {}
        for b in barrier.dml:
            ssts.append(SstableInfo(f"hummock/{b.table_id}/{barrier.epoch.curr}-{b.batch_id}.parquet", b.table_id,
                                    0, 0, 0, 255, barrier.epoch.curr, barrier.epoch.curr, b.row_count, 0, 100))
            deltas[b.table_id] = deltas.get(b.table_id, 0) + b.row_count
        return EpochResult(barrier.epoch.curr, tuple(ssts), (), deltas, (), (), tuple(b.batch_id for b in barrier.dml))


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request, tmp_path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'meta.db'}"
        return
    name = f"risingspark_unit_{os.getpid()}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _meta(store_url: str, tmp_path, compute: ScriptedCompute) -> MetaService:
    store = MetaStore(store_url)
    store.upgrade()
    meta = MetaService(store, ObjectStore(str(tmp_path / "objects")), compute)
    meta.params.set("barrier_interval_ms", 50)
    meta.start()
    return meta


def test_dml_is_delivered_once_and_committed_atomically(store_url: str, tmp_path) -> None:
    compute = ScriptedCompute()
    meta = _meta(store_url, tmp_path, compute)
    try:
        rel = create_table(meta, "t")
        b1 = meta.submit_dml(rel.id, "dml/a.parquet", 10).batch_id
        b2 = meta.submit_dml(rel.id, "dml/b.parquet", 5).batch_id
        epoch = meta.flush(timeout=30)
        assert epoch == meta.hummock.version.committed_epoch
        delivered = [b.batch_id for bar in compute.barriers for b in bar.dml]
        assert sorted(delivered) == [b1, b2]
        assert any(isinstance(m, AddJobs) and rel.id in [j.job_id for j in m.jobs]
                   for bar in compute.barriers for m in bar.mutations)
        assert meta.row_count(rel.id) == 15
        assert [s.row_count for s in meta.hummock.version.ssts(rel.id)] == [10, 5]
        # every barrier after the first reads the version committed by the one before it
        prevs = [bar.epoch.prev for bar in compute.barriers]
        assert prevs == sorted(prevs)
    finally:
        meta.stop()


def test_batches_recorded_in_one_transaction_are_delivered_in_order(store_url: str, tmp_path) -> None:
    compute = ScriptedCompute()
    meta = _meta(store_url, tmp_path, compute)
    try:
        rel, other = create_table(meta, "t"), create_table(meta, "u")
        receipts = meta.submit_dml_batches([(rel.id, "dml/g1.parquet", 2), (other.id, "dml/g2.parquet", 3),
                                            (rel.id, "dml/g3.parquet", 4)])
        ids = [r.batch_id for r in receipts]
        assert ids == sorted(ids) and len(set(ids)) == 3 and not any(r.stalled for r in receipts)
        meta.flush(timeout=30)
        delivered = [(b.batch_id, b.path) for bar in compute.barriers for b in bar.dml]
        assert delivered == list(zip(ids, ["dml/g1.parquet", "dml/g2.parquet", "dml/g3.parquet"], strict=True))
        assert meta.row_count(rel.id) == 6 and meta.row_count(other.id) == 3
    finally:
        meta.stop()


def test_a_table_created_while_a_round_starts_has_its_batches_delivered_with_the_rest(
        store_url: str, tmp_path, monkeypatch) -> None:
    """A round reads the recorded batches, then the catalog: a table created and written between a
    round's start and its read of the batches is in the catalog it keeps the batches by, so batches
    recorded in one transaction go in one barrier."""
    from meta.barrier import manager

    compute = ScriptedCompute()
    meta = _meta(store_url, tmp_path, compute)
    try:
        rel = create_table(meta, "t")
        meta.flush(timeout=30)
        read = manager.uncommitted_dml
        recorded: list[int] = []

        def created_and_written_first(store):
            if not recorded:  # the first round to read: a table is created and written just before
                other = create_table(meta, "u")
                recorded.extend(r.batch_id for r in meta.submit_dml_batches(
                    [(rel.id, "dml/t.parquet", 2), (other.id, "dml/u.parquet", 3)]))
            return read(store)

        monkeypatch.setattr(manager, "uncommitted_dml", created_and_written_first)
        before = len(compute.barriers)
        meta.flush(timeout=30)
        carrying = [[b.batch_id for b in bar.dml] for bar in compute.barriers[before:] if bar.dml]
        assert carrying == [recorded]
    finally:
        meta.stop()


def test_a_batch_of_a_table_dropped_before_it_is_recorded_is_left_out(store_url: str, tmp_path) -> None:
    """An asynchronous or logged statement's batch can reach meta after its table was dropped: it is
    not recorded (no barrier would take it, and FLUSH would wait for it forever), its file goes."""
    compute = ScriptedCompute()
    meta = _meta(store_url, tmp_path, compute)
    try:
        rel, other = create_table(meta, "t"), create_table(meta, "u")
        meta.objects.write_bytes("dml/late.parquet", b"rows")
        meta.drop_relation(rel.id)
        receipts = meta.submit_dml_batches([(rel.id, "dml/late.parquet", 2), (other.id, "dml/u.parquet", 3)])
        assert receipts[0].batch_id == 0 and receipts[1].batch_id > 0
        assert not meta.objects.exists("dml/late.parquet")
        meta.flush(timeout=30)  # returns: nothing of the dropped table is pending
        delivered = [(b.table_id, b.path) for bar in compute.barriers for b in bar.dml]
        assert delivered == [(other.id, "dml/u.parquet")]
    finally:
        meta.stop()


def test_failed_round_recovers_and_redelivers(store_url: str, tmp_path) -> None:
    compute = ScriptedCompute()
    meta = _meta(store_url, tmp_path, compute)
    try:
        rel = create_table(meta, "t")
        meta.flush(timeout=30)
        resets = compute.resets
        compute.fail_next.set()
        batch = meta.submit_dml(rel.id, "dml/c.parquet", 7).batch_id
        meta.flush(timeout=60)
        deliveries = [bar for bar in compute.barriers if any(b.batch_id == batch for b in bar.dml)]
        assert len(deliveries) == 2, "delivered to the failed round, then again after recovery"
        assert deliveries[1].recovery and compute.resets == resets + 1
        assert any(rel.id in [j.job_id for j in m.jobs] for m in deliveries[1].mutations if isinstance(m, AddJobs))
        assert meta.row_count(rel.id) == 7, "committed once"
    finally:
        meta.stop()


def test_version_and_catalog_survive_restart(store_url: str, tmp_path) -> None:
    compute = ScriptedCompute()
    meta = _meta(store_url, tmp_path, compute)
    rel = create_table(meta, "t")
    meta.submit_dml(rel.id, "dml/d.parquet", 3)
    meta.flush(timeout=30)
    version = meta.hummock.version
    meta.stop()
    meta.store.close()

    again = _meta(store_url, tmp_path, ScriptedCompute())
    try:
        assert again.catalog_snapshot().relations[rel.id].name == "t"
        assert again.hummock.version.ssts(rel.id) == version.ssts(rel.id)
        assert again.hummock.version.committed_epoch >= version.committed_epoch
        assert again.row_count(rel.id) == 3
    finally:
        again.stop()


def test_a_starting_meta_keeps_young_unregistered_files(store_url: str, tmp_path) -> None:
    """A meta taking over (or restarting) must not delete a DML batch a frontend has just written
    and is about to register; only old unreferenced files are garbage."""
    meta = _meta(store_url, tmp_path, ScriptedCompute())
    meta.stop()
    meta.store.close()
    objects = ObjectStore(str(tmp_path / "objects"))
    objects.write_bytes("dml/1/in-flight.parquet", b"batch")
    objects.write_bytes("dml/1/old-orphan.parquet", b"batch")
    old = tmp_path / "objects" / "dml" / "1" / "old-orphan.parquet"
    os.utime(old, (old.stat().st_atime - 3600, old.stat().st_mtime - 3600))

    again = _meta(store_url, tmp_path, ScriptedCompute())
    try:
        left = {o.path for o in objects.list("dml")}
        assert "dml/1/in-flight.parquet" in left
        assert "dml/1/old-orphan.parquet" not in left
    finally:
        again.stop()


def test_a_round_run_elsewhere_keeps_its_files_until_it_commits(store_url: str, tmp_path) -> None:
    """A serverless backfiller's (or another resource group's) round takes its epoch from meta, runs
    while the default group commits newer epochs, and commits later: the full GC keeps its files in
    the meantime; a round given up leaves garbage."""
    meta = _meta(store_url, tmp_path, ScriptedCompute())
    try:
        t = create_table(meta, "t")

        def written(epoch: int, name: str) -> str:
            path = f"hummock/{t.id}/{epoch}-{name}.parquet"
            meta.objects.write_bytes(path, b"sst")
            full = tmp_path / "objects" / path
            os.utime(full, (full.stat().st_atime - 3600, full.stat().st_mtime - 3600))
            return path

        def committed_after(epoch: int) -> None:
            deadline = time.monotonic() + 20
            while meta.hummock.version.committed_epoch <= epoch:
                assert time.monotonic() < deadline, "the default group commits no newer epoch"
                time.sleep(0.02)

        epoch = meta.barriers.next_epoch()
        path = written(epoch, "elsewhere")
        committed_after(epoch)
        assert meta.barriers.oldest_outstanding_epoch() == epoch
        assert path not in meta.garbage.collect(retention_s=0)
        sst = SstableInfo(path, t.id, 0, 0, 0, 255, epoch, epoch, 1, 0, 3)
        assert meta.barriers.submit_external(EpochResult(epoch, (sst,))).result(timeout=20) > epoch
        assert meta.barriers.oldest_outstanding_epoch() is None
        assert path not in meta.garbage.collect(retention_s=0)  # committed: referenced

        given_up = meta.barriers.next_epoch()
        lost = written(given_up, "lost")
        meta.barriers.release_epoch(given_up)
        committed_after(given_up)
        assert meta.garbage.collect(retention_s=0) == [lost]
    finally:
        meta.stop()


def test_a_path_recorded_again_keeps_its_batch(store_url: str, tmp_path) -> None:
    """A frontend retries a commit whose reply it lost with the same files: meta records each once."""
    store = MetaStore(store_url)
    store.upgrade()
    meta = MetaService(store, ObjectStore(str(tmp_path / "objects")), ScriptedCompute())
    rel = create_table(meta, "t")
    first = meta.submit_dml_batches([(rel.id, "dml/a.parquet", 3), (rel.id, "dml/b.parquet", 2)])
    again = meta.submit_dml_batches([(rel.id, "dml/b.parquet", 2), (rel.id, "dml/c.parquet", 1)], retried=True)
    assert again[0].batch_id == first[1].batch_id and again[1].batch_id > first[1].batch_id
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT path FROM dml_batches ORDER BY id").scalars().all() == \
            ["dml/a.parquet", "dml/b.parquet", "dml/c.parquet"]
