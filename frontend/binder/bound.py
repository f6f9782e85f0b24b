"""Query blocks of a materialized view: FROM (relations, subqueries, CTEs, time windows, joins),
WHERE (with IN / EXISTS subqueries as semi / anti joins), the select list, GROUP BY, HAVING,
ORDER BY ... LIMIT, set operations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlglot import exp

from frontend.binder.relation import ident
from frontend.expr import (
    BoundExpr,
    InputRef,
)
from frontend.temporal_filter import TemporalCond
from risingspark.catalog import RelationCatalog
from risingspark.errors import (
    AmbiguousColumn,
    FeatureNotSupported,
    UndefinedColumn,
    UndefinedTable,
)
from risingspark.stream_plan import CHANGELOG_FIELDS
from risingspark.types import (
    Field,
)

if TYPE_CHECKING:
    from frontend.binder.window import OverWindow


@dataclass(frozen=True)
class SelectItem:
    expr: BoundExpr
    name: str


@dataclass(frozen=True)
class BoundScan:
    """A relation in FROM. Its columns are the FROM's columns ``offset .. offset + len(fields)``;
    in a query with several relations they are named ``alias.column`` to stay unique."""

    relation: RelationCatalog
    alias: str
    offset: int
    fields: tuple[Field, ...]
    filter: BoundExpr | None = None  # conditions of WHERE or ON over this item alone, applied first
    changelog: bool = False  # the relation's change log (`risingspark.stream_plan.StreamChangeLog`), not its rows

    @property
    def columns(self) -> tuple[Field, ...]:
        """The columns as the query names them (unqualified)."""
        if self.changelog:
            return self.relation.fields + CHANGELOG_FIELDS
        return self.relation.fields


@dataclass(frozen=True)
class BoundSubquery:
    """A query in FROM: a subquery, a CTE reference, or the right side of a semi join. Its fields
    are the query's output (visible columns, then its hidden stream key columns)."""

    query: BoundQuery
    alias: str
    offset: int
    fields: tuple[Field, ...]
    filter: BoundExpr | None = None  # conditions of WHERE or ON over this item alone, applied first

    @property
    def columns(self) -> tuple[Field, ...]:
        return self.query.fields


@dataclass(frozen=True)
class BoundJoin:
    """``left JOIN right``: the equality conjuncts of ON as key pairs (left key over the left
    side's columns, right key over the right's), anything else as a residual condition. A pair
    marked in `null_safe` is ``IS NOT DISTINCT FROM`` (NULL matches NULL); no pair at all is a cross
    join (every row in one group).

    ``SEMI`` / ``ANTI`` (``IN`` / ``EXISTS`` / ``NOT EXISTS`` in WHERE) output the left side's
    columns only: a left row once if some right row matches its key (or if none does). ``DYNAMIC``
    (a dynamic filter): the left rows for which `residual` holds against the right side's one row,
    whose value is its only column (`frontend.binder.subquery`)."""

    left: BoundFrom
    right: BoundFrom
    kind: str  # INNER, LEFT, RIGHT, FULL, SEMI, ANTI
    left_keys: tuple[InputRef, ...]
    right_keys: tuple[InputRef, ...]
    residual: BoundExpr | None
    null_safe: tuple[bool, ...] = ()

    def is_null_safe(self, i: int) -> bool:
        return i < len(self.null_safe) and self.null_safe[i]

    @property
    def fields(self) -> tuple[Field, ...]:
        if self.kind in ("SEMI", "ANTI", "DYNAMIC"):
            return self.left.fields
        return self.left.fields + self.right.fields


BoundFrom = BoundScan | BoundSubquery | BoundJoin


def scans_of(src: BoundFrom) -> list[BoundScan]:
    """The relations a FROM tree reads, subqueries included, in plan order."""
    if isinstance(src, BoundScan):
        return [src]
    if isinstance(src, BoundSubquery):
        return [s for f in query_froms(src.query) for s in scans_of(f)]
    return scans_of(src.left) + scans_of(src.right)


def reads_changelog(q: BoundQuery) -> bool:
    """Whether a query reads some relation's change log (``CHANGELOG FROM``)."""
    return any(s.changelog for f in query_froms(q) for s in scans_of(f))


def query_froms(q: BoundQuery) -> list[BoundFrom]:
    if isinstance(q, BoundSetOp):
        return query_froms(q.left) + query_froms(q.right)
    return [q.source]


@dataclass(frozen=True)
class OrderItem:
    """An ORDER BY item over the select list's output columns."""

    index: int
    descending: bool
    nulls_first: bool


@dataclass(frozen=True)
class RowNumber:
    """``ROW_NUMBER() OVER (PARTITION BY ... ORDER BY ...)``, the select item at `index` (a group
    TopN; a filter ``rn <= n`` over it in the outer query becomes `limit`, as RisingWave plans it)."""

    index: int
    partition_by: tuple[BoundExpr, ...]
    order_by: tuple[tuple[BoundExpr, bool, bool], ...]  # (expression, descending, nulls first)
    limit: int | None = None


