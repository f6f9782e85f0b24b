"""The binder: resolves names against a catalog snapshot and types expressions as PostgreSQL does.

It binds the queries of materialized views (which the stream planner turns into a stream plan) and
resolves relation names for every other statement. What a streaming query cannot do yet fails here,
at CREATE, with SQLSTATE 0A000 naming the feature — never later with a wrong answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from frontend.expr import (
    AggCallExpr,
    BinaryOp,
    BoundExpr,
    Case,
    Cast,
    FuncCall,
    InList,
    InputRef,
    Like,
    Literal,
    UnaryOp,
    contains_agg,
)
from meta.catalog import CatalogSnapshot
from risingspark.aggregate import agg_return_type
from risingspark.catalog import DEFAULT_SCHEMA, RelationCatalog
from risingspark.errors import (
    AmbiguousColumn,
    DatatypeMismatch,
    DuplicateObject,
    FeatureNotSupported,
    GroupingError,
    InvalidColumnReference,
    InvalidSchemaName,
    UndefinedColumn,
    UndefinedFunction,
    UndefinedTable,
)
from risingspark.types import (
    BOOL,
    FLOAT4,
    FLOAT8,
    INT2,
    INT4,
    INT8,
    NUMERIC,
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


@dataclass(frozen=True)
class BoundJoin:
    """``left JOIN right``: the equality conjuncts of ON as key pairs (left key over the left
    side's columns, right key over the right's), anything else as a residual condition."""

    left: BoundScan | BoundJoin
    right: BoundScan
    kind: str  # INNER, LEFT, RIGHT, FULL
    left_keys: tuple[InputRef, ...]
    right_keys: tuple[InputRef, ...]
    residual: BoundExpr | None

    @property
    def fields(self) -> tuple[Field, ...]:
        return self.left.fields + self.right.fields


BoundFrom = BoundScan | BoundJoin


def scans_of(src: BoundFrom) -> list[BoundScan]:
    if isinstance(src, BoundScan):
        return [src]
    return scans_of(src.left) + [src.right]


@dataclass(frozen=True)
class BoundStreamSelect:
    """A materialized view's query: relations (joined), a filter, projections, optional grouping."""

    source: BoundFrom
    items: tuple[SelectItem, ...]
    where: BoundExpr | None
    group_by: tuple[BoundExpr, ...] | None  # () for a global aggregate
    having: BoundExpr | None = None

    @property
    def relation(self) -> RelationCatalog:
        """The first relation of FROM (the only one without joins)."""
        return scans_of(self.source)[0].relation

    @property
    def relations(self) -> list[RelationCatalog]:
        return [s.relation for s in scans_of(self.source)]


class Scope:
    """Columns visible to expressions: those of the FROM relations, by alias (or name) and column."""

    def __init__(self, scans: list[BoundScan]) -> None:
        self.scans = scans

    def column(self, col: exp.Column) -> InputRef:
        name = ident(col.this)
        table = ident(col.args.get("table")) if col.args.get("table") else None
        candidates = [s for s in self.scans if table is None or table == s.alias]
        if table is not None and not candidates:
            raise UndefinedTable(f'missing FROM-clause entry for table "{table}"')
        matches = [(s, i) for s in candidates for i, f in enumerate(s.relation.fields) if f.name == name]
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
                for s in scans for i, f in enumerate(s.relation.fields) if not f.hidden]


_JOIN_KINDS = {None: "INNER", "LEFT": "LEFT", "RIGHT": "RIGHT", "FULL": "FULL"}


def _scan(catalog: CatalogReader, table: exp.Expression, offset: int, qualified: bool) -> BoundScan:
    if not isinstance(table, exp.Table):
        raise FeatureNotSupported("subqueries in FROM of a materialized view are not supported yet")
    rel = catalog.resolve_user(table)
    alias = ident(table.args["alias"].this) if table.args.get("alias") else rel.name
    fields = tuple(Field(f"{alias}.{f.name}" if qualified else f.name, f.type, f.hidden) for f in rel.fields)
    return BoundScan(rel, alias, offset, fields)


