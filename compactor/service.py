"""The compactor service: takes compaction tasks from meta, runs them, reports the results.

A task runs in this process (`compactor.runner`), or, when the compactor has a SparkSession and the
task reads at least `spark_min_bytes`, as a Spark job split by key range (`compactor.spark_job`).
"""

from __future__ import annotations

import logging
import threading

from compactor.runner import file_rows, run_compaction
from compactor.spark_job import run_compaction_on_spark
from meta.compaction.scheduler import CompactionScheduler
from risingspark import failpoint
from risingspark.storage.object_store import ObjectStore

logger = logging.getLogger(__name__)


class CompactorService:
    def __init__(self, scheduler: CompactionScheduler, store: ObjectStore, *, poll_s: float = 1.0,
                 spark=None, spark_min_bytes: int = 64 << 20) -> None:
        self._scheduler = scheduler
        self._store = store
        self._spark = spark
        self._spark_min_bytes = spark_min_bytes
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
        config = self._scheduler.config
        try:
            if self._spark is not None and task.input_bytes >= self._spark_min_bytes:
                outputs = run_compaction_on_spark(
                    self._spark, self._store, desc, task,
                    file_rows=file_rows(task, config.target_file_bytes, config.target_file_rows))
            else:
                outputs = run_compaction(self._store, desc, task, target_file_rows=config.target_file_rows,
                                         target_file_bytes=config.target_file_bytes)
            failpoint.hit("compactor.before_report",
                          lambda: f"(task {task.task_id} wrote {' '.join(s.path for s in outputs or ())})")
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