@dataclass(frozen=True)
class BoundStreamSelect:
    """A query block: relations (joined), a filter, projections, optional grouping, DISTINCT, and
    ``ORDER BY ... LIMIT`` (a TopN). ``hidden`` select items are columns ORDER BY needs that the
    select list does not show."""

    source: BoundFrom
    items: tuple[SelectItem, ...]
    where: BoundExpr | None
    group_by: tuple[BoundExpr, ...] | None  # () for a global aggregate
    having: BoundExpr | None = None
    distinct: bool = False
    order_by: tuple[OrderItem, ...] = ()
    limit: int | None = None
    offset: int = 0
    hidden: int = 0  # trailing items that are not output columns
    row_number: RowNumber | None = None
    temporal: tuple[TemporalCond, ...] = ()  # temporal filters of WHERE, applied after `where`
    over_window: OverWindow | None = None  # window functions (their items are placeholders)

    @property
    def relation(self) -> RelationCatalog:
        """The first relation the query reads."""
        return self.relations[0]

    @property
    def relations(self) -> list[RelationCatalog]:
        return [s.relation for s in scans_of(self.source)]

    @property
    def fields(self) -> tuple[Field, ...]:
        return tuple(Field(i.name, i.expr.type) for i in self.items[:len(self.items) - self.hidden])


@dataclass(frozen=True)
class BoundSetOp:
    """``left UNION [ALL] right``; both sides' columns already cast to the common types."""

    left: BoundQuery
    right: BoundQuery
    all: bool
    fields: tuple[Field, ...]

    @property
    def relations(self) -> list[RelationCatalog]:
        return [s.relation for f in query_froms(self) for s in scans_of(f)]

    @property
    def relation(self) -> RelationCatalog:
        return self.relations[0]


BoundQuery = BoundStreamSelect | BoundSetOp
FromItem = BoundScan | BoundSubquery


class Scope:
    """Columns visible to expressions: those of the FROM items, by alias (or name) and column.
    `outer`: the enclosing query's scope, for correlated subqueries.

    A join ``USING (x)`` (or NATURAL) merges its ``x`` columns: `merged` maps the name to the item
    and column an unqualified ``x`` means (None where no single column holds it: a FULL join's,
    which is ``coalesce(left.x, right.x)`` — `full` maps its name to the (item, column) of both
    sides, as PostgreSQL's ``buildMergedJoinVar``). `star_order`, when set, is what ``SELECT *``
    lists (item, column) — the merged columns first, as PostgreSQL; a FULL join's merged column is
    listed at its left side's place."""

    def __init__(self, scans: list[FromItem], outer: Scope | None = None,
                 merged: dict[str, tuple[int, int] | None] | None = None,
                 star_order: list[tuple[int, int]] | None = None,
                 full: dict[str, tuple[tuple[int, int], tuple[int, int]]] | None = None,
                 merged_from: dict[str, frozenset[int]] | None = None) -> None:
        self.scans = scans
        self.outer = outer
        self.merged = merged or {}
        self.star_order = star_order
        self.full = full or {}
        self.merged_from = merged_from or {}  # merged name -> the items of its comma-separated FROM item

    def column(self, col: exp.Column) -> BoundExpr:
        name = ident(col.this)
        table = ident(col.args.get("table")) if col.args.get("table") else None
        if table is None and name in self.merged:
            chain = self.merged_from.get(name)
            if chain is not None and any(i not in chain and any(f.name == name for f in s.columns)
                                         for i, s in enumerate(self.scans)):
                raise AmbiguousColumn(f'column reference "{name}" is ambiguous')
            where = self.merged[name]
            if where is None:
                return self._coalesced(name)
            return self._ref(*where)
        candidates = [s for s in self.scans if table is None or table == s.alias]
        if table is not None and not candidates:
            raise UndefinedTable(f'missing FROM-clause entry for table "{table}"')
        matches = [(s, i) for s in candidates for i, f in enumerate(s.columns) if f.name == name]
        if not matches:
            raise UndefinedColumn(f'column "{name}" does not exist' if table is None else
                                  f'column {table}.{name} does not exist')
        if len(matches) > 1:
            raise AmbiguousColumn(f'column reference "{name}" is ambiguous')
        s, i = matches[0]
        f = s.fields[i]
        return InputRef(s.offset + i, f.name, f.type)

    def with_item(self, item: FromItem) -> Scope:
        """This scope with one more item (a subquery joined to the FROM)."""
        return Scope([*self.scans, item], self.outer, self.merged, self.star_order, self.full, self.merged_from)

    def _ref(self, item: int, column: int) -> InputRef:
        s = self.scans[item]
        return InputRef(s.offset + column, s.fields[column].name, s.fields[column].type)

    def _coalesced(self, name: str) -> BoundExpr:
        """A FULL join's merged column: ``coalesce(left, right)`` in their common type."""
        from frontend.binder.coercion import coerce, common_of
        from frontend.expr import FuncCall

        if name not in self.full:
            raise FeatureNotSupported(f'the merged column "{name}" of a FULL JOIN USING / NATURAL FULL JOIN '
                                      f"in a materialized view is not supported here; qualify it")
        left, right = (self._ref(*where) for where in self.full[name])
        t = common_of([left, right])
        return FuncCall("coalesce", (coerce(left, t), coerce(right, t)), t, "coalesce")

    def star(self, table: str | None) -> list[SelectItem]:
        if table is None and self.star_order is not None:
            out = []
            for i, c in self.star_order:
                column = self.scans[i].columns[c]
                if column.hidden:
                    continue
                full = self.full.get(column.name)
                ref = self._coalesced(column.name) if full is not None and full[0] == (i, c) else self._ref(i, c)
                out.append(SelectItem(ref, column.name))
            return out
        scans = [s for s in self.scans if table is None or s.alias == table]
        if table is not None and not scans:
            raise UndefinedTable(f'missing FROM-clause entry for table "{table}"')
        return [SelectItem(InputRef(s.offset + i, s.fields[i].name, f.type), f.name)
                for s in scans for i, f in enumerate(s.columns) if not f.hidden]
