"""Meta's Prometheus metrics, served at ``/metrics`` of the meta HTTP API.

Names follow ``risingspark_<subsystem>_<what>_<unit>``; labels are ``job`` (the relation's name),
``fragment`` (its fragment id, `risingspark.fragment`), ``node`` and ``resource_group``.
`docs/metrics.md` lists every series of every service.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import Counter, Gauge, Histogram

from risingspark.catalog import RelationCatalog
from risingspark.fragment import backfill_fragment_id
from risingspark.stream_plan import node_from_json

LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120)


@dataclass(frozen=True)
class MetaMetrics:
    barrier_latency: Histogram
    epoch_commit_latency: Histogram
    committed_epoch: Gauge
    recoveries: Counter
    backfill_snapshot_rows: Counter
    backfill_progress_ratio: Gauge
    backfill_rows_per_second: Gauge
    dml_rows: Counter
    dml_batches: Counter
    materialize_input_rows: Counter
    l0_sub_levels: Gauge
    compaction_tasks: Counter
    compaction_bytes: Counter
    compaction_largest_task_bytes: Gauge
    flush_bytes: Counter
    compaction_pending_bytes: Gauge
    compaction_running_tasks: Gauge
    write_amplification: Gauge
    write_stall: Gauge
    write_stalls: Counter
    gc_deleted_objects: Counter
    process_cpu: Gauge
    process_memory: Gauge
    backfill_rate_limit: Gauge


METRICS = MetaMetrics(
    barrier_latency=Histogram(
        "risingspark_meta_barrier_duration_seconds", "Time from injecting a barrier to committing its epoch",
        buckets=LATENCY_BUCKETS),
    epoch_commit_latency=Histogram(
        "risingspark_meta_epoch_commit_duration_seconds",
        "Time to commit an epoch's files, progress and job states in the meta store",
        buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5)),
    committed_epoch=Gauge("risingspark_meta_committed_epoch", "The newest committed epoch"),
    recoveries=Counter("risingspark_meta_recovery_total", "Epoch rounds that failed and triggered recovery"),
    backfill_snapshot_rows=Counter("risingspark_backfill_snapshot_read_rows_total",
                                   "Upstream snapshot rows consumed by backfill", ["job", "fragment"]),
    backfill_progress_ratio=Gauge("risingspark_backfill_progress_ratio", "Backfill progress, 0 to 1",
                                  ["job", "fragment"]),
    backfill_rows_per_second=Gauge("risingspark_backfill_rows_per_second",
                                   "Backfill speed over the last 30 s, in upstream rows per second",
                                   ["job", "fragment"]),
    dml_rows=Counter("risingspark_dml_rows_total", "Rows written by INSERT/UPDATE/DELETE", ["job"]),
    dml_batches=Counter("risingspark_dml_batches_total", "DML batches made durable", ["job"]),
    materialize_input_rows=Counter("risingspark_stream_materialize_input_rows_total",
                                   "Change rows a job's materialize received (inserts, deletes and both halves of "
                                   "updates: a join's retractions included), in committed epochs", ["job"]),
    l0_sub_levels=Gauge("risingspark_storage_l0_sub_levels", "L0 sub-levels of a state table",
                        ["job", "table_id"]),
    compaction_tasks=Counter("risingspark_compaction_tasks_total", "Compaction tasks committed"),
    compaction_bytes=Counter("risingspark_compaction_write_bytes_total", "Bytes written by compaction"),
    compaction_largest_task_bytes=Gauge("risingspark_compaction_largest_task_input_bytes",
                                        "Input bytes of the largest compaction task committed since meta started"),
    flush_bytes=Counter("risingspark_storage_flush_bytes_total", "Bytes of SSTs committed by checkpoints (into L0)"),
    compaction_pending_bytes=Gauge("risingspark_compaction_pending_bytes",
                                   "Bytes compaction must still move for a state table's levels to be in shape",
                                   ["job", "table_id"]),
    compaction_running_tasks=Gauge("risingspark_compaction_running_tasks", "Compaction tasks in flight"),
    write_amplification=Gauge("risingspark_storage_write_amplification",
                              "Bytes written by compaction per byte flushed, since meta started"),
    write_stall=Gauge("risingspark_storage_write_stall",
                      "1 while a table's writes are held because a state table it feeds has too deep an L0",
                      ["job"]),
    write_stalls=Counter("risingspark_storage_write_stalls_total", "Write stalls engaged, by table", ["job"]),
    gc_deleted_objects=Counter("risingspark_storage_gc_deleted_objects_total",
                               "Unreferenced object-store files deleted by the full GC (work that never committed)"),
    process_cpu=Gauge("risingspark_process_cpu_usage_cores",
                      "CPU used by a node's processes over the last sample, in cores",
                      ["node", "component"]),
    process_memory=Gauge("risingspark_process_resident_memory_bytes",
                         "Resident memory of a node's processes", ["node", "component"]),
    backfill_rate_limit=Gauge("risingspark_backfill_rate_limit_rows_per_second",
                              "Current backfill rate limit of an adaptive job, in rows/s per parallelism",
                              ["job", "fragment"]),
)

_backfill_fragments: dict[int, str] = {}


def backfill_labels(rel: RelationCatalog) -> dict[str, str]:
    """The ``job`` and ``fragment`` labels of a job's backfill series."""
    fragment = _backfill_fragments.get(rel.id)
    if fragment is None:
        found = backfill_fragment_id(rel.id, node_from_json(rel.plan)) if rel.plan is not None else None
        fragment = _backfill_fragments[rel.id] = str(found if found is not None else "")
    return {"job": rel.name, "fragment": fragment}
