"""Distributed batch queries: a SELECT over tables and MVs run as Spark jobs of a compute node's Spark
application (the serving path's distributed mode, as RisingWave's distributed query mode).

The frontend pins a storage version and sends the query in Spark SQL with, per relation it reads,
the relation's state table layout, its SSTs at that version and the epoch to read
(`risingspark.batch_query.BatchRelation`). Each relation becomes a DataFrame of its live rows: one
Spark task per vnode range reads that range's rows from every SST and merges their versions at the
epoch (`StateTableReader.read`: the MVCC merge the local mode does in the frontend, here spread over
the executors). The query runs over those DataFrames, registered as temporary views of a Spark
session of its own (`SparkSession.newSession`: one query's views are invisible to the others and to
the epoch rounds sharing the application), and its rows come back as Arrow.

The query's Spark jobs run in a job group of their own: a cancel (the client's CancelRequest, or the
statement timeout) cancels the group, and the query fails with 57014. Tasks inside a nested-loop join
or a cartesian product do not stop at a cancel (their loops check no interruption); auto mode sends
such a query back to local mode (`uncancellable_operator`), where DuckDB's interrupt stops it.
Spark's errors become PostgreSQL's where they mean the same (division by zero, overflow, invalid
input); a query Spark cannot analyze fails with `NotDistributable` (0A000), which the frontend's
auto mode answers by running the query locally instead.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator

import pyarrow as pa

from risingspark.batch_query import BatchRelation, NotDistributable, uncancellable_in
from risingspark.errors import (
    DivisionByZero,
    InternalError,
    InvalidTextRepresentation,
    NumericValueOutOfRange,
    QueryCanceled,
    RisingSparkError,
)
from risingspark.storage.cache import block_cache, meta_cache
from risingspark.storage.object_store import get_object_store
from risingspark.storage.reader import StateTableReader
from risingspark.types import spark_ddl
from risingspark.vnode import VNODE_COUNT, actor_vnodes

logger = logging.getLogger(__name__)

CANCEL_POLL_S = 0.05
BROADCAST_MAX_BYTES = 10 << 20  # Spark's default autoBroadcastJoinThreshold, applied to the SSTs' bytes


def read_relation_task(store_url: str, rel: BatchRelation, partitions: int,
                       schema: pa.Schema) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A source: input row ``id`` = a vnode range (`actor_vnodes` of `partitions`); yields the live
    rows of those vnodes at the relation's epoch, merged over its SSTs."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        reader = StateTableReader(get_object_store(store_url), block_cache(), metas=meta_cache())
        for batch in batches:
            for part in batch.column("id").to_pylist():
                rows = reader.read(rel.desc, rel.ssts, rel.epoch, vnodes=actor_vnodes(part, partitions))
                yield from rows.select(list(rel.columns)).cast(schema).to_batches(max_chunksize=65536)

    return run


class SparkBatchRunner:
    """Runs distributed batch queries on a Spark application (see the module doc)."""

    def __init__(self, spark, store_url: str, partitions: int | None = None) -> None:
        self.spark = spark
        self.store_url = store_url
        default = max(1, spark.sparkContext.defaultParallelism)
        self.partitions = max(1, min(VNODE_COUNT, partitions or 4 * default))

    def _session(self, relations: list[BatchRelation], time_zone: str | None = None):
        session = self.spark.newSession()
        # the client session's TimeZone (an IANA name, `frontend.pgwire.time_zone`): casts of
        # timestamptz to date or text, extract and date_trunc compute in it (the streaming jobs and
        # every other query keep the process' UTC)
        try:
            session.conf.set("spark.sql.session.timeZone", time_zone or "UTC")
        except Exception:  # a name PostgreSQL reads and Java does not ('ROC', 'Factory'): local mode runs it
            raise NotDistributable(f'distributed query mode cannot compute in time zone "{time_zone}"') from None
        # Spark cannot tell a relation's size from its source (a range of vnode ranges mapped to rows):
        # it took a 3M-row side for a small one and ran out of memory broadcasting it. The SSTs' size
        # tells: relations up to Spark's usual threshold are broadcast, no other.
        session.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
        for rel in relations:
            fields = {f.name: f for f in rel.desc.fields}
            columns = [fields[c] for c in rel.columns]
            schema = pa.schema([pa.field(f.name, f.type.to_arrow()) for f in columns])
            n = self.partitions
            frame = session.range(0, n, 1, numPartitions=n).mapInArrow(
                read_relation_task(self.store_url, rel, n, schema), spark_ddl(columns))
            if sum(s.size_bytes for s in rel.ssts) <= BROADCAST_MAX_BYTES:
                frame = frame.hint("broadcast")
            frame.createOrReplaceTempView(rel.view)
        return session

    def explain(self, sql: str, relations: list[BatchRelation]) -> str:
        """Spark's physical plan of the query: its stages and exchanges (the query's fragments)."""
        session = self._session(relations)
        try:
            return str(self._analyzed(session, sql)._jdf.queryExecution().executedPlan().toString())
        finally:
            _drop_views(session, relations)

    def run(self, sql: str, relations: list[BatchRelation], cancel: threading.Event | None = None,
            cancellable: bool = False, time_zone: str | None = None) -> pa.Table:
        """The query's rows; raises QueryCanceled once `cancel` is set (its Spark jobs cancelled).
        With `cancellable` (auto mode, which can run the query locally instead), a plan whose tasks a
        cancel would not stop (`uncancellable_operator`) fails with `NotDistributable` first.
        `time_zone`: the client session's zone (None: UTC)."""
        session = self._session(relations, time_zone)
        try:
            return self._run(session, sql, cancel, cancellable)
        finally:
            _drop_views(session, relations)

    def _run(self, session, sql: str, cancel: threading.Event | None, cancellable: bool = False) -> pa.Table:
        df = self._analyzed(session, sql)
        if cancellable:
            try:
                operator = uncancellable_operator(df)
            except Exception as e:
                raise _translate(e) from None
            if operator is not None:
                raise NotDistributable(f"distributed query mode cannot cancel this query: Spark's {operator} does "
                                       "not stop its tasks at a cancel")
        sc = self.spark.sparkContext
        group = f"risingspark-batch-{uuid.uuid4().hex[:12]}"
        done = threading.Event()
        cancelled = threading.Event()

        def watch() -> None:
            # every tick once cancelled: a job submitted after a cancel (the next stage's) is cancelled too
            while not done.wait(CANCEL_POLL_S):
                if cancel is not None and cancel.is_set():
                    cancelled.set()
                    sc.cancelJobGroup(group)

        sc.setJobGroup(group, "batch query", interruptOnCancel=True)
        watcher = threading.Thread(target=watch, name="batch-query-cancel", daemon=True)
        watcher.start()
        try:
            if cancel is not None and cancel.is_set():
                raise QueryCanceled("canceling statement due to user request")
            rows = df.toArrow()
            if cancel is not None and cancel.is_set():  # cancelled as it finished: no rows
                raise QueryCanceled("canceling statement due to user request")
            return rows
        except RisingSparkError:
            raise
        except Exception as e:
            if cancelled.is_set() or (cancel is not None and cancel.is_set()):
                raise QueryCanceled("canceling statement due to user request") from None
            raise _translate(e) from None
        finally:
            done.set()
            watcher.join()
            for prop in ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel"):
                sc.setLocalProperty(prop, None)

    def _analyzed(self, session, sql: str):
        try:
            return session.sql(sql)
        except Exception as e:
            raise _translate(e) from None


