"""The compute node's Prometheus metrics (served by meta's ``/metrics`` in the playground).

Every series carries this compute node's ``node`` and ``resource_group`` labels (`set_node`), so a
backfiller node's series stand apart from the default group's; callers give only the job's labels::

    SPARK_JOBS.labels(job=job.name).inc()
    BACKFILL_FORWARDED.labels(**backfill_labels(job)).inc(rows)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prometheus_client import Counter, Histogram

from risingspark.barrier import StreamJob
from risingspark.catalog import DEFAULT_RESOURCE_GROUP
from risingspark.fragment import backfill_fragment_id

NODE_LABELS = ("node", "resource_group")


@dataclass
class NodeIdentity:
    """The compute node this process runs: one per process."""

    node: str = "compute-1"
    resource_group: str = DEFAULT_RESOURCE_GROUP


NODE = NodeIdentity()


def set_node(node: str, resource_group: str = DEFAULT_RESOURCE_GROUP) -> None:
    """Name this process' compute node in every compute series."""
    NODE.node, NODE.resource_group = node, resource_group


class NodeSeries:
    """A metric labelled by `labels` plus this node's labels; a label the caller leaves out is ``""``."""

    def __init__(self, metric: Any, labels: tuple[str, ...]) -> None:
        self._metric = metric
        self._labels = labels

    def labels(self, **values: str) -> Any:
        full = {name: values.get(name, "") for name in self._labels}
        return self._metric.labels(**full, node=NODE.node, resource_group=NODE.resource_group)

    def inc(self, amount: float = 1) -> None:
        self.labels().inc(amount)


def _counter(name: str, doc: str, labels: tuple[str, ...]) -> NodeSeries:
    return NodeSeries(Counter(name, doc, [*labels, *NODE_LABELS]), labels)


SPARK_JOBS = _counter("risingspark_compute_spark_jobs_total", "Spark jobs run by epoch rounds", ("job",))
PLANS_BUILT = _counter("risingspark_compute_plans_built_total",
                       "Spark plans of streaming jobs built (a plan is kept and run again while its shape holds)",
                       ("job",))
EPOCH_ROUNDS = _counter("risingspark_compute_epoch_rounds_total", "Epoch rounds run, idle ones included", ())
STATE_CACHE_HITS = _counter("risingspark_state_cache_hits_total",
                            "Keys stateful executors found in their state caches", ("executor",))
STATE_CACHE_MISSES = _counter("risingspark_state_cache_misses_total",
                              "Keys stateful executors read from storage (not in their state caches)", ("executor",))
JOB_DURATION = NodeSeries(Histogram(
    "risingspark_compute_spark_job_duration_seconds", "Time of one job's Spark job in an epoch round",
    ["job", *NODE_LABELS], buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60)), ("job",))
BACKFILL_SNAPSHOT_ROWS = _counter("risingspark_compute_backfill_snapshot_rows_total",
                                  "Upstream snapshot rows read by this node's backfill executors", ("job", "fragment"))
BACKFILL_FORWARDED = _counter("risingspark_backfill_upstream_output_rows_total",
                              "Upstream change rows forwarded by backfill executors", ("job", "fragment"))

_fragments: dict[int, str] = {}


def backfill_labels(job: StreamJob) -> dict[str, str]:
    """The ``job`` and ``fragment`` labels of a job's backfill series (the fragment that scans its
    upstream, as `risingspark.fragment` numbers it)."""
    fragment = _fragments.get(job.job_id)
    if fragment is None:
        found = backfill_fragment_id(job.job_id, job.plan)
        fragment = _fragments[job.job_id] = "" if found is None else str(found)
    return {"job": job.name, "fragment": fragment}
