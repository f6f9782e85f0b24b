"""Meta's full GC of the object store (`meta.garbage`): unreferenced files of work that never
committed go; referenced files, files of rounds and compaction tasks in flight, and recent files
stay."""

from __future__ import annotations

import os
import time
from dataclasses import replace

import pyarrow as pa

from meta.garbage import GarbageCollector, epoch_of
from meta.hummock import HummockManager
from meta.store.schema import dml_batches
from meta.store.store import MetaStore
from risingspark.storage.desc import StateTableDesc
from risingspark.storage.object_store import ObjectStore
from risingspark.storage.sst import write_sst
from risingspark.types import INT8, Field

DESC = StateTableDesc(5, (Field("id", INT8), Field("v", INT8)), pk=(0,), dist_key=(0,))
OLD = time.time() - 3600


class Cluster:
    def __init__(self, tmp_path) -> None:
        self.root = tmp_path / "objects"
        self.store = MetaStore(f"sqlite:///{tmp_path / 'meta.db'}")
        self.store.upgrade()
        self.objects = ObjectStore(str(self.root))
        self.hm = HummockManager(self.store, self.objects)
        self.in_flight: list[str] = []
        self.outstanding: int | None = None
        self.gc = GarbageCollector(self.store, self.objects, self.hm, lambda: self.in_flight,
                                   lambda: self.outstanding, interval_s=0, retention_s=300)

    def sst(self, path: str, epoch: int, *, age: float = OLD):
        rows = pa.table({"_vnode": pa.array([1], pa.int16()), "id": [1], "v": [epoch], "_epoch": [epoch],
                         "_tombstone": [False]})
        info = write_sst(self.objects, DESC, rows, path, level=0, sub_level=epoch)
        os.utime(self.root / path, (age, age))
        return info

    def file(self, path: str, *, age: float = OLD) -> str:
        self.objects.write_bytes(path, b"x")
        os.utime(self.root / path, (age, age))
        return path

    def commit(self, epoch: int, ssts) -> None:
        with self.store.transaction() as tx:
            self.hm.commit_epoch(tx, epoch, ssts, [])

    def paths(self) -> set[str]:
        return {o.path for p in ("hummock", "changelog", "dml", "backfill", "manifests", "rounds")
                for o in self.objects.list(p)}


def test_epoch_of_names_rounds_files_only():
    assert epoch_of("hummock/5/123-ab12.parquet") == 123
    assert epoch_of("hummock/5/123-ab12-0.parquet") == 123
    assert epoch_of("changelog/5/77-x.parquet") == 77
    assert epoch_of("backfill/3/42/scan-1-actor-0.json") == 42
    assert epoch_of("manifests/43/7/2-0.json") == 43
    assert epoch_of("rounds/44/7-0a1b") == 44
    assert epoch_of("hummock/5/c3-ab12-l1.parquet") is None
    assert epoch_of("dml/5/0a1b.parquet") is None


