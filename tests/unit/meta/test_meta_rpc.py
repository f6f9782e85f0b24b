"""Meta's RPC surface: what a worker holds (pinned versions, compaction tasks) is released when the
cluster manager declares it dead; catalog reads are skipped when the caller is up to date."""

from __future__ import annotations

from collections import Counter

from meta.catalog import CatalogSnapshot
from meta.cluster import ClusterManager
from meta.compaction.picker import CompactionTask
from meta.rpc import MetaRpc
from meta.store.store import MetaStore
from risingspark.storage.desc import HummockVersion


class FakeScheduler:
    def __init__(self) -> None:
        self.reports: list[tuple[int, object]] = []

    def next_task(self):
        return CompactionTask(table_id=7, input_ssts=()), None

    def report(self, task, outputs) -> bool:
        self.reports.append((task.table_id, outputs))
        return outputs is not None


class FakeMeta:
    def __init__(self) -> None:
        self.pins: Counter[int] = Counter()
        self.version = HummockVersion(3, 100)
        self.compaction = FakeScheduler()
        self.snapshot = CatalogSnapshot(5)

    def pin_version(self) -> HummockVersion:
        self.pins[self.version.id] += 1
        return self.version

    def unpin_version(self, version: HummockVersion) -> None:
        self.pins[version.id] -= 1

    def catalog_snapshot(self) -> CatalogSnapshot:
        return self.snapshot


def _rpc(tmp_path) -> tuple[MetaRpc, FakeMeta, ClusterManager]:
    store = MetaStore(f"sqlite:///{tmp_path / 'meta.db'}")
    store.upgrade()
    cluster = ClusterManager(store, heartbeat_timeout_s=1.0)
    meta = FakeMeta()
    return MetaRpc(meta, cluster, "/objects"), meta, cluster  # type: ignore[arg-type]


def test_a_dead_frontend_releases_its_pins(tmp_path):
    rpc, meta, cluster = _rpc(tmp_path)
    fe = rpc.register("frontend", "http://fe", "default", 0)["node_id"]
    other = rpc.register("frontend", "http://fe2", "default", 0)["node_id"]
    assert rpc.pin_version(fe, None) == meta.version
    assert rpc.pin_version(fe, 3) == 3  # the caller has it: only the id comes back
    rpc.pin_version(other, None)
    rpc.unpin_version(fe, 3)
    assert meta.pins[3] == 2
    cluster.unregister(fe)
    assert meta.pins[3] == 1  # the other frontend's pin stays
    rpc.unpin_version(fe, 3)  # a late unpin of a released pin changes nothing
    assert meta.pins[3] == 1


def test_a_dead_compactor_gives_up_its_task(tmp_path):
    rpc, meta, cluster = _rpc(tmp_path)
    node = rpc.register("compactor", "http://c", "default", 0)["node_id"]
    task, _ = rpc.compaction_next_task(node)
    cluster.expire(now=float("inf"))
    assert meta.compaction.reports == [(7, None)]
    # its report after being declared dead is refused
    assert rpc.compaction_report(node, task, []) is False


def test_catalog_is_sent_only_when_it_changed(tmp_path):
    rpc, meta, _ = _rpc(tmp_path)
    incarnation, snap = rpc.catalog_snapshot(None)
    assert snap.version == 5
    assert rpc.catalog_snapshot((incarnation, 5)) is None
    assert rpc.catalog_snapshot(("another-meta", 5)) is not None
