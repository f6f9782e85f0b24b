"""A batch query's result in PostgreSQL's types, where DuckDB's differ.

Local mode runs a SELECT on DuckDB, whose aggregates and arithmetic type their results by DuckDB's
rules: ``sum(int)`` is a HUGEINT (PostgreSQL: bigint), ``avg(int)`` and ``avg(numeric)`` a DOUBLE
(numeric), ``sum(real)`` a DOUBLE (real), a numeric divided by an integer a DOUBLE (numeric). The
same query as a materialized view already has PostgreSQL's types: the binder types it
(`frontend.binder`). So the binder types the batch query too, and each result column whose DuckDB
type is in one of those classes is cast to the binder's type (`conform`):

* an integer or a scale-0 decimal (DuckDB's HUGEINT) to an integer type: ``sum(int)``, a window's
  ``sum(int) OVER (...)``; a value past the type's range is 22003, as in PostgreSQL;
* a DOUBLE to a numeric: ``avg``, numeric division. The double is rounded to the numeric's scale
  first and converted by its shortest text (so ``617283945.56`` stays that, not the binary
  neighbour ``617283945.5599999428``); past ~15 significant digits it keeps a double's precision;
* a DOUBLE to a real: ``sum(real)``.

(Where the query's text shows a ``sum``'s argument is a smallint, an integer or a real, its rewrite
has cast the sum already, `frontend.catalog.sum_types`: the queries the binder does not bind too.)

A column is cast only when the binder's output names equal the result's, in order. (``SELECT *``
over a USING or NATURAL join is expanded in PostgreSQL's order before DuckDB runs it,
`frontend.join_star`; reordering the result would not do: an ``ORDER BY 1`` or a UNION inside the
query would already have used DuckDB's order.) One naming difference is mended here: DuckDB renames a
column of a derived table or CTE whose name an earlier column has (``id`` and ``id`` become ``id``
and ``id_1``), and a star over it keeps the new name; PostgreSQL keeps both ``id``. Where the
result's names are the binder's but for such suffixes, they are the binder's. Any other difference is left as DuckDB
gives it, and so is every column of a query the binder does not bind (catalog tables, features only
batch queries have): the types then are DuckDB's, as before. A statement's types are bound once per
text and catalog version (`frontend.session.Session.statement_types`); a prepared statement's from
the same text its Describe binds (parameters as typed NULLs), so its rows always come in the types
its Describe announced. Top-level ORDER BY, LIMIT and OFFSET are left out of the binding: they do not
change the output's types, and a LIMIT parameter (a NULL) does not bind.
RisingWave types a batch query with the same binder as a streaming one, so its two modes cannot
differ; this gets that for the classes above.

Last, the string columns PostgreSQL describes as text or regtype are labelled with that OID
(`frontend.output_oids`, found once per statement with the binder's types: `ResultTypes`,
`conform_result`), whether the binder binds the query or not.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from frontend.binder import CatalogReader, QueryBinder
from frontend.output_oids import OutputOids, output_oids, with_oids
from risingspark.errors import NumericValueOutOfRange, RisingSparkError
from risingspark.types import Field

logger = logging.getLogger(__name__)

Wanted = tuple[tuple[str, pa.DataType | None], ...]  # the binder's output columns: (name, type)


class ResultTypes(NamedTuple):
    """What a client's batch result is conformed to (`conform_result`): the binder's output columns (None:
    it does not bind the query) and the OIDs of its text outputs (`frontend.output_oids`)."""

    bound: Wanted | None
    oids: OutputOids | None


_INT_NAMES = {pa.int16(): "smallint", pa.int32(): "integer", pa.int64(): "bigint"}


def bound_sql_types(reader: CatalogReader, query: exp.Expression) -> tuple[Field, ...] | None:
    """The binder's visible output columns of the query (as a materialized view of it would have
    them), or None when it does not bind it."""
    try:
        bound = QueryBinder(reader).query(query.copy())
        return tuple(f for f in bound.fields if not f.hidden)
    except Exception as e:  # what a view cannot do (a batch query may), or the binder's own failure
        logger.debug("batch query keeps DuckDB's types: %s", e)
    return None


def bound_types(reader: CatalogReader, query: exp.Expression) -> Wanted | None:
    """`bound_sql_types` of the query without its top-level ORDER BY, LIMIT and OFFSET, as Arrow
    types."""
    query = query.copy()
    if isinstance(query, exp.Select | exp.Union):
        for clause in ("order", "limit", "offset"):
            query.set(clause, None)
    fields = bound_sql_types(reader, query)
    try:
        return None if fields is None else tuple((f.name, f.type.to_arrow()) for f in fields)
    except RisingSparkError:
        return None


def result_types(reader: CatalogReader, query: exp.Expression) -> ResultTypes:
    """`bound_types` and `frontend.output_oids.output_oids` of a client's query."""
    try:
        oids = output_oids(query)
    except Exception as e:  # (a shape the classes do not know: the result's own types)
        logger.debug("batch query keeps its string types: %s", e)
        oids = None
    return ResultTypes(bound_types(reader, query), oids)