def test_full_gc_deletes_what_never_committed(tmp_path):
    c = Cluster(tmp_path)
    live = c.sst("hummock/5/10-live.parquet", 10)
    c.commit(10, [live])
    garbage = {
        c.sst("hummock/5/7-failed-round.parquet", 7).path,
        c.file("changelog/5/8-failed-round.parquet"),
        c.file("backfill/1/9/scan-1-actor-0.json"),
        c.sst("hummock/5/c4-abandoned-l1.parquet", 9).path,  # a compactor died before reporting it
        c.file("dml/5/never-registered.parquet"),
        c.file("manifests/9/1/2-0.json"),  # a round died before its driver read them
        c.file("rounds/9/1-0a1b"),
    }
    kept = {
        live.path,
        c.sst("hummock/5/99-round-in-flight.parquet", 99).path,  # newer than the committed epoch
        c.file("backfill/1/99/scan-1-actor-0.json"),
        c.sst("hummock/5/c3-running-l1-0.parquet", 9).path,  # its task is in flight
        c.sst("hummock/5/6-too-recent.parquet", 6, age=time.time() - 60).path,
        c.file("dml/5/just-written.parquet", age=time.time()),  # a frontend registers it next
        c.file("dml/5/registered.parquet"),
        c.file("manifests/99/1/2-0.json"),  # a round in flight
        c.file("rounds/99/1-0a1b"),
    }
    c.in_flight.append("hummock/5/c3-running")
    with c.store.transaction() as tx:
        tx.conn.execute(dml_batches.insert().values(id=1, table_id=5, path="dml/5/registered.parquet", row_count=1))
    assert c.paths() == garbage | kept

    assert set(c.gc.collect()) == garbage
    assert c.paths() == kept
    assert c.gc.collect() == []  # nothing more

    # a shorter retention on demand: the minute-old file goes too, never what is referenced, in
    # flight or younger than the floor (10 s)
    assert c.gc.collect(retention_s=0) == ["hummock/5/6-too-recent.parquet"]
    # the task finishes and its output is committed: still kept; the round commits: kept
    c.in_flight.clear()
    c.commit(99, [c.sst("hummock/5/99-round-in-flight.parquet", 99)])
    with c.store.transaction() as tx:
        assert c.hm.commit_compaction(tx, 5, [], [c.sst("hummock/5/c3-running-l1-0.parquet", 9)], 0) is not None
    # (a round's backfill progress files are read when it commits, and referenced by nothing after)
    round_files = ["backfill/1/99/scan-1-actor-0.json", "manifests/99/1/2-0.json", "rounds/99/1-0a1b"]
    assert c.gc.collect(retention_s=0) == round_files
    assert c.paths() == kept - {"hummock/5/6-too-recent.parquet", *round_files}


def test_rounds_run_elsewhere_and_writes_in_progress_are_kept(tmp_path):
    """A serverless backfiller's round has an epoch older than checkpoints the default group commits
    while it runs; its files are kept while its epoch is outstanding. A temporary file of a write in
    progress is judged by the name it will take."""
    c = Cluster(tmp_path)
    c.outstanding = 20
    c.commit(30, [c.sst("hummock/5/30-default-group.parquet", 30)])
    elsewhere = {c.sst("hummock/5/20-backfiller.parquet", 20).path, c.file("backfill/4/20/scan-1-actor-0.json"),
                 c.file("hummock/5/.25-later.parquet.tmp-0a1b")}
    failed = {c.file("hummock/5/19-failed.parquet"), c.file("hummock/5/.19-failed.parquet.tmp-0c1d")}
    assert set(c.gc.collect()) == failed
    assert elsewhere <= c.paths()
    c.outstanding = None  # the round committed (or failed): what it did not commit is garbage
    assert set(c.gc.collect()) == elsewhere


def test_files_queued_for_deletion_are_the_vacuums(tmp_path):
    """A compaction's replaced inputs wait for readers in the deletion queue: the full GC leaves them
    to the vacuum, which deletes them once no pinned version reads them."""
    c = Cluster(tmp_path)
    old = c.sst("hummock/5/10-a.parquet", 10)
    c.commit(10, [old])
    pinned = c.hm.pin()
    new = c.sst("hummock/5/c1-x-l1.parquet", 10)
    with c.store.transaction() as tx:
        assert c.hm.commit_compaction(tx, 5, [old], [replace(new, level=1, sub_level=0)], 1) is not None
    assert c.gc.collect(retention_s=0) == []
    assert c.hm.vacuum() == 0  # pinned
    c.hm.unpin(pinned)
    assert c.hm.vacuum() == 1
    assert c.paths() == {"hummock/5/c1-x-l1.parquet"}


def test_collects_periodically(tmp_path):
    c = Cluster(tmp_path)
    c.gc.interval_s = 0.1
    c.gc.start()
    try:
        orphan = c.file("dml/5/orphan.parquet")
        deadline = time.monotonic() + 10
        while orphan in c.paths():
            assert time.monotonic() < deadline, "the periodic GC never ran"
            time.sleep(0.05)
    finally:
        c.gc.stop()
