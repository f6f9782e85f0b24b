"""The dashboard's HTTP routes: the page at ``/`` (static files shipped in the package, no build
step) and the JSON endpoints it polls under ``/api``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from meta.dashboard.models import (
    BarriersModel,
    FragmentGraphModel,
    JobModel,
    NodesModel,
    StorageModel,
)
from meta.dashboard.monitor import ClusterMonitor
from meta.dashboard.views import DashboardViews

if TYPE_CHECKING:
    from meta.service import MetaService

STATIC_DIR = Path(__file__).parent / "static"


def mount_dashboard(app: FastAPI, meta: MetaService, monitor: ClusterMonitor | None = None) -> ClusterMonitor:
    """Serve the dashboard from `app`; starts a `ClusterMonitor` unless one is given. Returns it."""
    if monitor is None:
        monitor = ClusterMonitor(meta)
        monitor.start()
    views = DashboardViews(meta, monitor)
    app.state.monitor = monitor
    app.include_router(_router(views))
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    return monitor


def _router(views: DashboardViews) -> APIRouter:
    router = APIRouter(tags=["dashboard"])

    @router.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})

    @router.get("/api/jobs", response_model=list[JobModel])
    def jobs() -> list[JobModel]:
        """Every streaming job (tables and materialized views), with backfill progress while creating."""
        return views.jobs()

    @router.get("/api/jobs/{job_id}/fragments", response_model=FragmentGraphModel)
    def fragments(job_id: int) -> FragmentGraphModel:
        """A job's fragment graph: fragments with their executors, exchanges, and linked jobs."""
        return views.fragments(job_id)

    @router.get("/api/nodes", response_model=NodesModel)
    def nodes(request: Request) -> NodesModel:
        """The cluster's nodes and the CPU and memory of their processes over the last minutes."""
        return views.nodes(request.url.netloc)

    @router.get("/api/barriers", response_model=BarriersModel)
    def barriers() -> BarriersModel:
        """Barrier latency percentiles over the last minutes, and the committed epoch."""
        return views.barriers()

    @router.get("/api/storage", response_model=StorageModel)
    def storage() -> StorageModel:
        """L0 sub-levels and SSTs per state table, and compaction activity over the last minutes."""
        return views.storage()

    return router