def conform_result(table: pa.Table, types: ResultTypes | None) -> pa.Table:
    """`table` (a normalized result) conformed to `types`: `conform`, then labelled with its text
    outputs' OIDs (`frontend.output_oids.with_oids`)."""
    if types is None:
        return table
    return with_oids(conform(table, types.bound), types.oids)


def conform(table: pa.Table, wanted: Wanted | None) -> pa.Table:
    """`table` (a normalized result) with the columns `wanted` names cast to it, where the pair of
    types is one of the classes the module's docstring lists; unchanged when the names differ."""
    if wanted is None:
        return table
    names = [name for name, _ in wanted]
    if names != table.column_names:
        if not _renamed_repeats(table.column_names, names):
            return table
        table = table.rename_columns(names)
    fields, cols, changed = [], [], False
    for f, col, (_, want) in zip(table.schema, table.columns, wanted, strict=True):
        target = want if want is not None and _conformable(f.type, want) else None
        if target is not None:
            col = _cast(col, target)
            f = pa.field(f.name, target)
            changed = True
        fields.append(f)
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=pa.schema(fields)) if changed else table


def _renamed_repeats(got: list[str], want: list[str]) -> bool:
    """Whether `got` is `want` but for DuckDB's suffixes on repeated names (``id_1`` for a second
    ``id``; see the module doc).

    >>> _renamed_repeats(["id", "v", "id_1", "id_2"], ["id", "v", "id", "id"]), _renamed_repeats(["id", "x_1"], ["id", "x"])
    (True, False)
    """
    if len(got) != len(want):
        return False
    seen: set[str] = set()
    for g, w in zip(got, want, strict=True):
        if g != w and not (w in seen and g.startswith(w + "_") and g[len(w) + 1:].isdigit()):
            return False
        seen.add(w)
    return True


def _conformable(got: pa.DataType, want: pa.DataType) -> bool:
    if got == want:
        return False
    if want in _INT_NAMES:
        return pa.types.is_integer(got) or (pa.types.is_decimal(got) and got.scale == 0)
    if pa.types.is_decimal(want):
        return pa.types.is_float64(got)
    if pa.types.is_float32(want):
        return pa.types.is_float64(got)
    return False


def _cast(col: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    try:
        if pa.types.is_decimal(target):  # (rounded, then by its shortest text: not the double's binary digits)
            col = pc.cast(pc.round(col, ndigits=target.scale, round_mode="half_towards_infinity"), pa.string())
        return pc.cast(col, target, safe=True)
    except pa.ArrowInvalid:
        if target in _INT_NAMES:
            raise NumericValueOutOfRange(f"{_INT_NAMES[target]} out of range") from None
        p, s = target.precision, target.scale
        raise NumericValueOutOfRange(f"numeric field overflow: a field with precision {p}, scale {s} must round "
                                     f"to an absolute value less than 10^{p - s}") from None
