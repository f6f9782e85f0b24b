"""The dashboard against a running playground: its JSON endpoints, the page in a real headless
Chromium while a background backfill runs, and the Prometheus series scraped during a backfill."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psycopg
import pytest

from conftest import PlaygroundProcess, unique_name
from support.chromium import Chromium, find_chromium

pytestmark = pytest.mark.e2e

ROWS = 50_000
DOCS = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"


def base(playground: PlaygroundProcess) -> str:
    return f"http://127.0.0.1:{playground.meta_port}"


@pytest.fixture(scope="module")
def source(playground: PlaygroundProcess) -> str:
    """A table of 50K rows for the backfills of this module."""
    t = unique_name("dash")
    with playground.connect() as conn:
        conn.execute(f"CREATE TABLE {t} (id BIGINT PRIMARY KEY, k INT, v INT)")
        conn.execute(f"INSERT INTO {t} SELECT i, i % 97, i FROM generate_series(1, {ROWS}) AS g(i)")
        conn.execute("FLUSH")
    return t


@contextmanager
def background_backfill(conn: psycopg.Connection, source: str, name: str, *, rate: int = 2000,
                        snapshot: bool = True) -> Iterator[str]:
    """A rate-limited background MV over `source` (about 25 s of backfill at one actor), dropped at
    the end whether or not it finished."""
    conn.execute("SET background_ddl = true")
    conn.execute(f"SET backfill_rate_limit = {rate}")
    conn.execute("SET streaming_parallelism = 1")
    conn.execute(f"SET streaming_use_snapshot_backfill = {'true' if snapshot else 'false'}")
    conn.execute(f"CREATE MATERIALIZED VIEW {name} AS SELECT k, count(*) AS c, sum(v) AS s FROM {source} GROUP BY k")
    try:
        yield name
    finally:
        conn.execute(f"DROP MATERIALIZED VIEW IF EXISTS {name}")
        for var in ("background_ddl", "backfill_rate_limit", "streaming_parallelism",
                    "streaming_use_snapshot_backfill"):
            conn.execute(f"RESET {var}")


def job(playground: PlaygroundProcess, name: str) -> dict:
    return next(j for j in httpx.get(f"{base(playground)}/api/jobs").json() if j["name"] == name)


def wait_until(predicate, timeout: float = 30, interval: float = 0.5):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out"
        time.sleep(interval)


# ---- JSON endpoints --------------------------------------------------------------------------------
def test_jobs_and_fragments_of_a_backfilling_view(playground: PlaygroundProcess, source: str) -> None:
    url = base(playground)
    mv = unique_name("dash_api")
    with playground.connect() as conn, background_backfill(conn, source, mv):
        table = job(playground, source)
        assert (table["status"], table["kind"], table["backfill"], table["fragments"]) == ("Created", "table", [], 2)
        view = wait_until(lambda: (j := job(playground, mv))["backfill"] and j["backfill"][0]["consumed_rows"] > 0
                          and j)
        assert (view["status"], view["create_type"], view["backfill_type"], view["resource_group"]) == (
            "Creating", "BACKGROUND", "SNAPSHOT_BACKFILL", "default")
        assert view["parallelism"] == 1 and view["backfill_rate_limit"] == 2000
        assert view["statement"].startswith("CREATE MATERIALIZED VIEW") and view["dependencies"] == [table["id"]]
        (progress,) = view["backfill"]
        assert progress["total_rows"] == ROWS and 0 < progress["consumed_rows"] < ROWS
        assert progress["upstream"] == source and progress["progress"].endswith(f"/{ROWS})")

        graph = httpx.get(f"{url}/api/jobs/{view['id']}/fragments").json()
        assert graph["status"] == "Creating" and len(graph["fragments"]) == 2
        root, scan = graph["fragments"]
        assert [e["name"] for e in root["executors"]] == ["Materialize", "Project", "HashAgg"]
        assert scan["executors"][-1]["name"] == "TableScan" and "SNAPSHOT_BACKFILL" in scan["executors"][-1]["detail"]
        assert scan["fragment_id"] == progress["fragment_id"] and scan["backfill"]["total_rows"] == ROWS
        assert {f["node"] for f in graph["fragments"]} == {"compute-1"} and root["parallelism"] == 1
        assert graph["exchanges"] == [{"upstream_fragment_id": scan["fragment_id"],
                                       "downstream_fragment_id": root["fragment_id"], "dispatch": "HashShard(_g0)"}]
        assert [(u["job_id"], u["local_fragment_id"]) for u in graph["upstream_jobs"]] == [
            (table["id"], scan["fragment_id"])]
        down = httpx.get(f"{url}/api/jobs/{table['id']}/fragments").json()["downstream_jobs"]
        assert view["id"] in [d["job_id"] for d in down]

    missing = httpx.get(f"{url}/api/jobs/999999/fragments")
    assert missing.status_code == 400 and missing.json()["sqlstate"] == "42P01"


def test_nodes_barriers_and_storage(playground: PlaygroundProcess, source: str) -> None:
    url = base(playground)
    nodes = wait_until(lambda: (n := httpx.get(f"{url}/api/nodes").json())["processes"][0]["samples"] and n)
    roles = {n["role"]: n for n in nodes["nodes"]}
    assert set(roles) == {"meta", "frontend", "compute", "compactor"}
    assert roles["compute"]["resource_group"] == "default" and roles["compute"]["parallelism"] >= 1
    assert roles["meta"]["address"] == f"127.0.0.1:{playground.meta_port}"
    (proc,) = nodes["processes"]
    last = proc["samples"][-1]
    assert last["rss_bytes"]["main"] > 0 and last["rss_bytes"]["spark_jvm"] > 0  # Spark's JVM is sampled
    assert proc["pid"] == playground.proc.pid and proc["memory_total_bytes"] > 0  # type: ignore[union-attr]

    barriers = httpx.get(f"{url}/api/barriers").json()
    cluster = httpx.get(f"{url}/api/cluster").json()
    assert barriers["count"] > 0 and 0 < barriers["p50"] <= barriers["p99"]
    assert barriers["series"] and barriers["recent"][-1]["epoch"] <= barriers["committed_epoch"]
    assert 0 < barriers["committed_epoch"] <= cluster["committed_epoch"]  # (read first)

    storage = httpx.get(f"{url}/api/storage").json()
    table_id = job(playground, source)["id"]
    entry = next(t for t in storage["tables"] if t["table_id"] == table_id)
    assert entry["job"] == source and entry["rows"] == ROWS and entry["size_bytes"] > 0
    assert entry["l0_sub_levels"] > 0 or any(lv["level"] > 0 and lv["ssts"] > 0 for lv in entry["levels"])
    assert storage["samples"] and storage["compaction_tasks_total"] >= 0

    schema = httpx.get(f"{url}/openapi.json").json()["paths"]
    for path in ("/api/jobs", "/api/jobs/{job_id}/fragments", "/api/nodes", "/api/barriers", "/api/storage"):
        assert path in schema, path


# ---- the page in a browser -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def chromium_binary() -> str:
    binary = find_chromium()
    if binary is None:
        pytest.fail("Chromium is not installed (bash .ci/run installs Debian's chromium package)")
    return binary


PROGRESS_JS = """(() => {{
  const bar = document.querySelector('.progress[data-job="{name}"]');
  if (!bar) return null;
  return {{consumed: Number(bar.dataset.consumed), total: Number(bar.dataset.total),
          width: parseFloat(bar.querySelector('.progress-fill').style.width), text: bar.innerText}};
}})()"""


def test_the_page_shows_a_backfill_moving(playground: PlaygroundProcess, source: str, chromium_binary: str,
                                          tmp_path: Path) -> None:
    mv = unique_name("dash_page")
    with playground.connect() as conn, background_backfill(conn, source, mv), \
            Chromium(chromium_binary, tmp_path / "profile") as browser:
        browser.navigate(base(playground) + "/")
        row = browser.wait_for(f"""(() => {{ const tr = document.querySelector('tr.job[data-job="{mv}"]');
            return tr && {{status: tr.dataset.status, text: tr.innerText}}; }})()""")
        assert row["status"] == "Creating" and "CREATE MATERIALIZED VIEW" in row["text"]
        assert "SNAPSHOT_BACKFILL" in row["text"] and "BACKGROUND" in row["text"]
        first = browser.wait_for(PROGRESS_JS.format(name=mv))
        assert first["total"] == ROWS and first["consumed"] < ROWS and "rows/s" in first["text"]
        # the page polls: the bar moves without a reload
        second = browser.wait_for(f"""(() => {{ const p = {PROGRESS_JS.format(name=mv)};
            return p && p.consumed > {first['consumed']} && p; }})()""", timeout=45)
        assert second["width"] > first["width"] and second["consumed"] <= ROWS

        # the fragment graph of the job, drawn as SVG boxes with the upstream table linked
        browser.evaluate(f"""document.querySelector('tr.job[data-job="{mv}"]').click()""")
        graph = browser.wait_for(f"""(() => {{ const svg = document.querySelector('svg.fragment-graph[data-job="{mv}"]');
            return svg && {{fragments: svg.querySelectorAll('g.fragment').length,
                            backfilling: svg.querySelectorAll('g.fragment.backfilling').length,
                            linked: [...svg.querySelectorAll('g.linked-job')].map(g => g.textContent),
                            edges: svg.querySelectorAll('path.edge').length, text: svg.textContent}}; }})()""")
        assert graph["fragments"] == 2 and graph["backfilling"] == 1 and graph["edges"] == 2
        assert any(source in text for text in graph["linked"])
        assert "HashAgg" in graph["text"] and "TableScan" in graph["text"] and "HashShard(_g0)" in graph["text"]

        # nodes, barriers and storage charts have data
        charts = browser.wait_for("""(() => { const n = (id) => document.querySelectorAll(`#${id} polyline`).length;
            const c = {cpu: n('cpu-chart'), mem: n('mem-chart'), barrier: n('barrier-chart'), l0: n('storage-chart')};
            return Object.values(c).every(v => v > 0) && c; })()""")
        assert charts["cpu"] >= 2  # the total and at least one component
        nodes = browser.evaluate("[...document.querySelectorAll('#nodes tr[data-node]')].map(r => r.dataset.node)")
        assert set(nodes) == {"meta-1", "frontend-1", "compute-1", "compactor-1"}
        assert browser.evaluate("document.getElementById('epoch').textContent") != "–"
        assert browser.evaluate(f"""document.querySelector('#storage tr[data-table-id="{job(playground, source)['id']}"]') !== null""")

        shot = browser.screenshot(tmp_path / "dashboard.png")
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
        assert browser.console_errors() == []


# ---- Prometheus ------------------------------------------------------------------------------------
SERIES = (
    ("risingspark_meta_barrier_duration_seconds_bucket", {}),
    ("risingspark_meta_epoch_commit_duration_seconds_bucket", {}),
    ("risingspark_meta_committed_epoch", {}),
    ("risingspark_backfill_snapshot_read_rows_total", {"job": "{mv}"}),
    ("risingspark_backfill_upstream_output_rows_total", {"job": "{mv}", "node": "compute-1"}),
    ("risingspark_backfill_rows_per_second", {"job": "{mv}"}),
    ("risingspark_backfill_progress_ratio", {"job": "{mv}"}),
    ("risingspark_dml_rows_total", {"job": "{source}"}),
    ("risingspark_storage_l0_sub_levels", {"job": "{source}"}),
    ("risingspark_compaction_write_bytes_total", {}),
    ("risingspark_compaction_tasks_total", {}),
    ("risingspark_frontend_pgwire_active_connections", {"node": "frontend-1"}),
    ("risingspark_frontend_pgwire_connections_total", {"node": "frontend-1"}),
    ("risingspark_frontend_query_duration_seconds_bucket", {"statement": "create"}),
    ("risingspark_compute_spark_job_duration_seconds_bucket", {"job": "{mv}", "resource_group": "default"}),
    ("risingspark_compute_spark_jobs_total", {"job": "{mv}"}),
    ("risingspark_compute_epoch_rounds_total", {"node": "compute-1"}),
    ("risingspark_process_cpu_usage_cores", {"component": "spark_jvm"}),
    ("risingspark_process_resident_memory_bytes", {"component": "main"}),
)


def samples(text: str, name: str, labels: dict[str, str]) -> list[float]:
    out = []
    for line in text.splitlines():
        m = re.match(rf"{re.escape(name)}(\{{[^}}]*\}})? (\S+)$", line)
        if m and all(f'{k}="{v}"' in (m.group(1) or "") for k, v in labels.items()):
            out.append(float(m.group(2)))
    return out


def test_metrics_during_a_backfill(playground: PlaygroundProcess, source: str) -> None:
    url = base(playground)
    mv = unique_name("dash_metrics")
    # arrangement backfill: every round merges upstream changes, so its forwarded-rows series exists
    with playground.connect() as conn, background_backfill(conn, source, mv, rate=1000, snapshot=False):
        conn.execute(f"INSERT INTO {source} VALUES ({ROWS + 1}, 1, 1)")
        wait_until(lambda: (j := job(playground, mv))["backfill"] and j["backfill"][0]["rows_per_second"])
        wanted = [(n, {k: v.format(mv=mv, source=source) for k, v in labels.items()}) for n, labels in SERIES]
        deadline = time.monotonic() + 20
        while True:
            text = httpx.get(f"{url}/metrics").text
            missing = [f"{n}{labels}" for n, labels in wanted if not samples(text, n, labels)]
            # (rows/s is sampled every 2 s, from the rate over the committed rounds)
            moving = max(samples(text, "risingspark_backfill_rows_per_second", {"job": mv}), default=0) > 0
            if (not missing and moving) or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert not missing, missing
        assert job(playground, mv)["status"] == "Creating"  # scraped during the backfill
    assert max(samples(text, "risingspark_backfill_snapshot_read_rows_total", {"job": mv})) > 0
    assert max(samples(text, "risingspark_backfill_rows_per_second", {"job": mv})) > 0
    assert 0 < max(samples(text, "risingspark_backfill_progress_ratio", {"job": mv})) < 1
    assert max(samples(text, "risingspark_frontend_pgwire_active_connections", {})) >= 1
    assert max(samples(text, "risingspark_process_resident_memory_bytes", {"component": "spark_jvm"})) > 0
    # docs/metrics.md lists every series the cluster exports
    documented = set(re.findall(r"`(risingspark_[a-z0-9_]+)`", DOCS.read_text()))
    exported = {re.sub(r"_(bucket|sum|count|created)$", "", m) for m in
                re.findall(r"^(risingspark_[a-z0-9_]+)", text, flags=re.M)}
    exported = {e if e in documented else e + "_total" if e + "_total" in documented else e for e in exported}
    assert exported <= documented, exported - documented