def uncancellable_operator(df) -> str | None:
    """The first operator of `df`'s physical plan whose tasks a cancel does not stop
    (`risingspark.batch_query.UNCANCELLABLE_OPERATORS`), or None. (The plan is made once: collecting
    `df` afterwards reuses it.)"""
    return uncancellable_in(df._jdf.queryExecution().executedPlan().toString())


def _drop_views(session, relations: list[BatchRelation]) -> None:
    """The query's temporary views go with it (its session is dropped too, but the JVM frees it only
    when the Python side's reference is collected)."""
    for rel in relations:
        try:
            session.catalog.dropTempView(rel.view)
        except Exception:  # noqa: BLE001 - the query's outcome matters, not the cleanup's
            logger.debug("dropping view %s failed", rel.view, exc_info=True)


class BatchQueryService:
    """The compute node's RPCs of distributed queries for frontends in processes of their own
    (`frontend.remote_runner`): run one (rows as an Arrow IPC stream), cancel one, explain one."""

    MAX_RUNNING = 8  # queries at once: the RPC threads are shared with the barriers' run_epoch

    def __init__(self, runner: SparkBatchRunner) -> None:
        self.runner = runner
        self._running: dict[str, threading.Event] = {}
        self._cancelled: OrderedDict[str, None] = OrderedDict()  # cancels that came before their query
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(self.MAX_RUNNING)

    def methods(self) -> dict:
        return {"run_batch_query": self.run, "cancel_batch_query": self.cancel, "explain_batch_query": self.explain}

    def run(self, query_id: str, sql: str, relations: list[BatchRelation], cancellable: bool = False,
            time_zone: str | None = None) -> bytes:
        cancel = threading.Event()
        with self._lock:
            self._running[query_id] = cancel
            if query_id in self._cancelled:
                del self._cancelled[query_id]
                cancel.set()
        try:
            with self._slots:
                table = self.runner.run(sql, relations, cancel, cancellable, time_zone)
        finally:
            with self._lock:
                self._running.pop(query_id, None)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        return sink.getvalue().to_pybytes()

    def cancel(self, query_id: str) -> bool:
        """Cancel a query, running or not yet arrived (a cancel may overtake its query)."""
        with self._lock:
            event = self._running.get(query_id)
            if event is None:
                self._cancelled[query_id] = None
                while len(self._cancelled) > 1000:
                    self._cancelled.popitem(last=False)
        if event is not None:
            event.set()
        return event is not None

    def explain(self, sql: str, relations: list[BatchRelation]) -> str:
        return self.runner.explain(sql, relations)


_ERRORS: tuple[tuple[str, type[RisingSparkError], str | None], ...] = (
    ("DIVIDE_BY_ZERO", DivisionByZero, "division by zero"),
    ("ARITHMETIC_OVERFLOW", NumericValueOutOfRange, None),
    ("CAST_OVERFLOW", NumericValueOutOfRange, None),
    ("NUMERIC_VALUE_OUT_OF_RANGE", NumericValueOutOfRange, None),
    ("CAST_INVALID_INPUT", InvalidTextRepresentation, None),
)


def _translate(e: Exception) -> RisingSparkError:
    """A Spark error as the error PostgreSQL raises for the same cause, where there is one."""
    condition = ""
    for name in ("getCondition", "getErrorClass"):
        get = getattr(e, name, None)
        if get is not None:
            try:
                condition = get() or ""
            except Exception:  # noqa: BLE001 - an error without a condition
                condition = ""
            if condition:
                break
    message = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    for prefix, cls, text in _ERRORS:
        if condition.startswith(prefix):
            return cls(text or message)
    if type(e).__name__ in ("AnalysisException", "ParseException"):
        return NotDistributable(f"distributed query mode cannot run this query: {message}")
    logger.warning("distributed batch query failed: %s", e)
    return InternalError(f"distributed batch query failed: {message}")
