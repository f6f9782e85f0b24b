"""Full garbage collection of the object store: delete the files nothing references, which are what
work that never committed wrote — an epoch round that failed, a compactor killed mid-task, a DML
batch whose INSERT never reached meta.

As Hummock's full GC (``HummockManager::start_full_gc``, run every ``full_gc_interval_sec``): list the
store, keep every object a version (or the deletion queue) references, and delete the rest that is
older than ``min_sst_retention_time_sec``. The age is one guard; two others protect work still in
flight whatever its age, as RisingWave protects SST ids not yet committed:

* an epoch round's files are named after their epoch (``hummock/<table>/<epoch>-...``,
  ``changelog/<table>/<epoch>-...``, ``backfill/<job>/<epoch>/...``, and a job's manifests and
  round arguments, ``manifests/<epoch>/...``, ``rounds/<epoch>/...``): those of an epoch newer than
  the committed one belong to a round still running, and so do those of an epoch at or after the
  oldest *outstanding* one — a round run elsewhere (a serverless backfiller's, another resource
  group's) commits with a later checkpoint of the default group, which commits newer epochs meanwhile
  (`BarrierManager.next_epoch`);
* a compaction task's outputs start with the task's `output_prefix`, given by the scheduler: those
  of a task in flight are kept. A task whose compactor died is given up (`meta.rpc`), after which its
  outputs are garbage like any other.

A local store's temporary file of a write in progress (``.<name>.tmp-<id>``) is judged by the name
it will take. Runs once when meta starts (the files a dead meta's cluster left) and then every
`interval_s`; ``POST /api/hummock/full_gc`` runs it on demand (RisingWave: ``risectl hummock
trigger-full-gc``), with a retention of at least `MIN_RETENTION_S`: a frontend writes a DML batch's
file before it registers it with meta, and nothing but its age protects it meanwhile.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable

import sqlalchemy as sa

from meta.hummock import HummockManager
from meta.metrics import METRICS
from meta.store.schema import dml_batches
from meta.store.store import MetaStore
from risingspark.storage.object_store import ObjectStore, final_path

logger = logging.getLogger(__name__)

PREFIXES = ("hummock", "changelog", "dml", "backfill", "manifests", "rounds")
DEFAULT_INTERVAL_S = 600.0
# A frontend writes a DML batch's file, then registers it with meta; a meta that takes over from a
# dead one must not delete a file a frontend is about to register.
DEFAULT_RETENTION_S = 300.0
MIN_RETENTION_S = 10.0


def epoch_of(path: str) -> int | None:
    """The epoch an epoch round's file is named after, or None (another kind of file)."""
    parts = path.split("/")
    if len(parts) >= 3 and parts[0] in ("hummock", "changelog"):
        head = parts[2].split("-", 1)[0]
    elif len(parts) >= 4 and parts[0] == "backfill":
        head = parts[2]
    elif len(parts) >= 3 and parts[0] in ("manifests", "rounds"):
        head = parts[1]
    else:
        return None
    return int(head) if head.isdigit() else None


class GarbageCollector:
    def __init__(self, store: MetaStore, objects: ObjectStore, hummock: HummockManager,
                 in_flight_prefixes: Callable[[], Iterable[str]],
                 oldest_outstanding_epoch: Callable[[], int | None] = lambda: None, *,
                 interval_s: float = DEFAULT_INTERVAL_S, retention_s: float = DEFAULT_RETENTION_S) -> None:
        self._store = store
        self._objects = objects
        self._hummock = hummock
        self._in_flight_prefixes = in_flight_prefixes
        self._oldest_outstanding_epoch = oldest_outstanding_epoch
        self.interval_s = interval_s
        self.retention_s = retention_s
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self.collect()
        if self.interval_s > 0:
            self._thread = threading.Thread(target=self._loop, name="full-gc", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def collect(self, retention_s: float | None = None) -> list[str]:
        """Delete unreferenced files older than `retention_s` (default: the configured retention; at
        least `MIN_RETENTION_S`) that no round or compaction task in flight may still commit; returns
        their paths."""
        retention = self.retention_s if retention_s is None else max(MIN_RETENTION_S, retention_s)
        with self._lock:  # one collection at a time
            # The listing first, then what is in flight, then what is referenced: work that starts
            # after the listing wrote nothing listed; work in flight at the listing is either still
            # in flight when it is read, or has committed, and then it is referenced.
            listed = [o for prefix in PREFIXES for o in self._objects.list(prefix)]
            protected = tuple(self._in_flight_prefixes())
            committed = self._hummock.version.committed_epoch
            outstanding = self._oldest_outstanding_epoch()
            if outstanding is not None:
                committed = min(committed, outstanding - 1)
            with self._store.begin() as conn:
                referenced = self._hummock.referenced_paths(conn)
                referenced |= {r.path for r in conn.execute(sa.select(dml_batches.c.path))}
            now = time.time()
            garbage = []
            for o in listed:
                path = final_path(o.path)
                if path in referenced or now - o.mtime < retention or path.startswith(protected):
                    continue
                epoch = epoch_of(path)
                if epoch is not None and epoch > committed:
                    continue
                garbage.append(o.path)
            if garbage:
                self._objects.delete(garbage)
                METRICS.gc_deleted_objects.inc(len(garbage))
                logger.info("full GC: deleted %d unreferenced files of %d listed", len(garbage), len(listed))
        return garbage

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.collect()
            except Exception:
                logger.exception("full GC failed")
