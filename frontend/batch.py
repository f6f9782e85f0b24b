"""Local batch execution: SELECTs over tables, MVs and system catalogs at the committed epoch.

Each referenced relation is read from storage at the session's pinned version (MVCC merge of its
SSTs; merged results are cached per set of SSTs, since SSTs are immutable) and registered in an
in-process DuckDB; the statement, parsed by sqlglot as Postgres SQL, gets Postgres' output names,
is rewritten for DuckDB (`frontend.catalog.rewrite`: catalog functions, reg* casts, operators) and
to the registered names, and runs with Postgres' integer division. Every query runs on its own
cursor of one DuckDB database per engine, which holds the catalog macros. This is local mode's
general path; key queries skip it (`frontend.key_query`), and distributed mode runs queries on
Spark instead (`frontend.distributed`).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import cast

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp

from frontend import batch_stream
from frontend.batch_errors import translate_duckdb_error
from frontend.batch_stream import (
    STREAM_MIN_BYTES,
    consumed_twice,
    relation_stream,
    stream_input,
    stream_result,
)
from frontend.batch_types import ResultTypes, conform_result
from frontend.binder import CatalogReader, ident
from frontend.binder.udf import resolve_udfs
from frontend.catalog.composite import register_js_function, register_udfs
from frontend.catalog.float_text import register_float_text
from frontend.catalog.functions import MACROS, SERVER_VERSION, VERSION_TEXT
from frontend.catalog.rewrite import RewriteContext, name_outputs, rewrite
from frontend.catalog.to_char import register_to_char
from frontend.index_lookup import index_scan
from frontend.join_star import ColumnsOf, expand_join_stars
from frontend.pgwire.row_stream import RowStream
from risingspark.catalog import RelationCatalog, RelationKind
from risingspark.errors import (
    QueryCanceled,
    RisingSparkError,
    WrongObjectType,
)
from risingspark.functions import FunctionCatalog
from risingspark.interval import duckdb_ready, from_month_day_nano
from risingspark.storage.cache import BlockCache
from risingspark.storage.desc import HummockVersion
from risingspark.storage.object_store import ObjectStore
from risingspark.storage.reader import StateTableReader
from risingspark.types import DataType, Field, TypeName

logger = logging.getLogger(__name__)

__all__ = ["SERVER_VERSION", "VERSION_TEXT", "BatchEngine", "QueryContext", "normalize", "translate_duckdb_error"]


@dataclass(frozen=True)
class QueryContext:
    """What a batch query may read: the catalog, the pinned version, and session values."""

    catalog: CatalogReader
    version: HummockVersion
    database: str
    user: str
    system_rows: Callable[[str, str], pa.Table]  # (schema, name) -> rows of a system table
    rewrite: RewriteContext | None = None
    stream_min_bytes: int = STREAM_MIN_BYTES  # (`frontend.batch_stream`: ``rw_batch_stream_min_bytes``)
    time_zone: str | None = None  # the session's ``TimeZone`` (an IANA name; None: UTC, the engine's own)


class BatchEngine:
    """Shared by every session of a frontend: the storage reader and the merged-table cache."""

    def __init__(self, store: ObjectStore, cache_bytes: int = 1 << 30) -> None:
        # SST indexes (block first keys, bloom filters, Parquet footers) cached apart, as Hummock's meta
        # cache: a key query reads the index of every SST its key may be in. A quarter of the budget:
        # a 10M-row table's indexes did not fit a sixteenth (32 MB of the default 512 MB), and every
        # point query parsed footers again (130 point queries/s; 630/s with a quarter)
        self.reader = StateTableReader(store, BlockCache(cache_bytes // 4), metas=BlockCache(cache_bytes // 4))
        self._merged = BlockCache(cache_bytes // 2)
        self._db = duckdb.connect(config={"threads": 2})
        # PostgreSQL's integer division and UTC, for every cursor (two SETs per query cost ~0.3 ms)
        self._db.execute("SET GLOBAL integer_division = true")
        self._db.execute("SET GLOBAL TimeZone = 'UTC'")
        self._watcher = _CancelWatcher()
        for macro in MACROS:
            self._db.execute(macro)
        register_udfs(self._db)
        register_to_char(self._db)
        register_float_text(self._db)
        self._functions: set[int] = set()  # the user-defined functions registered (`_register_functions`)
        self._functions_lock = threading.Lock()

    def read_relation(self, rel: RelationCatalog, version: HummockVersion, *, hidden: bool = False) -> pa.Table:
        """Every row of a table or MV at the version's committed epoch (value columns only)."""
        desc = rel.table_desc
        ssts = version.ssts(desc.table_id)
        key = hashlib.sha1("\n".join(sorted(s.path for s in ssts)).encode()).hexdigest()
        table = self._merged.get_or_load(
            f"{desc.table_id}:{key}",
            lambda: self.reader.read(desc, ssts, version.committed_epoch).drop_columns(["_vnode"]))
        if not hidden:
            table = table.select([f.name for f in rel.fields if not f.hidden])
        return table

    def run(self, query: exp.Expression, ctx: QueryContext, *, cancel: threading.Event | None = None,
            full_relations: bool = False, schema_only: bool = False, types: ResultTypes | None = None) -> pa.Table:
        """Run a SELECT (or VALUES) and return its rows, with Postgres' column names. With
        `schema_only` the tables and MVs it reads are empty: what it returns is its result's schema
        (a statement's description, the types distributed mode conforms to), with no relation read.
        `types` are the binder's for the result's columns (`frontend.batch_types.conform`)."""
        result = self._run(query, ctx, cancel, full_relations, schema_only, stream=False, types=types)
        assert isinstance(result, pa.Table)
        return result

    def stream(self, query: exp.Expression, ctx: QueryContext, *, cancel: threading.Event | None = None,
               types: ResultTypes | None = None) -> pa.Table | RowStream:
        """`run`, with big relations read as streams and the result produced while it is sent
        (`frontend.batch_stream`): a table when it is one batch, else a `RowStream`, which holds the
        query's cursor until it is closed."""
        try:
            return self._run(query, ctx, cancel, False, False, stream=True, types=types)
        except _ConsumedTwice:
            return self._run(query, ctx, cancel, False, False, stream=True, stream_inputs=False, types=types)

    def _run(self, query: exp.Expression, ctx: QueryContext, cancel: threading.Event | None, full_relations: bool,
             schema_only: bool, *, stream: bool, stream_inputs: bool = True, types: ResultTypes | None = None
             ) -> pa.Table | RowStream:
        query = query.copy()
        cursor = _Cursor(self._db.cursor(), self._watcher)
        handed = False  # a stream took the cursor: it closes it

        def canceled_or(e: duckdb.Error) -> BaseException:
            if cancel is not None and cancel.is_set():
                return QueryCanceled("canceling statement due to user request")
            return translate_duckdb_error(e)

        streamed = False
        try:
            query, functions = resolve_udfs(name_outputs(query), ctx.catalog)
            self._register_functions(functions.values())
            query = rewrite(query, ctx.rewrite)
            con = cursor.con
            streamed = _register_relations(self, con, query, ctx, full_relations, schema_only,
                                           stream_inputs=stream and stream_inputs)
            query = expand_join_stars(query, _bound_columns(con))
            sql = query.sql(dialect="duckdb")
            logger.debug("batch query on DuckDB: %s", sql)
            if streamed:  # (a session setting of DuckDB's, ~0.15 ms: only for the big queries)
                con.execute(f"SET streaming_buffer_size = '{batch_stream.STREAM_BUFFER}'")
            if ctx.time_zone is not None:  # (a zone name `display_zone` checked: no quote in it)
                con.execute(f"SET TimeZone = '{ctx.time_zone}'")
            cursor.watch(cancel)
            if cancel is not None and cancel.is_set():  # (an interrupt before DuckDB starts is lost)
                raise QueryCanceled("canceling statement due to user request")
            rel = con.sql(sql) if sql.strip() else None
            if rel is None:
                return pa.table({})
            json_columns = {i for i, t in enumerate(rel.types) if str(t) == "JSON"}
            if stream:
                out = stream_result(rel, lambda t: conform_result(normalize(t, json_columns), types), canceled_or, cursor.close, cancel,
                                    con.interrupt)
                handed = isinstance(out, RowStream)
            else:
                out = rel.to_arrow_table()
            if not handed and cursor.close():  # (interrupted as it finished: its rows are dropped)
                raise QueryCanceled("canceling statement due to user request")
            return out if stream else conform_result(normalize(out, json_columns), types)
        except duckdb.Error as e:
            if streamed and consumed_twice(e):
                raise _ConsumedTwice() from None
            raise canceled_or(e) from None
        finally:
            if not handed:
                cursor.close()

    def _register_functions(self, functions: Iterable[FunctionCatalog]) -> None:
        """User-defined functions as DuckDB functions ``rs_udf_<id>``, each once (an id names one
        definition for ever): a row whose call fails fails the query, with its SQLSTATE."""
        with self._functions_lock:
            for fn in functions:
                if fn.id not in self._functions:
                    register_js_function(self._db, fn)
                    self._functions.add(fn.id)

    def close(self) -> None:
        self._db.close()