def bind_from(catalog: CatalogReader, query: exp.Select) -> tuple[BoundFrom, Scope]:
    from_ = query.args.get("from") or query.args.get("from_")
    if from_ is None:
        raise FeatureNotSupported("a materialized view without FROM is not supported yet")
    joins = query.args.get("joins") or []
    first = _scan(catalog, from_.this, 0, bool(joins))
    src: BoundFrom = first
    scans: list[BoundScan] = [first]
    for j in joins:
        right = _scan(catalog, j.this, len(src.fields), True)
        if any(s.alias == right.alias for s in scans):
            raise DuplicateObject(f'table name "{right.alias}" specified more than once')
        scans.append(right)
        side = j.args.get("side")
        if (j.args.get("kind") or "").upper() == "CROSS" or (j.args.get("on") is None and not j.args.get("using")):
            raise FeatureNotSupported("joins without an equality condition (CROSS JOIN, FROM a, b) are not "
                                      "supported in a materialized view yet; use JOIN ... ON")
        scope = Scope(scans)
        if j.args.get("using"):
            conjuncts = [(scope.column(exp.Column(this=exp.to_identifier(ident(u)), table=exp.to_identifier(s.alias))),
                          scope.column(exp.Column(this=exp.to_identifier(ident(u)),
                                                  table=exp.to_identifier(right.alias))))
                         for u in j.args["using"] for s in [_owner(scans[:-1], ident(u))]]
            residual_parts: list[BoundExpr] = []
            pairs = conjuncts
        else:
            on = coerce(bind_expr(j.args["on"], scope, allow_agg=False), BOOL, "JOIN/ON")
            pairs, residual_parts = _split_equi(on, len(src.fields))
        if not pairs:
            raise FeatureNotSupported("a join in a materialized view needs an equality between the two sides")
        kind = _JOIN_KINDS.get(side.upper() if side else None)
        if kind is None:
            raise FeatureNotSupported(f"{side} JOIN in a materialized view is not supported yet")
        residual = None
        for part in residual_parts:
            residual = part if residual is None else BinaryOp("AND", residual, part, BOOL)
        if residual is not None and kind != "INNER":
            raise FeatureNotSupported("conditions other than equalities in the ON clause of an outer join are not "
                                      "supported yet")
        src = BoundJoin(src, right, kind, tuple(a for a, _ in pairs), tuple(b for _, b in pairs), residual)
    return src, Scope(scans)


def _owner(scans: list[BoundScan], column: str) -> BoundScan:
    owners = [s for s in scans if any(f.name == column for f in s.relation.fields)]
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


def bind_stream_select(catalog: CatalogReader, query: exp.Expression) -> BoundStreamSelect:
    if not isinstance(query, exp.Select):
        raise FeatureNotSupported(f"{type(query).__name__.upper()} in a materialized view is not supported yet")
    for arg, feature in (("with", "WITH (common table expressions)"),
                         ("order", "ORDER BY"), ("limit", "LIMIT"), ("offset", "OFFSET"),
                         ("distinct", "DISTINCT"), ("windows", "WINDOW")):
        if query.args.get(arg):
            raise FeatureNotSupported(f"{feature} in a materialized view is not supported yet")
    source, scope = bind_from(catalog, query)
    where = None
    if query.args.get("where"):
        where = coerce(bind_expr(query.args["where"].this, scope, allow_agg=False), BOOL, "WHERE")

    items: list[SelectItem] = []
    for e in query.expressions:
        if isinstance(e, exp.Star):
            items += scope.star(None)
            continue
        if isinstance(e, exp.Column) and isinstance(e.this, exp.Star):
            items += scope.star(ident(e.args.get("table")) if e.args.get("table") else None)
            continue
        node = e.this if isinstance(e, exp.Alias) else e
        bound = bind_expr(node, scope, allow_agg=True)
        name = ident(e.args["alias"]) if isinstance(e, exp.Alias) else output_name(node)
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
            else:
                keys.append(bind_expr(g, scope, allow_agg=False))
        group_by = tuple(keys)
    having = None
    if query.args.get("having"):
        having = coerce(bind_expr(query.args["having"].this, scope, allow_agg=True), BOOL, "HAVING")
    if group_by is None and (having is not None or any(contains_agg(i.expr) for i in items)):
        group_by = ()  # a global aggregate: one group
    if group_by is not None:
        for e, what in [(it.expr, it.name) for it in items] + ([(having, "HAVING")] if having is not None else []):
            check_grouped(e, group_by, what)
    return BoundStreamSelect(source, tuple(items), where, group_by, having)


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
    if isinstance(node, exp.In):
        if node.args.get("query") or node.args.get("field"):
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
    if isinstance(node, exp.Func):
        return _bind_func(node, rec)
    raise FeatureNotSupported(f"expression {node.sql(dialect='postgres')!r} is not supported in a "
                              f"materialized view yet")


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


_AGGS = (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max, exp.LogicalAnd, exp.LogicalOr, exp.GroupConcat)
_AGG_KIND = {exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max",
             exp.LogicalAnd: "bool_and", exp.LogicalOr: "bool_or", exp.GroupConcat: "string_agg"}
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
        arg = coerce(arg, {"count": VARCHAR, "string_agg": VARCHAR, "bool_and": BOOL, "bool_or": BOOL,
                           "min": VARCHAR, "max": VARCHAR}.get(kind, NUMERIC))
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
    if kind != "string_agg":
        order = []  # only string_agg's result depends on the order of its inputs
    if kind in ("min", "max", "bool_and", "bool_or"):
        distinct = False  # the same result with or without DISTINCT
    return AggCallExpr(kind, arg, agg_return_type(kind, arg.type), distinct, tuple(order), delimiter, filter_)


def _bind_func(node: exp.Func, rec) -> BoundExpr:
    name = (node.this if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
    name = {"coalesce": "coalesce", "lower": "lower", "upper": "upper", "abs": "abs", "round": "round",
            "length": "length", "concat": "concat", "nullif": "nullif", "trim": "trim", "substring": "substring",
            "greatest": "greatest", "least": "least", "ceil": "ceil", "floor": "floor"}.get(name, name)
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
