"""The numeric class of an operand, where the query's text alone tells it, for rewrites whose
PostgreSQL meaning depends on an operand's type (`frontend.catalog.float_round`,
`frontend.catalog.real_operands`, `frontend.catalog.float_text`).

A rewrite runs before DuckDB binds the query, so it has no types; but some operands have one in
plain sight: a number literal (an integer or a numeric, as PostgreSQL reads it), a cast, a column of
a table, materialized view or view of the catalog named in the same SELECT's FROM, a column of a
subquery, a CTE or a VALUES list there typed by the expressions that give its values
(`frontend.catalog.derived_columns`: a VALUES column when all its rows agree, ignoring bare NULLs,
or are numbers one of which is a double),
arithmetic of those (``^`` too: a double, as PostgreSQL's ``dpow``, unless an operand may be a
numeric), and ``sum``, ``min``, ``max``, ``avg`` and ``count`` over them. `OperandTypes.kind` says
``real``, ``double``, ``exact`` (an integer type or numeric), ``text`` (a cast to text, a varchar
column) or ``other`` (a date column...) for them, and None for anything else (another call, a
column of a set operation, a column not found or ambiguous): rewrites then ask DuckDB at run time
(``typeof``) or leave the operand alone. One `OperandTypes` serves one query's rewrite (it keeps
what it found of each SELECT's FROM).

>>> import sqlglot
>>> q = sqlglot.parse_one("SELECT x::real * 2, 1.5 + 2, x::float8 - 1::real, avg(x::real), x::text, x::date, f(x), "
...                      "2 ^ 3, 2.5 ^ 3, v.a * 2 FROM (VALUES (1::real), (NULL)) v(a)", read="risingwave")
>>> [OperandTypes(q, None).kind(e) for e in q.expressions]
['double', 'exact', 'double', 'double', 'text', 'other', None, 'double', None, 'double']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, TypeVar

from sqlglot import exp

from frontend.catalog.derived_columns import Columns, derived_columns
from frontend.catalog.system import SYSTEM_TABLES
from risingspark.errors import RisingSparkError, UndefinedFunction
from risingspark.types import BOOL, DataType, TypeName

if TYPE_CHECKING:
    from frontend.catalog.rewrite import RewriteContext
    from risingspark.catalog import RelationCatalog

Kind = Literal["real", "double", "exact", "text", "other"]
FLOATS = ("real", "double")

_CAST_KINDS: dict[exp.DType, Kind] = {
    exp.DataType.Type.FLOAT: "real", exp.DataType.Type.DOUBLE: "double",
    **dict.fromkeys((exp.DataType.Type.SMALLINT, exp.DataType.Type.INT, exp.DataType.Type.BIGINT,
                     exp.DataType.Type.DECIMAL), "exact"),
    **dict.fromkeys((exp.DataType.Type.TEXT, exp.DataType.Type.VARCHAR, exp.DataType.Type.CHAR,
                     exp.DataType.Type.BPCHAR), "text")}
_COLUMN_KINDS: dict[TypeName, Kind] = {TypeName.REAL: "real", TypeName.DOUBLE: "double", TypeName.SMALLINT: "exact",
                                       TypeName.INT: "exact", TypeName.BIGINT: "exact", TypeName.NUMERIC: "exact",
                                       TypeName.VARCHAR: "text"}
ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div)
_SAME_KIND = (exp.Paren, exp.Neg, exp.Sum, exp.Min, exp.Max)  # (PostgreSQL's sum of a real is a real)
T = TypeVar("T")
_INTEGERS = (TypeName.SMALLINT, TypeName.INT, TypeName.BIGINT)  # (narrowest first)
_INTEGER_ARITHMETIC = (*ARITHMETIC, exp.Mod)


def is_number(e: exp.Expression) -> bool:
    """A number literal, negated or not (``2``, ``-0.5``, ``1e3``)."""
    while isinstance(e, exp.Paren | exp.Neg):
        e = e.this
    return isinstance(e, exp.Literal) and not e.is_string


class OperandTypes:
    """The classes of one query's operands (see the module doc)."""

    def __init__(self, query: exp.Expression, ctx: RewriteContext | None) -> None:
        self.query = query
        self.ctx = ctx
        self._ctes = {c.alias_or_name for c in query.find_all(exp.CTE)}
        self._sources: dict[int, tuple[exp.Select, dict[str, RelationCatalog | Columns | None]]] = {}
        self._typing: set[tuple[int, str]] = set()  # (the derived columns being typed: a reference back is unknown)
        self._typed: dict[tuple[int, str], set] = {}  # (the derived columns typed: `_each`)

    @classmethod
    def of(cls, query: exp.Expression, ctx: RewriteContext | None) -> OperandTypes:
        """The query's `OperandTypes`, one for every rule of its rewrite (kept on the rewrite's
        context: a SELECT a rule replaced is looked at again, `_from` checks its identity)."""
        known = getattr(ctx, "operand_types", None)
        if isinstance(known, OperandTypes) and known.query is query:
            return known
        types = cls(query, ctx)
        if ctx is not None:
            ctx.operand_types = types
        return types

    def kind(self, e: exp.Expression) -> Kind | None:
        """``real``, ``double``, ``exact``, ``text`` or ``other`` when the text shows the operand's
        class, else None. Arithmetic follows PostgreSQL: a real with an exact operand is a double."""
        while isinstance(e, _SAME_KIND):
            e = e.this
        if isinstance(e, exp.Literal):
            return None if e.is_string else "exact"
        if isinstance(e, exp.Cast) and isinstance(e.to, exp.DataType):
            if e.to.this == exp.DataType.Type.DOUBLE and e.to.expressions:  # float(p): a real up to 24 bits
                return None
            return _CAST_KINDS.get(e.to.this, "other")
        if isinstance(e, exp.Column):
            values = self.derived_values(e)
            if values is not None:  # (PostgreSQL's common type of the rows: double precision is preferred)
                kinds: set[Kind | None] = self._each(values, self.kind)
                if len(kinds) == 1:
                    return kinds.pop()
                return "double" if "double" in kinds and kinds <= {"real", "double", "exact"} else None
            t = self.column_type(e)
            return _COLUMN_KINDS.get(t.name, "other") if t is not None else None
        if isinstance(e, exp.Boolean):
            return "other"
        if isinstance(e, exp.Case) and e.args.get("default") is not None and not e.this and \
                all(_failure(i.args.get("true")) for i in e.args.get("ifs") or []):
            return self.kind(e.args["default"])  # (a check's: its value is the ELSE's, or an error)
        if isinstance(e, exp.Count):
            return "exact"
        if isinstance(e, exp.Avg):  # a numeric of exact operands, else a double
            of = self.kind(e.this)
            return of if of in ("exact", None) else "double" if of in FLOATS else None
        if isinstance(e, ARITHMETIC):
            kinds = {self.kind(e.this), self.kind(e.expression)}
            if not kinds <= {"real", "double", "exact"}:
                return None
            return "exact" if kinds == {"exact"} else "real" if kinds == {"real"} else "double"
        if isinstance(e, exp.Pow):  # (float8 ^ float8 unless numeric ^ numeric is picked)
            kinds = {self.kind(e.this), self.kind(e.expression)}
            if kinds & set(FLOATS) and kinds <= {"real", "double", "exact"}:
                return "double"
            types = [self.type_of(e.this), self.type_of(e.expression)]
            return "double" if all(t is not None and t.name in _INTEGERS for t in types) else None
        return None

    def type_of(self, e: exp.Expression) -> DataType | None:
        """The type of `e` where the text shows it: a number literal's (an integer, a bigint or a
        numeric by its size and form, as PostgreSQL reads it), a boolean's, a cast's, a catalog
        column's; else None (a quoted literal or NULL too: PostgreSQL types it by its context)."""
        while isinstance(e, exp.Paren | exp.Neg):
            e = e.this
        if isinstance(e, exp.Literal):
            return None if e.is_string else _number_type(e.name)
        if isinstance(e, exp.Boolean):
            return BOOL
        if isinstance(e, exp.Cast) and isinstance(e.to, exp.DataType):
            if e.to.this == exp.DataType.Type.DOUBLE and e.to.expressions:  # float(p): a real up to 24 bits
                return None
            try:
                return DataType.parse(e.to.sql(dialect="postgres"))
            except RisingSparkError:  # (a type the catalog has not: ``time``, ``bytea``...)
                return None
        if isinstance(e, exp.Column):
            return self.column_type(e)
        return None

    def integer_type(self, e: exp.Expression) -> TypeName | None:
        """The integer type of `e` where the text shows it (`type_of`), or of arithmetic of two
        integers the wider operand's (PostgreSQL's ``int2pl``, ``int24mul``...); else None."""
        while isinstance(e, exp.Paren | exp.Neg):
            e = e.this
        if isinstance(e, _INTEGER_ARITHMETIC):
            a, b = self.integer_type(e.this), self.integer_type(e.expression)
            return None if a is None or b is None else max(a, b, key=_INTEGERS.index)
        t = self.type_of(e)
        return t.name if t is not None and t.name in _INTEGERS else None

    def column_type(self, col: exp.Column) -> DataType | None:
        """The type of a column of a catalog relation (`column_relation`) or of a derived table (the
        type its values agree on), else None."""
        values = self.derived_values(col)
        if values is not None:
            types = self._each(values, self.type_of)
            return types.pop() if len(types) == 1 else None
        rel = self.column_relation(col)
        field = next((f for f in rel.fields if f.name == col.name), None) if rel is not None else None
        return field.type if field is not None else None

    def column_relation(self, col: exp.Column) -> RelationCatalog | None:
        """The catalog relation a column reads, when it is one named in the FROM of the column's own
        SELECT (`_source`)."""
        source = self._source(col)
        return None if isinstance(source, dict) else source

    def derived_values(self, col: exp.Column) -> list[exp.Expression] | None:
        """The expressions giving the values of a column of a subquery, CTE or VALUES list."""
        source = self._source(col)
        return source.get(col.name) if isinstance(source, dict) else None

    def _each(self, values: list[exp.Expression], typing: Callable[[exp.Expression], T]) -> set[T | None]:
        """What `typing` says of each of `values` (bare NULLs aside: of the others' type), once per
        column: a column of a subquery typed from a column of the subquery under it, as a chain of
        CTEs does, would type each level again for every reference above it (exponential in the
        depth: 1.6 s for 18 levels of ``x * x``)."""
        key = (id(values), typing.__name__)
        known = self._typed.get(key)
        if known is not None:
            return set(known)
        if key in self._typing:
            return {None}
        self._typing.add(key)
        try:
            found = {typing(v) for v in values if not isinstance(v, exp.Null)}
        finally:
            self._typing.discard(key)
        self._typed[key] = found
        return set(found)

    def _source(self, col: exp.Column) -> RelationCatalog | Columns | None:
        """What a column reads, when it is a FROM item of the column's own SELECT (a catalog relation
        or a derived table's columns): by the column's qualifier, or as the only such item with a
        column of that name while every FROM item is known."""
        scope = col.parent
        while scope is not None and not isinstance(scope, exp.Select):
            if isinstance(scope, exp.Union | exp.Intersect | exp.Except):
                return None  # (an ORDER BY of a set operation names its output)
            scope = scope.parent
        if scope is None:
            return None
        sources = self._from(scope)
        if col.table:
            return sources.get(col.table)
        if None in sources.values():
            return None
        having = [r for r in sources.values() if r is not None and col.name in _names(r)]
        return having[0] if len(having) == 1 else None

    def _from(self, select: exp.Select) -> dict[str, RelationCatalog | Columns | None]:
        """The SELECT's FROM items by name or alias, each with the catalog relation it reads or the
        columns of the derived table it is."""
        known = self._sources.get(id(select))
        if known is not None and known[0] is select:
            return known[1]
        from_ = select.args.get("from_")
        items = ([from_.this] if isinstance(from_, exp.From) else []) + \
            [j.this for j in select.args.get("joins") or [] if isinstance(j, exp.Join)]
        sources = {item.alias_or_name: derived_columns(item) or self._relation(item) for item in items}
        self._sources[id(select)] = (select, sources)
        return sources

    def _relation(self, item: exp.Expression) -> RelationCatalog | None:
        """The catalog relation a FROM item reads, unless it renames its columns or names a CTE."""
        if self.ctx is None or not isinstance(item, exp.Table) or not isinstance(item.this, exp.Identifier):
            return None
        alias = item.args.get("alias")
        if isinstance(alias, exp.TableAlias) and alias.columns:
            return None
        name, schema = item.name, item.db
        if not schema and name in self._ctes:
            return None
        sys = self.ctx.sys
        if not schema and ("pg_catalog", name) in SYSTEM_TABLES:  # (pg_catalog comes first on the path)
            return None
        for schema_name in [schema] if schema else sys.search_path:
            found = sys.snapshot.schema(sys.database_id, schema_name)
            rel = sys.snapshot.relation(found.id, name) if found is not None else None
            if rel is not None:  # (by the snapshot's index: nothing here grows with the catalog)
                return rel
        return None


