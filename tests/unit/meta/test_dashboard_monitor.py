"""The cluster monitor: process tree sampling, and the gauges it keeps current."""

from __future__ import annotations

import subprocess
import sys
import time

from prometheus_client import REGISTRY

from meta.dashboard.monitor import ClusterMonitor
from meta.dashboard.process import ProcessTreeSampler, component_of
from support.dashboard_fakes import MV_ID, TABLE_ID, cluster


def gauge(name: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(name, labels)


def test_components_by_executable() -> None:
    assert component_of("java", is_root=False) == "spark_jvm"
    assert component_of("python3", is_root=False) == "spark_python_workers"
    assert component_of("python3", is_root=True) == "main"
    assert component_of("sh", is_root=False) == "other"


def test_the_process_tree_includes_busy_children() -> None:
    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        sampler = ProcessTreeSampler()
        sampler.sample()
        time.sleep(0.5)
        sampler.sample()  # the child is known from the first sample on
        time.sleep(1.0)
        sample = sampler.sample()
    finally:
        child.kill()
        child.wait()
    # the child's share of a core: about 1 on an idle machine, seen at 0.16 with the cores shared by
    # some 25 busy processes; a sampler that missed children would report 0
    assert sample.cpu_cores["spark_python_workers"] > 0.02, sample
    assert sample.rss_bytes["main"] > 10 << 20 and sample.rss_bytes["spark_python_workers"] > 1 << 20
    assert sample.total_rss_bytes == sum(sample.rss_bytes.values())


def test_a_sample_sets_gauges_and_removes_those_of_finished_work() -> None:
    meta = cluster(mv_creating=True)
    monitor = ClusterMonitor(meta, process="unit-test")
    monitor.sample_once()
    assert gauge("risingspark_storage_l0_sub_levels", job="t", table_id=str(TABLE_ID)) == 3
    assert gauge("risingspark_compaction_pending_bytes", job="t", table_id=str(TABLE_ID)) == 0  # 3 < 8 sub-levels
    assert gauge("risingspark_compaction_running_tasks") == 0
    assert gauge("risingspark_backfill_rows_per_second", job="mv", fragment=str(MV_ID * 100 + 1)) == 1000.0
    assert gauge("risingspark_process_resident_memory_bytes", node="unit-test", component="main") > 0
    (storage,) = monitor.recent_storage()
    assert (storage.max_l0_sub_levels, storage.total_l0_sub_levels) == (3, 4)
    assert len(monitor.recent_resources()) == 1

    meta.relations = [r for r in meta.relations if r.id != MV_ID]  # dropped
    meta.progress = []
    meta.refresh()
    monitor.sample_once()
    assert gauge("risingspark_backfill_rows_per_second", job="mv", fragment=str(MV_ID * 100 + 1)) is None
    assert gauge("risingspark_storage_l0_sub_levels", job="mv", table_id=str(MV_ID)) is None
    assert gauge("risingspark_compaction_pending_bytes", job="mv", table_id=str(MV_ID)) is None
    assert gauge("risingspark_storage_l0_sub_levels", job="t", table_id=str(TABLE_ID)) == 3


def test_pending_bytes_follow_the_version() -> None:
    """The gauge shows the scheduler's pending bytes of the current version: L0 is due once it has
    8 sub-levels (each fake SST holds 100 bytes)."""
    meta = cluster(mv_creating=True)
    monitor = ClusterMonitor(meta, process="unit-test")
    monitor.sample_once()
    assert gauge("risingspark_compaction_pending_bytes", job="t", table_id=str(TABLE_ID)) == 0
    meta.l0[TABLE_ID] = 9
    meta.refresh()
    monitor.sample_once()
    assert gauge("risingspark_compaction_pending_bytes", job="t", table_id=str(TABLE_ID)) == 900
    assert meta.compaction.pending_bytes()[TABLE_ID] == 900