class _Cursor:
    """A query's DuckDB cursor and its cancel watch, let go together once (`close`), by the query or
    by the stream that took its result."""

    def __init__(self, con: duckdb.DuckDBPyConnection, watcher: _CancelWatcher) -> None:
        self.con = con
        self._watcher = watcher
        self._watch: _Watch | None = None
        self._closed = False
        self._fired = False

    def watch(self, cancel: threading.Event | None) -> None:
        self._watch = self._watcher.watch(self.con, cancel)

    def close(self) -> bool:
        """Stop watching and close the cursor (again: nothing); whether the watch interrupted it."""
        if not self._closed:
            self._closed = True
            self._fired = self._watcher.unwatch(self._watch)
            self.con.close()
        return self._fired


class _Watch:
    """One running query watched for its session's cancel event."""

    def __init__(self, con: duckdb.DuckDBPyConnection, cancel: threading.Event) -> None:
        self.con = con
        self.cancel = cancel
        self.fired = False


class _CancelWatcher:
    """Interrupts DuckDB when a running query's cancel event fires: one thread for every query of
    the frontend, which checks them every 50 ms while any runs (a thread per query cost more than
    a short query itself)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._watched: set[_Watch] = set()
        self._thread: threading.Thread | None = None

    def watch(self, con: duckdb.DuckDBPyConnection, cancel: threading.Event | None) -> _Watch | None:
        if cancel is None:
            return None
        w = _Watch(con, cancel)
        with self._cond:
            self._watched.add(w)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="batch-cancel", daemon=True)
                self._thread.start()
            self._cond.notify()
        return w

    def unwatch(self, w: _Watch | None) -> bool:
        """Stop watching; whether the query was interrupted."""
        if w is None:
            return False
        with self._cond:
            self._watched.discard(w)
            return w.fired

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._watched:
                    self._cond.wait()
                # every tick while a fired query is still watched: DuckDB forgets an interrupt
                # that comes before its query starts
                for w in [w for w in self._watched if w.cancel.is_set()]:
                    w.fired = True
                    try:
                        w.con.interrupt()
                    except Exception:  # noqa: BLE001 - a closed cursor; the watcher must live on
                        logger.debug("interrupting a batch query failed", exc_info=True)
            time.sleep(0.05)


class _ConsumedTwice(Exception):
    """DuckDB scanned a streamed relation twice: the query runs again with tables."""


def _register_relations(engine: BatchEngine, con: duckdb.DuckDBPyConnection, query: exp.Expression,
                        ctx: QueryContext, full: bool, schema_only: bool = False, *,
                        stream_inputs: bool = False) -> bool:
    """Register every relation the query reads with DuckDB, and name them in the query; whether one
    is registered as a stream (`frontend.batch_stream`)."""
    streamed = False
    ctes = {ident(c.args["alias"].this) for c in query.find_all(exp.CTE) if c.args.get("alias")}
    registered: dict[tuple[str, str], str] = {}
    tables = list(query.find_all(exp.Table))
    uses: dict[str, int] = {}  # references by name: an index read stands for a relation read once
    for table in tables:
        if isinstance(table.this, exp.Identifier):
            uses[ident(table.this)] = uses.get(ident(table.this), 0) + 1
    for table in tables:
        if not isinstance(table.this, exp.Identifier):
            if isinstance(table.this, exp.Func | exp.Anonymous):
                continue  # a table function such as generate_series(...)
            continue
        name = ident(table.this)
        if not table.args.get("db") and name in ctes:
            continue
        ref = ctx.catalog.resolve(table)
        key = (ref.schema, ref.name)
        if key not in registered:
            reg = f"__rel_{len(registered)}"
            if ref.relation is not None and ref.relation.kind is RelationKind.VIEW:
                data = _view_rows(engine, ref.relation, ctx, schema_only)
            elif ref.relation is not None and ref.relation.kind is not RelationKind.INDEX and schema_only:
                fields = ref.relation.fields if full else [f for f in ref.relation.fields if not f.hidden]
                data = pa.schema([pa.field(f.name, f.type.to_arrow()) for f in fields]).empty_table()
            elif ref.relation is not None and ref.relation.kind is RelationKind.INDEX:
                raise WrongObjectType(f'"{ref.name}" is an index')
            elif ref.relation is not None:
                point = None
                if not full and uses.get(ident(table.this)) == 1:
                    point = index_scan(engine, ref.relation, table, ctx.catalog.snapshot, ctx.version)
                if point is not None:
                    data = point
                elif (stream_inputs and uses.get(ident(table.this)) == 1 and not ctes
                      and stream_input(ref.relation, ctx.version, ctx.stream_min_bytes)):
                    data = relation_stream(engine.reader, ref.relation, ctx.version, hidden=full,
                                           convert=jsonb_as_json)
                    streamed = True
                else:
                    data = engine.read_relation(ref.relation, ctx.version, hidden=full)
            else:
                data = ctx.system_rows(ref.schema, ref.name)
            if isinstance(data, pa.Table):
                data = duckdb_ready(data)
                if ref.relation is not None:
                    data = jsonb_as_json(data, ref.relation.fields)
            con.register(reg, data)
            registered[key] = reg
        alias = table.args.get("alias")
        table.set("this", exp.to_identifier(registered[key]))
        table.set("db", None)
        table.set("catalog", None)
        if alias is None:
            table.set("alias", exp.TableAlias(this=exp.to_identifier(name)))
    return streamed


def _bound_columns(con: duckdb.DuckDBPyConnection) -> ColumnsOf:
    """A FROM item's column names as DuckDB binds ``SELECT * FROM item`` over the registered relations,
    with the CTEs of the SELECT it is in and of the ones around it (`frontend.join_star`)."""

    def columns_of(item: exp.Expression, select: exp.Select) -> list[str] | None:
        probe = exp.select("*").from_(item.copy())
        ctes: list[exp.Expression] = []
        recursive = False
        node: exp.Expr | None = select
        while node is not None:
            with_ = node.args.get("with") or node.args.get("with_")
            if isinstance(with_, exp.With):
                ctes = [c.copy() for c in with_.expressions] + ctes
                recursive = recursive or bool(with_.args.get("recursive"))
            node = node.parent
        if ctes:
            probe.set("with_" if "with_" in probe.arg_types else "with", exp.With(expressions=ctes, recursive=recursive))
        try:
            return list(con.sql(probe.sql(dialect="duckdb") + " LIMIT 0").columns)
        except duckdb.Error:
            return None

    return columns_of


def _view_rows(engine: BatchEngine, view: RelationCatalog, ctx: QueryContext, schema_only: bool = False) -> pa.Table:
    """A view's rows: its stored (schema-qualified) query run at the same pinned version."""
    from frontend.handlers.views import QUERY

    rows = engine.run(cast(exp.Expression, sqlglot.parse_one(view.extra[QUERY], read="postgres")), ctx,
                      schema_only=schema_only)
    return rows.rename_columns([f.name for f in view.fields][:rows.num_columns])


