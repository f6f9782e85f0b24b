"""The meta service: the one place that changes the cluster's state.

Frontends call it for DDL, DML registration, FLUSH, progress and pinned versions; the barrier
manager drives the compute nodes; the compaction scheduler hands tasks to compactors. In the
playground every caller holds this object; other deployments reach it through the HTTP API
(`meta.api`), which exposes the same operations.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any

import sqlalchemy as sa

from meta.backfill_rate import (
    ADAPTIVE,
    TARGET_PARAM,
    BackfillRateController,
    describe,
    is_adaptive,
    rows_read_per_parallelism,
    target_ms,
    with_adaptive_start,
)
from meta.barrier.command import ComputeClient
from meta.barrier.manager import BarrierManager
from meta.catalog import CatalogManager, CatalogSnapshot, post_order
from meta.cluster import ClusterManager
from meta.compaction.scheduler import CompactionScheduler
from meta.compaction.write_stall import PARAM as WRITE_STALL_PARAM
from meta.compaction.write_stall import WriteStall
from meta.functions import FunctionManager, function_ids_of
from meta.garbage import GarbageCollector
from meta.hummock import HummockManager
from meta.metrics import METRICS, backfill_labels
from meta.progress import ProgressRate, UpstreamProgress, format_progress, upstream_progress, waiting_text
from meta.remote import RemoteComputeGroup
from meta.resource_groups import GroupRounds, jobs_of_other_groups
from meta.serverless import (
    ProvisionFailed,
    ServerlessBackfillController,
    check_request,
    jobs_on_backfillers,
    on_backfiller,
    serverless_state,
)
from meta.serverless_compaction import ServerlessCompactionController
from meta.snapshot_backfill import SnapshotBackfills
from meta.store.schema import backfill_progress, dml_batches, dml_logs, table_stats
from meta.store.store import MetaStore, Txn, next_ids
from meta.system_params import SystemParams
from meta.users import UserManager
from risingspark.backfill_order import BACKFILL_ORDER, normalize
from risingspark.barrier import AddJobs, DmlReceipt, DropJobs, EpochResult, Mutation, Throttle
from risingspark.catalog import (
    ADAPTIVE_BACKFILL_RATE,
    DEFAULT_DATABASE,
    DEFAULT_RESOURCE_GROUP,
    DEFAULT_SCHEMA,
    BackfillType,
    CreateType,
    DatabaseCatalog,
    JobStatus,
    RelationCatalog,
    RelationKind,
    SchemaCatalog,
)
from risingspark.config import ServerlessBackfillConfig
from risingspark.errors import (
    DependentObjectsStillExist,
    DuplicateDatabase,
    DuplicateSchema,
    DuplicateTable,
    FeatureNotSupported,
    InternalError,
    InvalidCatalogName,
    InvalidParameterValue,
    ObjectInUse,
    QueryCanceled,
    RisingSparkError,
    ServiceUnavailable,
    UndefinedFunction,
    UndefinedTable,
)
from risingspark.snapshot_splits import AGG_SPLIT_TARGET_ROWS, MAX_SPLITS, SPLIT_TARGET_ROWS
from risingspark.storage.desc import HummockVersion
from risingspark.storage.object_store import ObjectStore
from risingspark.stream_plan import StreamHashAgg, find, node_from_json, scans
from risingspark.users import DEFAULT_SUPER_USER_ID
from risingspark.vnode import VNODE_COUNT

logger = logging.getLogger(__name__)

QUEUED = "queued"  # relation.extra flag: a creating job waiting for a slot
QUEUED_PROGRESS = "Queued: waiting for a free slot (max_concurrent_creating_streaming_jobs)"


@dataclass(frozen=True)
class DdlProgress:
    """One row of `rw_catalog.rw_ddl_progress` (and of `SHOW JOBS`)."""

    ddl_id: int
    ddl_statement: str
    create_type: str
    progress: str
    initialized_at_epoch: int | None
    is_serverless_backfill: bool
    backfill_type: str | None
    consumed_rows: int
    total_rows: int
    rows_per_second: float | None
    eta_seconds: float | None
    rate_limit: str | None = None  # "adaptive (n rows/s)", the fixed limit, or None: unlimited
    upstreams: tuple[UpstreamProgress, ...] = ()  # per upstream relation (`rw_fragment_backfill_progress`)


class MetaService:
    def __init__(self, store: MetaStore, objects: ObjectStore, compute: ComputeClient) -> None:
        self.store = store
        self.objects = objects
        self._compute = compute
        self.params = SystemParams(store)
        self.catalog = CatalogManager(store)
        self.users = UserManager(store, self.catalog)  # users, privileges, ownership (`meta.users`)
        self.functions = FunctionManager(store, self.catalog)  # user-defined functions (`meta.functions`)
        self.hummock = HummockManager(store, objects)
        self._changes = threading.Condition()  # a new catalog or version (`wait_for_change`)
        self.catalog.on_change(self._notify_change)
        self.hummock.on_change(self._notify_change)
        self.snapshots = SnapshotBackfills(store)
        self.barriers = BarrierManager(store, self.catalog, self.hummock, objects, compute, self.snapshots,
                                       interval_ms=self._round_interval_ms,
                                       on_commit=self._after_commit)
        self.barriers.stall_threshold = lambda: self.params.get(WRITE_STALL_PARAM)
        self.compaction = CompactionScheduler(store, self.catalog, self.hummock,
                                              stall_threshold=self.barriers.stall_threshold)
        # the full GC of the object store (`meta.garbage`); its schedule is set before `start`
        self.garbage = GarbageCollector(store, objects, self.hummock,
                                        lambda: [t.output_prefix for t in self.compaction.running],
                                        self.barriers.oldest_outstanding_epoch)
        self._lock = threading.Lock()
        self._start_lock = threading.RLock()
        self._rate_lock = threading.Lock()  # backfill rate changes: ALTERs and the adaptive steps
        self._row_counts: dict[int, int] = {}
        self._consumed: dict[int, dict[tuple[int, int], int]] = defaultdict(dict)  # (scan, vnode) -> rows
        self._finished: dict[int, set[tuple[int, int]]] = defaultdict(set)  # (scan, vnode) done
        self._rates: dict[int, ProgressRate] = defaultdict(ProgressRate)
        self.backfill_rates = BackfillRateController()  # adaptive backfill rates (`meta.backfill_rate`)
        self._load_progress()
        # The registered workers when services run as processes (`meta.cluster.ClusterManager`);
        # None in the playground, where every service is in this process.
        self.cluster_manager: Any = None
        # Serverless backfill (`meta.serverless`); disabled unless the server configuration enables it.
        self.serverless = ServerlessBackfillController(self, ServerlessBackfillConfig(), None, None)
        # Serverless compaction (`meta.serverless_compaction`); None unless the configuration enables it.
        self.serverless_compaction: ServerlessCompactionController | None = None
        # Resource groups other than the default one, and the compute nodes registered with meta
        # (`meta.resource_groups`; set when meta serves worker RPCs).
        self.workers: ClusterManager | None = None
        self._groups: dict[str, GroupRounds] = {}
        self.barriers.jobs_elsewhere = lambda: (jobs_on_backfillers(self.catalog.snapshot)
                                                | jobs_of_other_groups(self.catalog.snapshot))
        self.barriers.rate_limit_of = self._rate_limit_of
        self.barriers.on_job_plan_failed = self._plan_failed
        self._plan_errors: dict[int, str] = {}  # creating jobs cancelled for their plan: the error

    def _round_interval_ms(self) -> int:
        """Time between epoch rounds. RisingWave injects a barrier every `barrier_interval_ms` and
        makes every `checkpoint_frequency`-th one a checkpoint; here nothing a round does is visible
        before a checkpoint commits it, so one round runs per checkpoint."""
        return self.params.barrier_interval_ms * self.params.get("checkpoint_frequency")

    def start(self) -> None:
        self.garbage.start()
        self.barriers.start()
        for group in sorted({r.resource_group for r in self.catalog.snapshot.relations.values()} - {DEFAULT_RESOURCE_GROUP}):
            self._group(group)
        self.serverless.start()
        if self.serverless_compaction is not None:
            self.serverless_compaction.start()
        self.start_queued_jobs()

    def stop(self) -> None:
        self.garbage.stop()
        if self.serverless_compaction is not None:
            self.serverless_compaction.stop()
        self.serverless.stop()
        with self._lock:
            groups = list(self._groups.values())
        for g in groups:
            g.stop()
        self.barriers.stop()

    def _group(self, name: str) -> GroupRounds:
        """The rounds of a resource group other than the default one (started on first use)."""
        with self._lock:
            group = self._groups.get(name)
            if group is None:
                if self.workers is None:
                    raise ServiceUnavailable(f'resource group "{name}" has no compute node: this meta does not '
                                             "serve compute nodes")
                group = self._groups[name] = GroupRounds(self, name, RemoteComputeGroup(self.workers, name))
                group.start()
                logger.info("resource group %s: rounds started", name)
            return group

    def _to_every_group(self, mutation: Mutation) -> None:
        self.barriers.add_mutation(mutation)
        with self._lock:
            groups = list(self._groups.values())
        for g in groups:
            g.add_mutation(mutation)

    def _start_job(self, rel: RelationCatalog) -> None:
        """Run a new (or dequeued) job: on a backfiller of its own while a serverless backfill
        lasts, otherwise in the default group's rounds from the next barrier."""
        if on_backfiller(rel):
            self.serverless.start_job(rel.id)
        elif rel.resource_group != DEFAULT_RESOURCE_GROUP:
            self._group(rel.resource_group).add_mutation(AddJobs((self.barriers.stream_job(rel),)))
        else:
            self.barriers.add_mutation(AddJobs((self.barriers.stream_job(rel),)))

    # ---- catalog --------------------------------------------------------------------------------
    def catalog_snapshot(self) -> CatalogSnapshot:
        return self.catalog.snapshot

    def allocate_ids(self, count: int) -> int:
        with self.store.transaction() as tx:
            return self.catalog.allocate_ids(tx, count)

    def create_relation(self, rel: RelationCatalog) -> RelationCatalog:
        """Persist a new table or MV and start its streaming job at the next barrier."""
        snap = self.catalog.snapshot
        for dep in rel.dependencies:
            up = snap.relations.get(dep)
            if up is None:
                raise UndefinedTable(f"relation with id {dep} does not exist")
            if up.is_creating:
                raise FeatureNotSupported(
                    f'cannot create a materialized view on "{up.name}" while it is still being created',
                    hint=f"WAIT MATERIALIZED VIEW {up.name}, or wait until SHOW JOBS no longer lists it")
        for fid in function_ids_of(rel):
            if fid not in snap.functions:
                raise UndefinedFunction(f"function with id {fid} does not exist (dropped while the view was planned)")
        check_request(self.serverless.enabled, rel)
        database = snap.databases.get(rel.database_id)
        group = database.resource_group if database is not None else DEFAULT_RESOURCE_GROUP
        if rel.plan is not None and group != DEFAULT_RESOURCE_GROUP:
            self._check_group(group)
        rel = replace(rel, created_at_epoch=self.hummock.version.committed_epoch, resource_group=group)
        if is_adaptive(rel):
            rel = with_adaptive_start(rel)
        with self._start_lock:
            queued = rel.is_creating and not self._has_free_slot()
            if queued:
                rel = replace(rel, extra={**rel.extra, QUEUED: True})
            with self.store.transaction() as tx:
                if self.catalog.snapshot.relation(rel.schema_id, rel.name) is not None:
                    raise DuplicateTable(f'relation "{rel.name}" already exists')
                self.catalog.create_relation(tx, rel)
                if rel.is_creating and not queued:
                    self._prepare_backfill(tx, rel)
            if rel.plan is not None and not queued:
                self._start_job(rel)
        logger.info("created %s %s (id %d, %s%s)", rel.kind.display, rel.name, rel.id, rel.status.value,
                    ", queued" if queued else "")
        return rel

    def _check_group(self, group: str) -> None:
        """A job can be placed on a resource group that has a live compute node."""
        if self.workers is None or not self.workers.workers("compute", group):
            raise ServiceUnavailable(f'resource group "{group}" has no live compute node',
                                     hint=f"Start one with: risingspark compute --resource-group {group} "
                                          "--meta-address <this meta>")

    def create_database(self, name: str, resource_group: str = DEFAULT_RESOURCE_GROUP,
                        owner: int = DEFAULT_SUPER_USER_ID) -> DatabaseCatalog:
        """Create a database (42P04 if it exists) with its ``public`` schema, both owned by `owner`;
        its streaming jobs run in `resource_group`."""
        if self.catalog.snapshot.database(name) is not None:
            raise DuplicateDatabase(f'database "{name}" already exists')
        with self.store.transaction() as tx:
            first = self.catalog.allocate_ids(tx, 2)
            db = DatabaseCatalog(first, name, resource_group or DEFAULT_RESOURCE_GROUP, owner)
            self.catalog.create_database(tx, db, SchemaCatalog(first + 1, first, DEFAULT_SCHEMA, owner))
        logger.info("created database %s (id %d, resource group %s)", name, db.id, db.resource_group)
        return db

    def drop_database(self, database_id: int) -> None:
        """Drop a database without relations (2BP01 otherwise)."""
        snap = self.catalog.snapshot
        db = snap.databases.get(database_id)
        if db is None:
            raise InvalidCatalogName(f"database with id {database_id} does not exist")
        if db.name == DEFAULT_DATABASE:
            raise ObjectInUse(f'cannot drop the default database "{db.name}"')
        if any(r.database_id == database_id for r in snap.relations.values()) or \
                any(f.database_id == database_id for f in snap.functions.values()):
            raise DependentObjectsStillExist(f"database {db.name} is not empty",
                                             hint="Drop its tables, views, materialized views and functions first.")
        with self.store.transaction() as tx:
            self.catalog.drop_database(tx, database_id)
        logger.info("dropped database %s (id %d)", db.name, database_id)

    def create_schema(self, database_id: int, name: str, owner: int = DEFAULT_SUPER_USER_ID) -> SchemaCatalog:
        """Create a schema in a database (42P06 if it exists), owned by `owner`."""
        with self.store.transaction() as tx:
            if self.catalog.snapshot.schema(database_id, name) is not None:
                raise DuplicateSchema(f'schema "{name}" already exists')
            schema = SchemaCatalog(self.catalog.allocate_ids(tx, 1), database_id, name, owner)
            self.catalog.create_schema(tx, schema)
        logger.info("created schema %s (id %d)", name, schema.id)
        return schema

    def drop_schema(self, schema_id: int) -> None:
        """Drop an empty schema (2BP01 while relations live in it)."""
        snap = self.catalog.snapshot
        schema = snap.schemas.get(schema_id)
        if schema is None:
            raise UndefinedTable(f"schema with id {schema_id} does not exist")
        if any(r.schema_id == schema_id for r in snap.relations.values()) or \
                any(f.schema_id == schema_id for f in snap.functions.values()):
            raise DependentObjectsStillExist(f"cannot drop schema {schema.name} because other objects depend on it",
                                             hint="Use DROP ... CASCADE to drop the dependent objects too.")
        with self.store.transaction() as tx:
            self.catalog.drop_schema(tx, schema_id)
        logger.info("dropped schema %s (id %d)", schema.name, schema_id)

    def rename_relation(self, rel_id: int, name: str, extras: dict[int, dict] | None = None) -> None:
        """Rename a relation (42P07 if its schema has a relation of that name), and in the same
        transaction replace the `extra` of others (views whose stored query names it)."""
        with self.store.transaction() as tx:
            snap = self.catalog.snapshot
            rel = snap.relations.get(rel_id)
            if rel is None:
                raise UndefinedTable(f"relation with id {rel_id} does not exist")
            if snap.relation(rel.schema_id, name) is not None:
                raise DuplicateTable(f'relation "{name}" already exists')
            self.catalog.rename(tx, rel_id, name)
            for other, extra in (extras or {}).items():
                self.catalog.set_extra(tx, other, extra)
        logger.info("renamed %s %s (id %d) to %s", rel.kind.display, rel.name, rel_id, name)

    def set_comment(self, rel_id: int, column: str | None, comment: str | None) -> None:
        """Set (or with None remove) the comment of a relation or of one of its columns."""
        rel = self.catalog.snapshot.relations.get(rel_id)
        if rel is None:
            raise UndefinedTable(f"relation with id {rel_id} does not exist")
        extra = dict(rel.extra)
        if column is None:
            extra.pop("comment", None)
            if comment is not None:
                extra["comment"] = comment
        else:
            columns = {k: v for k, v in (extra.get("column_comments") or {}).items() if k != column}
            if comment is not None:
                columns[column] = comment
            extra["column_comments"] = columns
        with self.store.transaction() as tx:
            self.catalog.set_extra(tx, rel_id, extra)

    # ---- the creating-job slots (max_concurrent_creating_streaming_jobs) --------------------------
    def _has_free_slot(self) -> bool:
        limit = self.params.get("max_concurrent_creating_streaming_jobs")
        running = sum(1 for r in self.catalog.snapshot.relations.values() if r.is_creating and not r.extra.get(QUEUED))
        return limit == 0 or running < limit

    def _prepare_backfill(self, tx: Txn, rel: RelationCatalog) -> None:
        """A job's backfill state when it starts: per-vnode progress, and for a snapshot backfill
        the snapshot itself (fixed now, so a queued job reads the data as of its start)."""
        if rel.backfill_type is BackfillType.SNAPSHOT_BACKFILL:
            with self._lock:
                live_rows = self._row_counts.get(rel.dependencies[0], 0)
            rate = rel.extra.get("backfill_rate_limit")
            if rate is None:
                aggregates = rel.plan is not None and bool(find(node_from_json(rel.plan), StreamHashAgg))
                split_rows, max_splits = AGG_SPLIT_TARGET_ROWS if aggregates else SPLIT_TARGET_ROWS, MAX_SPLITS
            else:  # one split per vnode: the limit decides at run time how many a round reads
                split_rows, max_splits = 1, VNODE_COUNT
            self.snapshots.create(tx, rel.id, rel.dependencies[0], self.hummock.version, live_rows, split_rows,
                                  max_splits)
        assert rel.plan is not None
        tx.conn.execute(backfill_progress.insert(), [
            {"job_id": rel.id, "scan_id": scan_id, "upstream_id": scan.upstream_id, "vnode": v, "position": None,
             "finished": False, "row_count": 0}
            for scan_id, scan in enumerate(scans(node_from_json(rel.plan))) for v in range(VNODE_COUNT)])

    def start_queued_jobs(self) -> None:
        """Start queued creating jobs, oldest first, while slots are free."""
        with self._start_lock:
            while self._has_free_slot():
                queued = sorted((r for r in self.catalog.snapshot.relations.values()
                                 if r.is_creating and r.extra.get(QUEUED)), key=lambda r: r.id)
                if not queued:
                    return
                rel = queued[0]
                extra = {k: v for k, v in rel.extra.items() if k != QUEUED}
                with self.store.transaction() as tx:
                    self.catalog.set_extra(tx, rel.id, extra)
                    self._prepare_backfill(tx, replace(rel, extra=extra))
                self._start_job(self.catalog.snapshot.relations[rel.id])
                logger.info("job %d (%s) leaves the queue and starts its backfill", rel.id, rel.name)

    def drop_relation(self, rel_id: int, *, cascade: bool = False) -> list[RelationCatalog]:
        """Drop a relation (and, with `cascade`, everything that depends on it). Returns what was
        dropped, dependents first."""
        snap = self.catalog.snapshot
        rel = snap.relations.get(rel_id)
        if rel is None:
            raise UndefinedTable(f"relation with id {rel_id} does not exist")
        order = _dependents_first(snap, rel)
        if len(order) > 1 and not cascade:
            dep = order[0]
            raise DependentObjectsStillExist(
                f"cannot drop {rel.kind.display} {rel.name} because other objects depend on it",
                detail=f"{dep.kind.display} {dep.name} depends on {rel.kind.display} {rel.name}",
                hint="Use DROP ... CASCADE to drop the dependent objects too.")
        ids = [r.id for r in order]
        table_ids = [d.table_id for r in order for d in r.state_tables]
        self.serverless.cancel(ids)  # their backfillers first: no round of theirs commits after the drop
        with self.store.transaction() as tx:
            conn = tx.conn
            self.catalog.drop_relations(tx, ids)
            self.hummock.drop_tables(tx, table_ids)
            conn.execute(backfill_progress.delete().where(backfill_progress.c.job_id.in_(ids)))
            self.snapshots.remove(conn, ids)
            conn.execute(table_stats.delete().where(table_stats.c.table_id.in_(table_ids)))
            dml_paths = [r.path for r in conn.execute(sa.select(dml_batches.c.path)
                                                      .where(dml_batches.c.table_id.in_(ids)))]
            conn.execute(dml_batches.delete().where(dml_batches.c.table_id.in_(ids)))
        self.objects.delete(dml_paths)
        with self._lock:
            for i in ids:
                self._consumed.pop(i, None)
                self._finished.pop(i, None)
                self._rates.pop(i, None)
            for t in table_ids:
                self._row_counts.pop(t, None)
        self._to_every_group(DropJobs(tuple(ids)))
        for r in order:
            logger.info("dropped %s %s (id %d)", r.kind.display, r.name, r.id)
        self.start_queued_jobs()
        return order

    def set_backfill_rate_limit(self, rel_id: int, rate: int | str | None) -> None:
        """Change a job's backfill rate limit (rows/s per parallelism; None: unlimited, 0: paused;
        "adaptive": meta adapts it to the barrier latency, `meta.backfill_rate`). A running backfill
        applies it at the next barrier (a Throttle mutation)."""
        with self._rate_lock:
            self._set_backfill_rate_limit(rel_id, rate)

    def _set_backfill_rate_limit(self, rel_id: int, rate: int | str | None) -> None:
        rel = self.catalog.snapshot.relations.get(rel_id)
        if rel is None:
            raise UndefinedTable(f"relation with id {rel_id} does not exist")
        extra = {k: v for k, v in rel.extra.items() if k not in ("backfill_rate_limit", ADAPTIVE_BACKFILL_RATE)}
        sent: int | None = None  # the limit the compute nodes apply now
        if rate == ADAPTIVE:  # from the current limit on (none for a serverless backfill)
            current = self.backfill_rates.rate(rel_id) if is_adaptive(rel) else rel.extra.get("backfill_rate_limit")
            rel = with_adaptive_start(replace(rel, extra={**extra, ADAPTIVE_BACKFILL_RATE: True}))
            extra = dict(rel.extra)
            if "backfill_rate_limit" in extra:
                sent = extra["backfill_rate_limit"] = self.backfill_rates.start(rel, current)
        elif isinstance(rate, int):
            sent = extra["backfill_rate_limit"] = rate
        elif rate is not None:
            raise InvalidParameterValue(f"backfill rate limit must be a number, adaptive or default, not {rate!r}")
        with self.store.transaction() as tx:
            self.catalog.set_extra(tx, rel_id, extra)
        if rel.status is JobStatus.CREATING:
            self._to_every_group(Throttle(((rel_id, sent),)))
        logger.info("job %d (%s): backfill rate limit set to %s", rel_id, rel.name,
                    "unlimited" if sent is None else sent)

    def set_parallelism(self, rel_id: int, parallelism: int) -> None:
        """Reschedule a job on `parallelism` actors (0: one per core). Its actors are rebuilt at the
        next barrier from the committed state; a backfill resumes from its per-vnode progress."""
        rel = self.catalog.snapshot.relations.get(rel_id)
        if rel is None:
            raise UndefinedTable(f"relation with id {rel_id} does not exist")
        with self.store.transaction() as tx:
            self.catalog.set_parallelism(tx, rel_id, parallelism)
        # Rebuilt through recovery, whose barrier reads every job's progress after the last commit.
        self.barriers.request_recovery()
        with self._lock:
            groups = list(self._groups.values())
        for g in groups:
            g.request_recovery()
        logger.info("job %d (%s): parallelism set to %s", rel_id, rel.name, parallelism or "adaptive")

    def _plan_failed(self, job_id: int, message: str) -> None:
        """A job's plan failed round after round (`BarrierManager.on_job_plan_failed`). One still
        being created is cancelled, as a failed CREATE leaves nothing: its CREATE (waiting in
        `wait_created`) fails with the error; a background one's is logged. A created job stays (its
        data is the user's): the rounds keep failing and recovering, and the log says why."""
        rel = self.catalog.snapshot.relations.get(job_id)
        if rel is None or not rel.is_creating:
            logger.error("job %d: its plan fails every round: %s", job_id, message)
            return
        logger.error("job %d (%s): cancelled: its plan fails every round: %s", job_id, rel.name, message)
        with self._lock:
            self._plan_errors[job_id] = message
        self.drop_relation(job_id, cascade=True)

    def why_dropped(self, rel_id: int) -> RisingSparkError:
        """The error of a CREATE whose job went while it waited: its plan's (`_plan_failed`, told
        once) or a cancel."""
        with self._lock:
            error = self._plan_errors.pop(rel_id, None)
        return InternalError(error) if error is not None else QueryCanceled("the streaming job was cancelled")

    def wait_created(self, rel_id: int, cancelled: threading.Event | None = None) -> RelationCatalog:
        """Block until the job has finished its backfill. Raises if it was dropped meanwhile (with
        the error of its plan, if meta cancelled it for that: `_plan_failed`)."""
        seen = -1
        while True:
            snap = self.catalog.snapshot
            rel = snap.relations.get(rel_id)
            if rel is None:
                raise self.why_dropped(rel_id)
            if rel.status is JobStatus.CREATED:
                return rel
            if error := (serverless_state(rel) or {}).get("error"):
                # A foreground statement fails and leaves nothing behind; a background job stays in
                # SHOW JOBS with its error until it is cancelled.
                if rel.create_type is CreateType.FOREGROUND:
                    self.drop_relation(rel.id, cascade=True)
                raise ProvisionFailed(f"serverless backfill of {rel.name} failed: {error}")
            if cancelled is not None and cancelled.is_set():
                raise QueryCanceled("canceling statement due to user request")
            seen = self.catalog.wait_for_change(snap.version if seen != snap.version else seen, 0.2)

    # ---- DML --------------------------------------------------------------------------------------
    def submit_dml(self, table_id: int, path: str, row_count: int) -> DmlReceipt:
        """Record a DML batch already written to the object store. Once this returns the rows are
        durable: the next barriers deliver them until an epoch that consumed them commits."""
        return self.submit_dml_batches([(table_id, path, row_count)])[0]

    def submit_dml_batches(self, batches: list[tuple[int, str, int]] | list[tuple[int, str, int, int]],
                           retried: bool = False, log: tuple[str, int] | None = None) -> list[DmlReceipt]:
        """Record DML batches ``(table id, path, row count[, log seq])`` in one transaction, in this order (a
        frontend's group commit, `frontend.dml_commit`: the batches of concurrent statements share
        one commit of the meta store). Durable, as `submit_dml`, once this returns. `retried`: the
        frontend retries a failed commit with the same files (its reply may have been lost after the
        commit): a path already recorded is not recorded again, its receipt is the recorded batch's.
        Only a retry looks the paths up (the path column has no index; the table holds the batches
        not yet consumed). `log` ``(log id, seq)``: the batches hold a frontend's DML log's records up
        to `seq` (`frontend.dml_log`), recorded in the same transaction: the log replays only what
        comes after it. A batch's log seq (the newest log record of the commit that first wrote its
        file; 0: none) at or below the log's recorded one was recorded by an earlier commit whose
        reply was lost (a commit's files are recorded together with the watermark, and commits take
        the log's records in order): it is not recorded again, even when a barrier consumed it and
        its path is gone. Read under the store's write lock, so a retry cannot overtake the commit it
        repeats.

        A batch of a table dropped meanwhile (written before the drop, recorded after it: an
        asynchronous or logged statement's) is not recorded, and its file is deleted: no barrier
        would ever take it, and FLUSH would wait for it forever. Writers and drops are serialized by
        the store's write lock, and a drop's catalog is installed under it."""
        ids: dict[str, int] = {}
        with self.store.transaction() as tx:
            if log is not None:
                recorded = _log_recorded(tx.conn, log[0])
                for b in batches:
                    if 0 < (b[3] if len(b) > 3 else 0) <= recorded:  # type: ignore[misc]
                        ids[b[1]] = 0
                _record_log(tx.conn, *log)
            if retried:
                paths = [b[1] for b in batches]
                ids.update(tx.conn.execute(sa.select(dml_batches.c.path, dml_batches.c.id)
                                           .where(dml_batches.c.path.in_(paths))).tuples().all())
            live = self.catalog.snapshot.relations
            gone = [b[:3] for b in batches if b[0] not in live and b[1] not in ids]
            for _, path, _ in gone:
                ids[path] = 0
            new = [b[:3] for b in batches if b[1] not in ids]
            first = next_ids(tx.conn, "dml_batch", len(new)) if new else 0
            for i, (table_id, path, row_count) in enumerate(new):
                ids[path] = first + i
                tx.conn.execute(dml_batches.insert().values(id=first + i, table_id=table_id, path=path,
                                                            row_count=row_count, committed_epoch=None))
        if gone:
            logger.info("DML batches of %d dropped tables not recorded (%d rows)", len({b[0] for b in gone}),
                        sum(b[2] for b in gone))
            self.objects.delete([path for _, path, _ in gone])
        for table_id, _, row_count in new:
            rel = self.catalog.snapshot.relations.get(table_id)
            name = rel.name if rel else str(table_id)
            METRICS.dml_rows.labels(job=name).inc(row_count)
            METRICS.dml_batches.labels(job=name).inc()
        return [DmlReceipt(ids[b[1]], self.is_write_stalled(b[0])) for b in batches]

    def dml_log_recorded(self, log_id: str) -> int:
        """The newest record of a frontend's DML log recorded by `submit_dml_batches` (0: none). (A
        frontend before `dml_log_open` asks this; kept for one upgraded after meta.)"""
        with self.store.begin() as conn:
            return _log_recorded(conn, log_id)

    def dml_log_open(self, log_id: str, register: bool) -> int:
        """A frontend opens its DML log: the newest record of it recorded here, 0 for a log this
        cluster knows and has recorded nothing of; -1 for a log it has never heard of, which is
        registered (then 0) when `register` (the log holds no record yet). A log with records
        this cluster never heard of was written for another one, or for this meta store before a
        reset: its records name tables by ids that mean nothing here (the frontend refuses it)."""
        with self.store.transaction() as tx:
            seq = _log_row(tx.conn, log_id)
            if seq is not None:
                return seq
            if not register:
                return -1
            tx.conn.execute(dml_logs.insert().values(log_id=log_id, recorded_seq=0))
            return 0

    def is_write_stalled(self, table_id: int) -> bool:
        """Whether writes into `table_id` are held (`meta.compaction.write_stall`); its writers wait
        on this (frontend.handlers.dml)."""
        return self.barriers.write_stalls.is_stalled(table_id)

    def write_stalls(self) -> list[WriteStall]:
        """The tables whose writes are held now (`meta.compaction.write_stall`)."""
        return self.barriers.write_stalls.stalls

    def flush(self, timeout: float | None = None) -> int:
        return self.barriers.flush(timeout)

    # ---- reads --------------------------------------------------------------------------------
    def pin_version(self) -> HummockVersion:
        return self.hummock.pin()

    def unpin_version(self, version: HummockVersion) -> None:
        self.hummock.unpin(version)

    def pin_version_at(self, version_id: int) -> None:
        """Pin a version by id (a frontend's oldest in use: `meta.rpc.MetaRpc.watch`)."""
        self.hummock.pin_at(version_id)

    def reads_locally(self) -> bool:
        """Whether `catalog_snapshot` and `pin_version` answer without waiting (always, here)."""
        return True

    def statement_mark(self) -> None:
        """Nothing to mark: every catalog read here is of the current catalog (a frontend of its own
        reads a copy: `meta.client.MetaClient.statement_mark`)."""
        return None

    def catalog_moved_since(self, mark: None) -> bool:
        """Never: a statement that missed an object here missed it in the current catalog."""
        return False

    def wait_for_change(self, catalog_version: int, version_id: int,
                        timeout_s: float) -> tuple[CatalogSnapshot, HummockVersion]:
        """The current catalog and version, once either is not the one given or after `timeout_s`."""
        with self._changes:
            self._changes.wait_for(lambda: (self.catalog.snapshot.version != catalog_version
                                            or self.hummock.version.id != version_id), timeout_s)
        return self.catalog.snapshot, self.hummock.version

    def _notify_change(self) -> None:
        with self._changes:
            self._changes.notify_all()

    @property
    def default_parallelism(self) -> int | None:
        """The compute node's parallelism for jobs that set none (None when meta cannot tell)."""
        return getattr(self._compute, "default_parallelism", None)

    def row_count(self, table_id: int) -> int:
        with self._lock:
            return self._row_counts.get(table_id, 0)

    def ddl_progress(self) -> list[DdlProgress]:
        snapshot_totals = self.snapshots.total_rows()
        # One hold of the progress lock for the catalog read and every job's progress: a commit marks
        # a finished job CREATED before it drops the job's progress under this lock, so a job seen
        # CREATING here still has its progress (read apart, a job could show 0 rows just as it ends).
        with self._lock:
            snap = self.catalog.snapshot
            names = {r.id: r.name for r in snap.relations.values()}
            out = []
            for rel in sorted(snap.relations.values(), key=lambda r: r.id):
                if rel.status is not JobStatus.CREATING:
                    continue
                out.append(self._job_progress(rel, names, snapshot_totals.get(rel.id)))
        return [replace(p, rate_limit=self._rate_limit_text(snap.relations[p.ddl_id])) for p in out]

    def _job_progress(self, rel: RelationCatalog, names: dict[int, str], snapshot_total: int | None) -> DdlProgress:
        """One creating job's row of `rw_ddl_progress` (the caller holds the progress lock)."""
        consumed = sum(self._consumed.get(rel.id, {}).values())
        upstreams = upstream_progress(_scanned(rel), self._consumed.get(rel.id, {}),
                                      self._finished.get(rel.id, set()), self._row_counts,
                                      normalize(rel.extra.get(BACKFILL_ORDER, ())))
        # A snapshot backfill's total is fixed: the live rows at its snapshot epoch.
        total = snapshot_total
        if total is None:
            total = sum(self._row_counts.get(d, 0) for d in _scanned(rel))
        rate = self._rates[rel.id]
        queued = bool(rel.extra.get(QUEUED))
        serverless = serverless_state(rel)
        progress = QUEUED_PROGRESS if queued else format_progress(consumed, total)
        if not queued and (waiting := waiting_text(upstreams, names)):
            progress += f", {waiting}"
        if serverless and serverless.get("error"):
            progress = f"Failed: {serverless['error']}"
        return DdlProgress(
            ddl_id=rel.id, ddl_statement=rel.definition, create_type=rel.create_type.value,
            progress=progress, initialized_at_epoch=rel.initialized_at_epoch,
            is_serverless_backfill=serverless is not None,
            backfill_type=rel.backfill_type.value if rel.backfill_type else None,
            consumed_rows=consumed, total_rows=total, rows_per_second=rate.rows_per_second(),
            eta_seconds=rate.eta_seconds(total), upstreams=() if queued else tuple(upstreams))

    def _rate_limit_text(self, rel: RelationCatalog) -> str | None:
        """A job's backfill rate limit as `rw_fragment_backfill_progress.rate_limit` shows it."""
        fixed = rel.extra.get("backfill_rate_limit")
        # (a serverless backfill's has no limit: unlimited; another group's keeps its starting one)
        if is_adaptive(rel) and fixed is not None and rel.resource_group == DEFAULT_RESOURCE_GROUP:
            return describe(None, self.backfill_rates.rate(rel.id) or fixed)
        return describe(fixed, None)

    def _rate_limit_of(self, rel: RelationCatalog) -> int | None:
        """The limit a job starts with (a recovery re-adds every job): an adaptive job's current one,
        not the starting limit stored with it."""
        stored = rel.extra.get("backfill_rate_limit")
        current = self.backfill_rates.rate(rel.id) if is_adaptive(rel) and stored is not None else None
        return current if current is not None else stored

    # ---- after each commit ------------------------------------------------------------------------
    def _adapt_backfill_rates(self, result: EpochResult) -> None:
        """A step of the adaptive backfill rates on the latency of the barrier just committed and the
        rows its rounds' backfills read. Under the rate lock, so an ALTER of a job's limit is never
        overtaken by a step that read the catalog before it."""
        sample = self.barriers.history.newest()
        if sample is None:
            return
        with self._rate_lock:
            jobs = [r for r in self.catalog.snapshot.relations.values() if r.is_creating and not r.extra.get(QUEUED)
                    and not on_backfiller(r) and serverless_state(r) is None
                    and r.resource_group == DEFAULT_RESOURCE_GROUP]
            target = target_ms(self.params.get(TARGET_PARAM), self.params.barrier_interval_ms)
            read = rows_read_per_parallelism(result.backfill, jobs, self.default_parallelism)
            throttle = self.backfill_rates.after_barrier(sample.duration_s * 1000, target, jobs, read)
            if throttle is not None:
                self.barriers.add_mutation(throttle, urgent=False)

    def _after_commit(self, result: EpochResult) -> None:
        try:
            self._adapt_backfill_rates(result)
        except Exception:  # the epoch is committed: a failed step must not turn into a recovery
            logger.exception("adaptive backfill rates: the step after epoch %d failed", result.epoch)
        snap = self.catalog.snapshot
        now = time.monotonic()
        for job_id, rows in result.rows_in.items():
            if (rel := snap.relations.get(job_id)) is not None and rel.kind is RelationKind.MATERIALIZED_VIEW:
                METRICS.materialize_input_rows.labels(job=rel.name).inc(rows)
        with self._lock:
            for table_id, delta in result.row_count_deltas.items():
                self._row_counts[table_id] = self._row_counts.get(table_id, 0) + delta
            for report in result.backfill:
                rel = snap.relations.get(report.job_id)
                if rel is None:
                    continue
                per_vnode = self._consumed[report.job_id]
                done = self._finished[report.job_id]
                for v in report.vnodes:
                    per_vnode[(report.scan_id, v.vnode)] = v.row_count
                    if v.finished:
                        done.add((report.scan_id, v.vnode))
                consumed = sum(per_vnode.values())
                self._rates[report.job_id].record(consumed, now)
                METRICS.backfill_snapshot_rows.labels(**backfill_labels(rel)).inc(report.rows_read)
                total = sum(self._row_counts.get(d, 0) for d in _scanned(rel))
                METRICS.backfill_progress_ratio.labels(**backfill_labels(rel)).set(
                    min(1.0, consumed / total) if total else 0)
            for job_id in result.finished_jobs:
                self._consumed.pop(job_id, None)
                self._finished.pop(job_id, None)
                self._rates.pop(job_id, None)
                rel = snap.relations.get(job_id)
                if rel is not None:
                    METRICS.backfill_progress_ratio.labels(**backfill_labels(rel)).set(1.0)
        if result.finished_jobs:
            self.start_queued_jobs()

    def _load_progress(self) -> None:
        with self.store.begin() as conn:
            for r in conn.execute(sa.select(table_stats)):
                self._row_counts[r.table_id] = int(r.row_count)
            for r in conn.execute(sa.select(backfill_progress)):
                self._consumed[r.job_id][(r.scan_id, r.vnode)] = int(r.row_count)
                if r.finished:
                    self._finished[r.job_id].add((r.scan_id, r.vnode))

