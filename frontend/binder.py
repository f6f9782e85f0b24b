"""The binder: resolves names against a catalog snapshot and types expressions as PostgreSQL does.

It binds the queries of materialized views (which the stream planner turns into a stream plan) and
resolves relation names for every other statement. What a streaming query cannot do yet fails here,
at CREATE, with SQLSTATE 0A000 naming the feature — never later with a wrong answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import sqlglot
from sqlglot import exp

from frontend.expr import (
    AggCallExpr,
    BinaryOp,
    BoundExpr,
    Case,
    Cast,
    Extract,
    FuncCall,
    InList,
    InputRef,
    Like,
    Literal,
    UnaryOp,
    WindowBound,
    contains_agg,
)
from frontend.interval import fixed_interval_micros
from frontend.temporal_filter import TemporalCond, match_temporal, split_between, unsupported_column
from meta.catalog import CatalogSnapshot
from risingspark.aggregate import agg_return_type
from risingspark.catalog import DEFAULT_SCHEMA, RelationCatalog, RelationKind
from risingspark.errors import (
    AmbiguousColumn,
    DatatypeMismatch,
    DuplicateObject,
    FeatureNotSupported,
    GroupingError,
    InvalidColumnReference,
    InvalidParameterValue,
    InvalidSchemaName,
    SyntaxError_,
    UndefinedColumn,
    UndefinedFunction,
    UndefinedTable,
    WrongObjectType,
)
from risingspark.types import (
    BOOL,
    FLOAT4,
    FLOAT8,
    INT2,
    INT4,
    INT8,
    NUMERIC,
    TIMESTAMP,
    VARCHAR,
    DataType,
    Field,
    TypeName,
)

SYSTEM_SCHEMAS = ("rw_catalog", "pg_catalog", "information_schema")


def ident(node: exp.Expression | str | None) -> str:
    """An identifier as Postgres sees it: unquoted names fold to lower case."""
    if node is None:
        return ""
    if isinstance(node, str):
        return node.lower()
    if isinstance(node, exp.Identifier):
        return node.name if node.quoted else node.name.lower()
    return node.name.lower()


@dataclass(frozen=True)
class RelationRef:
    """A resolved FROM item: a user relation (`relation`) or a system table (`schema`.`name`)."""

    schema: str
    name: str
    relation: RelationCatalog | None


class CatalogReader:
    """Resolves relation names for one session (database and search path)."""

    def __init__(self, snapshot: CatalogSnapshot, database: str, search_path: list[str]) -> None:
        self.snapshot = snapshot
        db = snapshot.database(database)
        if db is None:
            raise UndefinedTable(f'database "{database}" does not exist')
        self.database = db
        self.search_path = [s for s in search_path if s and s != "$user"] or [DEFAULT_SCHEMA]

    def schema_id(self, name: str) -> int:
        s = self.snapshot.schema(self.database.id, name)
        if s is None:
            raise InvalidSchemaName(f'schema "{name}" does not exist')
        return s.id

    def current_schema_id(self) -> int:
        for name in self.search_path:
            s = self.snapshot.schema(self.database.id, name)
            if s is not None:
                return s.id
        return self.schema_id(DEFAULT_SCHEMA)

    def lookup(self, name: str, schema: str | None = None) -> RelationRef | None:
        if schema in SYSTEM_SCHEMAS:
            return RelationRef(schema, name, None)
        schemas = [schema] if schema else self.search_path
        for s in schemas:
            sc = self.snapshot.schema(self.database.id, s)
            if sc is None:
                if schema:
                    raise InvalidSchemaName(f'schema "{schema}" does not exist')
                continue
            rel = self.snapshot.relation(sc.id, name)
            if rel is not None:
                return RelationRef(s, name, rel)
        if schema is None:
            from frontend.catalog.system import find_system_table

            sys_schema = find_system_table(name)
            if sys_schema is not None:
                return RelationRef(sys_schema, name, None)
        return None

    def resolve(self, table: exp.Table) -> RelationRef:
        name, schema = ident(table.this), ident(table.args.get("db")) or None
        catalog = ident(table.args.get("catalog")) or None
        if catalog and catalog != self.database.name:
            raise FeatureNotSupported(f"cross-database references are not implemented: {table.sql()}")
        ref = self.lookup(name, schema)
        if ref is None:
            raise UndefinedTable(f'relation "{name if not schema else schema + "." + name}" does not exist')
        return ref

    def resolve_user(self, table: exp.Table) -> RelationCatalog:
        ref = self.resolve(table)
        if ref.relation is None:
            raise FeatureNotSupported(f'cannot modify or stream from system table "{ref.schema}.{ref.name}"')
        return ref.relation


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

    @property
    def columns(self) -> tuple[Field, ...]:
        """The columns as the query names them (unqualified)."""
        return self.relation.fields


@dataclass(frozen=True)
class BoundSubquery:
    """A query in FROM: a subquery, a CTE reference, or the right side of a semi join. Its fields
    are the query's output (visible columns, then its hidden stream key columns)."""

    query: BoundQuery
    alias: str
    offset: int
    fields: tuple[Field, ...]

    @property
    def columns(self) -> tuple[Field, ...]:
        return self.query.fields


