"""Query modes: where a batch query runs (RisingWave's ``query_mode``).

* **local**: in the frontend, at its pinned version: a key query by the storage's key lookup
  (`frontend.key_query`), anything else by DuckDB over the relations read whole (`frontend.batch`).
* **distributed**: as Spark jobs of a compute node (`compute.batch_query`): every relation is read
  and merged at the pinned epoch by Spark tasks, a vnode range each, and the query's joins and
  aggregations run as Spark stages, so a query over relations bigger than the frontend's memory runs
  at all.
* **auto** (the default): distributed for a query with a join or an aggregation whose relations hold
  at least `DISTRIBUTED_MIN_BYTES` in their SSTs, when a compute node can run it; local otherwise.
  RisingWave's auto mode likewise sends point queries to local execution and the rest to distributed.

A query runs distributed only if every relation it reads is a user table or materialized view (no
system catalog, view or table function) and Spark can analyze it; in auto mode anything else runs
locally, with ``query_mode = distributed`` it fails with 0A000 naming the reason.

Compiling for Spark (`compile_for_spark`): the relations are renamed to the temporary views the
compute node registers, the columns are qualified and typed with the relations' schemas (sqlglot's
``qualify`` and ``annotate_types``), integer ``/`` becomes Spark's ``DIV`` cast to PostgreSQL's
result type (PostgreSQL divides integers as integers, Spark as doubles; sqlglot alone would truncate
the double quotient, inexact past 2**53), a sum of bigints is a sum of numerics (as PostgreSQL's), and
a cast to an integer rounds (`_rounding_casts`), and the tree is written in Spark's dialect (sqlglot
also spells out PostgreSQL's NULL ordering). Only
functions whose Spark meaning is PostgreSQL's are sent (`_SAME_FUNCTIONS`); Spark runs in ANSI
mode: overflow and division by zero fail, as in PostgreSQL. The result is cast to the types the
local mode gives the same query (`Session.result_schema`), so a statement is described the same
whichever mode runs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import pyarrow as pa
from sqlglot import exp
from sqlglot.errors import OptimizeError
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify

from frontend.binder import CatalogReader, ident
from frontend.catalog.rewrite import name_outputs
from frontend.parser import DIALECT
from risingspark.batch_query import BatchRelation, NotDistributable
from risingspark.catalog import RelationCatalog, RelationKind
from risingspark.errors import FeatureNotSupported

DISTRIBUTED_MIN_BYTES = 256 << 20

_INTEGERS = {exp.DataType.Type.TINYINT, exp.DataType.Type.SMALLINT, exp.DataType.Type.INT, exp.DataType.Type.BIGINT}


class DistributedRunner(Protocol):
    """A compute node's Spark application, as the frontend sees it (`compute.batch_query`)."""

    def run(self, sql: str, relations: list[BatchRelation], cancel=None, cancellable: bool = False,
            time_zone: str | None = None) -> pa.Table: ...

    def explain(self, sql: str, relations: list[BatchRelation]) -> str: ...


@dataclass(frozen=True)
class SparkQuery:
    sql: str
    relations: list[BatchRelation]
    input_bytes: int


def is_heavy(query: exp.Expression) -> bool:
    """A join or an aggregation: what auto mode sends to Spark when its inputs are big."""
    return any(isinstance(n, exp.Join | exp.Group | exp.AggFunc) for n in query.walk())


def choose_distributed(mode: str, query: exp.Expression, input_bytes: int, runner_available: bool) -> bool:
    """Whether a query runs distributed (see the module doc); `mode` is ``query_mode``'s value.

    >>> q = exp.select("count(*)").from_("t")
    >>> [choose_distributed("auto", q, n, True) for n in (1 << 20, 1 << 30)], choose_distributed("auto", q, 1 << 30, False)
    ([False, True], False)
    """
    if mode == "local":
        return False
    if mode == "distributed":
        if not runner_available:
            require_runner(None)
        return True
    return runner_available and input_bytes >= DISTRIBUTED_MIN_BYTES and is_heavy(query)