def _failure(e: exp.Expression | None) -> bool:
    """A call of DuckDB's ``error()`` (`frontend.catalog.composite.failure_call`)."""
    return isinstance(e, exp.Anonymous) and str(e.this).lower() == "error"


def _names(source: RelationCatalog | Columns) -> set[str] | dict[str, list[exp.Expression] | None]:
    return source if isinstance(source, dict) else {f.name for f in source.fields}


def _number_type(text: str) -> DataType:
    """PostgreSQL's type of a number literal: an integer or a bigint by its size, else a numeric."""
    if any(c in text for c in ".eE") or abs(int(text)) >= 2**63:
        return DataType(TypeName.NUMERIC)
    return DataType(TypeName.INT if abs(int(text)) < 2**31 else TypeName.BIGINT)


def unknown_literal(e: exp.Expression) -> exp.Expression | None:
    """`e` without parentheses when it is PostgreSQL's ``unknown``: a quoted literal or a bare NULL,
    of the type of its context; else None."""
    while isinstance(e, exp.Paren):
        e = e.this
    return e if isinstance(e, exp.Null) or (isinstance(e, exp.Literal) and e.is_string) else None


def no_function(name: str, type_name: str) -> UndefinedFunction:
    """PostgreSQL's 42883 for ``name(type)`` (the type's name as it writes it), a function no
    overload of which takes that argument."""
    return UndefinedFunction(f"function {name}({type_name}) does not exist",
                             hint="No function matches the given name and argument types. You might need to add "
                                  "explicit type casts.")


def no_operator(left: str, op: str, right: str) -> UndefinedFunction:
    """PostgreSQL's 42883 for ``left op right`` (type names as it writes them) that no operator of
    that name takes."""
    return UndefinedFunction(f"operator does not exist: {left} {op} {right}",
                             hint="No operator matches the given name and argument types. You might need to add "
                                  "explicit type casts.")
