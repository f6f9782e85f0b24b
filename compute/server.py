"""`risingspark compute`: a compute node as a process of its own.

It starts its Spark application (``--spark-master local[N]`` or ``spark://host:7077``), serves the
barrier RPCs meta sends (``run_epoch``, ``reset``), the distributed batch queries of frontends
(``run_batch_query``, ``cancel_batch_query``, ``explain_batch_query``: `compute.batch_query`) plus
``/api/health`` and ``/metrics``, and
registers with meta, heartbeating until it stops. The object store URL comes from meta unless set
here; it must be readable by every Spark executor (a shared directory, or S3).
"""

from __future__ import annotations

import logging
import threading
import time

from risingspark.config import ComputeConfig, advertised

logger = logging.getLogger(__name__)
READY = "RisingSpark compute node is ready"


def spark_conf_pairs(spec: str) -> tuple[tuple[str, str], ...]:
    """``"a=1,b=2"`` as Spark settings.

    >>> spark_conf_pairs("spark.cores.max=2, spark.executor.memory=1g")
    (('spark.cores.max', '2'), ('spark.executor.memory', '1g'))
    """
    out = []
    for item in spec.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"invalid --spark-conf item {item.strip()!r}: expected key=value")
        out.append((key.strip(), value.strip()))
    return tuple(out)


def wait_for_executors(spark, master: str, log_every_s: float = 10.0) -> None:
    """Wait until the cluster gave the application an executor: a node registers with meta only
    once it can run rounds (a serverless backfiller that never gets executors then fails its job at
    the provisioning timeout instead of hanging in its first round)."""
    jsc = spark.sparkContext._jsc.sc()
    waited = 0.0
    while jsc.getExecutorMemoryStatus().size() <= 1:  # the driver counts as one
        if waited and waited % log_every_s < 0.5:
            logger.info("waiting for executors from %s (%.0f s)", master, waited)
        time.sleep(0.5)
        waited += 0.5


def export_process_metrics(node: str, stop: threading.Event, interval_s: float = 2.0) -> threading.Thread:
    """CPU and memory of this node's process tree (Python, Spark's JVM and workers) as
    ``risingspark_process_*{node=...}`` gauges on its own ``/metrics``, as meta exports its own."""
    from prometheus_client import Gauge

    from meta.dashboard.process import ProcessTreeSampler, set_resource_gauges

    cpu = Gauge("risingspark_process_cpu_usage_cores", "CPU used by a node's processes over the last sample, "
                "in cores", ["node", "component"])
    memory = Gauge("risingspark_process_resident_memory_bytes", "Resident memory of a node's processes, by "
                   "component", ["node", "component"])
    sampler = ProcessTreeSampler()

    def run() -> None:
        sampler.sample()
        while not stop.wait(interval_s):
            try:
                res = sampler.sample()
            except Exception:  # noqa: BLE001 - a process may vanish between two looks
                continue
            set_resource_gauges(cpu, memory, node, res)

    thread = threading.Thread(target=run, name="process-metrics", daemon=True)
    thread.start()
    return thread


def run_compute(cfg: ComputeConfig) -> int:
    from compute.batch_query import BatchQueryService, SparkBatchRunner
    from compute.metrics import set_node
    from compute.node import CacheBudgets, ComputeNode
    from compute.spark import SparkSettings, create_spark_session
    from meta.client import MetaSession
    from risingspark.rpc import mount_rpc
    from risingspark.runtime import HttpServer, health_app, wait_for_shutdown
    from risingspark.storage.object_store import ObjectStore

    extra = spark_conf_pairs(cfg.spark_conf)
    spark = create_spark_session(SparkSettings(master=cfg.spark_master, ui=cfg.spark_ui,
                                               driver_memory=cfg.spark_driver_memory, host=cfg.host,
                                               parallelism=cfg.parallelism, extra=extra,
                                               app_name=f"risingspark-compute-{cfg.resource_group}"))
    app = health_app("RisingSpark compute node")
    node: ComputeNode | None = None

    started = threading.Event()
    stopping = threading.Event()

    def run_epoch(barrier):
        # (meta may send the first barrier as soon as the node registered, just before it is built)
        if not started.wait(60) or node is None:
            raise RuntimeError("the compute node is still starting")
        return node.run_epoch(barrier)

    def reset() -> None:
        if node is not None:
            node.reset()

    batch: list[BatchQueryService] = []  # (built with the node: the object store comes from meta)

    def batch_call(name: str):
        def call(*args):
            if not started.wait(60) or not batch:
                raise RuntimeError("the compute node is still starting")
            return batch[0].methods()[name](*args)
        return call

    mount_rpc(app, {"run_epoch": run_epoch, "reset": reset,
                    **{name: batch_call(name) for name in ("run_batch_query", "cancel_batch_query",
                                                           "explain_batch_query")}})
    http = HttpServer(app, cfg.host, cfg.port, "compute-http")
    http.start()
    parallelism = cfg.parallelism or spark.sparkContext.defaultParallelism
    session = MetaSession(cfg.meta_address, "compute", advertised(cfg, http.port),
                          resource_group=cfg.resource_group, parallelism=parallelism,
                          heartbeat_interval_s=cfg.heartbeat_interval_s)
    try:
        if cfg.spark_master.startswith("spark://"):
            wait_for_executors(spark, cfg.spark_master)
        session.register()
        node_name = cfg.node_name or f"compute-{cfg.resource_group}-{session.node_id}"
        set_node(node_name, cfg.resource_group)
        export_process_metrics(node_name, stopping)
        store = ObjectStore(cfg.object_store_url or session.object_store_url)
        node = ComputeNode(spark, store, parallelism=cfg.parallelism,
                           caches=CacheBudgets(cfg.state_cache_mb, cfg.block_cache_mb))
        batch.append(BatchQueryService(SparkBatchRunner(spark, store.url)))
        started.set()
        session.start()
        print(f"{READY}: {session.address} (node {session.node_id}, Spark {cfg.spark_master}, "
              f"application {spark.sparkContext.applicationId})", flush=True)
        wait_for_shutdown()
        logger.info("shutting down")
    finally:
        stopping.set()
        session.stop()
        http.stop()
        spark.stop()
        logger.info("stopped")
    return 0