def require_runner(runner: DistributedRunner | None) -> DistributedRunner:
    """The runner of ``query_mode = distributed``; 0A000 when the frontend has none."""
    if runner is None:
        raise FeatureNotSupported("distributed query mode needs a compute node in the frontend's process (the "
                                  "playground); this frontend runs queries in local mode only")
    return runner


def _read_relations(query: exp.Expression, catalog: CatalogReader) -> list[tuple[exp.Table, RelationCatalog]]:
    """Each FROM item of the query with the table or MV it reads (CTE names skipped); raises
    NotDistributable for anything Spark is not given."""
    ctes = {ident(c.args["alias"].this) for c in query.find_all(exp.CTE) if c.args.get("alias")}
    out = []
    for table in query.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            raise NotDistributable(f"distributed query mode does not run table functions: {table.sql()}")
        if not table.args.get("db") and ident(table.this) in ctes:
            continue
        ref = catalog.resolve(table)
        rel = ref.relation
        if rel is None:
            raise NotDistributable(f'distributed query mode does not read system tables: "{ref.schema}.{ref.name}"')
        if rel.kind not in (RelationKind.TABLE, RelationKind.MATERIALIZED_VIEW) or rel.is_creating:
            raise NotDistributable(f'distributed query mode reads tables and materialized views only: "{rel.name}"')
        out.append((table, rel))
    return out


def input_bytes(query: exp.Expression, catalog: CatalogReader, version) -> int:
    """The bytes of the SSTs of the relations the query reads (each once) at `version`: what auto mode
    weighs before compiling the query for Spark."""
    relations = {rel.id: rel for _, rel in _read_relations(query, catalog)}
    return sum(s.size_bytes for rel in relations.values() for s in version.ssts(rel.table_desc.table_id))


# Functions whose Spark meaning is PostgreSQL's (for the types the frontend gives them); a query
# calling any other (current_user, version(), substring, round on doubles, concat with NULLs, date
# functions with time zones...) is not distributable: auto mode runs it locally.
_SAME_FUNCTIONS: tuple[type, ...] = (
    exp.Count, exp.Sum, exp.Min, exp.Max, exp.Avg, exp.Cast, exp.Coalesce, exp.Case, exp.If, exp.Nullif,
    exp.Abs, exp.Lower, exp.Upper, exp.Length, exp.Greatest, exp.Least,
    exp.Connector, exp.Exists,  # (AND, OR and EXISTS are functions to sqlglot)
)


def _check_functions(query: exp.Expression) -> None:
    for node in query.walk():
        if isinstance(node, exp.Window | exp.Interval) or (isinstance(node, exp.Func) and
                                                           not isinstance(node, _SAME_FUNCTIONS)):
            name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()) if isinstance(node, exp.Func) \
                else type(node).__name__
            name = name.lower()
            raise NotDistributable(f"distributed query mode does not run {name}: its Spark meaning is not "
                                   "PostgreSQL's")


