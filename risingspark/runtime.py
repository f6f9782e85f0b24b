"""What every service process shares: its HTTP API on a uvicorn thread, a health and metrics app,
and waiting for SIGINT/SIGTERM."""

from __future__ import annotations

import signal
import threading
from typing import Any


class HttpServer:
    def __init__(self, app: Any, host: str, port: int, name: str = "http") -> None:
        import uvicorn

        # (loop="asyncio": uvicorn's "auto" picks uvloop, installed for the frontend; the HTTP APIs keep
        # the standard loop, and no version of uvicorn sets uvloop's policy for the whole process)
        self._server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                                     lifespan="off", loop="asyncio"))
        self._thread = threading.Thread(target=self._server.run, name=name, daemon=True)
        self._port = port
        self._name = name

    @property
    def port(self) -> int:
        servers = getattr(self._server, "servers", None)
        if servers:
            return servers[0].sockets[0].getsockname()[1]
        return self._port

    def start(self) -> None:
        self._thread.start()
        for _ in range(400):
            if self._server.started:
                return
            if not self._thread.is_alive():
                break
            threading.Event().wait(0.05)
        raise RuntimeError(f"the {self._name} HTTP server could not listen on port {self._port}")

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


def health_app(title: str) -> Any:
    """A FastAPI app with ``/api/health`` and Prometheus ``/metrics`` of this process."""
    from fastapi import FastAPI
    from fastapi.responses import Response
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    app = FastAPI(title=title)

    @app.get("/api/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/metrics")
    def metrics() -> Response:
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    return app


def wait_for_shutdown(stop: threading.Event | None = None) -> None:
    """Block the main thread until SIGINT or SIGTERM (or until `stop` is set)."""
    stop = stop or threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(0.5):
        pass