def _dependents_first(snap: CatalogSnapshot, rel: RelationCatalog) -> list[RelationCatalog]:
    return post_order([rel], lambda r: snap.dependents(r.id))


__all__ = ["MetaService", "DdlProgress", "RelationKind"]


def _scanned(rel: RelationCatalog) -> list[int]:
    """The upstream of each scan of a job (a self-join scans its upstream twice)."""
    return [s.upstream_id for s in scans(node_from_json(rel.plan))] if rel.plan else list(rel.dependencies)


def _log_row(conn, log_id: str) -> int | None:
    """A DML log's recorded record; None for a log meta has no row of."""
    seq = conn.execute(sa.select(dml_logs.c.recorded_seq).where(dml_logs.c.log_id == log_id)).scalar()
    return None if seq is None else int(seq)


def _log_recorded(conn, log_id: str) -> int:
    return _log_row(conn, log_id) or 0


def _record_log(conn, log_id: str, seq: int) -> None:
    """Advance a DML log's recorded record to `seq` (never back: a retried commit may repeat it)."""
    updated = conn.execute(dml_logs.update().where(dml_logs.c.log_id == log_id)
                           .where(dml_logs.c.recorded_seq < seq).values(recorded_seq=seq)).rowcount
    if not updated and _log_row(conn, log_id) is None:
        conn.execute(dml_logs.insert().values(log_id=log_id, recorded_seq=seq))
