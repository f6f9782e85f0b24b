"""A frontend of its own keeps a copy of the catalog and the current version that meta pushes
(`meta.rpc.MetaRpc.watch`, `meta.client.MetaClient`): over real HTTP, against a real meta service
whose barriers commit a version every 50 ms. Statements read and pin without calling meta; changes
made elsewhere arrive; the frontend's own changes are in its copy when the call returns; meta holds
one pin per frontend, at the oldest version the frontend still reads."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator

import pytest
from fastapi import FastAPI

from meta.client import MetaClient, MetaSession
from meta.cluster import ClusterManager
from meta.rpc import MetaRpc
from meta.service import MetaService
from meta.store.store import MetaStore
from risingspark.barrier import Barrier, EpochResult
from risingspark.catalog import DEFAULT_DATABASE
from risingspark.errors import ServiceUnavailable
from risingspark.rpc import mount_rpc
from risingspark.runtime import HttpServer
from risingspark.storage.desc import HummockVersion, VersionDelta
from risingspark.storage.object_store import ObjectStore


class IdleCompute:
    """Commits every barrier with nothing in it: each is a new version."""

    def reset(self) -> None:
        pass

    def run_epoch(self, barrier: Barrier) -> EpochResult:
        return EpochResult(barrier.epoch.curr)


class Cluster:
    def __init__(self, tmp_path) -> None:
        store = MetaStore(f"sqlite:///{tmp_path / 'meta.db'}")
        store.upgrade()
        self.meta = MetaService(store, ObjectStore(str(tmp_path / "objects")), IdleCompute())
        self.meta.params.set("barrier_interval_ms", 50)
        self.meta.start()
        self.cluster = ClusterManager(store, heartbeat_timeout_s=60.0)
        self.rpc = MetaRpc(self.meta, self.cluster, str(tmp_path / "objects"))
        app = FastAPI()
        mount_rpc(app, self.rpc.methods())
        self.http = HttpServer(app, "127.0.0.1", 0, "meta-test")
        self.http.start()
        self.session = MetaSession(f"127.0.0.1:{self.http.port}", "frontend", "http://127.0.0.1:1")
        self.session.register()
        self.client = MetaClient(self.session)
        self.client.start()
        self.calls: Counter[str] = Counter()
        self.callers: Counter[str] = Counter()  # calls by thread
        call = self.client.rpc.call

        def counted(method: str, *args, **kwargs):
            self.calls[method] += 1
            self.callers[threading.current_thread().name] += 1
            return call(method, *args, **kwargs)
        self.client.rpc.call = counted  # type: ignore[method-assign]

    def close(self) -> None:
        self.client.stop()
        self.http.stop()
        self.meta.stop()

    @property
    def database_id(self) -> int:
        db = self.meta.catalog_snapshot().database(DEFAULT_DATABASE)
        assert db is not None
        return db.id

    def newest_seen(self) -> int:
        """The id of the newest version the frontend has (one pin and unpin, in its memory)."""
        version = self.client.pin_version()
        self.client.unpin_version(version)
        return version.id


@pytest.fixture
def cluster(tmp_path) -> Iterator[Cluster]:
    c = Cluster(tmp_path)
    try:
        yield c
    finally:
        c.close()


def _eventually(check: Callable[[], bool], what: str, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_statements_read_the_copy_without_calling_meta(cluster: Cluster) -> None:
    before = cluster.callers[threading.current_thread().name]
    for _ in range(200):
        cluster.client.catalog_snapshot()
        cluster.client.unpin_version(cluster.client.pin_version())
    assert cluster.callers[threading.current_thread().name] == before  # (only the watch thread calls meta)
    _eventually(lambda: cluster.callers["meta-watch"] >= 1, "the watch thread calls meta")  # (the counter counts)


def test_changes_made_elsewhere_arrive(cluster: Cluster) -> None:
    current = cluster.meta.hummock.version.id
    _eventually(lambda: cluster.newest_seen() >= current, "the frontend's version does not follow meta's")
    cluster.meta.create_schema(cluster.database_id, "made_elsewhere")  # (as through another frontend)
    _eventually(lambda: cluster.client.catalog_snapshot().schema(cluster.database_id, "made_elsewhere") is not None,
                "the new schema never reached the frontend")
    assert cluster.calls["watch"] >= 1


def test_the_frontends_own_changes_are_in_its_copy_when_the_call_returns(cluster: Cluster) -> None:
    cluster.client.stop()  # (no pushes: only what the calls themselves bring)
    cluster.client.create_schema(cluster.database_id, "mine")
    assert cluster.client.catalog_snapshot().schema(cluster.database_id, "mine") is not None
    committed = cluster.client.flush(timeout=30)
    assert cluster.client.pin_version().committed_epoch >= committed


def test_meta_pins_the_oldest_version_the_frontend_reads(cluster: Cluster) -> None:
    node = cluster.session.node_id
    held = cluster.client.pin_version()  # a long query's version
    _eventually(lambda: cluster.newest_seen() > held.id + 3, "no newer versions arrived")
    _eventually(lambda: cluster.rpc._floors.get(node) == held.id, "meta's pin is not the held version")  # noqa: SLF001
    assert cluster.meta.hummock._pins[held.id] >= 1  # noqa: SLF001 (the vacuum keeps what it reads)
    cluster.client.unpin_version(held)
    _eventually(lambda: cluster.rpc._floors.get(node, 0) > held.id, "meta's pin did not move on")  # noqa: SLF001
    _eventually(lambda: held.id not in cluster.meta.hummock._pins, "the old version stays pinned")  # noqa: SLF001
    # a frontend that leaves gives its pin up
    cluster.client.stop()
    floor = cluster.rpc._floors[node]  # noqa: SLF001
    _eventually(lambda: cluster.meta.hummock.version.id > floor + 5, "barriers stopped")  # (no round pins it)
    pins = cluster.meta.hummock._pins[floor]  # noqa: SLF001
    cluster.cluster.unregister(node)
    assert node not in cluster.rpc._floors  # noqa: SLF001
    assert cluster.meta.hummock._pins.get(floor, 0) == pins - 1  # noqa: SLF001


def test_a_statement_runs_again_only_when_the_catalog_moved_and_it_changed_nothing(cluster: Cluster) -> None:
    db = cluster.database_id
    mark = cluster.client.statement_mark()
    cluster.meta.create_schema(db, "elsewhere")  # (as through another frontend)
    _eventually(lambda: cluster.client.catalog_snapshot().schema(db, "elsewhere") is not None,
                "the new schema never reached the frontend")
    # the watch thread brought it before the statement asked: it still runs again
    assert cluster.client.catalog_moved_since(mark)
    # nothing moved since
    assert not cluster.client.catalog_moved_since(cluster.client.statement_mark())
    # a statement that changed the catalog itself (a CREATE TABLE AS whose insert failed) never does
    mark = cluster.client.statement_mark()
    cluster.client.create_schema(db, "mine")
    cluster.meta.create_schema(db, "elsewhere_too")
    assert not cluster.client.catalog_moved_since(mark)


def test_a_new_meta_renumbers_the_copy_and_an_unknown_node_reads_nothing_stale(cluster: Cluster) -> None:
    before = cluster.client.catalog_snapshot().version
    cluster.rpc.incarnation = "another-meta"  # (catalog versions of a new meta count from 1 again)
    cluster.client.sync()
    assert cluster.client.catalog_snapshot().version > before  # (a plan cached before is never current)
    # meta forgets the node (declared dead): its pin is gone, so the copy is not read until a
    # refresh succeeds, which needs the node registered again
    node = cluster.session.node_id
    cluster.cluster.unregister(node)
    _eventually(lambda: not cluster.client._fresh, "the watch thread never noticed")  # noqa: SLF001
    with pytest.raises(ServiceUnavailable, match="not registered"):
        cluster.client.pin_version()
    cluster.session.register()
    assert cluster.session.node_id != node
    version = cluster.client.pin_version()
    assert cluster.rpc._floors[cluster.session.node_id] <= version.id  # noqa: SLF001
    cluster.client.unpin_version(version)


def test_a_change_or_flush_that_returned_is_in_every_frontends_copy(cluster: Cluster) -> None:
    other_session = MetaSession(f"127.0.0.1:{cluster.http.port}", "frontend", "http://127.0.0.1:2")
    other_session.register()
    other = MetaClient(other_session)
    other.start()
    try:
        db = cluster.database_id
        for i in range(20):  # (each read right after the call returns: no waiting here)
            cluster.client.create_schema(db, f"s{i}")
            assert other.catalog_snapshot().schema(db, f"s{i}") is not None
            epoch = cluster.client.flush(timeout=30)
            version = other.pin_version()
            other.unpin_version(version)
            assert version.committed_epoch >= epoch
        # a frontend that stops polling delays a DDL by the timeout at most, never fails it
        other.stop()
        cluster.client.SEEN_TIMEOUT_S = 0.3
        started = time.monotonic()
        cluster.client.create_schema(db, "while_stalled")
        assert 0.2 < time.monotonic() - started < 10
    finally:
        other.stop()
        other_session.stop()


def test_a_frontend_that_has_a_recent_version_gets_only_what_changed(cluster: Cluster) -> None:
    node = cluster.session.node_id
    incarnation, _, first = cluster.rpc.watch(node, None, None, 0)
    assert isinstance(first, HummockVersion)  # (nothing known: the whole version)
    _eventually(lambda: cluster.meta.hummock.version.id > first.id, "barriers stopped")
    _, _, delta = cluster.rpc.watch(node, (incarnation, -1, first.id), None, 0)
    assert isinstance(delta, VersionDelta) and delta.base_id == first.id
    assert delta.apply(first).id == delta.id and not delta.changed  # (idle barriers change no table)
    # an unknown base (or one meta no longer keeps) gets the whole version
    _, _, whole = cluster.rpc.watch(node, (incarnation, -1, 10**9), None, 0)
    assert isinstance(whole, HummockVersion)
    # and the frontend's copy, kept by deltas, follows meta's
    current = cluster.meta.hummock.version
    _eventually(lambda: cluster.newest_seen() >= current.id, "the copy does not follow")
    version = cluster.client.pin_version()
    cluster.client.unpin_version(version)
    assert version.committed_epoch >= current.committed_epoch
