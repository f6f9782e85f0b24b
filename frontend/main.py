"""`risingspark frontend`: a Postgres wire server as a process of its own.

It registers with meta and talks to it over RPC (`meta.client.MetaClient`, with the same calls the
playground's frontend makes on the meta service), writes DML batches to and reads committed
versions from the object store, and serves ``/api/health`` and ``/metrics`` on its metrics port.
Any number of frontends can serve one cluster; with ``--processes N`` one frontend is N processes
serving one port (`frontend.processes`).
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import TYPE_CHECKING

from risingspark.config import FrontendConfig, advertised

if TYPE_CHECKING:
    from frontend.pgwire.process_group import ProcessGroup
    from frontend.processes import Startup
    from meta.client import MetaClient, MetaSession

logger = logging.getLogger(__name__)
READY = "RisingSpark frontend is ready"


def run_frontend(cfg: FrontendConfig) -> int:
    if cfg.processes < 1:
        raise ValueError(f"processes must be at least 1, not {cfg.processes}")
    if cfg.processes == 1:
        return _serve(cfg)
    if cfg.port == 0:
        raise ValueError("processes share one port: give it (port 0 would bind a different one in each)")
    from frontend.pgwire.event_loops import event_loop_factory
    from frontend.processes import run_processes

    event_loop_factory(cfg.event_loop)  # (an unknown loop fails before anything starts)
    return run_processes(cfg, _serve, lambda: f"{READY}: psql -h {cfg.host} -p {cfg.port} -d dev -U root "
                                              f"({cfg.processes} processes, meta {cfg.meta_address})")


def set_id_slot(slot: int) -> None:
    """Row ids and DML sequence numbers made here carry this frontend's slot, 1..1023, which meta
    gives it at registration: no other live frontend, nor another process of this one, holds it
    (`meta.cluster.ClusterManager._free_id_slot`), so two of them making ids in the same millisecond
    make different ones (a keyless table's rows would otherwise overwrite each other). 0 is the
    playground's frontend, which does not register."""
    from frontend.handlers import dml

    dml.ROW_IDS.set_node(slot)
    dml.SEQUENCE.set_node(slot)


def _registered_again(session: MetaSession, meta: MetaClient) -> None:
    """Meta did not know this frontend any more (it declared it dead, or a new meta took over) and it
    registered again: its ids take the slot it was given now (meta may hand the old one to another
    frontend), and meta pins its versions anew at once."""
    set_id_slot(session.id_slot)
    meta.sync()


def _serve(cfg: FrontendConfig, group: ProcessGroup | None = None, startup: Startup | None = None) -> int:
    """One frontend process: alone (`group` None), or one of a group serving one port, which tells
    the supervisor each step of its `startup`."""
    from frontend.authentication import setup_auth
    from frontend.group_member import GroupMember
    from frontend.pgwire.server import SHUTDOWN_SIGNALS, PgServer, event_loop_factory, run_server
    from frontend.processes import replay_orphaned_logs
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
    set_id_slot(session.id_slot)
    store = ObjectStore(cfg.object_store_url or session.object_store_url)
    meta = MetaClient(session)
    meta.start()  # (the catalog and the current version, kept up to date by meta's pushes)
    session.on_reregister = lambda: _registered_again(session, meta)
    auth = setup_auth(meta, cfg.auth_users, cfg.auth_method)
    if group is None or group.index == 0:  # (before any process serves: acknowledged statements go first)
        # (process 0's log is the frontend's directory itself, where the others' logs lie)
        replay_orphaned_logs(meta, store, cfg.dml_log_dir, 1 if group is None else group.count)
    frontend = Frontend(meta, store, cache_bytes=cfg.block_cache_mb << 20, password_method=cfg.auth_method.lower(),
                        distributed=RemoteBatchRunner(meta), dml_log_dir=cfg.dml_log_dir or None,
                        dml_flush_delay_s=cfg.dml_flush_delay_ms / 1000)
    if group is not None:
        frontend.group = GroupMember(frontend, group)
    session.start()
    if startup is not None:
        # recorded, not only queued ahead of this process's statements: the others' come next
        frontend.dml.drain()
        startup.replayed()  # (waits for the other processes' replays)

    async def serve() -> None:
        server = PgServer(cfg.host, cfg.port, frontend.new_session, auth, max_connections=cfg.max_connections,
                          group=group, answer=frontend.group.answer if frontend.group is not None else None)
        await server.start()
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in SHUTDOWN_SIGNALS:
            loop.add_signal_handler(sig, stop.set)
        if group is None:
            print(f"{READY}: psql -h {cfg.host} -p {server.port} -d dev -U root (node {session.node_id}, "
                  f"meta {session.rpc.address})", flush=True)
        else:
            logger.info("frontend process %d of %d serves port %d (node %d)", group.index, group.count, server.port,
                        session.node_id)
            assert startup is not None
            startup.ready()
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
