"""Meta's RPC surface: what a worker holds (pinned versions, compaction tasks) is released when the
cluster manager declares it dead; catalog reads are skipped when the caller is up to date."""

from __future__ import annotations

from collections import Counter

import pytest

from meta.catalog import CatalogSnapshot
from meta.cluster import ClusterManager
from meta.compaction.picker import CompactionTask
from meta.rpc import MetaRpc
from meta.store.store import MetaStore
from risingspark.errors import ServiceUnavailable
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

    def pin_version_at(self, version_id: int) -> None:
        self.pins[version_id] += 1

    def unpin_version(self, version: HummockVersion) -> None:
        self.pins[version.id] -= 1

    def catalog_snapshot(self) -> CatalogSnapshot:
        return self.snapshot

    def wait_for_change(self, catalog_version: int, version_id: int, timeout_s: float):
        return self.snapshot, self.version


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
    incarnation, _, version = rpc.watch(fe, None, None, 0)
    assert version == meta.version  # (the first answer pins the current version for the node)
    # the caller has it: nothing comes back, and its floor stays one pin
    assert rpc.watch(fe, (incarnation, 5, 3), 3, 0) == (incarnation, None, None)
    rpc.watch(other, None, None, 0)
    assert meta.pins[3] == 2
    cluster.unregister(fe)
    assert meta.pins[3] == 1  # the other frontend's pin stays
    with pytest.raises(ServiceUnavailable):  # a late poll of the released node pins nothing
        rpc.watch(fe, (incarnation, 5, 3), 3, 0)
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
    node = rpc.register("frontend", "http://fe", "default", 0)["node_id"]
    incarnation, snap, _ = rpc.watch(node, None, None, 0)
    assert snap is not None and snap.version == 5
    assert rpc.watch(node, (incarnation, 5, 3), None, 0)[1] is None
    assert rpc.watch(node, ("another-meta", 5, 3), None, 0)[1] is not None
