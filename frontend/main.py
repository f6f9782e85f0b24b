"""`risingspark frontend`: a Postgres wire server as a process of its own.

It registers with meta and talks to it over RPC (`meta.client.MetaClient`, with the same calls the
playground's frontend makes on the meta service), writes DML batches to and reads committed
versions from the object store, and serves ``/api/health`` and ``/metrics`` on its metrics port.
Any number of frontends can serve one cluster.
"""

from __future__ import annotations

import asyncio
import logging
import sys

from risingspark.config import FrontendConfig, advertised

logger = logging.getLogger(__name__)
READY = "RisingSpark frontend is ready"


def run_frontend(cfg: FrontendConfig) -> int:
    from frontend.authentication import setup_auth
    from frontend.pgwire.server import SHUTDOWN_SIGNALS, PgServer, event_loop_factory, run_server
    from frontend.remote_runner import RemoteBatchRunner
    from frontend.session import Frontend
    from meta.client import MetaClient, MetaSession
    from risingspark.runtime import HttpServer, health_app
    from risingspark.storage.object_store import ObjectStore

    event_loop_factory(cfg.event_loop)  # (an unknown loop fails before anything starts)
    sys.setswitchinterval(cfg.switch_interval_ms / 1000)
    http = None
    if cfg.metrics_port:
        http = HttpServer(health_app("RisingSpark frontend"), cfg.host, cfg.metrics_port, "frontend-http")
        http.start()
    session = MetaSession(cfg.meta_address, "frontend", advertised(cfg, cfg.metrics_port or cfg.port),
                          heartbeat_interval_s=cfg.heartbeat_interval_s)
    session.register()
    store = ObjectStore(cfg.object_store_url or session.object_store_url)
    meta = MetaClient(session)
    meta.start()  # (the catalog and the current version, kept up to date by meta's pushes)
    # registered again under a new node id: meta pins this frontend's versions anew at once
    session.on_reregister = meta.sync
    auth = setup_auth(meta, cfg.auth_users, cfg.auth_method)
    frontend = Frontend(meta, store, cache_bytes=cfg.block_cache_mb << 20, password_method=cfg.auth_method.lower(),
                        distributed=RemoteBatchRunner(meta), dml_log_dir=cfg.dml_log_dir or None,
                        dml_flush_delay_s=cfg.dml_flush_delay_ms / 1000)
    session.start()

    async def serve() -> None:
        server = PgServer(cfg.host, cfg.port, frontend.new_session, auth, max_connections=cfg.max_connections)
        await server.start()
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in SHUTDOWN_SIGNALS:
            loop.add_signal_handler(sig, stop.set)
        print(f"{READY}: psql -h {cfg.host} -p {server.port} -d dev -U root (node {session.node_id}, "
              f"meta {session.rpc.address})", flush=True)
        await stop.wait()
        logger.info("shutting down")
        await server.stop()

    try:
        run_server(serve(), cfg.event_loop)
    finally:
        frontend.close()  # (first: it records asynchronously committed writes in meta)
        meta.stop()
        session.stop()
        if http is not None:
            http.stop()
        logger.info("stopped")
    return 0
