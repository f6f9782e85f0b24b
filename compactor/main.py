"""`risingspark compactor`: the compactor as a process of its own. It registers with meta, takes
compaction tasks from it, runs them against the object store and reports the results; a task it
held when it died is given up by meta and picked again later."""

from __future__ import annotations

import logging

from risingspark import failpoint
from risingspark.config import CompactorConfig, advertised

logger = logging.getLogger(__name__)
READY = "RisingSpark compactor is ready"


def run_compactor(cfg: CompactorConfig) -> int:
    from compactor.service import CompactorService
    from meta.client import MetaSession, RemoteCompactionScheduler
    from risingspark.runtime import HttpServer, health_app, wait_for_shutdown
    from risingspark.storage.object_store import ObjectStore

    failpoint.configure(cfg.failpoints)
    spark = _spark(cfg)  # before registering: meta expects heartbeats from then on
    http = HttpServer(health_app("RisingSpark compactor"), cfg.host, cfg.port, "compactor-http")
    http.start()
    session = MetaSession(cfg.meta_address, "compactor", advertised(cfg, http.port),
                          heartbeat_interval_s=cfg.heartbeat_interval_s)
    service: CompactorService | None = None
    try:
        session.register()
        store = ObjectStore(cfg.object_store_url or session.object_store_url)
        service = CompactorService(RemoteCompactionScheduler(session), store,  # type: ignore[arg-type]
                                   poll_s=cfg.poll_interval_s, spark=spark,
                                   spark_min_bytes=cfg.spark_min_task_mb << 20)
        session.start()
        service.start()
        print(f"{READY}: {session.address} (node {session.node_id})", flush=True)
        wait_for_shutdown()
        logger.info("shutting down")
    finally:
        if service is not None:
            service.stop()
        session.stop()
        http.stop()
        if spark is not None:
            spark.stop()
        logger.info("stopped")
    return 0


def _spark(cfg: CompactorConfig):
    """The compactor's SparkSession, when it runs big tasks on a Spark cluster (`compactor.spark_job`)."""
    if not cfg.spark_master:
        return None
    from compute.server import spark_conf_pairs
    from compute.spark import SparkSettings, create_spark_session

    return create_spark_session(SparkSettings(master=cfg.spark_master, host=cfg.host, app_name="risingspark-compactor",
                                              extra=spark_conf_pairs(cfg.spark_conf)))
