"""A job's Spark plan built once and run every round, with the round's arguments passed beside it.

Building a job's DataFrames costs the driver more than running them does for the few rows of a
round: every ``mapInArrow`` pickles its function and creates its Python function in the JVM, and
every step is a py4j call that analyzes the new plan (measured with one aggregate view: ~0.1 s of
building against ~0.15 s of running; `docs/notes/issue-16.md`, 2026-12-08). What changes between
rounds is small and known — the epoch, each state table's SSTs, the input files, a backfill's
positions and limit — and the plan's shape changes only with which inputs have rows.

So a task of a job's plan is **deferred** (`deferred`): its Python function holds only what is fixed
(the executor's spec, the job and operator ids) and a function `make` of the round's arguments that
returns the task proper. The driver computes those arguments each round (the plan's `ArgsOf`
functions, kept with the plan) and passes them as one Spark local property of the thread that runs
the job (`round_property`); Spark sends a job's local properties with its tasks, and a Python worker
reads them from its `TaskContext`. A plan is kept per shape (`CachedPlan`, on the job's runtime) as
its analyzed logical plan; each round runs a new Dataset of it, so Spark optimizes and plans it
again (a new shuffle each run: a Dataset run twice would reuse its first run's shuffle files) but
neither Python nor the analyzer builds it again.
"""

from __future__ import annotations

import base64
import functools
import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from risingspark.storage.object_store import ObjectStore, get_object_store

if TYPE_CHECKING:
    from compute.stream.round import EpochRound, JobRuntime
    from compute.stream.tasks import Task

# A round's arguments of one deferred task, computed by the driver from the round and the job.
ArgsOf = Callable[["EpochRound", "JobRuntime"], tuple]


def round_property(job_id: int) -> str:
    """The local property holding a job's round arguments (one per job: the jobs of a wave run from
    threads of their own, each with its own local properties)."""
    return f"risingspark.round.{job_id}"


INLINE_BYTES = 32 * 1024  # larger arguments (pickled; a third more in base64) travel as a file


def encode(args: list[tuple], store: ObjectStore, path: str) -> str:
    """The property's value: the pickled arguments, or, past `INLINE_BYTES`, the path of the file
    they are written to (Spark copies a job's local properties into each of its tasks, where a
    task's function is broadcast once a stage; a job's SST lists can grow to tens of KB)."""
    data = pickle.dumps(args, protocol=pickle.HIGHEST_PROTOCOL)
    if len(data) <= INLINE_BYTES:
        return "inline:" + base64.b64encode(data).decode("ascii")
    store.write_bytes(path, data)
    return f"file:{store.url}|{path}"


@functools.lru_cache(maxsize=16)
def decode(text: str) -> list[tuple]:
    """The arguments `encode` gave, once per worker process and value: every task of a job's stages
    (each of its operators, each partition) asks for the same value, which a file holds when large.
    They are frozen values (the task environment, SST descriptions, tuples), never changed by a task."""
    kind, _, value = text.partition(":")
    if kind == "inline":
        data = base64.b64decode(value)
    else:
        url, _, path = value.rpartition("|")
        data = get_object_store(url).read_bytes(path)
    return pickle.loads(data)  # noqa: S301 - written by this job's driver


def deferred(job_id: int, index: int, make: Callable[..., Task]) -> Task:
    """A task that builds itself in the worker from the round's arguments: ``make(*args[index])``,
    where ``args`` is the job's local property (`round_property`)."""
    prop = round_property(job_id)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        text = ctx.getLocalProperty(prop) if ctx is not None else None
        if text is None:
            raise RuntimeError(f"no round arguments ({prop}) reached the task")
        return make(*decode(text)[index])(batches)

    return run


@dataclass(frozen=True)
class CachedPlan:
    """A job's plan of one shape: its analyzed logical plan (None when the shape reads no input, so
    the job runs no Spark job), and the functions giving its deferred tasks' arguments, in order."""

    logical: Any
    args_of: tuple[ArgsOf, ...]

    def dataframe(self, spark: SparkSession) -> DataFrame:
        """A new Dataset of the plan: optimized and planned again, not analyzed again."""
        jvm: Any = spark._jvm
        jdf = jvm.org.apache.spark.sql.classic.Dataset.ofRows(spark._jsparkSession, self.logical)
        return DataFrame(jdf, spark)


MAX_SHAPES = 16  # plans kept per job, the least recently run dropped first (3 widths a leaf: `input_slices`)
