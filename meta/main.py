"""`risingspark meta`: the meta service as a process of its own.

It waits to be the active meta of its meta store (`meta.leader`), upgrades the meta-store schema,
then serves its HTTP API: the dashboard and metrics as in the playground, plus the RPC methods the
other services call (`meta.rpc`). Compute nodes of the default resource group receive its barriers
over HTTP (`meta.remote`).
"""

from __future__ import annotations

import logging
import re
import signal
import threading
from pathlib import Path

import sqlalchemy as sa

from risingspark.config import MetaConfig, ServerlessBackfillConfig, advertised
from risingspark.errors import ServiceUnavailable

logger = logging.getLogger(__name__)
READY = "RisingSpark meta is ready"


def run_meta(cfg: MetaConfig) -> int:
    from meta.api import create_app
    from meta.cluster import ClusterManager
    from meta.leader import LeaderLock
    from meta.remote import RemoteComputeGroup
    from meta.rpc import MetaRpc
    from meta.serverless import enable_serverless_backfill
    from meta.serverless_compaction import ServerlessCompactionConfig, enable_serverless_compaction
    from meta.service import MetaService
    from meta.store.store import MetaStore
    from risingspark.rpc import mount_rpc
    from risingspark.runtime import HttpServer, wait_for_shutdown
    from risingspark.storage.object_store import ObjectStore

    store_url = cfg.resolved_meta_store_url()
    objects_url = cfg.resolved_object_store_url()
    if store_url.startswith("sqlite") or not cfg.object_store_url:
        Path(cfg.data_dir).mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    lock = LeaderLock(store_url)
    try:
        if not lock.acquire(stop):
            return 0
        lock.watch()
        meta_store = MetaStore(store_url)
        meta_store.upgrade()
    except sa.exc.OperationalError as e:
        lock.release()
        raise ServiceUnavailable(f"cannot use the meta store {_safe(store_url)}: {str(e.orig or e).strip()}") from e
    objects = ObjectStore(objects_url)
    cluster = ClusterManager(meta_store, heartbeat_timeout_s=cfg.heartbeat_timeout_s)
    compute = RemoteComputeGroup(cluster)
    meta = MetaService(meta_store, objects, compute)
    meta.garbage.interval_s, meta.garbage.retention_s = cfg.full_gc_interval_s, cfg.min_sst_retention_s
    meta.cluster_manager = cluster
    meta.workers = cluster

    def on_join(node) -> None:
        if node.kind == "compute" and node.resource_group.startswith("backfill-"):
            pass  # a serverless backfiller: the controller drives it (`meta.serverless`)
        elif node.kind == "compute" and node.resource_group != compute.resource_group:
            pass  # it runs the jobs of the databases of its group (`meta.resource_groups`)
        elif node.kind == "compute" and compute.needs_recovery():
            meta.barriers.request_recovery()

    def on_leave(node) -> None:
        if node.kind == "compute":
            compute.forget(node)
            bound = compute.bound_node
            if bound is not None and bound.id == node.id:
                meta.barriers.request_recovery()

    cluster.on_join(on_join)
    cluster.on_leave(on_leave)
    app = create_app(meta)
    rpc = MetaRpc(meta, cluster, objects_url)
    mount_rpc(app, rpc.methods())
    enable_serverless_backfill(meta, ServerlessBackfillConfig.of(cfg), cluster, objects_url,
                               advertised(cfg, cfg.port), Path(cfg.data_dir) / "logs")
    enable_serverless_compaction(meta, ServerlessCompactionConfig.of(cfg), cluster, objects_url,
                                 advertised(cfg, cfg.port), Path(cfg.data_dir) / "logs")

    @app.get("/api/cluster/nodes")
    def nodes() -> list[dict]:
        return [{"id": n.id, "kind": n.kind, "address": n.address, "resource_group": n.resource_group,
                 "parallelism": n.parallelism} for n in cluster.workers()]

    http = HttpServer(app, cfg.host, cfg.port, "meta-http")
    meta.start()
    cluster.start()
    try:
        http.start()
        print(f"{READY}: http://{cfg.host}:{http.port} (meta store {_safe(store_url)}, object store {_safe_objects(objects_url)})",
              flush=True)
        wait_for_shutdown(stop)
        logger.info("shutting down")
    finally:
        http.stop()
        cluster.stop()
        meta.stop()
        meta_store.close()
        lock.release()
        logger.info("stopped")
    return 0


def _safe(url: str) -> str:
    return sa.engine.make_url(url).render_as_string(hide_password=True)


def _safe_objects(url: str) -> str:
    """The object store URL without its secret key."""
    return re.sub(r"(secret_key|session_token)=[^&]*", r"\1=***", url)