@dataclass(frozen=True)
class BoundJoin:
    """``left JOIN right``: the equality conjuncts of ON as key pairs (left key over the left
    side's columns, right key over the right's), anything else as a residual condition.

    ``SEMI`` / ``ANTI`` (``IN`` / ``EXISTS`` / ``NOT EXISTS`` in WHERE) output the left side's
    columns only: a left row once if some right row matches its key (or if none does)."""

    left: BoundFrom
    right: BoundScan | BoundSubquery
    kind: str  # INNER, LEFT, RIGHT, FULL, SEMI, ANTI
    left_keys: tuple[InputRef, ...]
    right_keys: tuple[InputRef, ...]
    residual: BoundExpr | None

    @property
    def fields(self) -> tuple[Field, ...]:
        if self.kind in ("SEMI", "ANTI"):
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
    `outer`: the enclosing query's scope, for correlated subqueries (`outer_refs` records the
    outer columns the query used)."""

    def __init__(self, scans: list[FromItem], outer: Scope | None = None) -> None:
        self.scans = scans
        self.outer = outer

    def column(self, col: exp.Column) -> InputRef:
        name = ident(col.this)
        table = ident(col.args.get("table")) if col.args.get("table") else None
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

    def star(self, table: str | None) -> list[SelectItem]:
        scans = [s for s in self.scans if table is None or s.alias == table]
        if table is not None and not scans:
            raise UndefinedTable(f'missing FROM-clause entry for table "{table}"')
        return [SelectItem(InputRef(s.offset + i, s.fields[i].name, f.type), f.name)
                for s in scans for i, f in enumerate(s.columns) if not f.hidden]


_JOIN_KINDS = {None: "INNER", "LEFT": "LEFT", "RIGHT": "RIGHT", "FULL": "FULL"}


class QueryBinder:
    """Binds a materialized view's query: query blocks, set operations, subqueries in FROM, CTEs
    (inlined at each reference, as RisingWave's binder does), and ``IN`` / ``EXISTS`` subqueries
    in WHERE as semi / anti joins."""

    def __init__(self, catalog: CatalogReader) -> None:
        self.catalog = catalog
        self.ctes: list[dict[str, exp.Expression]] = []

    def query(self, node: exp.Expression) -> BoundQuery:
        with_ = node.args.get("with") or node.args.get("with_")
        self.ctes.append({})
        try:
            if with_ is not None and with_.args.get("recursive"):
                raise FeatureNotSupported("WITH RECURSIVE in a materialized view is not supported")
            for cte in with_.expressions if with_ is not None else []:
                name = ident(cte.args["alias"].this)
                body = cte.this
                self.query(body)  # bind now: errors point at the CTE, not at its use
                self.ctes[-1][name] = cte
            return self._query_body(node)
        finally:
            self.ctes.pop()

    def _query_body(self, node: exp.Expression) -> BoundQuery:
        if isinstance(node, exp.Subquery):
            return self.query(node.this)
        if isinstance(node, exp.Union):
            for arg, feature in (("order", "ORDER BY"), ("limit", "LIMIT"), ("offset", "OFFSET")):
                if node.args.get(arg):
                    raise FeatureNotSupported(f"{feature} on a UNION in a materialized view is not supported yet; "
                                              f"put the UNION in a subquery")
            left, right = self.query(node.this), self.query(node.expression)
            if len(left.fields) != len(right.fields):
                raise SyntaxError_("each UNION query must have the same number of columns")
            fields = []
            for a, b in zip(left.fields, right.fields, strict=True):
                if a.type == b.type:
                    t = a.type
                elif a.type.is_numeric and b.type.is_numeric:
                    t = numeric_result(a.type, b.type)
                elif a.type.name is b.type.name:
                    t = a.type if a.type.name is not TypeName.NUMERIC else NUMERIC
                else:
                    raise DatatypeMismatch(f"UNION types {a.type.display()} and {b.type.display()} cannot be matched")
                fields.append(Field(a.name, t))
            return BoundSetOp(left, right, not node.args.get("distinct"), tuple(fields))
        if isinstance(node, exp.Select):
            return self.select(node, None)
        raise FeatureNotSupported(f"{type(node).__name__.upper()} in a materialized view is not supported yet")

    def cte(self, name: str) -> exp.Expression | None:
        for scope in reversed(self.ctes):
            if name in scope:
                return scope[name]
        return None

    # ---- FROM ---------------------------------------------------------------------------------
    def from_item(self, node: exp.Expression, offset: int, qualified: bool) -> FromItem:
        if isinstance(node, exp.Subquery):
            alias = ident(node.args["alias"].this) if node.args.get("alias") else None
            if alias is None:
                raise SyntaxError_("subquery in FROM must have an alias",
                                   hint='For example, FROM (SELECT ...) [AS] foo.')
            return self._subquery(self.query(node.this), alias, offset, qualified, node.args["alias"])
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Anonymous) \
                and node.this.name.lower() in ("tumble", "hop"):
            return self._time_window(node, node.this, offset, qualified)
        if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Identifier):
            raise FeatureNotSupported(f"{node.sql(dialect='postgres')!r} in FROM of a materialized view is not "
                                      f"supported yet")
        name = ident(node.this)
        if not node.args.get("db") and (cte := self.cte(name)) is not None:
            alias = ident(node.args["alias"].this) if node.args.get("alias") else name
            return self._subquery(self.query(cte.this), alias, offset, qualified, node.args.get("alias"))
        rel = self.catalog.resolve_user(node)
        alias = ident(node.args["alias"].this) if node.args.get("alias") else rel.name
        if rel.kind is RelationKind.INDEX:
            raise WrongObjectType(f'"{rel.name}" is an index')
        if rel.kind is RelationKind.VIEW:  # a view reads as its (schema-qualified) query
            view = cast(exp.Expression, sqlglot.parse_one(rel.extra["query"], read="postgres"))
            alias_node = node.args.get("alias") or exp.TableAlias(
                this=exp.to_identifier(alias), columns=[exp.to_identifier(f.name, quoted=True) for f in rel.fields])
            return self._subquery(self.query(view), alias, offset, qualified, alias_node)
        fields = tuple(Field(f"{alias}.{f.name}" if qualified else f.name, f.type, f.hidden) for f in rel.fields)
        return BoundScan(rel, alias, offset, fields)

    def _time_window(self, node: exp.Table, func: exp.Anonymous, offset: int, qualified: bool) -> BoundSubquery:
        """``TUMBLE(t, ts, size)`` and ``HOP(t, ts, hop, size)`` in FROM, as RisingWave: the columns
        of `t`, then ``window_start`` and ``window_end`` of each window holding ``ts`` (windows
        aligned to the Unix epoch). A tumbling window is a projection; a hopping window, size / hop
        projections (one per window holding a row) under a UNION ALL, rows of NULL ``ts`` in none."""
        kind = func.name.lower()
        args = func.expressions
        want = 3 if kind == "tumble" else 4
        if len(args) != want:
            usage = "TUMBLE(table, time_column, window_size)" if kind == "tumble" else \
                "HOP(table, time_column, hop_size, window_size)"
            raise FeatureNotSupported(f"{kind.upper()} takes {want} arguments here: {usage}")
        if not isinstance(args[0], exp.Column) or args[0].args.get("table"):
            raise SyntaxError_(f"the first argument of {kind.upper()} must be a table or materialized view name")
        table = self.from_item(exp.Table(this=args[0].this), 0, False)
        scope = Scope([table])
        if not isinstance(args[1], exp.Column):
            raise SyntaxError_(f"the second argument of {kind.upper()} must be a column")
        ts = scope.column(args[1])
        if ts.type.name not in (TypeName.TIMESTAMP, TypeName.TIMESTAMPTZ):
            raise DatatypeMismatch(f"the time column of {kind.upper()} must be a timestamp or timestamptz, "
                                   f"not {ts.type.display()}")
        sizes = [_interval_micros(a, kind.upper()) for a in args[2:]]
        columns = scope.star(None)

        def window(unit: int, shift: int, size: int) -> BoundStreamSelect:
            items = [*columns, SelectItem(WindowBound(ts, unit, shift, ts.type), "window_start"),
                     SelectItem(WindowBound(ts, unit, shift + size, ts.type, "window_end"), "window_end")]
            where = UnaryOp("IS NOT NULL", ts, BOOL) if kind == "hop" else None
            return BoundStreamSelect(table, tuple(items), where, None)

        q: BoundQuery
        if kind == "tumble":
            q = window(sizes[0], 0, sizes[0])
        else:
            hop, size = sizes
            if size % hop:
                raise InvalidParameterValue("HOP's window size must be a multiple of its hop size")
            if size // hop > MAX_HOP_WINDOWS:
                raise FeatureNotSupported(f"HOP with more than {MAX_HOP_WINDOWS} windows per row (window size "
                                          f"/ hop size) is not supported yet")
            branches = [window(hop, -i * hop, size) for i in range(size // hop)]
            q = branches[0]
            for b in branches[1:]:
                q = BoundSetOp(q, b, True, q.fields)
        alias = ident(node.args["alias"].this) if node.args.get("alias") else kind
        return self._subquery(q, alias, offset, qualified, node.args.get("alias"))

    def _subquery(self, q: BoundQuery, alias: str, offset: int, qualified: bool,
                  alias_node: exp.Expression | None) -> BoundSubquery:
        columns = list(q.fields)
        renames = [ident(c) for c in alias_node.args.get("columns") or []] if alias_node is not None else []
        if len(renames) > len(columns):
            raise SyntaxError_(f'table "{alias}" has {len(columns)} columns available but {len(renames)} '
                               f"columns specified")
        for i, r in enumerate(renames):
            columns[i] = Field(r, columns[i].type)
        if renames:
            q = _rename(q, tuple(columns))
        fields = tuple(Field(f"{alias}.{f.name}" if qualified else f.name, f.type, f.hidden) for f in columns)
        return BoundSubquery(q, alias, offset, fields)

    def from_(self, query: exp.Select, outer: Scope | None) -> tuple[BoundFrom, Scope]:
        from_ = query.args.get("from") or query.args.get("from_")
        if from_ is None:
            raise FeatureNotSupported("a materialized view without FROM is not supported yet")
        joins = query.args.get("joins") or []
        first = self.from_item(from_.this, 0, bool(joins))
        src: BoundFrom = first
        scans: list[FromItem] = [first]
        for j in joins:
            right = self.from_item(j.this, len(src.fields), True)
            if any(s.alias == right.alias for s in scans):
                raise DuplicateObject(f'table name "{right.alias}" specified more than once')
            scans.append(right)
            side = j.args.get("side")
            if (j.args.get("kind") or "").upper() == "CROSS" or (j.args.get("on") is None and not j.args.get("using")):
                raise FeatureNotSupported("joins without an equality condition (CROSS JOIN, FROM a, b) are not "
                                          "supported in a materialized view yet; use JOIN ... ON")
            scope = Scope(scans, outer)
            if j.args.get("using"):
                pairs = [(scope.column(exp.Column(this=exp.to_identifier(ident(u)), table=exp.to_identifier(s.alias))),
                          scope.column(exp.Column(this=exp.to_identifier(ident(u)),
                                                  table=exp.to_identifier(right.alias))))
                         for u in j.args["using"] for s in [_owner(scans[:-1], ident(u))]]
                residual_parts: list[BoundExpr] = []
            else:
                on = coerce(bind_expr(j.args["on"], scope, allow_agg=False), BOOL, "JOIN/ON")
                pairs, residual_parts = _split_equi(on, len(src.fields))
            if not pairs:
                raise FeatureNotSupported("a join in a materialized view needs an equality between the two sides")
            kind = _JOIN_KINDS.get(side.upper() if side else None)
            if kind is None:
                raise FeatureNotSupported(f"{side} JOIN in a materialized view is not supported yet")
            residual = _conjunction(residual_parts)
            if residual is not None and kind != "INNER":
                raise FeatureNotSupported("conditions other than equalities in the ON clause of an outer join are not "
                                          "supported yet")
            src = BoundJoin(src, right, kind, tuple(a for a, _ in pairs), tuple(b for _, b in pairs), residual)
        return src, Scope(scans, outer)

    # ---- WHERE subqueries ---------------------------------------------------------------------
    def _where(self, node: exp.Expression, src: BoundFrom, scope: Scope
               ) -> tuple[BoundFrom, BoundExpr | None, tuple[TemporalCond, ...]]:
        """Binds WHERE; its top-level ``x IN (subquery)`` / ``[NOT] EXISTS (subquery)`` conjuncts
        become semi / anti joins of the FROM tree, its temporal filters (`frontend.temporal_filter`)
        are returned apart."""
        parts: list[BoundExpr] = []
        temporal: list[TemporalCond] = []
        for c in [part for conjunct in _conjuncts(node) for part in split_between(conjunct)]:
            match = match_temporal(c)
            if match is not None:
                column = bind_expr(match.column, scope, allow_agg=False)
                if not isinstance(column, InputRef) or column.type.name not in (TypeName.TIMESTAMP,
                                                                                 TypeName.TIMESTAMPTZ):
                    raise unsupported_column(match.column)
                temporal.append(TemporalCond(column, match.op, match.offset_us))
                continue
            negated = isinstance(c, exp.Not)
            inner = c.this if negated else c
            if isinstance(inner, exp.Paren):
                inner = inner.this
            if isinstance(inner, exp.Exists):
                src = self._exists(inner, src, scope, "ANTI" if negated else "SEMI")
            elif isinstance(inner, exp.In) and inner.args.get("query") is not None:
                if negated:
                    raise FeatureNotSupported("NOT IN (subquery) in a materialized view is not supported (its NULL "
                                              "semantics); use NOT EXISTS")
                src = self._in(inner, src, scope)
            else:
                parts.append(coerce(bind_expr(c, scope, allow_agg=False), BOOL, "WHERE"))
        return src, _conjunction(parts), tuple(temporal)

    def _in(self, node: exp.In, src: BoundFrom, scope: Scope) -> BoundFrom:
        x = bind_expr(node.this, scope, allow_agg=False)
        if not isinstance(_strip_cast(x), InputRef):
            raise FeatureNotSupported("IN (subquery) in a materialized view needs a column on its left side")
        q = self.query(node.args["query"].this if isinstance(node.args["query"], exp.Subquery)
                       else node.args["query"])
        if len(q.fields) != 1:
            raise SyntaxError_("subquery has too many columns")
        right = self._subquery(q, f"__in{len(src.fields)}", len(src.fields), True, None)
        key = InputRef(right.offset, right.fields[0].name, right.fields[0].type)
        left_key = _strip_cast(x)
        assert isinstance(left_key, InputRef)
        common_type(left_key, key, "=")
        return BoundJoin(src, right, "SEMI", (left_key,), (key,), None)

    def _exists(self, node: exp.Exists, src: BoundFrom, outer: Scope, kind: str) -> BoundFrom:
        sub = node.this
        sub = sub.this if isinstance(sub, exp.Subquery) else sub
        if not isinstance(sub, exp.Select):
            raise FeatureNotSupported("EXISTS over a set operation is not supported in a materialized view yet")
        for arg in ("group", "having", "limit", "offset", "distinct", "with", "with_"):
            if sub.args.get(arg):
                raise FeatureNotSupported(f"EXISTS (subquery with {arg.upper()}) in a materialized view is not "
                                          f"supported yet")
        inner_src, inner = self.from_(sub, None)
        local: list[BoundExpr] = []
        corr: list[tuple[InputRef, InputRef]] = []  # (outer column, inner column)
        where = sub.args.get("where")
        for c in _conjuncts(where.this) if where else []:
            try:
                local.append(coerce(bind_expr(c, inner, allow_agg=False), BOOL, "WHERE"))
                continue
            except (UndefinedColumn, UndefinedTable):
                pass
            pair = _correlation(c, inner, outer)
            if pair is None:
                raise FeatureNotSupported("a correlated subquery in a materialized view may refer to the outer "
                                          "query only in equalities (inner.col = outer.col) joined by AND")
            corr.append(pair)
        if not corr:
            raise FeatureNotSupported("an uncorrelated EXISTS in a materialized view is not supported yet")
        items = tuple(SelectItem(i, f"k{n}") for n, (_, i) in enumerate(corr))
        q = BoundStreamSelect(inner_src, items, _conjunction(local), None)
        right = self._subquery(q, f"__exists{len(src.fields)}", len(src.fields), True, None)
        rkeys = tuple(InputRef(right.offset + n, right.fields[n].name, right.fields[n].type) for n in range(len(corr)))
        return BoundJoin(src, right, kind, tuple(o for o, _ in corr), rkeys, None)

    # ---- SELECT -------------------------------------------------------------------------------
    def select(self, query: exp.Select, outer: Scope | None) -> BoundStreamSelect:
        for arg, feature in (("windows", "WINDOW"),):
            if query.args.get(arg):
                raise FeatureNotSupported(f"{feature} in a materialized view is not supported yet")
        distinct = query.args.get("distinct")
        if distinct is not None and distinct.args.get("on"):
            raise FeatureNotSupported("DISTINCT ON in a materialized view is not supported yet")
        source, scope = self.from_(query, outer)
        where = None
        temporal: tuple[TemporalCond, ...] = ()
        if query.args.get("where"):
            source, where, temporal = self._where(query.args["where"].this, source, scope)

        items: list[SelectItem] = []
        row_number: RowNumber | None = None
        for e in query.expressions:
            if isinstance(e, exp.Star):
                items += scope.star(None)
                continue
            if isinstance(e, exp.Column) and isinstance(e.this, exp.Star):
                items += scope.star(ident(e.args.get("table")) if e.args.get("table") else None)
                continue
            node = e.this if isinstance(e, exp.Alias) else e
            name = ident(e.args["alias"]) if isinstance(e, exp.Alias) else output_name(node)
            if isinstance(node, exp.Window):
                if row_number is not None:
                    raise FeatureNotSupported("more than one window function in a materialized view query block "
                                              "is not supported yet")
                row_number = self._row_number(node, len(items), scope)
                items.append(SelectItem(Literal(None, INT8), "row_number" if name == "window" else name))
                continue
            bound = bind_expr(node, scope, allow_agg=True)
            items.append(SelectItem(bound, name))

        group = query.args.get("group")
        group_by: tuple[BoundExpr, ...] | None = None
        if group is not None:
            keys = []
            for g in group.expressions:
                if isinstance(g, exp.Literal) and not g.is_string:
                    pos = int(g.this)
                    if not 1 <= pos <= len(items):
                        raise UndefinedColumn(f"GROUP BY position {pos} is not in select list")
                    keys.append(items[pos - 1].expr)
                elif isinstance(g, exp.Column) and not g.args.get("table") and \
                        not _resolves(scope, g) and (alias := _item_named(items, ident(g.this))) is not None:
                    keys.append(alias.expr)  # GROUP BY an output column name, as Postgres allows
                else:
                    keys.append(bind_expr(g, scope, allow_agg=False))
            group_by = tuple(keys)
        having = None
        if query.args.get("having"):
            having = coerce(bind_expr(query.args["having"].this, scope, allow_agg=True), BOOL, "HAVING")
        if group_by is None and (having is not None or any(contains_agg(i.expr) for i in items)):
            group_by = ()  # a global aggregate: one group
        if row_number is not None and (group_by is not None or distinct is not None):
            raise FeatureNotSupported("ROW_NUMBER() together with GROUP BY, aggregates or DISTINCT in one query "
                                      "block of a materialized view is not supported yet; use a subquery")
        if group_by is not None:
            for e, what in [(it.expr, it.name) for it in items] + ([(having, "HAVING")] if having is not None else []):
                check_grouped(e, group_by, what)

        order_by: list[OrderItem] = []
        hidden = 0
        order = query.args.get("order")
        for o in order.expressions if order else []:
            found = self._order_item(o.this, items, scope, group_by, bool(distinct))
            if found is not None:
                pos = found
            else:
                bound = bind_expr(o.this, scope, allow_agg=True)
                if group_by is not None:
                    check_grouped(bound, group_by, "ORDER BY")
                items.append(SelectItem(bound, f"_rw_order_{len(order_by)}"))
                hidden += 1
                pos = len(items) - 1
            desc = bool(o.args.get("desc"))
            nulls_first = o.args.get("nulls_first")
            order_by.append(OrderItem(pos, desc, bool(nulls_first) if nulls_first is not None else desc))
        limit = _count(query.args.get("limit"), "LIMIT")
        offset = _count(query.args.get("offset"), "OFFSET") or 0
        if limit is None and offset:
            raise FeatureNotSupported("OFFSET without LIMIT in a materialized view is not supported")
        if limit is not None and row_number is not None:
            raise FeatureNotSupported("ROW_NUMBER() together with ORDER BY ... LIMIT in one query block of a "
                                      "materialized view is not supported yet; use a subquery")
        if limit is None:
            # An MV has no order: ORDER BY without LIMIT changes nothing (as RisingWave).
            items = items[:len(items) - hidden]
            order_by, hidden = [], 0
        return BoundStreamSelect(source, tuple(items), where, group_by, having, distinct is not None,
                                 tuple(order_by), limit, offset, hidden, row_number, temporal)

    def _row_number(self, node: exp.Window, index: int, scope: Scope) -> RowNumber:
        func = node.this
        if not isinstance(func, exp.RowNumber):
            fname = func.sql_name().lower() if isinstance(func, exp.Func) else type(func).__name__.lower()
            raise FeatureNotSupported(f"window function {fname}() in a materialized view is not supported yet "
                                      f"(ROW_NUMBER() is, for a group TopN)")
        if node.args.get("spec") is not None:
            raise FeatureNotSupported("a window frame in a materialized view is not supported yet")
        partition = tuple(bind_expr(p, scope, allow_agg=False) for p in node.args.get("partition_by") or [])
        order = node.args.get("order")
        if order is None or not order.expressions:
            raise FeatureNotSupported("ROW_NUMBER() without ORDER BY in a materialized view is not supported: "
                                      "its numbering would be arbitrary")
        keys = []
        for o in order.expressions:
            desc = bool(o.args.get("desc"))
            nulls_first = o.args.get("nulls_first")
            keys.append((bind_expr(o.this, scope, allow_agg=False), desc,
                         bool(nulls_first) if nulls_first is not None else desc))
        return RowNumber(index, partition, tuple(keys))

    def _order_item(self, node: exp.Expression, items: list[SelectItem], scope: Scope,
                    group_by: tuple[BoundExpr, ...] | None, distinct: bool) -> int | None:
        if isinstance(node, exp.Literal) and not node.is_string:
            pos = int(node.this)
            if not 1 <= pos <= len(items):
                raise UndefinedColumn(f"ORDER BY position {pos} is not in select list")
            return pos - 1
        if isinstance(node, exp.Column) and not node.args.get("table"):
            named = [i for i, it in enumerate(items) if it.name == ident(node.this)]
            if len(named) == 1:
                return named[0]
        bound = bind_expr(node, scope, allow_agg=True)
        found = next((i for i, it in enumerate(items) if it.expr == bound), None)
        if found is None and distinct:
            raise InvalidColumnReference("for SELECT DISTINCT, ORDER BY expressions must appear in select list")
        return found


def bind_stream_select(catalog: CatalogReader, query: exp.Expression) -> BoundQuery:
    """Binds the query of a materialized view."""
    return QueryBinder(catalog).query(query)


def _rename(q: BoundQuery, fields: tuple[Field, ...]) -> BoundQuery:
    if isinstance(q, BoundSetOp):
        return BoundSetOp(q.left, q.right, q.all, fields)
    items = tuple(SelectItem(it.expr, fields[i].name) if i < len(fields) else it for i, it in enumerate(q.items))
    return BoundStreamSelect(q.source, items, q.where, q.group_by, q.having, q.distinct, q.order_by, q.limit,
                             q.offset, q.hidden, q.row_number, q.temporal)


MAX_HOP_WINDOWS = 16
def _interval_micros(node: exp.Expression, what: str) -> int:
    """A window size: a positive constant interval of fixed length, in microseconds."""
    if not isinstance(node, exp.Interval) or not isinstance(node.this, exp.Literal):
        raise FeatureNotSupported(f"the window sizes of {what} must be constant intervals, e.g. INTERVAL '5 minutes'")
    total = fixed_interval_micros(node, what, "windows need a fixed length (seconds to weeks)")
    if total <= 0:
        raise InvalidParameterValue(f"the window sizes of {what} must be positive")
    return total


def _conjuncts(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    if isinstance(node, exp.Paren) and isinstance(node.this, exp.And):
        return _conjuncts(node.this)
    return [node]


def _conjunction(parts: list[BoundExpr]) -> BoundExpr | None:
    out: BoundExpr | None = None
    for part in parts:
        out = part if out is None else BinaryOp("AND", out, part, BOOL)
    return out


def _correlation(c: exp.Expression, inner: Scope, outer: Scope) -> tuple[InputRef, InputRef] | None:
    """``inner.col = outer.col`` (either way round) as (outer column, inner column)."""
    if not isinstance(c, exp.EQ) or not isinstance(c.left, exp.Column) or not isinstance(c.right, exp.Column):
        return None
    for a, b in ((c.left, c.right), (c.right, c.left)):
        try:
            i = inner.column(a)
        except (UndefinedColumn, UndefinedTable):
            continue
        try:
            o = outer.column(b)
        except (UndefinedColumn, UndefinedTable):
            return None
        common_type(o, i, "=")
        return o, i
    return None


def _resolves(scope: Scope, col: exp.Column) -> bool:
    try:
        scope.column(col)
        return True
    except (UndefinedColumn, UndefinedTable):
        return False


def _item_named(items: list[SelectItem], name: str) -> SelectItem | None:
    named = [it for it in items if it.name == name]
    return named[0] if len(named) == 1 else None


def _count(node: exp.Expression | None, what: str) -> int | None:
    if node is None:
        return None
    value = node.args.get("expression") or node.this
    if isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit():
        return int(value.this)
    raise FeatureNotSupported(f"{what} in a materialized view must be a non-negative integer constant")


def _owner(scans: list[FromItem], column: str) -> FromItem:
    owners = [s for s in scans if any(f.name == column for f in s.columns)]
    if len(owners) != 1:
        raise AmbiguousColumn(f'common column name "{column}" appears more than once in left table') if owners \
            else UndefinedColumn(f'column "{column}" specified in USING clause does not exist in left table')
    return owners[0]


def _split_equi(on: BoundExpr, n_left: int) -> tuple[list[tuple[InputRef, InputRef]], list[BoundExpr]]:
    """The conjuncts ``left column = right column`` of an ON condition, and the others."""
    conjuncts: list[BoundExpr] = []

    def flatten(e: BoundExpr) -> None:
        if isinstance(e, BinaryOp) and e.op == "AND":
            flatten(e.left)
            flatten(e.right)
        else:
            conjuncts.append(e)

    flatten(on)
    pairs, rest = [], []
    for c in conjuncts:
        if isinstance(c, BinaryOp) and c.op == "=":
            a, b = _strip_cast(c.left), _strip_cast(c.right)
            if isinstance(a, InputRef) and isinstance(b, InputRef):
                if a.index < n_left <= b.index:
                    pairs.append((a, b))
                    continue
                if b.index < n_left <= a.index:
                    pairs.append((b, a))
                    continue
        rest.append(c)
    return pairs, rest


def _strip_cast(e: BoundExpr) -> BoundExpr:
    return e.operand if isinstance(e, Cast) and isinstance(e.operand, InputRef) and e.operand.type.is_numeric \
        and e.type.is_numeric else e


def check_grouped(e: BoundExpr, group_by: tuple[BoundExpr, ...], what: str) -> None:
    """Every column outside an aggregate must be a group key (or inside one)."""
    if e in group_by or isinstance(e, AggCallExpr):
        return
    if isinstance(e, InputRef):
        raise GroupingError(f'column "{e.name}" must appear in the GROUP BY clause or be used in an '
                            f"aggregate function")
    for c in e.children():
        check_grouped(c, group_by, what)


def output_name(node: exp.Expression) -> str:
    """The column name Postgres gives an unaliased select item."""
    if isinstance(node, exp.Column):
        return ident(node.this)
    if isinstance(node, exp.Cast):
        return output_name(node.this) if isinstance(node.this, exp.Column) else node.to.sql(dialect="postgres").lower()
    if isinstance(node, exp.Count):
        return "count"
    if isinstance(node, exp.Filter):
        return output_name(node.this)
    if isinstance(node, exp.AggFunc) and node.key in _AGG_NAMES:
        return _AGG_NAMES[node.key]
    if isinstance(node, exp.AggFunc | exp.Func) and not isinstance(node, exp.Anonymous):
        return node.key.lower() if node.key != "anonymous" else "?column?"
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    return "?column?"


# ---- expressions ------------------------------------------------------------------------------

def literal(node: exp.Literal) -> BoundExpr:
    if node.is_string:
        return Literal(node.this, VARCHAR)
    text = node.this
    if any(c in text for c in ".eE"):
        if "e" in text.lower():
            return Literal(float(text), FLOAT8)
        return Literal(text, NUMERIC)
    v = int(text)
    if -(2**31) <= v < 2**31:
        return Literal(v, INT4)
    if -(2**63) <= v < 2**63:
        return Literal(v, INT8)
    return Literal(text, NUMERIC)


def is_unknown_literal(e: BoundExpr) -> bool:
    """A quoted literal: Postgres types it from context ("unknown")."""
    return isinstance(e, Literal) and e.type.name is TypeName.VARCHAR and isinstance(e.value, str)


def coerce(e: BoundExpr, target: DataType, context: str = "") -> BoundExpr:
    if e.type == target:
        return e
    if is_unknown_literal(e) or (isinstance(e, Literal) and e.value is None):
        return Cast(e, target)
    if target.name is TypeName.BOOLEAN and e.type.name is not TypeName.BOOLEAN:
        raise DatatypeMismatch(f"argument of {context or 'expression'} must be type boolean, not type "
                               f"{e.type.display()}")
    if e.type.is_numeric and target.is_numeric:
        return Cast(e, target)
    if target.name is TypeName.VARCHAR:
        return Cast(e, target)
    raise DatatypeMismatch(f"cannot cast type {e.type.display()} to {target.display()}")


_INT_RANK = {TypeName.SMALLINT: 0, TypeName.INT: 1, TypeName.BIGINT: 2}


def numeric_result(a: DataType, b: DataType) -> DataType:
    if TypeName.DOUBLE in (a.name, b.name) or (TypeName.REAL in (a.name, b.name)
                                                and not (a.name is b.name is TypeName.REAL)):
        return FLOAT8
    if a.name is b.name is TypeName.REAL:
        return FLOAT4
    if TypeName.NUMERIC in (a.name, b.name):
        return NUMERIC
    ints = [INT2, INT4, INT8]
    return ints[max(_INT_RANK[a.name], _INT_RANK[b.name])]


def common_type(a: BoundExpr, b: BoundExpr, what: str) -> tuple[BoundExpr, BoundExpr, DataType]:
    """Coerce two operands to a common type, as Postgres resolves operator arguments."""
    if is_unknown_literal(a) and not is_unknown_literal(b):
        return coerce(a, b.type), b, b.type
    if is_unknown_literal(b) and not is_unknown_literal(a):
        return a, coerce(b, a.type), a.type
    if a.type == b.type:
        return a, b, a.type
    if a.type.is_numeric and b.type.is_numeric:
        t = numeric_result(a.type, b.type)
        return a, b, t
    if a.type.name is b.type.name:  # e.g. numeric(12,2) vs numeric
        return a, b, a.type
    if {a.type.name, b.type.name} <= {TypeName.TIMESTAMP, TypeName.TIMESTAMPTZ, TypeName.DATE}:
        return a, b, b.type if a.type.name is TypeName.DATE else a.type
    raise UndefinedFunction(f"operator does not exist: {a.type.display()} {what} {b.type.display()}",
                            hint="No operator matches the given name and argument types. You might need to "
                                 "add explicit type casts.")


_COMPARE = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=",
            exp.NullSafeEQ: "IS NOT DISTINCT FROM", exp.NullSafeNEQ: "IS DISTINCT FROM"}
_ARITH = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%"}

# name -> (Spark function, result type rule)
_FUNCS = {"lower": "lower", "upper": "upper", "length": "char_length", "char_length": "char_length",
          "abs": "abs", "round": "round", "coalesce": "coalesce", "concat": "concat", "nullif": "nullif",
          "trim": "trim", "substr": "substring", "substring": "substring", "greatest": "greatest",
          "least": "least", "ceil": "ceil", "floor": "floor"}


def bind_expr(node: Any, scope: Scope, *, allow_agg: bool) -> BoundExpr:
    def rec(n: Any) -> BoundExpr:
        return bind_expr(n, scope, allow_agg=allow_agg)

    if isinstance(node, exp.Paren):
        return rec(node.this)
    if isinstance(node, exp.Column):
        if isinstance(node.this, exp.Star):
            raise FeatureNotSupported("* is not allowed here")
        return scope.column(node)
    if isinstance(node, exp.Literal):
        return literal(node)
    if isinstance(node, exp.Boolean):
        return Literal(bool(node.this), BOOL)
    if isinstance(node, exp.Null):
        return Literal(None, VARCHAR)
    if isinstance(node, exp.Cast | exp.TryCast):
        target = DataType.parse(node.to.sql(dialect="postgres"))
        if target.element is not None:
            raise FeatureNotSupported(f"casts to {target.display()} in a materialized view are not supported yet")
        inner = rec(node.this)
        return Cast(inner, target) if inner.type != target else inner
    if type(node) in _COMPARE:
        a, b, _ = common_type(rec(node.left), rec(node.right), _COMPARE[type(node)])
        return BinaryOp(_COMPARE[type(node)], a, b, BOOL)
    if type(node) in _ARITH:
        op = _ARITH[type(node)]
        a, b = rec(node.left), rec(node.right)
        a, b, t = common_type(a, b, op)
        if not t.is_numeric:
            raise UndefinedFunction(f"operator does not exist: {a.type.display()} {op} {b.type.display()}")
        return BinaryOp(op, a, b, t)
    if isinstance(node, exp.DPipe):
        a, b = rec(node.left), rec(node.right)
        return BinaryOp("||", coerce(a, VARCHAR), coerce(b, VARCHAR), VARCHAR)
    if isinstance(node, exp.And | exp.Or):
        op = "AND" if isinstance(node, exp.And) else "OR"
        return BinaryOp(op, coerce(rec(node.left), BOOL, op), coerce(rec(node.right), BOOL, op), BOOL)
    if isinstance(node, exp.Not):
        inner = node.this
        if isinstance(inner, exp.Is):
            return _bind_is(inner, rec, negated=True)
        return UnaryOp("NOT", coerce(rec(inner), BOOL, "NOT"), BOOL)
    if isinstance(node, exp.Neg):
        x = rec(node.this)
        if isinstance(x, Literal) and x.type.is_numeric and isinstance(x.value, int | float):
            return Literal(-x.value, x.type)
        if isinstance(x, Literal) and x.type.is_numeric and isinstance(x.value, str):
            return Literal("-" + x.value, x.type)
        return UnaryOp("NEG", x, x.type)
    if isinstance(node, exp.Is):
        return _bind_is(node, rec, negated=False)
    if isinstance(node, exp.Between):
        x, lo, hi = rec(node.this), rec(node.args["low"]), rec(node.args["high"])
        x1, lo, _ = common_type(x, lo, "BETWEEN")
        x2, hi, _ = common_type(x, hi, "BETWEEN")
        return BinaryOp("AND", BinaryOp(">=", x1, lo, BOOL), BinaryOp("<=", x2, hi, BOOL), BOOL)
    if isinstance(node, exp.Exists | exp.Subquery) or (isinstance(node, exp.In) and node.args.get("query")):
        raise FeatureNotSupported("subqueries in a materialized view are supported in FROM and as IN / EXISTS "
                                  "conditions joined by AND in WHERE, not here")
    if isinstance(node, exp.In):
        if node.args.get("field"):
            raise FeatureNotSupported("IN (subquery) in a materialized view is not supported yet")
        x = rec(node.this)
        items = tuple(common_type(x, rec(i), "IN")[1] for i in node.expressions)
        return InList(x, items, False)
    if isinstance(node, exp.Like | exp.ILike):
        return Like(coerce(rec(node.this), VARCHAR), coerce(rec(node.expression), VARCHAR), False,
                    isinstance(node, exp.ILike))
    if isinstance(node, exp.Case):
        if node.this is not None:
            raise FeatureNotSupported("CASE <expr> WHEN ... in a materialized view is not supported yet")
        whens = [(coerce(rec(w.this), BOOL, "CASE"), rec(w.args["true"])) for w in node.args["ifs"]]
        default = rec(node.args["default"]) if node.args.get("default") else None
        values = [v for _, v in whens] + ([default] if default is not None else [])
        t = _common_of(values)
        return Case(tuple((c, coerce(v, t)) for c, v in whens), coerce(default, t) if default else None, t)
    if isinstance(node, _AGGS) or (isinstance(node, exp.Filter) and isinstance(node.this, exp.AggFunc)):
        if not allow_agg:
            raise GroupingError("aggregate functions are not allowed here")
        if isinstance(node, exp.Filter):
            if not isinstance(node.this, _AGGS):
                return bind_expr(node.this, scope, allow_agg=True)  # names the unsupported aggregate
            cond = coerce(bind_expr(node.expression.this, scope, allow_agg=False), BOOL, "FILTER")
            return _bind_agg(node.this, scope, cond)
        return _bind_agg(node, scope)
    if isinstance(node, exp.AggFunc):
        name = _AGG_NAMES.get(node.key, node.key)
        raise FeatureNotSupported(f"aggregate function {name}() in a materialized view is not supported yet")
    if isinstance(node, exp.TimestampTrunc | exp.DateTrunc):
        return _bind_date_trunc(node, rec)
    if isinstance(node, exp.Extract):
        return _bind_extract(node, rec)
    if isinstance(node, exp.Func):
        return _bind_func(node, rec)
    raise FeatureNotSupported(f"expression {node.sql(dialect='postgres')!r} is not supported in a "
                              f"materialized view yet")


_TRUNC_UNITS = ("microseconds", "milliseconds", "second", "minute", "hour", "day", "week", "month", "quarter", "year")
# extract(field FROM ts) in Spark SQL over a TIMESTAMP; Postgres returns numeric
_EXTRACT = {"year": "year({})", "quarter": "quarter({})", "month": "month({})", "week": "weekofyear({})",
            "day": "day({})", "doy": "dayofyear({})", "dow": "(dayofweek({}) - 1)", "isodow": "weekday({}) + 1",
            "hour": "hour({})", "minute": "minute({})", "second": "(second({}) + CAST(pmod(unix_micros({}), 1000000) AS DECIMAL(20, 6)) / 1000000)",
            "epoch": "(CAST(unix_micros({}) AS DECIMAL(38, 6)) / 1000000)"}


def _bind_date_trunc(node: exp.Expression, rec) -> BoundExpr:
    """``date_trunc(unit, ts)``: `ts` truncated to the unit (weeks start on Monday, as Postgres)."""
    unit = node.args.get("unit")
    name = (unit.name if unit is not None else "").lower().rstrip("s")
    name = {"microsecond": "microseconds", "millisecond": "milliseconds"}.get(name, name)
    if name not in _TRUNC_UNITS:
        raise FeatureNotSupported(f'date_trunc unit "{name}" is not supported in a materialized view yet')
    x = rec(node.this)
    if x.type.name is TypeName.DATE:
        x = Cast(x, TIMESTAMP)
    if x.type.name not in (TypeName.TIMESTAMP, TypeName.TIMESTAMPTZ):
        raise UndefinedFunction(f"function date_trunc(unknown, {x.type.display()}) does not exist")
    spark_unit = {"microseconds": "MICROSECOND", "milliseconds": "MILLISECOND"}.get(name, name.upper())
    return FuncCall("date_trunc", (Literal(spark_unit, VARCHAR), x), x.type)


def _bind_extract(node: exp.Extract, rec) -> BoundExpr:
    """``extract(field FROM ts)``, numeric as Postgres."""
    field = node.this.name.lower() if node.this is not None else ""
    x = rec(node.expression)
    if x.type.name is TypeName.DATE:
        x = Cast(x, TIMESTAMP)
    if x.type.name not in (TypeName.TIMESTAMP, TypeName.TIMESTAMPTZ):
        raise UndefinedFunction(f"function extract(unknown, {x.type.display()}) does not exist")
    if field not in _EXTRACT:
        raise FeatureNotSupported(f'extract field "{field}" is not supported in a materialized view yet')
    return Extract(field, x, NUMERIC, _EXTRACT[field])


def _bind_is(node: exp.Is, rec, *, negated: bool) -> BoundExpr:
    x = rec(node.this)
    target = node.expression
    if isinstance(target, exp.Null):
        return UnaryOp("IS NOT NULL" if negated else "IS NULL", x, BOOL)
    if isinstance(target, exp.Boolean):
        e = UnaryOp("IS TRUE" if target.this else "IS FALSE", coerce(x, BOOL, "IS"), BOOL)
        return UnaryOp("NOT", e, BOOL) if negated else e
    raise FeatureNotSupported(f"IS {target.sql()} is not supported")


def _common_of(values: list[BoundExpr]) -> DataType:
    typed = [v for v in values if not is_unknown_literal(v) and not (isinstance(v, Literal) and v.value is None)]
    if not typed:
        return VARCHAR
    t = typed[0].type
    for v in typed[1:]:
        if v.type == t:
            continue
        if v.type.is_numeric and t.is_numeric:
            t = numeric_result(t, v.type)
        else:
            raise DatatypeMismatch(f"types {t.display()} and {v.type.display()} cannot be matched")
    return t


_AGGS = (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max, exp.LogicalAnd, exp.LogicalOr, exp.GroupConcat,
         exp.ArrayAgg)
_AGG_KIND = {exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max",
             exp.LogicalAnd: "bool_and", exp.LogicalOr: "bool_or", exp.GroupConcat: "string_agg",
             exp.ArrayAgg: "array_agg"}
# sqlglot's node names of aggregates, as Postgres calls them
_AGG_NAMES = {"arrayagg": "array_agg", "groupconcat": "string_agg", "logicaland": "bool_and",
              "logicalor": "bool_or", "stddev": "stddev", "arrayconcatagg": "array_cat_agg"}


def _bind_agg(node: Any, scope: Scope, filter_: BoundExpr | None = None) -> AggCallExpr:
    """An aggregate call: ``agg([DISTINCT] x [, delimiter] [ORDER BY ...]) [FILTER (WHERE ...)]``."""
    kind = _AGG_KIND[type(node)]
    arg_node = node.this
    order_nodes: list[Any] = []
    if isinstance(arg_node, exp.Order):
        order_nodes = list(arg_node.expressions)
        arg_node = arg_node.this
    distinct = isinstance(arg_node, exp.Distinct)
    if distinct:
        if len(arg_node.expressions) != 1:
            raise FeatureNotSupported(f"{kind}(DISTINCT ...) over several arguments is not supported")
        arg_node = arg_node.expressions[0]
    if isinstance(node, exp.Count) and (arg_node is None or isinstance(arg_node, exp.Star)):
        if distinct:
            raise FeatureNotSupported("count(DISTINCT *) is not supported")
        return AggCallExpr("count_star", None, INT8, filter=filter_)
    arg = bind_expr(arg_node, scope, allow_agg=False)
    if is_unknown_literal(arg):
        arg = coerce(arg, {"count": VARCHAR, "string_agg": VARCHAR, "array_agg": VARCHAR, "bool_and": BOOL,
                           "bool_or": BOOL, "min": VARCHAR, "max": VARCHAR}.get(kind, NUMERIC))
    if kind == "array_agg" and filter_ is not None:
        # FILTER is planned as agg(CASE WHEN c THEN x END), which would add NULL elements
        raise FeatureNotSupported("array_agg(...) FILTER (WHERE ...) in a materialized view is not supported yet")
    delimiter = None
    if kind == "string_agg":
        sep = node.args.get("separator")
        if sep is None:
            raise UndefinedFunction(f"function string_agg({arg.type.display()}) does not exist",
                                    hint="No function matches the given name and argument types.")
        if isinstance(sep, exp.Null):
            delimiter = ""  # Postgres: a NULL delimiter concatenates without one
        elif isinstance(sep, exp.Literal) and sep.is_string:
            delimiter = sep.this
        else:
            raise FeatureNotSupported("string_agg with a delimiter that is not a constant string is not supported")
    order: list[tuple[BoundExpr, bool, bool]] = []
    for o in order_nodes:
        e = bind_expr(o.this, scope, allow_agg=False)
        if distinct and e != arg:
            raise InvalidColumnReference("in an aggregate with DISTINCT, ORDER BY expressions must appear in "
                                         "argument list")
        desc = bool(o.args.get("desc"))
        order.append((e, desc, bool(o.args.get("nulls_first", desc))))
    if kind not in ("string_agg", "array_agg"):
        order = []  # only string_agg's and array_agg's results depend on the order of their inputs
    if kind in ("min", "max", "bool_and", "bool_or"):
        distinct = False  # the same result with or without DISTINCT
    return AggCallExpr(kind, arg, agg_return_type(kind, arg.type), distinct, tuple(order), delimiter, filter_)


def _bind_func(node: exp.Func, rec) -> BoundExpr:
    name = (node.this if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
    name = {"coalesce": "coalesce", "lower": "lower", "upper": "upper", "abs": "abs", "round": "round",
            "length": "length", "concat": "concat", "nullif": "nullif", "trim": "trim", "substring": "substring",
            "greatest": "greatest", "least": "least", "ceil": "ceil", "floor": "floor"}.get(name, name)
    if name in ("current_timestamp", "now", "localtimestamp", "current_date", "current_time", "localtime"):
        raise FeatureNotSupported(f"{name}() in a materialized view is supported only in a temporal filter: a "
                                  f"WHERE condition `column > now() - INTERVAL '...'` (or >=, <, <=) joined by AND")
    args = [rec(a) for a in _func_args(node)]
    if name not in _FUNCS:
        types = ", ".join(a.type.display() for a in args)
        raise UndefinedFunction(f"function {name}({types}) does not exist",
                                hint="No function matches the given name and argument types.")
    if name in ("lower", "upper", "trim", "concat", "substring", "substr"):
        args = [coerce(a, VARCHAR) if i == 0 or name == "concat" else coerce(a, INT4) for i, a in enumerate(args)]
        return FuncCall(name, tuple(args), VARCHAR, _FUNCS[name])
    if name in ("length", "char_length"):
        return FuncCall("length", (coerce(args[0], VARCHAR),), INT4, "char_length")
    if name in ("coalesce", "greatest", "least", "nullif"):
        t = _common_of(args)
        return FuncCall(name, tuple(coerce(a, t) for a in args), t, _FUNCS[name])
    if name in ("abs", "ceil", "floor"):
        t = args[0].type
        return FuncCall(name, (args[0],), t, _FUNCS[name])
    if name == "round":
        t = args[0].type if args[0].type.name in (TypeName.NUMERIC, TypeName.DOUBLE) else \
            (FLOAT8 if args[0].type.name is TypeName.REAL else NUMERIC)
        if len(args) == 1:
            return FuncCall("round", (coerce(args[0], t),), t, "round")
        return FuncCall("round", (coerce(args[0], NUMERIC), coerce(args[1], INT4)), NUMERIC, "round")
    raise UndefinedFunction(f"function {name} does not exist")


def _func_args(node: exp.Func) -> list[exp.Expression]:
    if isinstance(node, exp.Anonymous):
        return list(node.expressions)
    out = []
    for key in node.arg_types:
        v = node.args.get(key)
        if v is None:
            continue
        out.extend(v if isinstance(v, list) else [v])
    return out


def visible_fields(rel: RelationCatalog) -> list[Field]:
    return [f for f in rel.fields if not f.hidden]
