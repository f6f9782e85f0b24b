"""The compactor service: takes compaction tasks from meta, runs them, reports the results."""

from __future__ import annotations

import logging
import threading

from compactor.runner import run_compaction
from meta.compaction.scheduler import CompactionScheduler
from risingspark.storage.object_store import ObjectStore

logger = logging.getLogger(__name__)


class CompactorService:
    def __init__(self, scheduler: CompactionScheduler, store: ObjectStore, *, poll_s: float = 1.0) -> None:
        self._scheduler = scheduler
        self._store = store
        self._poll_s = poll_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="compactor", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=60)

    def run_once(self) -> bool:
        """Run one task if meta has one; returns whether it did."""
        picked = self._scheduler.next_task()
        if picked is None:
            return False
        task, desc = picked
        outputs = None
        try:
            outputs = run_compaction(self._store, desc, task,
                                     target_file_rows=self._scheduler.config.target_file_rows,
                                     target_file_bytes=self._scheduler.config.target_file_bytes)
        except Exception:
            logger.exception("compaction of table %d failed", task.table_id)
        finally:
            if not self._scheduler.report(task, outputs) and outputs:
                self._store.delete([s.path for s in outputs])
        return True

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                busy = self.run_once()
            except Exception:
                logger.exception("compactor loop error")
                busy = False
            if not busy:
                self._stop.wait(self._poll_s)
