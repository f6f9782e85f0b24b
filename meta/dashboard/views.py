"""What the dashboard shows, built from meta's state: jobs with their backfill progress, a job's
fragment graph, the nodes with their CPU and memory, barrier latency and the LSM shape.

Every function reads meta's in-memory state only (catalog snapshot, Hummock version, progress,
ring buffers), so polling the dashboard costs the cluster nothing measurable.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import psutil

from meta.backfill_rate import is_adaptive
from meta.dashboard.models import (
    BackfillProgressModel,
    BarrierSampleModel,
    BarriersModel,
    ExchangeModel,
    ExecutorModel,
    FragmentGraphModel,
    FragmentModel,
    JobLinkModel,
    JobModel,
    LatencyBucketModel,
    LevelModel,
    NodeModel,
    NodesModel,
    ProcessModel,
    ResourceSampleModel,
    StorageModel,
    StorageSampleModel,
    TableStorageModel,
    WriteStallModel,
)
from meta.dashboard.monitor import ClusterMonitor
from meta.history import latency_buckets, percentile
from risingspark.catalog import DEFAULT_RESOURCE_GROUP, JobStatus, RelationCatalog
from risingspark.epoch import Epoch
from risingspark.errors import UndefinedTable
from risingspark.fragment import FragmentGraph, executor_detail, executor_name, plan_fragments
from risingspark.storage.desc import TableLevels
from risingspark.stream_plan import node_from_json

if TYPE_CHECKING:
    from meta.service import DdlProgress, MetaService

# The playground's one compute node (as `compute.metrics` names it in compute series).
COMPUTE_NODE = "compute-1"
BARRIER_WINDOW_S = 300.0
BARRIER_BUCKET_S = 5.0
RECENT_BARRIERS = 60
_EMPTY_GRAPH = FragmentGraph((), ())


def status_text(rel: RelationCatalog) -> str:
    """As the dashboard and SHOW JOBS users read it: ``Creating`` or ``Created``."""
    return rel.status.value.capitalize()


class DashboardViews:
    """Builds the dashboard's responses. Fragment graphs are cached per job (a plan never changes)."""

    def __init__(self, meta: MetaService, monitor: ClusterMonitor) -> None:
        self.meta = meta
        self.monitor = monitor
        self._graphs: dict[int, FragmentGraph] = {}

    def graph(self, rel: RelationCatalog) -> FragmentGraph:
        graph = self._graphs.get(rel.id)
        if graph is None:
            graph = plan_fragments(rel.id, node_from_json(rel.plan)) if rel.plan is not None else _EMPTY_GRAPH
            self._graphs[rel.id] = graph
        return graph

    def parallelism(self, rel: RelationCatalog) -> int | None:
        return rel.parallelism or self.meta.default_parallelism

    # ---- jobs -----------------------------------------------------------------------------------
    def jobs(self) -> list[JobModel]:
        snap = self.meta.catalog.snapshot
        live = set(snap.relations)
        for stale in set(self._graphs) - live:
            self._graphs.pop(stale, None)
        progress = {p.ddl_id: p for p in self.meta.ddl_progress()}
        out = []
        for rel in sorted(snap.relations.values(), key=lambda r: r.id):
            graph = self.graph(rel)
            backfill = []
            if rel.status is JobStatus.CREATING and rel.id in progress:
                backfill += self._backfill(rel, graph, progress[rel.id])
            out.append(JobModel(
                id=rel.id, name=rel.name, kind=rel.kind.value, statement=rel.definition, status=status_text(rel),
                create_type=rel.create_type.value,
                backfill_type=rel.backfill_type.value if rel.backfill_type else None,
                resource_group=rel.resource_group, parallelism=self.parallelism(rel), adaptive=rel.parallelism == 0,
                backfill_rate_limit=(self.meta.backfill_rates.rate(rel.id) if is_adaptive(rel) else None)
                or rel.extra.get("backfill_rate_limit"),
                backfill_rate_adaptive=is_adaptive(rel), dependencies=list(rel.dependencies),
                created_at_epoch=rel.created_at_epoch, initialized_at_epoch=rel.initialized_at_epoch,
                fragments=len(graph.fragments), backfill=backfill))
        return out

    def _backfill(self, rel: RelationCatalog, graph: FragmentGraph, p: DdlProgress) -> list[BackfillProgressModel]:
        """A job's backfill per scan fragment: the job's progress when it has one, else each
        upstream's (a scan waiting for its place in the backfill order says what it waits for)."""
        scans = [f for f in graph.fragments if f.scan is not None]
        names = {r.id: r.name for r in self.meta.catalog.snapshot.relations.values()}
        if len(p.upstreams) > 1:
            out = []
            for u in p.upstreams:  # (a union's branches may share a fragment; a self-join's scans one upstream)
                f = next((f for f in scans if f.scan is not None and f.scan.upstream_id == u.upstream_id), None)
                out.append(BackfillProgressModel(
                    fragment_id=f.fragment_id if f is not None else None, upstream_job_id=u.upstream_id,
                    upstream=names.get(u.upstream_id), progress=u.text(names), consumed_rows=u.consumed_rows,
                    total_rows=u.total_rows, rows_per_second=p.rows_per_second if u.reading else None,
                    eta_seconds=None, queued=False, rate_limit=p.rate_limit,
                    waiting_for=[names.get(w, str(w)) for w in u.waiting_for]))
            return out
        # Meta tracks progress per job: it belongs to a fragment when the job has one backfill fragment.
        scan = scans[0] if len(scans) == 1 else None
        upstream_id = scan.scan.upstream_id if scan is not None and scan.scan is not None else None
        return [BackfillProgressModel(
            fragment_id=scan.fragment_id if scan is not None else None, upstream_job_id=upstream_id,
            upstream=names.get(upstream_id) if upstream_id is not None else None, progress=p.progress,
            consumed_rows=p.consumed_rows, total_rows=p.total_rows, rows_per_second=p.rows_per_second,
            eta_seconds=p.eta_seconds, queued=p.progress.startswith("Queued"), rate_limit=p.rate_limit)]

    # ---- fragments ------------------------------------------------------------------------------
    def fragments(self, job_id: int) -> FragmentGraphModel:
        snap = self.meta.catalog.snapshot
        rel = snap.relations.get(job_id)
        if rel is None:
            raise UndefinedTable(f"streaming job with id {job_id} does not exist")
        graph = self.graph(rel)
        job = next((j for j in self.jobs() if j.id == job_id), None)
        backfill = {b.fragment_id: b for b in job.backfill} if job is not None else {}
        fragments = [FragmentModel(
            fragment_id=f.fragment_id,
            executors=[ExecutorModel(name=executor_name(n), detail=executor_detail(n)) for n in f.nodes],
            parallelism=self.parallelism(rel), node=COMPUTE_NODE,
            upstream_job_id=f.scan.upstream_id if f.scan is not None else None,
            backfill=backfill.get(f.fragment_id))
            for f in graph.fragments]
        exchanges = [ExchangeModel(upstream_fragment_id=e.upstream_fragment_id,
                                   downstream_fragment_id=e.downstream_fragment_id, dispatch=e.dispatch)
                     for e in graph.edges]
        upstream = []
        for f in graph.fragments:
            up = snap.relations.get(f.scan.upstream_id) if f.scan is not None else None
            if up is not None and self.graph(up).fragments:
                upstream.append(JobLinkModel(job_id=up.id, name=up.name, fragment_id=self.graph(up).fragments[0]
                                             .fragment_id, local_fragment_id=f.fragment_id))
        downstream = []
        root = graph.fragments[0].fragment_id if graph.fragments else 0
        for dep in sorted(snap.dependents(rel.id), key=lambda r: r.id):
            for f in self.graph(dep).fragments:
                if f.scan is not None and f.scan.upstream_id == rel.id:
                    downstream.append(JobLinkModel(job_id=dep.id, name=dep.name, fragment_id=f.fragment_id,
                                                   local_fragment_id=root))
        return FragmentGraphModel(job_id=rel.id, name=rel.name, status=status_text(rel), fragments=fragments,
                                  exchanges=exchanges, upstream_jobs=upstream, downstream_jobs=downstream)

    # ---- nodes ----------------------------------------------------------------------------------
    def nodes(self, meta_address: str | None) -> NodesModel:
        """The cluster's nodes: in the playground every role runs in this process; otherwise meta
        runs here and the workers are those registered with it."""
        pid, process = self.monitor.pid, self.monitor.process
        cluster = getattr(self.meta, "cluster_manager", None)
        if cluster is not None:
            nodes = [NodeModel(id="meta-1", role="meta", resource_group=None, address=meta_address, process=process,
                               pid=pid, parallelism=None, state="running")]
            nodes += [NodeModel(id=f"{w.kind}-{w.id}", role=w.kind,
                                resource_group=w.resource_group if w.kind == "compute" else None,
                                address=w.address, process=self._process_name(w), pid=w.pid,
                                parallelism=w.parallelism if w.kind == "compute" else None, state="running")
                      for w in cluster.workers() if not w.resource_group.startswith("backfill-")]
            nodes += self._backfillers()
            return NodesModel(nodes=nodes, processes=[self._process(process, pid, ["meta-1"]),
                                                      *self._backfiller_processes()])
        specs = [("meta-1", "meta", None, meta_address, None),
                 ("frontend-1", "frontend", None, None, None),
                 (COMPUTE_NODE, "compute", DEFAULT_RESOURCE_GROUP, None, self.meta.default_parallelism),
                 ("compactor-1", "compactor", None, None, None)]
        nodes = [NodeModel(id=i, role=role, resource_group=group, address=addr, process=process, pid=pid,
                           parallelism=par, state="running") for i, role, group, addr, par in specs]
        workers = getattr(self.meta, "workers", None)  # compute nodes of other resource groups that joined
        nodes += [NodeModel(id=f"compute-{w.id}", role="compute", resource_group=w.resource_group, address=w.address,
                            process="risingspark compute", pid=w.pid, parallelism=w.parallelism, state="running")
                  for w in (workers.workers("compute") if workers is not None else [])
                  if not w.resource_group.startswith("backfill-")]
        # compactors that joined: serverless compaction's, or ones an operator started
        nodes += [NodeModel(id=f"compactor-w{w.id}", role="compactor", resource_group=None, address=w.address,
                            process=self._process_name(w), pid=w.pid, parallelism=None, state="running")
                  for w in (workers.workers("compactor") if workers is not None else [])]
        backfillers = self._backfillers()
        return NodesModel(nodes=nodes + backfillers,
                          processes=[self._process(process, pid, [n.id for n in nodes]),
                                     *self._backfiller_processes()])

    def _process_name(self, worker) -> str:
        ctl = getattr(self.meta, "serverless_compaction", None)
        if worker.kind == "compactor" and ctl is not None and any(c.pid == worker.pid for c in ctl.compactors()):
            return "risingspark compactor (serverless)"
        return f"risingspark {worker.kind}"

    def _backfillers(self) -> list[NodeModel]:
        """Serverless backfillers, while they exist (`meta.serverless`)."""
        serverless = getattr(self.meta, "serverless", None)
        return [NodeModel(id=b.name, role="compute", resource_group=b.name, address=b.node.address if b.node else None,
                          process="risingspark compute (serverless backfiller)", pid=b.pid,
                          parallelism=b.node.parallelism if b.node else None,
                          state="running" if b.node is not None else "provisioning")
                for b in (serverless.backfillers() if serverless is not None else []) if b.alive]

    def _backfiller_processes(self) -> list[ProcessModel]:
        """Each backfiller's process tree with its CPU and memory samples (its own machine's share)."""
        serverless = getattr(self.meta, "serverless", None)
        return [ProcessModel(name=f"risingspark compute ({b.name})", pid=b.pid, nodes=[b.name],
                             cpu_count=psutil.cpu_count() or 1, memory_total_bytes=psutil.virtual_memory().total,
                             samples=[ResourceSampleModel(at=s.at, cpu_cores=s.cpu_cores, rss_bytes=s.rss_bytes)
                                      for s in b.samples])
                for b in (serverless.backfillers() if serverless is not None else []) if b.alive]

    def _process(self, process: str, pid: int, node_ids: list[str]) -> ProcessModel:
        """This process and its CPU and memory samples."""
        samples = [ResourceSampleModel(at=s.at, cpu_cores=s.cpu_cores, rss_bytes=s.rss_bytes)
                   for s in self.monitor.recent_resources()]
        return ProcessModel(name=process, pid=pid, nodes=node_ids, cpu_count=psutil.cpu_count() or 1,
                            memory_total_bytes=psutil.virtual_memory().total, samples=samples)

    # ---- barriers and storage -------------------------------------------------------------------
    def barriers(self) -> BarriersModel:
        now = time.time()
        samples = [s for s in self.meta.barriers.history.items() if s.at >= now - BARRIER_WINDOW_S]
        durations = [s.duration_s for s in samples]
        committed = self.meta.hummock.version.committed_epoch
        return BarriersModel(
            committed_epoch=committed, committed_at_ms=Epoch(committed).unix_ms if committed else None,
            barrier_interval_ms=self.meta.params.barrier_interval_ms, window_s=BARRIER_WINDOW_S,
            bucket_s=BARRIER_BUCKET_S, count=len(samples), p50=percentile(durations, 0.5),
            p99=percentile(durations, 0.99),
            series=[LatencyBucketModel(start=b.start, count=b.count, p50=b.p50, p99=b.p99, max=b.max)
                    for b in latency_buckets(samples, now=now, window_s=BARRIER_WINDOW_S, width_s=BARRIER_BUCKET_S)],
            recent=[BarrierSampleModel(at=s.at, epoch=s.epoch, duration_s=s.duration_s, commit_s=s.commit_s,
                                       spark_jobs=s.spark_jobs, cache_hits=s.cache_hits, cache_misses=s.cache_misses)
                    for s in samples[-RECENT_BARRIERS:]],
            last_error=self.meta.barriers.last_error, state_cache_hit_rate=_hit_rate(samples))

    def storage(self) -> StorageModel:
        snap = self.meta.catalog.snapshot
        version = self.meta.hummock.version
        tables = []
        for rel in sorted(snap.relations.values(), key=lambda r: r.id):
            for desc in rel.state_tables:
                levels = version.levels(desc.table_id)
                tables.append(TableStorageModel(
                    table_id=desc.table_id, job_id=rel.id, job=rel.name, l0_sub_levels=len(levels.l0),
                    l0_ssts=sum(len(s.ssts) for s in levels.l0), levels=level_models(levels),
                    size_bytes=sum(s.size_bytes for s in levels.all_ssts()), rows=self.meta.row_count(desc.table_id)))
        samples = [StorageSampleModel(at=s.at, max_l0_sub_levels=s.max_l0_sub_levels,
                                      total_l0_sub_levels=s.total_l0_sub_levels, compaction_tasks=s.compaction_tasks,
                                      compaction_bytes=s.compaction_bytes) for s in self.monitor.recent_storage()]
        tasks, written = self.monitor.compaction_totals()
        stalls = [WriteStallModel(table_id=s.table_id, name=s.name, state_table_id=s.state_table_id,
                                  l0_sub_levels=s.l0_sub_levels, since=s.since) for s in self.meta.write_stalls()]
        return StorageModel(committed_epoch=version.committed_epoch, version_id=version.id, tables=tables,
                            compaction_tasks_total=tasks, compaction_bytes_total=written, samples=samples,
                            write_stalls=stalls)


def level_models(levels: TableLevels) -> list[LevelModel]:
    """The non-empty levels of a table, L0 first: SSTs and bytes of each."""
    by_level = [[s for sub in levels.l0 for s in sub.ssts], *levels.levels]
    return [LevelModel(level=n, ssts=len(ssts), size_bytes=sum(s.size_bytes for s in ssts))
            for n, ssts in enumerate(by_level) if ssts]


def _hit_rate(samples: list) -> float | None:
    """The state caches' hit rate over barrier samples (None without lookups)."""
    hits = sum(s.cache_hits for s in samples)
    total = hits + sum(s.cache_misses for s in samples)
    return round(hits / total, 4) if total else None
