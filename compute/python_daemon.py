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

Here a reused worker collects the young generations only (``gc.collect(1)``): what the last task
left in reference cycles is found at a cost proportional to what it allocated. Older garbage is
left to the interpreter's own generational collection, whose full passes run only after the
long-lived objects grew by a quarter (so their cost is amortized over the allocations that caused
them). Everything else is PySpark's daemon, unchanged.
"""

from __future__ import annotations

import gc
from types import ModuleType

from pyspark import daemon


class _YoungGenerationsGc(ModuleType):
    """`gc` for `pyspark.daemon`: its ``collect()`` after each task collects generations 0 and 1."""

    def __init__(self) -> None:
        super().__init__("gc")

    def __getattr__(self, name: str):
        return getattr(gc, name)

    @staticmethod
    def collect(generation: int = 1) -> int:
        return gc.collect(min(generation, 1))


daemon.gc = _YoungGenerationsGc()  # type: ignore[attr-defined]

if __name__ == "__main__":
    daemon.manager()
