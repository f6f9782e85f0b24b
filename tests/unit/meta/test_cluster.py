"""The cluster manager: registration, heartbeats, and workers declared dead after the timeout."""

from __future__ import annotations

import time

import pytest

from meta.cluster import ClusterManager
from meta.store.store import MetaStore, next_ids
from risingspark.errors import ServiceUnavailable


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


def test_live_frontends_never_share_a_row_id_slot(tmp_path):
    """A frontend's row ids carry its slot (1..1023). Two live frontends whose node ids are 1,023
    apart point at the same slot: the second takes the next free one."""
    cluster = _cluster(tmp_path)
    first = cluster.register("frontend", "http://f1")
    compute = cluster.register("compute", "http://c", "default", 2)
    assert compute.id_slot == 0  # (only frontends make row ids)
    with cluster._store.transaction() as tx:  # as 1,021 registrations of other workers would
        next_ids(tx.conn, "worker_node", first.id + 1023 - compute.id - 1)
    second = cluster.register("frontend", "http://f2")
    assert (second.id - first.id) % 1023 == 0
    assert second.id_slot != first.id_slot
    assert second.id_slot == first.id_slot % 1023 + 1


def test_a_freed_slot_comes_back_last_and_a_full_cluster_refuses_a_frontend(tmp_path):
    cluster = _cluster(tmp_path)
    gone = cluster.register("frontend", "http://gone")
    cluster.unregister(gone.id)
    # the next frontend starts from its own node id's slot, not from the one just freed
    assert cluster.register("frontend", "http://f").id_slot != gone.id_slot
    for i in range(1021):
        cluster.register("frontend", f"http://f{i}")
    last = cluster.register("frontend", "http://last")  # the 1,023rd live frontend: the freed slot
    assert last.id_slot == gone.id_slot
    assert len({n.id_slot for n in cluster.workers("frontend")}) == 1023
    with pytest.raises(ServiceUnavailable, match="none is free"):
        cluster.register("frontend", "http://one-too-many")
    cluster.unregister(last.id)
    assert cluster.register("frontend", "http://again").id_slot == last.id_slot


def test_a_frontend_registering_again_keeps_its_slot_when_it_is_free(tmp_path):
    """After a new meta took over (no frontend known), frontends come back in any order: each asks
    for the slot it had, and a new frontend does not take one of theirs first."""
    old = _cluster(tmp_path)
    a, b = old.register("frontend", "http://a"), old.register("frontend", "http://b")
    new = _cluster(tmp_path)  # (the same store: node ids go on)
    newcomer = new.register("frontend", "http://c")
    assert newcomer.id_slot not in (a.id_slot, b.id_slot)
    assert new.register("frontend", "http://b", id_slot=b.id_slot).id_slot == b.id_slot
    assert new.register("frontend", "http://a", id_slot=a.id_slot).id_slot == a.id_slot
    # a slot another live frontend holds is not given twice
    assert new.register("frontend", "http://d", id_slot=a.id_slot).id_slot not in (a.id_slot, b.id_slot,
                                                                                   newcomer.id_slot)
