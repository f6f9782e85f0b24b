"""The cluster manager: registration, heartbeats, and workers declared dead after the timeout."""

from __future__ import annotations

import time

from meta.cluster import ClusterManager
from meta.store.store import MetaStore


def _cluster(tmp_path, timeout: float = 10.0) -> ClusterManager:
    store = MetaStore(f"sqlite:///{tmp_path / 'meta.db'}")
    store.upgrade()
    return ClusterManager(store, heartbeat_timeout_s=timeout)


def test_ids_are_never_reused(tmp_path):
    cluster = _cluster(tmp_path)
    a = cluster.register("compute", "http://a", "default", 2)
    cluster.unregister(a.id)
    b = cluster.register("compute", "http://a", "default", 2)
    assert b.id > a.id
    # a second meta on the same store (a standby taking over) goes on from there
    assert _cluster(tmp_path).register("frontend", "http://f").id > b.id


def test_silent_workers_are_declared_dead(tmp_path):
    cluster = _cluster(tmp_path, timeout=10.0)
    left = []
    cluster.on_leave(left.append)
    compute = cluster.register("compute", "http://c", "default", 2)
    compactor = cluster.register("compactor", "http://k")
    now = time.monotonic()
    assert cluster.expire(now + 5) == []
    assert cluster.heartbeat(compute.id)
    dead = cluster.expire(time.monotonic() + 10.5)
    assert sorted(n.id for n in dead) == [compute.id, compactor.id]
    assert left == dead
    assert not cluster.heartbeat(compute.id), "a dead worker must register again"
    assert cluster.workers() == []


def test_workers_by_kind_and_group(tmp_path):
    cluster = _cluster(tmp_path)
    c1 = cluster.register("compute", "http://c1", "default", 2)
    cluster.register("compute", "http://c2", "analytics", 4)
    c3 = cluster.register("compute", "http://c3", "default", 2)
    assert [n.id for n in cluster.workers("compute", "default")] == [c1.id, c3.id]
