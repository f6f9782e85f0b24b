"""The dashboard's page and JSON routes, served from a FastAPI app over a stand-in meta."""

from __future__ import annotations

import re
import warnings

from fastapi import FastAPI

from meta.dashboard.monitor import ClusterMonitor
from meta.dashboard.routes import STATIC_DIR, mount_dashboard
from support.dashboard_fakes import MV_ID, cluster

with warnings.catch_warnings():  # starlette's notice about its httpx test client
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient


def client() -> TestClient:
    meta = cluster()
    app = FastAPI()
    monitor = ClusterMonitor(meta, process="unit-test")  # not started: sampled by hand
    monitor.sample_once()
    mount_dashboard(app, meta, monitor)  # type: ignore[arg-type]
    return TestClient(app)


def test_the_page_and_every_asset_it_loads_are_served_from_the_package() -> None:
    c = client()
    page = c.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', page.text)
    assert {"/static/app.js", "/static/graph.js", "/static/charts.js", "/static/style.css"} <= set(assets)
    for path in assets:
        r = c.get(path)
        assert r.status_code == 200 and r.content, path
    # no build step, no CDN: nothing is fetched from another host
    for f in STATIC_DIR.iterdir():
        assert not re.search(r"(?:src|href)=\"https?://|import\s.*https?://|url\(https?://", f.read_text()), f


def test_json_endpoints_are_in_the_openapi_schema() -> None:
    c = client()
    paths = c.get("/openapi.json").json()["paths"]
    for p in ("/api/jobs", "/api/jobs/{job_id}/fragments", "/api/nodes", "/api/barriers", "/api/storage"):
        assert p in paths, p
    schemas = c.get("/openapi.json").json()["components"]["schemas"]
    assert {"JobModel", "FragmentGraphModel", "NodesModel", "BarriersModel", "StorageModel"} <= set(schemas)


def test_json_endpoints_answer() -> None:
    c = client()
    assert [j["name"] for j in c.get("/api/jobs").json()] == ["t", "mv"]
    graph = c.get(f"/api/jobs/{MV_ID}/fragments").json()
    assert len(graph["fragments"]) == 2 and graph["exchanges"][0]["dispatch"] == "HashShard(_g0)"
    nodes = c.get("/api/nodes").json()
    assert {n["role"] for n in nodes["nodes"]} == {"meta", "frontend", "compute", "compactor"}
    assert nodes["processes"][0]["samples"][0]["rss_bytes"]["main"] > 0
    assert c.get("/api/storage").json()["samples"][0]["max_l0_sub_levels"] == 3
    assert c.get("/api/barriers").json()["count"] == 0
