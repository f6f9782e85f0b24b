"""Compaction scheduling: asks the picker for tasks, hands them to compactors, and commits their
results as version deltas.

The SSTs of every task in flight are busy: the picker never hands them out again, so a table can
have several tasks at once on disjoint key ranges (a level task and an L0 task, or level tasks of
different ranges) and every idle compactor finds work. A task given up (its compactor failed or
died) frees its SSTs; its inputs are still live, and a later pick may take them again.
"""

from __future__ import annotations

import itertools
import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import replace

from meta.catalog import CatalogManager
from meta.compaction.level_selector import level_scores, level_targets, pending_compaction_bytes
from meta.compaction.picker import CompactionConfig, CompactionTask, pick_compaction
from meta.hummock import HummockManager
from meta.metrics import METRICS
from meta.store.store import MetaStore
from risingspark.storage.desc import SstableInfo, StateTableDesc, TableLevels

logger = logging.getLogger(__name__)


class CompactionScheduler:
    def __init__(self, store: MetaStore, catalog: CatalogManager, hummock: HummockManager,
                 config: CompactionConfig | None = None, *, stall_threshold: Callable[[], int] | None = None) -> None:
        self._store = store
        self._stall_threshold = stall_threshold
        self._catalog = catalog
        self._hummock = hummock
        self.config = config or CompactionConfig()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._running: dict[int, CompactionTask] = {}  # task id -> task in flight
        self.largest_task_bytes = 0  # the input of the largest task committed since meta started
        self._pending: tuple[int, dict[int, int]] | None = None  # (version id, bytes by table)

    def pending_bytes(self) -> dict[int, int]:
        """Each table's pending compaction bytes (`level_selector.pending_compaction_bytes`) at the
        current version, computed once per version for every reader (the dashboard's gauges,
        serverless compaction)."""
        version = self._hummock.version
        cached = self._pending
        if cached is None or cached[0] != version.id:
            cached = self._pending = (version.id, {t: pending_compaction_bytes(levels, self.config)
                                                   for t, levels in version.tables.items()})
        return cached[1]

    @property
    def running(self) -> list[CompactionTask]:
        with self._lock:
            return list(self._running.values())

    def next_task(self) -> tuple[CompactionTask, StateTableDesc] | None:
        """The next compaction task, with the layout of its table; None when nothing needs it."""
        descs = {d.table_id: d for r in self._catalog.snapshot.relations.values() for d in r.state_tables}
        version = self._hummock.version
        config = self.config
        if self._stall_threshold is not None:
            config = replace(config, l0_stop_write_sub_levels=self._stall_threshold())
        with self._lock:
            busy = frozenset(s.path for t in self._running.values() for s in t.input_ssts)
            # the neediest table first (a stalled table's L0 scores infinite), so a busy table
            # cannot keep the compactors from one that holds writers back
            order = sorted((-_top_score(levels, config, busy), table_id) for table_id, levels in version.tables.items()
                           if table_id in descs)
            for _, table_id in order:
                levels = version.tables[table_id]
                task = pick_compaction(levels, config, busy=busy)
                if task is None:
                    continue
                task_id = next(self._ids)
                task = replace(task, task_id=task_id, output_prefix=output_prefix(table_id, task_id))
                self._running[task.task_id] = task
                return task, descs[table_id]
        return None

    def report(self, task: CompactionTask, outputs: list[SstableInfo] | None) -> bool:
        """Commit a finished task (`outputs`), or abandon it (None). Returns whether it committed."""
        try:
            if outputs is None:
                return False
            with self._store.transaction() as tx:
                committed = self._hummock.commit_compaction(tx, task.table_id, list(task.input_ssts), outputs,
                                                            task.target_level)
            if committed is None:
                logger.info("compaction of table %d discarded: its inputs changed", task.table_id)
                return False
            METRICS.compaction_tasks.inc()
            METRICS.compaction_bytes.inc(sum(s.size_bytes for s in outputs))
            with self._lock:
                self.largest_task_bytes = max(self.largest_task_bytes, task.input_bytes)
                METRICS.compaction_largest_task_bytes.set(self.largest_task_bytes)
            logger.info("compacted table %d (%s task %d): %d SSTs of %d bytes (%d L0 sub-levels) -> %d L%d SSTs",
                        task.table_id, task.kind, task.task_id, len(task.input_ssts), task.input_bytes,
                        len(task.l0_sub_levels), len(outputs), task.target_level)
            return True
        finally:
            with self._lock:
                self._running.pop(task.task_id, None)


def output_prefix(table_id: int, task_id: int) -> str:
    """Where a task's outputs go: ``hummock/<table>/c<task>-<unique>`` (task ids restart with meta)."""
    return f"hummock/{table_id}/c{task_id}-{uuid.uuid4().hex[:12]}"


def _top_score(levels: TableLevels, config: CompactionConfig, busy: frozenset[str]) -> float:
    return level_scores(levels, config, level_targets(levels, config), busy)[0][0]
