"""The Python worker daemon of a compute node's Spark executors (``spark.python.daemon.module``):
PySpark's own (`pyspark.daemon`) with one change, so that a task's cost follows the rows it gets,
not the state a worker holds.

PySpark's daemon forks the workers and, when workers are reused (``spark.python.worker.reuse``, as
`compute.spark` sets), runs a *full* ``gc.collect()`` in a worker after every task. A full
collection traverses every object the worker's heap tracks, and a compute node's workers keep what
the epochs need between tasks: state caches, the block cache, decoded SST metadata. So each task
paid a pass over all of it. Measured on a playground with a table and two views under 1,000
changes/s (2 cores): the workers' main threads used 0.58 of a core each, and py-spy put 95% of
their samples on that one line of ``pyspark/daemon.py`` — most of the node's CPU, at a load that
needs a small part of it.

Here a reused worker collects the young generations after a task (``gc.collect(1)``): what the last
task left in reference cycles is found at a cost proportional to what it allocated. Older garbage is
left to the interpreter's own generational collection, whose full passes run only after the
long-lived objects grew by a quarter — counted in objects, not bytes, so a few cycles that a long
task promoted to the old generation could keep large Arrow buffers alive. So the worker also makes
a full collection after a task (`_YoungGenerationsGc.collect`):
- when its resident memory is half again what it was after the last one (`FULL_GC_GROWTH`; the
  baseline follows the memory down when it shrinks, so garbage stays bounded by the current heap,
  not by its peak), or when `FULL_GC_EVERY_S` passed since the last one (garbage that does not show
  as growth is collected eventually);
- but never sooner than `FULL_GC_COST_RATIO` times the last one's duration after it, so full
  collections take at most ~2% of a worker's time even if every task grew its memory.
The first task of a worker makes one. Everything else is PySpark's daemon, unchanged (it works as
long as `pyspark.daemon` calls its module's ``gc.collect()`` after a task: `tests/spark/
test_python_daemon.py` fails if that changes).
"""

from __future__ import annotations

import gc
import math
import time
from types import ModuleType

import psutil
from pyspark import daemon

FULL_GC_GROWTH = 1.5  # a full collection once resident memory is this much what it was after the last
FULL_GC_EVERY_S = 300.0  # ... or once this long passed since the last
FULL_GC_COST_RATIO = 50.0  # ... but never sooner than this many times the last one's duration after it


def _resident_bytes() -> int:
    return psutil.Process().memory_info().rss  # (of this process: a worker, once the daemon forked it)


class _YoungGenerationsGc(ModuleType):
    """`gc` for `pyspark.daemon`: its ``collect()`` after each task collects generations 0 and 1, and
    all of them by the rules of the module's docstring. (The daemon forks each worker after this is
    set up, so every worker keeps its own baseline.)"""

    def __init__(self, clock=time.monotonic, resident=_resident_bytes) -> None:
        super().__init__("gc")
        self.clock, self.resident = clock, resident
        self.full_at = 0  # resident bytes that call for the next full collection
        self.last_full = -math.inf  # when the last one ended
        self.quiet_s = 0.0  # how long after it the next one may come

    def __getattr__(self, name: str):
        return getattr(gc, name)

    def collect(self, generation: int = 2) -> int:
        now, rss = self.clock(), self.resident()
        since = now - self.last_full
        if generation < 2 or since < self.quiet_s or (rss < self.full_at and since < FULL_GC_EVERY_S):
            self.full_at = min(self.full_at, int(rss * FULL_GC_GROWTH))
            return gc.collect(min(generation, 1))
        found = gc.collect(generation)
        self.last_full = self.clock()
        self.quiet_s = FULL_GC_COST_RATIO * (self.last_full - now)
        self.full_at = int(self.resident() * FULL_GC_GROWTH)
        return found


daemon.gc = _YoungGenerationsGc()  # type: ignore[attr-defined]

if __name__ == "__main__":
    daemon.manager()
