"""Compaction scheduling: asks the picker for a task per state table, hands tasks to compactors,
and commits their results as version deltas."""

from __future__ import annotations

import logging
import threading

from meta.catalog import CatalogManager
from meta.compaction.picker import CompactionConfig, CompactionTask, pick_compaction
from meta.hummock import HummockManager
from meta.metrics import METRICS
from meta.store.store import MetaStore
from risingspark.storage.desc import SstableInfo, StateTableDesc

logger = logging.getLogger(__name__)


class CompactionScheduler:
    def __init__(self, store: MetaStore, catalog: CatalogManager, hummock: HummockManager,
                 config: CompactionConfig | None = None) -> None:
        self._store = store
        self._catalog = catalog
        self._hummock = hummock
        self.config = config or CompactionConfig()
        self._lock = threading.Lock()
        self._running: set[int] = set()  # tables with a task in flight

    def next_task(self) -> tuple[CompactionTask, StateTableDesc] | None:
        """The next compaction task, with the layout of its table; None when nothing needs it."""
        descs = {d.table_id: d for r in self._catalog.snapshot.relations.values() for d in r.state_tables}
        version = self._hummock.version
        for table_id, levels in sorted(version.tables.items()):
            with self._lock:
                if table_id in self._running or table_id not in descs:
                    continue
                task = pick_compaction(levels, self.config)
                if task is None:
                    continue
                self._running.add(table_id)
            return task, descs[table_id]
        return None

    def report(self, task: CompactionTask, outputs: list[SstableInfo] | None) -> bool:
        """Commit a finished task (`outputs`), or abandon it (None). Returns whether it committed."""
        try:
            if outputs is None:
                return False
            with self._store.transaction() as tx:
                committed = self._hummock.commit_compaction(tx, task.table_id, list(task.input_ssts), outputs)
            if committed is None:
                logger.info("compaction of table %d discarded: its inputs changed", task.table_id)
                return False
            METRICS.compaction_tasks.inc()
            METRICS.compaction_bytes.inc(sum(s.size_bytes for s in outputs))
            logger.info("compacted table %d: %d SSTs (%d L0 sub-levels) -> %d L%d SSTs", task.table_id,
                        len(task.input_ssts), len(task.l0_sub_levels), len(outputs), task.target_level)
            return True
        finally:
            with self._lock:
                self._running.discard(task.table_id)
