"""Meta's RPC methods for the other services (``POST /rpc/<method>``, see `risingspark.rpc`).

Frontends call the same operations the playground's frontend calls on `MetaService` directly, and
keep a copy of the catalog and the current version that meta pushes to them (`watch`, a long poll,
as RisingWave's notification service pushes both to its frontends); compute nodes, compactors and
frontends register and heartbeat; compactors take and report compaction tasks. Whatever a worker holds (pinned versions, compaction tasks) is released when the
cluster manager declares it dead.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import defaultdict
from typing import Any

from meta.catalog import CatalogSnapshot
from meta.cluster import ClusterManager, WorkerNode
from meta.compaction.picker import CompactionTask
from meta.service import MetaService
from meta.users import GrantTarget
from risingspark.catalog import DEFAULT_RESOURCE_GROUP, JobStatus, RelationCatalog
from risingspark.errors import ServiceUnavailable
from risingspark.storage.desc import HummockVersion, SstableInfo, StateTableDesc, VersionDelta

RECENT_VERSIONS = 64  # versions kept as the bases of deltas (about a minute of barriers)


class MetaRpc:
    """The RPC surface of one meta service."""

    def __init__(self, meta: MetaService, cluster: ClusterManager, object_store_url: str) -> None:
        self.meta = meta
        self.cluster = cluster
        self.object_store_url = object_store_url
        # Catalog versions count from the load of the catalog: a meta that took over counts anew.
        self.incarnation = uuid.uuid4().hex
        self._lock = threading.Lock()
        self._tasks: dict[int, dict[int, CompactionTask]] = defaultdict(dict)  # node -> task id -> task
        self._floors: dict[int, int] = {}  # node -> the oldest version it reads, pinned for it (`watch`)
        self._seen: dict[int, tuple[int, int]] = {}  # node -> (catalog version, version id) its copy has
        self._seen_changed = threading.Condition(self._lock)
        self._recent: dict[int, HummockVersion] = {}  # versions sent by `watch`, the base of its deltas
        cluster.on_leave(self._release)

    def methods(self) -> dict[str, Any]:
        m = self.meta
        return {
            "register": self.register, "heartbeat": self.cluster.heartbeat, "unregister": self.cluster.unregister,
            "allocate_ids": m.allocate_ids,
            "create_relation": self.create_relation, "create_schema": m.create_schema,
            "create_database": m.create_database, "drop_database": m.drop_database,
            "set_comment": m.set_comment, "drop_relation": self.drop_relation,
            "set_backfill_rate_limit": m.set_backfill_rate_limit, "set_parallelism": m.set_parallelism,
            "wait_created": self.wait_created, "submit_dml": m.submit_dml,
            "submit_dml_batches": m.submit_dml_batches, "dml_log_recorded": m.dml_log_recorded,
            "dml_log_open": m.dml_log_open, "flush": m.flush,
            "watch": self.watch, "wait_seen": self.wait_seen, "row_count": m.row_count,
            "ddl_progress": m.ddl_progress, "write_stalls": m.write_stalls, "is_write_stalled": m.is_write_stalled, "params_describe": m.params.describe, "params_set": m.params.set,
            "params_all": m.params.all,
            "users_bootstrap": m.users.bootstrap, "users_create": m.users.create_user,
            "users_alter": m.users.alter_user, "users_drop": m.users.drop_user, "users_grant": m.users.grant,
            "users_revoke": self.revoke, "users_alter_owner": m.users.alter_owner,
            "functions_create": m.functions.create_function, "functions_drop": m.functions.drop_function,
            "compaction_config": lambda: m.compaction.config,
            "compute_nodes": self.compute_nodes,
            "compaction_next_task": self.compaction_next_task, "compaction_report": self.compaction_report,
        }

    # ---- workers ------------------------------------------------------------------------------
    def compute_nodes(self) -> list[str]:
        """The addresses of the live compute nodes of the default resource group (where frontends
        run distributed queries: `frontend.remote_runner`)."""
        return [n.address for n in self.cluster.workers("compute", DEFAULT_RESOURCE_GROUP)]

    def register(self, kind: str, address: str, resource_group: str, parallelism: int,
                 pid: int = 0, id_slot: int = 0) -> dict[str, Any]:
        node = self.cluster.register(kind, address, resource_group, parallelism, pid, id_slot)
        return {"node_id": node.id, "object_store_url": self.object_store_url, "id_slot": node.id_slot}

    def _release(self, node: WorkerNode) -> None:
        with self._lock:
            tasks = self._tasks.pop(node.id, {})
            floor = self._floors.pop(node.id, None)
            self._seen.pop(node.id, None)
        if floor is not None:
            self.meta.unpin_version(HummockVersion(floor, 0))
        for task in tasks.values():
            self.meta.compaction.report(task, None)

    # ---- frontends ----------------------------------------------------------------------------
    def create_relation(self, rel: RelationCatalog) -> RelationCatalog:
        return self.meta.create_relation(rel)

    def revoke(self, actor_id: int, grantees: list[int], targets: list[GrantTarget], grant_option_only: bool,
               cascade: bool) -> list[str]:
        return self.meta.users.revoke(actor_id, grantees, targets, grant_option_only=grant_option_only,
                                      cascade=cascade)

    def drop_relation(self, rel_id: int, cascade: bool) -> list[RelationCatalog]:
        return self.meta.drop_relation(rel_id, cascade=cascade)

    def wait_created(self, rel_id: int, timeout_s: float) -> bool:
        """Whether the job finished its backfill within `timeout_s` (the caller polls, so a
        cancelled statement stops waiting)."""
        deadline = time.monotonic() + timeout_s
        while True:
            snap = self.meta.catalog_snapshot()
            rel = snap.relations.get(rel_id)
            if rel is None:
                raise self.meta.why_dropped(rel_id)
            if rel.status is JobStatus.CREATED:
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self.meta.catalog.wait_for_change(snap.version, min(remaining, 0.5))

    def watch(self, node_id: int, known: tuple[str, int, int] | None, floor: int | None,
              timeout_s: float) -> tuple[str, CatalogSnapshot | None, HummockVersion | VersionDelta | None]:
        """A frontend's copy of the catalog and the current version, kept up to date by a long poll:
        answers once either differs from `known` (meta's incarnation, the catalog version and the
        version id the frontend has) or after `timeout_s`, with ``(incarnation, catalog, version)``,
        each None when unchanged. The version comes as a `VersionDelta` from the frontend's when
        meta still has that one (the last `RECENT_VERSIONS` it sent): a barrier then costs what the
        tables it changed hold, not every table's SSTs (a full version of 500 SSTs took 12 ms to
        encode and 8 ms to decode, measured).

        Pins as RisingWave's frontends do (`unpin_version_before`): one pin per frontend, at `floor`,
        the oldest version it still reads (or the newest it has, when none is read). Every version it
        reads is that one or newer, and files replaced after a version are kept while it is pinned,
        so that one pin protects them all; a frontend's queries pin and unpin in its own memory.
        A floor only moves forward; a frontend that sends none yet gets the current version pinned.
        """
        if not self.cluster.is_alive(node_id):
            raise ServiceUnavailable(f"node {node_id} is not registered with this meta")
        if floor is not None:
            self._move_floor(node_id, floor)
        same = known is not None and known[0] == self.incarnation
        catalog_version, version_id = (known[1], known[2]) if known is not None and same else (-1, -1)
        with self._lock:
            self._seen[node_id] = (catalog_version, version_id)
            self._seen_changed.notify_all()
        snap, version = self.meta.wait_for_change(catalog_version, version_id, max(0.0, min(timeout_s, 30.0)))
        with self._lock:
            unpinned = node_id not in self._floors
        if unpinned:
            version = self.meta.pin_version()  # (the current one: not yet replaced, nothing deleted)
            self._move_floor(node_id, version.id, pinned=True)
        return (self.incarnation, None if snap.version == catalog_version else snap,
                None if version.id == version_id else self._version_since(version_id, version))

    def _version_since(self, version_id: int, version: HummockVersion) -> HummockVersion | VersionDelta:
        with self._lock:
            self._recent[version.id] = version
            while len(self._recent) > RECENT_VERSIONS:
                del self._recent[next(iter(self._recent))]
            base = self._recent.get(version_id)
        return version if base is None else VersionDelta.between(base, version)

    def wait_seen(self, node_id: int, catalog_version: int, version_id: int, timeout_s: float) -> bool:
        """Wait until every other live frontend's copy has at least this catalog version and version
        id (each reports what it has with its next poll, which follows a change at once), so that a
        DDL or FLUSH that returned is seen through every frontend, as one PostgreSQL server shows a
        commit to every session. False when one did not within `timeout_s` (a frontend that stalls
        delays DDL by that much at most, and sees the change when it polls again)."""
        deadline = time.monotonic() + max(0.0, min(timeout_s, 30.0))

        def behind() -> list[int]:
            nodes = [n.id for n in self.cluster.workers("frontend") if n.id != node_id]
            return [n for n in nodes if not (self._seen.get(n, (-1, -1))[0] >= catalog_version
                                             and self._seen.get(n, (-1, -1))[1] >= version_id)]

        with self._lock:
            while behind():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._seen_changed.wait(min(remaining, 0.1))  # (also notices frontends that left)
        return True

    def _move_floor(self, node_id: int, floor: int, pinned: bool = False) -> None:
        """Pin `floor` for the node instead of its older floor (`pinned`: the caller pinned it)."""
        with self._lock:
            old = self._floors.get(node_id)
            if old is not None and floor <= old:
                release = floor if pinned else None
            else:
                if not pinned:
                    self.meta.pin_version_at(floor)
                self._floors[node_id] = floor
                release = old
        if release is not None:
            self.meta.unpin_version(HummockVersion(release, 0))
        if not self.cluster.is_alive(node_id):  # declared dead meanwhile: `_release` may have run before
            with self._lock:
                left = self._floors.pop(node_id, None)
            if left is not None:
                self.meta.unpin_version(HummockVersion(left, 0))

    # ---- compactors ---------------------------------------------------------------------------
    def compaction_next_task(self, node_id: int) -> tuple[CompactionTask, StateTableDesc] | None:
        picked = self.meta.compaction.next_task()
        if picked is not None:
            with self._lock:
                self._tasks[node_id][picked[0].task_id] = picked[0]
        return picked

    def compaction_report(self, node_id: int, task: CompactionTask, outputs: list[SstableInfo] | None) -> bool:
        with self._lock:
            owned = self._tasks.get(node_id, {}).pop(task.task_id, None)
        if owned is None:  # declared dead meanwhile: the task was given up and may run elsewhere
            return False
        return self.meta.compaction.report(task, outputs)
