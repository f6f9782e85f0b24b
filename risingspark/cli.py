"""The ``risingspark`` command: ``risingspark playground`` runs every service in one process.

Service packages are imported inside the commands, so the shared core never imports them at import
time.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import signal
import sys
import threading
from pathlib import Path

from risingspark.config import PlaygroundConfig, from_env_and_args

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
        from compute.node import ComputeNode
        from compute.spark import SparkSettings, create_spark_session
        from frontend.pgwire.auth import PasswordAuth
        from frontend.pgwire.server import PgServer
        from frontend.session import Frontend
        from meta.service import MetaService
        from meta.store.store import MetaStore
        from risingspark.storage.object_store import ObjectStore

        cfg = self.cfg
        Path(cfg.data_dir).mkdir(parents=True, exist_ok=True)
        store = ObjectStore(cfg.resolved_object_store_url())
        meta_store = MetaStore(cfg.resolved_meta_store_url())
        meta_store.upgrade()
        spark = create_spark_session(SparkSettings(master=cfg.spark_master, ui=cfg.spark_ui,
                                                   driver_memory=cfg.spark_driver_memory, host=cfg.host,
                                                   parallelism=cfg.parallelism))
        compute = ComputeNode(spark, store, parallelism=cfg.parallelism)
        meta = MetaService(meta_store, store, compute)
        compactor = CompactorService(meta.compaction, store)
        http = _HttpServer(meta, cfg.host, cfg.meta_port)
        auth = PasswordAuth.from_spec(cfg.auth_users, cfg.auth_method) if cfg.auth_users else None
        frontend = Frontend(meta, store, cache_bytes=cfg.block_cache_mb << 20,
                            users=tuple(auth.users) if auth else ())
        meta.start()
        compactor.start()
        http.start()

        async def serve() -> None:
            server = PgServer(cfg.host, cfg.port, frontend.new_session, auth)
            await server.start()
            loop = asyncio.get_running_loop()
            stop = asyncio.Event()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
            print(f"RisingSpark playground is ready: psql -h {cfg.host} -p {server.port} -d dev -U root "
                  f"(meta http://{cfg.host}:{http.port})", flush=True)
            await stop.wait()
            logger.info("shutting down")
            await server.stop()

        try:
            asyncio.run(serve())
        finally:
            http.stop()
            compactor.stop()
            meta.stop()
            frontend.close()
            spark.stop()
            meta_store.close()
            logger.info("stopped")
        return 0


class _HttpServer:
    """Meta's FastAPI app on uvicorn, in a thread."""

    def __init__(self, meta, host: str, port: int) -> None:
        import uvicorn

        from meta.api import create_app

        self._server = uvicorn.Server(uvicorn.Config(create_app(meta), host=host, port=port, log_level="warning",
                                                     lifespan="off"))
        self._thread = threading.Thread(target=self._server.run, name="meta-http", daemon=True)
        self._port = port

    @property
    def port(self) -> int:
        servers = getattr(self._server, "servers", None)
        if servers:
            return servers[0].sockets[0].getsockname()[1]
        return self._port

    def start(self) -> None:
        self._thread.start()
        for _ in range(200):
            if self._server.started:
                return
            threading.Event().wait(0.05)
        raise RuntimeError(f"the meta HTTP API could not listen on port {self._port}")

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="risingspark", description="RisingSpark, a streaming database on Spark")
    sub = parser.add_subparsers(dest="command", required=True)
    pg = sub.add_parser("playground", help="run meta, compute, compactor and frontend in one process")
    _add_flags(pg, PlaygroundConfig)
    args = parser.parse_args(argv)
    if args.command == "playground":
        cfg = from_env_and_args(PlaygroundConfig, vars(args))
        setup_logging(cfg.log_level)
        return Playground(cfg).run()
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
