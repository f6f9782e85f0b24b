"""Fragments cut from stream plans, and the fragment graph the dashboard draws from them."""

from __future__ import annotations

import pytest

from meta.dashboard.monitor import ClusterMonitor
from meta.dashboard.views import DashboardViews
from risingspark.errors import UndefinedTable
from risingspark.fragment import FRAGMENTS_PER_JOB, backfill_fragment_id, executor_name, plan_fragments
from risingspark.stream_plan import StreamExchange, StreamFilter, StreamMaterialize, StreamTableScan
from support.dashboard_fakes import COLS, MV2_ID, MV_ID, TABLE_ID, agg_plan, cluster, table_plan


def names(graph) -> list[list[str]]:
    return [[executor_name(n) for n in f.nodes] for f in graph.fragments]


def test_a_table_job_is_dml_then_materialize() -> None:
    graph = plan_fragments(TABLE_ID, table_plan())
    assert names(graph) == [["Materialize"], ["Dml"]]
    assert [f.fragment_id for f in graph.fragments] == [TABLE_ID * FRAGMENTS_PER_JOB, TABLE_ID * FRAGMENTS_PER_JOB + 1]
    (edge,) = graph.edges
    assert (edge.upstream_fragment_id, edge.downstream_fragment_id) == (TABLE_ID * 100 + 1, TABLE_ID * 100)
    assert edge.dispatch == "HashShard(id)"
    assert backfill_fragment_id(TABLE_ID, table_plan()) is None


def test_an_aggregation_is_cut_at_its_exchange() -> None:
    graph = plan_fragments(MV_ID, agg_plan())
    assert names(graph) == [["Materialize", "Project", "HashAgg"], ["Project", "Filter", "TableScan"]]
    root, scan = graph.fragments
    assert not root.is_backfill and scan.is_backfill and scan.scan is not None
    assert scan.scan.upstream_id == TABLE_ID
    assert backfill_fragment_id(MV_ID, agg_plan()) == scan.fragment_id
    assert graph.edges[0].dispatch == "HashShard(_g0)"


def test_each_exchange_starts_a_fragment_numbered_in_pre_order() -> None:
    scan = StreamTableScan(fields=COLS, stream_key=(0,), upstream_id=7)
    inner = StreamExchange(fields=COLS, stream_key=(0,), input=scan, dist_key=())
    middle = StreamFilter(fields=COLS, stream_key=(0,), input=inner, predicate="k > 1")
    outer = StreamExchange(fields=COLS, stream_key=(0,), input=middle, dist_key=(1,))
    plan = StreamMaterialize(fields=COLS, stream_key=(0,), input=outer)
    graph = plan_fragments(3, plan)
    assert names(graph) == [["Materialize"], ["Filter"], ["TableScan"]]
    assert [(e.upstream_fragment_id, e.downstream_fragment_id, e.dispatch) for e in graph.edges] == [
        (301, 300, "HashShard(k)"), (302, 301, "Single")]
    assert backfill_fragment_id(3, plan) == 302


class _Monitor(ClusterMonitor):
    """A monitor that is never started (its buffers stay empty)."""


def views(meta) -> DashboardViews:
    return DashboardViews(meta, _Monitor(meta))


def test_the_graph_of_a_backfilling_job_links_its_upstream_and_shows_progress() -> None:
    meta = cluster(mv_creating=True)
    graph = views(meta).fragments(MV_ID)
    assert graph.status == "Creating"
    assert [f.fragment_id for f in graph.fragments] == [MV_ID * 100, MV_ID * 100 + 1]
    root, scan = graph.fragments
    assert [e.name for e in root.executors] == ["Materialize", "Project", "HashAgg"]
    assert root.executors[2].detail.startswith("StreamHashAgg { group_key: [_g0]")
    assert root.parallelism == scan.parallelism == 4 and root.node == "compute-1"
    assert root.backfill is None
    assert scan.backfill is not None and scan.backfill.consumed_rows == 250 and scan.backfill.total_rows == 1000
    assert scan.upstream_job_id == TABLE_ID
    (exchange,) = graph.exchanges
    assert (exchange.upstream_fragment_id, exchange.downstream_fragment_id) == (scan.fragment_id, root.fragment_id)
    (up,) = graph.upstream_jobs
    assert (up.job_id, up.name, up.fragment_id, up.local_fragment_id) == (TABLE_ID, "t", TABLE_ID * 100,
                                                                          scan.fragment_id)
    table = views(meta).fragments(TABLE_ID)
    (down,) = table.downstream_jobs
    assert (down.job_id, down.fragment_id, down.local_fragment_id) == (MV_ID, scan.fragment_id, TABLE_ID * 100)


def test_a_created_job_has_no_progress_and_a_view_on_a_view_links_both_ways() -> None:
    meta = cluster(mv_creating=False)
    v = views(meta)
    graph = v.fragments(MV_ID)
    assert graph.status == "Created" and all(f.backfill is None for f in graph.fragments)
    assert [j.job_id for j in graph.upstream_jobs] == [TABLE_ID]
    assert [j.job_id for j in graph.downstream_jobs] == [MV2_ID]
    assert v.fragments(MV2_ID).upstream_jobs[0].fragment_id == MV_ID * 100


def test_an_unknown_job_is_an_undefined_table() -> None:
    with pytest.raises(UndefinedTable):
        views(cluster()).fragments(999)