def _wire_type(t: pa.DataType) -> pa.DataType | None:
    """The Arrow type the wire encodes for a result type (lists of such types included); None when
    values are sent as their text."""
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        if t.value_type in (pa.uint16(), pa.uint32()):  # int2vector, oidvector
            return pa.list_(t.value_type)
        elem = _wire_type(t.value_type)
        return pa.list_(elem) if elem is not None else None
    try:
        dt = DataType.from_arrow(t)
    except RisingSparkError:
        return None
    if dt.name is TypeName.NUMERIC and pa.types.is_decimal(t):
        return t if t.precision <= 38 else pa.decimal128(38, min(t.scale, 38))
    return dt.to_arrow()


def jsonb_as_json(table: pa.Table, fields: tuple[Field, ...]) -> pa.Table:
    """A relation's jsonb columns as Arrow's JSON extension type, which DuckDB reads as ``JSON``."""
    types = {f.name: f.type for f in fields}
    for i, f in enumerate(table.schema):
        t = types.get(f.name)
        if t is not None and t.name is TypeName.JSONB and pa.types.is_string(f.type):
            col = table.column(i)
            table = table.set_column(i, pa.field(f.name, pa.json_()), pa.chunked_array(
                [pa.ExtensionArray.from_storage(pa.json_(), c) for c in col.chunks], pa.json_()))
    return table


def normalize(table: pa.Table, json_columns: set[int] | frozenset[int] = frozenset()) -> pa.Table:
    """Arrow types of a result as the wire knows them (e.g. string views to strings, HUGEINT to
    numeric, lists of those); `json_columns` (DuckDB's ``JSON``, jsonb values) become Arrow's JSON
    extension type, jsonb on the wire."""
    cols, fields = [], []
    for k, (f, col) in enumerate(zip(table.schema, table.columns, strict=True)):
        if k in json_columns and pa.types.is_string(f.type):
            cols.append(pa.chunked_array([pa.ExtensionArray.from_storage(pa.json_(), c) for c in col.chunks],
                                         pa.json_()))
            fields.append(pa.field(f.name, pa.json_()))
            continue
        target = _wire_type(f.type)
        if target is None:
            col = pa.array([None if v is None else str(v) for v in col.to_pylist()], pa.string())
            target = pa.string()
        elif pa.types.is_interval(col.type):  # DuckDB's intervals: the stored struct
            col = from_month_day_nano(col)
        elif col.type != target:
            col = pc.cast(col, target)
        cols.append(col)
        fields.append(pa.field(f.name, target))
    return pa.Table.from_arrays(cols, schema=pa.schema(fields)) if fields else table