def _rounding_casts(query: exp.Expression) -> None:
    """A cast to an integer rounds, as PostgreSQL's: a numeric half away from zero (Spark's ``round``
    of a decimal), a double or real half to even (``rint``); Spark's cast truncates. The operand's type
    is asked of Spark (``typeof``, folded to a constant when Spark plans the query) rather than of
    sqlglot, which types a decimal literal (``amount + 0.5``) or ``avg`` of a numeric as a double. Each
    branch casts on its own, so a numeric past 2**53 does not go through a double. Spark's ``avg`` of
    integers is a double where PostgreSQL's is a numeric: it rounds as a numeric. Inner casts are
    rewritten first (an outer one copies its operand)."""
    for cast in reversed(list(query.find_all(exp.Cast))):
        to, operand = cast.to, cast.this
        if to.this not in _INTEGERS or (operand.type is not None and operand.type.this in _INTEGERS):
            continue
        inner = operand.unnest()
        if isinstance(inner, exp.Avg) and inner.this.type is not None and inner.this.type.this in _INTEGERS:
            cast.replace(exp.Cast(this=exp.Anonymous(this="round", expressions=[operand.copy()]), to=to.copy()))
            continue
        kind = exp.Anonymous(this="typeof", expressions=[operand.copy()])
        decimal = exp.Like(this=kind.copy(), expression=exp.Literal.string("decimal%"))
        floating = exp.In(this=kind, expressions=[exp.Literal.string("double"), exp.Literal.string("float")])
        rounded = [exp.Cast(this=exp.Anonymous(this=fn, expressions=[operand.copy()]), to=to.copy())
                   for fn in ("round", "rint")]
        cast.replace(exp.Case(ifs=[exp.If(this=decimal, true=rounded[0]), exp.If(this=floating, true=rounded[1])],
                              default=cast.copy()))


def compile_for_spark(query: exp.Expression, catalog: CatalogReader, version) -> SparkQuery:
    """The query in Spark SQL and the relations it reads at the pinned `version`; raises
    NotDistributable for a query that reads anything but tables and materialized views."""
    query = name_outputs(query.copy())
    relations: dict[int, BatchRelation] = {}
    schema: dict[str, object] = {}
    for table, rel in _read_relations(query, catalog):
        name = ident(table.this)
        if rel.id not in relations:
            visible = [f for f in rel.fields if not f.hidden]
            desc = rel.table_desc
            view = f"__rel_{len(relations)}"
            relations[rel.id] = BatchRelation(view, desc, tuple(version.ssts(desc.table_id)), version.committed_epoch,
                                              tuple(f.name for f in visible))
            schema[view] = {f.name: f.type.to_duckdb() for f in visible}
        alias = table.args.get("alias")
        table.set("this", exp.to_identifier(relations[rel.id].view))
        table.set("db", None)
        table.set("catalog", None)
        if alias is None:
            table.set("alias", exp.TableAlias(this=exp.to_identifier(name)))
    try:
        typed = annotate_types(qualify(query, schema=schema, dialect=DIALECT, quote_identifiers=True,
                                       validate_qualify_columns=False), schema=schema)
    except OptimizeError as e:
        raise NotDistributable(f"distributed query mode cannot run this query: {e}") from None
    _check_functions(typed)
    _rounding_casts(typed)
    for div in list(typed.find_all(exp.Div)):
        if div.this.type is not None and div.expression.type is not None and \
                div.this.type.this in _INTEGERS and div.expression.type.this in _INTEGERS:
            # PostgreSQL's type: int4 / int4 is int4 (DIV gives Spark's bigint)
            div.replace(exp.Cast(this=exp.IntDiv(this=div.this.copy(), expression=div.expression.copy()),
                                 to=div.type.copy() if div.type is not None else exp.DataType.build("BIGINT")))
    for total in list(typed.find_all(exp.Sum)):
        arg = total.this
        if arg.type is not None and arg.type.this == exp.DataType.Type.BIGINT:
            # PostgreSQL sums bigints as numeric (Spark as bigint, overflowing past 2**63)
            arg.replace(exp.Cast(this=arg.copy(), to=exp.DataType.build("DECIMAL(38, 0)")))
    for cast_type in list(typed.find_all(exp.DataType)):
        if cast_type.this == exp.DataType.Type.TIMESTAMP:
            # PostgreSQL's timestamp is Spark's TIMESTAMP_NTZ (Spark's TIMESTAMP is a timestamptz, which
            # the session's zone would shift: `compute.batch_query`)
            cast_type.set("this", exp.DataType.Type.TIMESTAMPNTZ)
    input_bytes = sum(s.size_bytes for r in relations.values() for s in r.ssts)
    return SparkQuery(typed.sql(dialect="spark"), list(relations.values()), input_bytes)
