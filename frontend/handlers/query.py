"""A client's SELECT, run in the mode ``query_mode`` picks (`frontend.distributed`), and its EXPLAIN.

Local mode runs it in the frontend (`Session.run_batch`); distributed mode compiles it for Spark and
runs it on the frontend's `DistributedRunner` at a pinned version. In auto mode a query Spark cannot
run (a system table, a view, a function Spark lacks) runs locally; with ``query_mode = distributed``
it fails with 0A000 naming why.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import pyarrow as pa
from sqlglot import exp

from frontend.batch import normalize
from frontend.distributed import choose_distributed, compile_for_spark, input_bytes, is_heavy, require_runner
from frontend.key_query import match_key_query
from frontend.pgwire.api import ColumnDesc, StatementResult
from frontend.pgwire.row_stream import RowStream
from risingspark.batch_query import NotDistributable, uncancellable_in
from risingspark.errors import FeatureNotSupported, InternalError, ServiceUnavailable
from risingspark.types import VARCHAR

if TYPE_CHECKING:
    from frontend.session import Session

logger = logging.getLogger(__name__)


def run_query(session: Session, query: exp.Expression, *, stream: bool = False) -> pa.Table | RowStream:
    """The rows of a client's SELECT (or VALUES), in the session's query mode. With `stream`, a
    local query's rows may come as a `RowStream` produced while they are sent (`Session.stream_batch`);
    a distributed query's come back whole."""
    runner = session.frontend.distributed
    mode = session.vars.get("query_mode")

    def local() -> pa.Table | RowStream:
        return session.stream_batch(query) if stream else session.run_batch(query, typed=True)

    if mode == "distributed":
        runner = require_runner(runner)
    if mode == "local" or (mode == "auto" and (runner is None or not is_heavy(query))):
        return local()
    assert runner is not None
    meta = session.frontend.meta
    reader = session.catalog_reader()
    version = meta.pin_version()
    try:
        try:
            # (the inputs' size first: a small join or aggregation is not compiled for Spark)
            if not choose_distributed(mode, query, input_bytes(query, reader, version), True):
                return local()
            compiled = compile_for_spark(query, reader, version)
        except NotDistributable:
            if mode == "distributed":
                raise
            return local()
        schema = session.result_schema(query).schema
        try:
            # auto mode: a query Spark could not stop at a cancel runs locally (`compute.batch_query`)
            # in the session's TimeZone (None: UTC), as local mode computes (`::date` of a timestamptz...)
            rows = runner.run(compiled.sql, compiled.relations, session.cancel_event, cancellable=mode == "auto",
                              time_zone=session.time_zone)
        except (FeatureNotSupported, InternalError, ServiceUnavailable) as e:
            # no compute node, or one Spark cannot run it with (errors cross RPC by SQLSTATE: a
            # NotDistributable raised there arrives as FeatureNotSupported)
            if mode == "distributed":
                raise
            logger.info("query runs locally: distributed mode failed: %s", e.message)
            return local()
        return _conform(normalize(rows), schema)
    finally:
        meta.unpin_version(version)


def _conform(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """Spark's rows in the types local mode gives the same query (what Describe announced). Where
    the two name the same distinct columns in another order (``SELECT *`` over a USING join: Spark
    lists the join columns first, DuckDB in the left table's place), Spark's are taken by name, so
    a value is never cast to, and labelled as, its neighbour."""
    if rows.num_columns != len(schema):
        raise InternalError(f"distributed mode returned {rows.num_columns} columns where the query has {len(schema)}")
    if rows.column_names != schema.names and len(set(schema.names)) == len(schema.names) \
            and sorted(rows.column_names) == sorted(schema.names):
        rows = rows.select(schema.names)
    return pa.Table.from_arrays([c if c.type == f.type else c.cast(f.type) for c, f in zip(rows.columns, schema,
                                                                                            strict=True)],
                                schema=schema)


def explain_query(session: Session, query: exp.Expression) -> StatementResult:
    """EXPLAIN of a SELECT: the mode it runs in and how (a key lookup, DuckDB, or Spark's stages)."""
    lines = _plan_lines(session, query)
    return StatementResult("EXPLAIN", [ColumnDesc("QUERY PLAN", VARCHAR.oid)], [(line,) for line in lines])


def _plan_lines(session: Session, query: exp.Expression) -> list[str]:
    runner = session.frontend.distributed
    mode = session.vars.get("query_mode")
    reader = session.catalog_reader()
    key = match_key_query(query, reader)
    if key is not None:  # in every mode, as the statement runs
        desc = key.desc
        names = desc.pk_names[:len(key.keys)]
        return [f"Local mode: key lookup in state table {desc.table_id} by ({', '.join(names)})"
                + (f" LIMIT {key.limit}" if key.limit is not None else "")]
    if mode != "local" and runner is not None and (mode == "distributed" or is_heavy(query)):
        meta = session.frontend.meta
        version = meta.pin_version()
        try:
            try:
                compiled = compile_for_spark(query, reader, version)
                distributed = choose_distributed(mode, query, compiled.input_bytes, True)
            except NotDistributable as e:
                if mode == "distributed":
                    raise
                distributed, reason = False, e.message
            else:
                reason = f"inputs {compiled.input_bytes} bytes"
            if distributed:
                plan = runner.explain(compiled.sql, compiled.relations)
                operator = uncancellable_in(plan) if mode == "auto" else None
                if operator is None:
                    return [f"Distributed mode: Spark ({reason})", f"Spark SQL: {compiled.sql}", *plan.splitlines()]
                # (as `run_query` does: Spark's tasks would not stop at a cancel)
                return [f"Local mode: DuckDB over the relations read at the pinned version (Spark's {operator} "
                        "does not stop at a cancel)"]
        finally:
            meta.unpin_version(version)
    elif mode == "distributed":
        require_runner(runner)
    return ["Local mode: DuckDB over the relations read at the pinned version"]


def explain(session: Session, inner: exp.Expression) -> StatementResult:
    if isinstance(inner, exp.Select | exp.Union | exp.Values):
        return explain_query(session, inner)
    raise FeatureNotSupported("EXPLAIN supports SELECT and CREATE MATERIALIZED VIEW only, for now")
