"""The dashboard's jobs, barriers and storage views over meta's in-memory state."""

from __future__ import annotations

import time

from meta.dashboard.monitor import ClusterMonitor
from meta.dashboard.views import DashboardViews
from meta.history import BarrierSample, RingBuffer, latency_buckets, percentile
from support.dashboard_fakes import MV_ID, STATE_ID, TABLE_ID, cluster


def test_jobs_list_every_job_with_progress_while_creating() -> None:
    meta = cluster(mv_creating=True)
    jobs = {j.name: j for j in DashboardViews(meta, ClusterMonitor(meta)).jobs()}
    t, mv = jobs["t"], jobs["mv"]
    assert (t.status, t.kind, t.create_type, t.backfill_type, t.backfill) == (
        "Created", "table", "FOREGROUND", None, [])
    assert (t.parallelism, t.adaptive) == (2, True)  # the compute default
    assert (mv.status, mv.create_type, mv.backfill_type, mv.resource_group) == (
        "Creating", "BACKGROUND", "SNAPSHOT_BACKFILL", "default")
    assert (mv.parallelism, mv.adaptive, mv.dependencies, mv.fragments) == (4, False, [TABLE_ID], 2)
    (b,) = mv.backfill
    assert (b.fragment_id, b.upstream, b.consumed_rows, b.total_rows, b.rows_per_second, b.eta_seconds) == (
        MV_ID * 100 + 1, "t", 250, 1000, 1000.0, 0.75)


def test_barrier_view_reports_percentiles_of_the_recent_window() -> None:
    meta = cluster()
    now = time.time()
    for i in range(20):
        meta.barriers.history.append(BarrierSample(now - 20 + i, i + 1, 0.1 if i < 18 else 2.0, 0.01, 1, 3, 1))
    meta.barriers.history.append(BarrierSample(now - 3600, 0, 99.0, 0.01, 1, 0, 50))  # outside the window
    b = DashboardViews(meta, ClusterMonitor(meta)).barriers()
    assert (b.count, b.p50, b.p99) == (20, 0.1, 2.0)
    assert b.state_cache_hit_rate == 0.75 and b.recent[-1].cache_hits == 3
    assert sum(s.count for s in b.series) == 20 and max(s.p99 for s in b.series) == 2.0
    assert b.recent[-1].epoch == 20 and b.committed_epoch == meta.committed_epoch
    assert b.committed_at_ms is not None and b.barrier_interval_ms == 1000


def test_storage_view_lists_every_state_table_with_its_levels() -> None:
    meta = cluster()
    s = DashboardViews(meta, ClusterMonitor(meta)).storage()
    tables = {t.table_id: t for t in s.tables}
    assert set(tables) == {TABLE_ID, MV_ID, STATE_ID}
    assert (tables[TABLE_ID].job, tables[TABLE_ID].l0_sub_levels, tables[TABLE_ID].l0_ssts) == ("t", 3, 3)
    assert tables[TABLE_ID].size_bytes == 300 and tables[TABLE_ID].rows == 30
    assert (tables[STATE_ID].job, tables[STATE_ID].l0_sub_levels) == ("mv", 0)
    assert s.version_id == 7


def test_percentiles_and_buckets() -> None:
    assert percentile([], 0.5) == 0.0
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert percentile([float(i) for i in range(1, 101)], 0.99) == 99.0
    samples = [BarrierSample(990.0 + i, i, float(i), 0.0, 0) for i in range(20)]
    # whole buckets from the one holding the window's start (1004 -> 1000)
    buckets = latency_buckets(samples, now=1009.0, window_s=5, width_s=5)
    assert [(b.start, b.count, b.p50, b.max) for b in buckets] == [(1000.0, 5, 12.0, 14.0), (1005.0, 5, 17.0, 19.0)]


def test_ring_buffer_keeps_the_newest() -> None:
    ring: RingBuffer[int] = RingBuffer(3)
    for i in range(5):
        ring.append(i)
    assert ring.items() == [2, 3, 4] and len(ring) == 3
