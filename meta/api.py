"""Meta's HTTP API (FastAPI): cluster state and job progress as JSON, the dashboard at ``/`` (see
`meta.dashboard`), and Prometheus ``/metrics``.

Errors are returned as ``{"sqlstate", "message"}`` from the same error classes the wire uses.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel

from meta.dashboard.models import LevelModel
from meta.dashboard.routes import mount_dashboard
from meta.dashboard.views import level_models
from meta.service import DdlProgress, MetaService
from risingspark.errors import RisingSparkError


class ClusterModel(BaseModel):
    committed_epoch: int
    version_id: int
    system_params: dict[str, int]
    relations: int
    last_barrier_error: str | None


class TableLevelsModel(BaseModel):
    table_id: int
    l0_sub_levels: int
    l0_ssts: int
    sorted_ssts: int  # SSTs of the levels below L0
    levels: list[LevelModel]  # the non-empty levels, L0 first
    rows: int


class RelationModel(BaseModel):
    id: int
    name: str
    kind: str
    status: str
    definition: str
    dependencies: list[int]


class ExtraCompactorModel(BaseModel):
    name: str
    pid: int
    node_id: int | None
    started_at: float
    state: str  # starting, running or retiring


class ServerlessCompactionModel(BaseModel):
    enabled: bool
    pending_bytes: int
    wanted: int
    max_compactors: int
    compactors: list[ExtraCompactorModel]


def create_app(meta: MetaService) -> FastAPI:
    app = FastAPI(title="RisingSpark meta", version="0.1.0",
                  description="Cluster state, streaming jobs and backfill progress of a RisingSpark cluster.")

    @app.exception_handler(RisingSparkError)
    async def _error(_: Request, exc: RisingSparkError) -> JSONResponse:
        return JSONResponse(status_code=400, content=exc.to_json())

    @app.get("/api/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/api/cluster", response_model=ClusterModel)
    def cluster() -> ClusterModel:
        v = meta.hummock.version
        return ClusterModel(committed_epoch=v.committed_epoch, version_id=v.id, system_params=meta.params.all(),
                            relations=len(meta.catalog.snapshot.relations),
                            last_barrier_error=meta.barriers.last_error)

    @app.get("/api/ddl_progress", response_model=list[DdlProgress])
    def ddl_progress() -> list[DdlProgress]:
        """Creating streaming jobs and their backfill progress, as `rw_catalog.rw_ddl_progress`."""
        return meta.ddl_progress()

    @app.get("/api/relations", response_model=list[RelationModel])
    def list_relations() -> list[RelationModel]:
        return [RelationModel(id=r.id, name=r.name, kind=r.kind.value, status=r.status.value,
                              definition=r.definition, dependencies=list(r.dependencies))
                for r in sorted(meta.catalog.snapshot.relations.values(), key=lambda r: r.id)]

    @app.get("/api/tables/{table_id}/levels", response_model=TableLevelsModel)
    def table_levels(table_id: int) -> TableLevelsModel:
        """The LSM shape of one state table: L0 sub-levels (one per checkpoint that wrote it, or merged)
        and the SSTs and bytes of every level."""
        levels = meta.hummock.version.levels(table_id)
        return TableLevelsModel(table_id=table_id, l0_sub_levels=len(levels.l0),
                                l0_ssts=sum(len(s.ssts) for s in levels.l0), sorted_ssts=len(levels.sorted_ssts),
                                levels=level_models(levels), rows=meta.row_count(table_id))

    @app.post("/api/hummock/full_gc")
    def full_gc(retention_s: float | None = None) -> dict[str, int]:
        """Delete the object-store files nothing references now (`meta.garbage`), only those older
        than `retention_s` (default: the configured retention; at least 10 s). As ``risectl hummock
        trigger-full-gc``."""
        return {"deleted": len(meta.garbage.collect(retention_s))}

    @app.get("/api/serverless_compaction", response_model=ServerlessCompactionModel)
    def serverless_compaction() -> ServerlessCompactionModel:
        """The serverless compaction controller (`meta.serverless_compaction`): the backlog, how many
        extra compactors it wants, and those it runs."""
        ctl = meta.serverless_compaction
        if ctl is None:
            return ServerlessCompactionModel(enabled=False, pending_bytes=0, wanted=0, max_compactors=0, compactors=[])
        return ServerlessCompactionModel(
            enabled=True, pending_bytes=ctl.pending_bytes, wanted=ctl.wanted, max_compactors=ctl.cfg.max_compactors,
            compactors=[ExtraCompactorModel(name=c.name, pid=c.pid, node_id=c.node_id, started_at=c.started_at,
                                            state="retiring" if c.retiring_since is not None
                                            else "running" if c.node_id is not None else "starting")
                        for c in ctl.compactors()])

    @app.get("/metrics")
    def metrics() -> Response:
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    mount_dashboard(app, meta)
    return app
