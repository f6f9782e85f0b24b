"""The other services' side of meta: registration and heartbeats (`MetaSession`), and the
frontend's `MetaClient`, which offers the operations of `meta.service.MetaService` over RPC so a
frontend process works exactly as the playground's frontend does.

A statement reads the catalog and pins a version without a call to meta, as in RisingWave's
frontend (its observer manager and `HummockSnapshotManager`): the client keeps a copy of both,
which a thread keeps up to date with a long poll (`meta.rpc.MetaRpc.watch`). Pins are counted here;
meta holds one pin for this frontend, at the oldest version still in use, which the poll reports.
What the frontend changes itself it sees at once: a DDL call, `wait_created` and FLUSH bring the
copy up to date before they return, and a DDL call and FLUSH also wait (up to 2 s) until every other
frontend's copy has caught up (`wait_seen`), so what returned is visible through every frontend, as
PostgreSQL shows a commit to every session. A change whose DDL is still running (or an object that a
stalled frontend has not received) can be missed: a statement that names an object this copy does not
have yet asks meta again and runs once more (`catalog_moved_since`).

Left as RisingWave leaves it: a frontend that meta declared dead (no heartbeat for the timeout) had
its pin released; until its next poll fails (within one barrier) its statements read versions meta
no longer protects, and a file vacuumed meanwhile fails such a read (an error, never a wrong row).
Password authentication reads the copy.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from meta.catalog import CatalogSnapshot
from meta.compaction.picker import CompactionConfig, CompactionTask
from meta.users import GrantTarget
from risingspark.barrier import DmlReceipt
from risingspark.catalog import (
    DEFAULT_RESOURCE_GROUP,
    DatabaseCatalog,
    JobStatus,
    RelationCatalog,
    SchemaCatalog,
)
from risingspark.errors import QueryCanceled, RisingSparkError, ServiceUnavailable
from risingspark.functions import FunctionCatalog
from risingspark.rpc import RpcClient
from risingspark.sequence import node_slot
from risingspark.storage.desc import HummockVersion, SstableInfo, StateTableDesc, VersionDelta
from risingspark.users import DEFAULT_SUPER_USER_ID, UserCatalog, UserChange

logger = logging.getLogger(__name__)


class MetaSession:
    """A worker's membership in the cluster: registers with meta and heartbeats from a thread. When
    meta no longer knows the worker (it declared it dead, or a standby took over), the worker
    registers again and `on_reregister` runs."""

    def __init__(self, meta_address: str, kind: str, address: str, *, resource_group: str = DEFAULT_RESOURCE_GROUP,
                 parallelism: int = 0, heartbeat_interval_s: float = 1.0,
                 on_reregister: Callable[[], object] | None = None) -> None:
        self.rpc = RpcClient(meta_address, service="meta")
        self.kind = kind
        self.address = address
        self.resource_group = resource_group
        self.parallelism = parallelism
        self.heartbeat_interval_s = heartbeat_interval_s
        self.on_reregister = on_reregister
        self.node_id = 0
        self.id_slot = 0  # a frontend's row id slot, from meta (`meta.cluster.ClusterManager._free_id_slot`)
        self.object_store_url = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def register(self, retry_s: float = 300.0) -> int:
        """Register with meta, waiting up to `retry_s` for it to be reachable (it may start later)."""
        deadline = time.monotonic() + retry_s
        while True:
            try:
                # (registering again, a frontend asks for the row id slot it has: `ClusterManager.register`)
                info = self.rpc.call("register", self.kind, self.address, self.resource_group, self.parallelism,
                                     os.getpid(), self.id_slot,
                                     retry_s=min(10.0, max(0.0, deadline - time.monotonic())))
                break
            except ServiceUnavailable as e:
                if time.monotonic() >= deadline:
                    raise
                logger.warning("waiting for meta: %s", e.message)
        self.node_id = int(info["node_id"])
        # (a meta older than the slots: the slot the node id points at, as such metas' frontends took)
        self.id_slot = int(info.get("id_slot") or node_slot(self.node_id))
        self.object_store_url = info["object_store_url"]
        logger.info("registered with meta at %s as %s node %d", self.rpc.address, self.kind, self.node_id)
        return self.node_id

    def start(self) -> None:
        self._thread = threading.Thread(target=self._heartbeats, name="meta-heartbeat", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)
        with contextlib.suppress(RisingSparkError):
            self.rpc.call("unregister", self.node_id, retry_s=0, timeout_s=5)
        self.rpc.close()

    def _heartbeats(self) -> None:
        while not self._stop.wait(self.heartbeat_interval_s):
            try:
                if not self.rpc.call("heartbeat", self.node_id, retry_s=self.heartbeat_interval_s, timeout_s=10):
                    logger.warning("meta does not know %s node %d any more: registering again", self.kind,
                                   self.node_id)
                    self.register()
                    if self.on_reregister is not None:
                        self.on_reregister()
            except RisingSparkError as e:
                logger.warning("heartbeat to meta failed: %s", e.message)
            except Exception:
                logger.exception("heartbeat to meta failed")


class RemoteParams:
    """System parameters read and changed through meta (`meta.system_params.SystemParams`'s calls)."""

    def __init__(self, rpc: RpcClient) -> None:
        self._rpc = rpc

    def describe(self) -> list[tuple[str, str, str, bool]]:
        return self._rpc.call("params_describe")

    def set(self, name: str, value: int | None) -> None:
        self._rpc.call("params_set", name, value)

    def get(self, name: str) -> int:
        return self.all()[name]

    def all(self) -> dict[str, int]:
        return self._rpc.call("params_all")


class RemoteUsers:
    """Users and privileges changed through meta (`meta.users.UserManager`'s calls)."""

    def __init__(self, rpc: Any) -> None:
        self._rpc = rpc  # (`MetaClient`'s changing calls: the catalog copy follows each)

    def bootstrap(self, initial: list[tuple[str, str]]) -> None:
        self._rpc.call("users_bootstrap", list(initial))

    def create_user(self, actor_id: int, user: UserCatalog) -> UserCatalog:
        return self._rpc.call("users_create", actor_id, user)

    def alter_user(self, actor_id: int, name: str, change: UserChange) -> list[str]:
        return self._rpc.call("users_alter", actor_id, name, change)

    def drop_user(self, actor_id: int, name: str, if_exists: bool = False) -> list[str]:
        return self._rpc.call("users_drop", actor_id, name, if_exists)

    def grant(self, actor_id: int, grantees: list[int], targets: list[GrantTarget],
              with_grant_option: bool = False) -> list[str]:
        return self._rpc.call("users_grant", actor_id, grantees, targets, with_grant_option)

    def revoke(self, actor_id: int, grantees: list[int], targets: list[GrantTarget], *,
               grant_option_only: bool = False, cascade: bool = False) -> list[str]:
        return self._rpc.call("users_revoke", actor_id, grantees, targets, grant_option_only, cascade)

    def alter_owner(self, actor_id: int, object_id: int, new_owner: int) -> None:
        self._rpc.call("users_alter_owner", actor_id, object_id, new_owner)


class RemoteFunctions:
    """User-defined functions changed through meta (`meta.functions.FunctionManager`'s calls)."""

    def __init__(self, rpc: Any) -> None:
        self._rpc = rpc  # (`MetaClient`'s changing calls: the catalog copy follows each)

    def create_function(self, fn: FunctionCatalog) -> FunctionCatalog:
        return self._rpc.call("functions_create", fn)

    def drop_function(self, actor_id: int, function_id: int) -> None:
        self._rpc.call("functions_drop", actor_id, function_id)


class _Changing:
    """`RpcClient.call` for calls that change the catalog: the client's copy follows each, and the
    calling thread's statement counts as one with an effect (`MetaClient.catalog_moved_since`)."""

    def __init__(self, client: MetaClient) -> None:
        self._client = client

    def call(self, method: str, *args: Any) -> Any:
        self._client.count_change()
        result = self._client.rpc.call(method, *args)
        self._client.sync()
        self._client.wait_seen()
        return result


@dataclass(frozen=True)
class StatementMark:
    """What a statement started with (`MetaClient.statement_mark`)."""

    catalog: CatalogSnapshot
    changes: int


class MetaClient:
    """What a frontend process calls meta for, with `MetaService`'s signatures.

    Catalog reads and pins use the copy kept up to date by the watch thread (`start`; see the module
    docstring). The copy is used only while its last refresh succeeded: after a failed one (meta
    unreachable, or this node unknown to it: its pin may be gone), a statement refreshes it first,
    and fails if it cannot."""

    WATCH_S = 10.0  # a long poll's longest wait (it answers at once when something changed)
    SYNC_RETRY_S = 2.0  # how long a statement's refresh retries an unreachable meta
    SEEN_TIMEOUT_S = 2.0  # how long a DDL or FLUSH waits for the other frontends (`wait_seen`)

    def __init__(self, session: MetaSession, *, wait_poll_s: float = 1.0) -> None:
        self.session = session
        self.rpc = session.rpc
        changing = _Changing(self)
        self.params = RemoteParams(self.rpc)
        self.users = RemoteUsers(changing)
        self.functions = RemoteFunctions(changing)
        self._changing = changing
        self._wait_poll_s = wait_poll_s
        self._lock = threading.Lock()
        self._snapshot: tuple[str, int, CatalogSnapshot] | None = None  # (meta incarnation, version, catalog)
        self._version: HummockVersion | None = None
        # the pushed copy (`start`). Catalog versions restart with each meta (an incarnation): the
        # copy's count on from the last one's (`_offset`), so a plan cached under another meta is
        # never taken for current.
        self._incarnation: str | None = None
        self._offset = 0
        self._fresh = False  # the last refresh succeeded
        self._pins: Counter[int] = Counter()
        self._thread = threading.local()  # `changes`: the calling thread's changing calls
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None

    # ---- the pushed copy ----------------------------------------------------------------------
    def start(self) -> None:
        """Fetch the catalog and the current version, and keep them up to date from a thread."""
        self._sync(0.0, retry_s=None)
        self._watcher = threading.Thread(target=self._watch, name="meta-watch", daemon=True)
        self._watcher.start()

    def stop(self) -> None:
        """Stop watching (a poll in flight is abandoned: the thread is a daemon and reads nothing
        more)."""
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join(timeout=0.1)

    def sync(self) -> bool:
        """Bring the copy up to date now; whether the catalog moved. An error is logged, and the
        next statement refreshes the copy before it reads it."""
        try:
            return self._sync(0.0, retry_s=self.SYNC_RETRY_S)
        except RisingSparkError as e:
            logger.warning("node %d: reading the catalog from meta failed: %s", self.session.node_id, e.message)
            return False

    def wait_seen(self) -> None:
        """Wait until every other frontend has what this one has (`meta.rpc.MetaRpc.wait_seen`): a
        change made here, or a FLUSH, is then visible through all of them when the statement returns.
        At most `SEEN_TIMEOUT_S`, then logged: a stalled frontend delays no DDL longer."""
        with self._lock:
            if self._snapshot is None or self._version is None:
                return
            catalog_version, version_id = self._snapshot[1], self._version.id
        try:
            if not self.rpc.call("wait_seen", self.session.node_id, catalog_version, version_id,
                                 self.SEEN_TIMEOUT_S, retry_s=self.SYNC_RETRY_S, timeout_s=self.SEEN_TIMEOUT_S + 30):
                logger.warning("node %d: a frontend did not receive catalog version %d / version %d within %g s",
                               self.session.node_id, catalog_version, version_id, self.SEEN_TIMEOUT_S)
        except RisingSparkError as e:
            logger.warning("node %d: waiting for the other frontends failed: %s", self.session.node_id, e.message)

    def reads_locally(self) -> bool:
        """Whether `catalog_snapshot` and `pin_version` answer from the copy, without a call to meta."""
        return self._fresh

    def count_change(self) -> None:
        self._thread.changes = getattr(self._thread, "changes", 0) + 1

    def statement_mark(self) -> StatementMark:
        """What a statement starts with, for `catalog_moved_since`."""
        return StatementMark(self.catalog_snapshot(), getattr(self._thread, "changes", 0))

    def catalog_moved_since(self, mark: StatementMark) -> bool:
        """Whether a statement that failed for an object the copy lacked should run again: it changed
        nothing through meta (else running it again could repeat its effects: a CREATE TABLE AS
        whose insert failed), and the catalog has moved since it started, brought here by this call
        or already by the watch thread."""
        if getattr(self._thread, "changes", 0) != mark.changes:
            return False
        self.sync()
        snapshot = self._snapshot
        return snapshot is not None and snapshot[2] is not mark.catalog

    def _watch(self) -> None:
        while not self._stop.is_set():
            try:
                self._sync(self.WATCH_S, retry_s=self.WATCH_S)
            except Exception as e:
                if self._stop.is_set():
                    return
                if isinstance(e, RisingSparkError):
                    logger.warning("node %d: watching meta's catalog failed: %s", self.session.node_id, e.message)
                else:
                    logger.exception("node %d: watching meta's catalog failed", self.session.node_id)
                self._stop.wait(1.0)

    def _sync(self, wait_s: float, retry_s: float | None) -> bool:
        """One watch call (see `meta.rpc.MetaRpc.watch`); whether the catalog moved."""
        with self._lock:
            known = None
            if self._incarnation is not None and self._snapshot is not None and self._version is not None:
                known = (self._incarnation, self._snapshot[1], self._version.id)
            floor = min([*self._pins, self._version.id]) if self._version is not None and known else None
        try:
            incarnation, snap, version = self.rpc.call("watch", self.session.node_id, known, floor, wait_s,
                                                       timeout_s=wait_s + 30.0, retry_s=retry_s)
        except RisingSparkError:
            self._fresh = False
            raise
        with self._lock:
            if incarnation != self._incarnation:  # a new meta (or the first answer): take all of it at once
                if snap is None or not isinstance(version, HummockVersion):  # (overtaken by another thread's)
                    return False
                self._offset = self._snapshot[2].version if self._snapshot is not None else 0
                self._incarnation = incarnation
                self._snapshot = (incarnation, snap.version, replace(snap, version=snap.version + self._offset))
                self._version, self._fresh = version, True
                return True
            moved = snap is not None and self._snapshot is not None and snap.version > self._snapshot[1]
            if moved:
                assert snap is not None
                self._snapshot = (incarnation, snap.version, replace(snap, version=snap.version + self._offset))
            if isinstance(version, VersionDelta):
                if self._version is not None and self._version.id == version.base_id:
                    self._version = version.apply(self._version)
                # (else another thread's answer moved the copy meanwhile: the next poll sends it again)
            elif version is not None and self._version is not None and version.id > self._version.id:
                self._version = version
            self._fresh = True
        return moved

    def _current(self) -> None:
        """Refresh the copy first when the last refresh failed (its pin at meta may be gone)."""
        if not self._fresh:
            self._sync(0.0, retry_s=self.SYNC_RETRY_S)

    # ---- catalog ------------------------------------------------------------------------------
    def catalog_snapshot(self) -> CatalogSnapshot:
        self._current()
        snapshot = self._snapshot
        assert snapshot is not None
        return snapshot[2]

    def allocate_ids(self, count: int) -> int:
        return self.rpc.call("allocate_ids", count)

    def create_relation(self, rel: RelationCatalog) -> RelationCatalog:
        return self._changing.call("create_relation", rel)

    def create_schema(self, database_id: int, name: str, owner: int = DEFAULT_SUPER_USER_ID) -> SchemaCatalog:
        return self._changing.call("create_schema", database_id, name, owner)

    def create_database(self, name: str, resource_group: str, owner: int = DEFAULT_SUPER_USER_ID) -> DatabaseCatalog:
        return self._changing.call("create_database", name, resource_group, owner)

    def drop_database(self, database_id: int) -> None:
        self._changing.call("drop_database", database_id)

    def set_comment(self, rel_id: int, column: str | None, comment: str | None) -> None:
        self._changing.call("set_comment", rel_id, column, comment)

    def drop_relation(self, rel_id: int, *, cascade: bool = False) -> list[RelationCatalog]:
        return self._changing.call("drop_relation", rel_id, cascade)

    def set_backfill_rate_limit(self, rel_id: int, rate: int | str | None) -> None:
        self._changing.call("set_backfill_rate_limit", rel_id, rate)

    def set_parallelism(self, rel_id: int, parallelism: int) -> None:
        self._changing.call("set_parallelism", rel_id, parallelism)

    def wait_created(self, rel_id: int, cancelled: threading.Event | None = None) -> RelationCatalog:
        while True:
            if cancelled is not None and cancelled.is_set():
                raise QueryCanceled("canceling statement due to user request")
            if self.rpc.call("wait_created", rel_id, self._wait_poll_s):
                self.sync()
                rel = self.catalog_snapshot().relations.get(rel_id)
                if rel is not None and rel.status is JobStatus.CREATED:
                    return rel
                time.sleep(self._wait_poll_s / 4)  # (the refresh failed: ask again)

    # ---- DML, FLUSH and reads -----------------------------------------------------------------
    def submit_dml(self, table_id: int, path: str, row_count: int) -> DmlReceipt:
        return self.rpc.call("submit_dml", table_id, path, row_count)

    def submit_dml_batches(self, batches: list[tuple[int, str, int]], retried: bool = False,
                           log: tuple[str, int] | None = None) -> list[DmlReceipt]:
        return self.rpc.call("submit_dml_batches", batches, retried, log)

    def dml_log_open(self, log_id: str, register: bool) -> int:
        return self.rpc.call("dml_log_open", log_id, register)

    def compute_nodes(self) -> list[str]:
        """Addresses of the live compute nodes of the default resource group."""
        return self.rpc.call("compute_nodes")

    def flush(self, timeout: float | None = None) -> int:
        """Wait for a checkpoint after every write submitted before; then this frontend reads it."""
        epoch = self.rpc.call("flush", timeout, timeout_s=None)
        self.sync()
        self.wait_seen()
        return epoch

    def pin_version(self) -> HummockVersion:
        """The copy's version, pinned in this frontend's memory (meta pins the oldest one in use)."""
        self._current()
        with self._lock:
            version = self._version
            assert version is not None
            self._pins[version.id] += 1
            return version

    def unpin_version(self, version: HummockVersion) -> None:
        """Unpin in this frontend's memory: meta learns the new oldest version at the next poll."""
        with self._lock:
            self._pins[version.id] -= 1
            if self._pins[version.id] <= 0:
                del self._pins[version.id]

    @property
    def default_parallelism(self) -> int | None:
        return None

    def row_count(self, table_id: int) -> int:
        return self.rpc.call("row_count", table_id)

    def ddl_progress(self) -> list[Any]:
        return self.rpc.call("ddl_progress")

    def write_stalls(self) -> list[Any]:
        return self.rpc.call("write_stalls")

    def is_write_stalled(self, table_id: int) -> bool:
        return self.rpc.call("is_write_stalled", table_id)


class RemoteCompactionScheduler:
    """A compactor process's view of meta's `CompactionScheduler`: the same three calls."""

    def __init__(self, session: MetaSession) -> None:
        self._session = session
        self.config: CompactionConfig = session.rpc.call("compaction_config")

    def next_task(self) -> tuple[CompactionTask, StateTableDesc] | None:
        return self._session.rpc.call("compaction_next_task", self._session.node_id)

    def report(self, task: CompactionTask, outputs: list[SstableInfo] | None) -> bool:
        return self._session.rpc.call("compaction_report", self._session.node_id, task, outputs)
