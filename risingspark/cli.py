"""The ``risingspark`` command: ``risingspark playground`` runs every service in one process;
``risingspark meta | frontend | compute | compactor`` run one service each.

Service packages are imported inside the commands, so the shared core never imports them at import
time.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import sys
import threading
from pathlib import Path

from risingspark.config import (
    CompactorConfig,
    ComputeConfig,
    FrontendConfig,
    MetaConfig,
    PlaygroundConfig,
    ServerlessBackfillConfig,
    from_env_and_args,
)

logger = logging.getLogger("risingspark")


def _add_flags(parser: argparse.ArgumentParser, cls: type) -> None:
    for f in dataclasses.fields(cls):
        flag = "--" + f.name.replace("_", "-")
        help_text = f.metadata.get("help", "")
        if isinstance(f.default, bool):
            parser.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction, default=None, help=help_text)
        else:
            parser.add_argument(flag, dest=f.name, type=type(f.default), default=None,
                                help=f"{help_text} (default: {f.default!r})")


def setup_logging(level: str) -> None:
    logging.basicConfig(level=getattr(logging, level.upper(), logging.INFO), stream=sys.stderr,
                        format="%(asctime)s %(levelname)-5s %(name)s: %(message)s")
    for noisy in ("py4j", "pyspark", "uvicorn.access", "alembic", "httpx"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


class Playground:
    """Meta, compute, compactor and frontend in one process."""

    def __init__(self, cfg: PlaygroundConfig) -> None:
        self.cfg = cfg
        self._stopped = threading.Event()

    def run(self) -> int:
        from compactor.service import CompactorService
        from compute.batch_query import SparkBatchRunner
        from compute.node import CacheBudgets, ComputeNode
        from compute.server import spark_conf_pairs
        from compute.spark import SparkSettings, create_spark_session
        from frontend.authentication import setup_auth
        from frontend.pgwire.server import SHUTDOWN_SIGNALS, PgServer, event_loop_factory, run_server
        from frontend.session import Frontend
        from meta.api import create_app
        from meta.cluster import ClusterManager
        from meta.leader import LeaderLock
        from meta.rpc import MetaRpc
        from meta.serverless import enable_serverless_backfill
        from meta.serverless_compaction import ServerlessCompactionConfig, enable_serverless_compaction
        from meta.service import MetaService
        from meta.store.store import MetaStore
        from risingspark.errors import ServiceUnavailable
        from risingspark.rpc import mount_rpc
        from risingspark.runtime import HttpServer
        from risingspark.storage.object_store import ObjectStore

        cfg = self.cfg
        event_loop_factory(cfg.event_loop)  # (an unknown loop fails before anything starts)
        sys.setswitchinterval(cfg.switch_interval_ms / 1000)
        Path(cfg.data_dir).mkdir(parents=True, exist_ok=True)
        store = ObjectStore(cfg.resolved_object_store_url())
        # One meta per meta store: not while a `risingspark meta` or another playground uses it.
        lock = LeaderLock(cfg.resolved_meta_store_url())
        if not lock.acquire(threading.Event(), poll_s=0.2, timeout_s=15):
            raise ServiceUnavailable("another RisingSpark meta or playground is using this meta store "
                                     f"({cfg.resolved_meta_store_url()})")
        meta_store = MetaStore(cfg.resolved_meta_store_url())
        meta_store.upgrade()
        spark = create_spark_session(SparkSettings(master=cfg.spark_master, ui=cfg.spark_ui,
                                                   driver_memory=cfg.spark_driver_memory, host=cfg.host,
                                                   parallelism=cfg.parallelism,
                                                   extra=spark_conf_pairs(cfg.spark_conf)))
        compute = ComputeNode(spark, store, parallelism=cfg.parallelism,
                              caches=CacheBudgets(cfg.state_cache_mb, cfg.block_cache_mb))
        meta = MetaService(meta_store, store, compute)
        meta.garbage.interval_s, meta.garbage.retention_s = cfg.full_gc_interval_s, cfg.min_sst_retention_s
        compactor = CompactorService(meta.compaction, store)
        app = create_app(meta)
        http = HttpServer(app, cfg.host, cfg.meta_port, "meta-http")
        # Compute nodes of other resource groups, and serverless backfillers, join the playground
        # as they join a meta: they register and heartbeat over its HTTP API.
        cluster = ClusterManager(meta_store)
        mount_rpc(app, MetaRpc(meta, cluster, store.url).methods())
        meta.workers = cluster
        enable_serverless_backfill(meta, ServerlessBackfillConfig.of(cfg), cluster, store.url,
                                   f"http://{cfg.host}:{cfg.meta_port}", Path(cfg.data_dir) / "logs")
        enable_serverless_compaction(meta, ServerlessCompactionConfig.of(cfg), cluster, store.url,
                                     f"http://{cfg.host}:{cfg.meta_port}", Path(cfg.data_dir) / "logs")
        auth = setup_auth(meta, cfg.auth_users, cfg.auth_method)
        frontend = Frontend(meta, store, cache_bytes=cfg.block_cache_mb << 20, password_method=cfg.auth_method.lower(),
                            distributed=SparkBatchRunner(spark, store.url),
                            dml_log_dir=Path(cfg.data_dir) / "frontend" / "dml-log",
                            dml_flush_delay_s=cfg.dml_flush_delay_ms / 1000)
        http.start()  # before meta: backfillers resumed at its start register over HTTP
        cluster.start()
        meta.start()
        compactor.start()

        async def serve() -> None:
            server = PgServer(cfg.host, cfg.port, frontend.new_session, auth, max_connections=cfg.max_connections)
            await server.start()
            loop = asyncio.get_running_loop()
            stop = asyncio.Event()
            for sig in SHUTDOWN_SIGNALS:
                loop.add_signal_handler(sig, stop.set)
            print(f"RisingSpark playground is ready: psql -h {cfg.host} -p {server.port} -d dev -U root "
                  f"(meta http://{cfg.host}:{http.port})", flush=True)
            await stop.wait()
            logger.info("shutting down")
            await server.stop()

        try:
            run_server(serve(), cfg.event_loop)
        finally:
            frontend.close()  # (first: it records asynchronously committed writes in meta)
            http.stop()
            compactor.stop()
            meta.stop()
            cluster.stop()
            spark.stop()
            meta_store.close()
            lock.release()
            logger.info("stopped")
        return 0


SERVICES: dict[str, tuple[type, str]] = {
    "meta": (MetaConfig, "run the meta service (catalog, barriers, checkpoints); standby if another is active"),
    "frontend": (FrontendConfig, "run a frontend (Postgres wire protocol); several may serve one cluster"),
    "compute": (ComputeConfig, "run a compute node (epoch rounds on a Spark application)"),
    "compactor": (CompactorConfig, "run a compactor (merges L0 files into sorted levels)"),
}


def _run_service(command: str, cfg) -> int:
    if command == "meta":
        from meta.main import run_meta

        return run_meta(cfg)
    if command == "frontend":
        from frontend.main import run_frontend

        return run_frontend(cfg)
    if command == "compute":
        from compute.server import run_compute

        return run_compute(cfg)
    from compactor.main import run_compactor

    return run_compactor(cfg)


def build_parser() -> argparse.ArgumentParser:
    """The command line: one sub-command per way to run, one flag per settings field."""
    parser = argparse.ArgumentParser(prog="risingspark", description="RisingSpark, a streaming database on Spark")
    sub = parser.add_subparsers(dest="command", required=True)
    pg = sub.add_parser("playground", help="run meta, compute, compactor and frontend in one process")
    _add_flags(pg, PlaygroundConfig)
    for name, (cls, help_text) in SERVICES.items():
        _add_flags(sub.add_parser(name, help=help_text, description=cls.__doc__), cls)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    cls = PlaygroundConfig if args.command == "playground" else SERVICES[args.command][0]
    try:
        cfg = from_env_and_args(cls, vars(args))
    except (TypeError, ValueError) as e:
        parser.error(str(e))
    setup_logging(cfg.log_level)
    try:
        if args.command == "playground":
            return Playground(cfg).run()
        return _run_service(args.command, cfg)
    except KeyboardInterrupt:
        return 0
    except Exception as e:  # noqa: BLE001 - a clear line for the operator, the traceback in the log
        from risingspark.errors import RisingSparkError

        message = e.message if isinstance(e, RisingSparkError) else f"{type(e).__name__}: {e}"
        logger.debug("fatal error", exc_info=True)
        print(f"risingspark {args.command}: {message}", file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
