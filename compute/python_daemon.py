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
long-lived objects grew by a quarter — counted in objects, not bytes, so a cycle that a long task
promoted to the old generation could keep large Arrow buffers alive. So the worker also makes a full
collection after a task whenever its resident memory has grown by half since the last one
(`FULL_GC_GROWTH`; the first task of a worker makes one): while its caches fill that happens a few
times, then no more, and a leak through cycles is bounded. Everything else is PySpark's daemon,
unchanged.
"""

from __future__ import annotations

import gc
import os
import resource
from types import ModuleType

from pyspark import daemon

FULL_GC_GROWTH = 1.5  # a full collection after a task once resident memory grew this much since the last


def _resident_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):  # not Linux: the peak, which only grows
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class _YoungGenerationsGc(ModuleType):
    """`gc` for `pyspark.daemon`: its ``collect()`` after each task collects generations 0 and 1, and
    all of them when the worker's memory grew by `FULL_GC_GROWTH` since the last full collection.
    (The daemon forks each worker after this is set up, so every worker counts its own growth.)"""

    def __init__(self) -> None:
        super().__init__("gc")
        self.full_at = 0  # resident bytes that call for the next full collection

    def __getattr__(self, name: str):
        return getattr(gc, name)

    def collect(self, generation: int = 2) -> int:
        if _resident_bytes() < self.full_at:
            return gc.collect(min(generation, 1))
        found = gc.collect(generation)
        self.full_at = int(_resident_bytes() * FULL_GC_GROWTH)
        return found


daemon.gc = _YoungGenerationsGc()  # type: ignore[attr-defined]

if __name__ == "__main__":
    daemon.manager()
