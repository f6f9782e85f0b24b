"""Rewrites that let DuckDB run the SQL Postgres clients send, as passes over the sqlglot tree.

Each pass is a function ``(expression, ctx) -> expression``; `RULES` runs them in order. They map
Postgres-only syntax to DuckDB: ``OPERATOR(pg_catalog.~)`` and the regex operators, ``COLLATE``
(dropped), LIKE's default backslash escape, SIMILAR TO's patterns (`frontend.catalog.similar_to`),
the fractions of ``extract(second ...)`` and the epoch (`frontend.catalog.extract`), ``format()``
(`frontend.catalog.format_function`), ``to_char`` (`frontend.catalog.to_char`), the edges of ``substring``, ``sqrt``, ``ln``, ``power``
(`frontend.catalog.strict_functions`), casts to ``varchar(n)`` and of literals to booleans and
integers and of numbers past a double's range (`frontend.catalog.literal_casts`), ``||`` of arrays
and of values with no such operator (`frontend.catalog.concat_operator`), ``%`` of a double
(`frontend.catalog.float_modulo`), aggregates of a boolean or a number that PostgreSQL has not,
``every`` and ``string_agg``'s NULL delimiter (`frontend.catalog.aggregate_arguments`), ``round`` of
a double (`frontend.catalog.float_round`),
a real with an integer or numeric operand (`frontend.catalog.real_operands`), overflow and
underflow of float arithmetic (`frontend.catalog.float_overflow`) and of ``sum``/``avg`` of floats
(`frontend.catalog.float_aggregates`), the type of ``sum`` (`frontend.catalog.sum_types`) and of
``sign`` (`frontend.catalog.sign_function`), ``pg_typeof``'s type names (`frontend.catalog.pg_typeof`),
a double made text
(`frontend.catalog.float_text`), the default of ``lag``/``lead`` (`frontend.catalog.lag_default`), quotients of numeric literals (`frontend.catalog.numeric_quotients`),
integer literals in arithmetic as ``integer`` and their quotients of the operands' type,
``'{a,b}'`` array literals, ``pg_catalog.``-qualified
names, ``::regclass``/``::regtype``/``::regnamespace``/``::oid`` casts, and catalog functions
(`frontend.catalog.functions`). ``FETCH FIRST ... WITH TIES`` (`frontend.catalog.with_ties`). `name_outputs` names unaliased select items as Postgres does and
runs before the rewrites, on the statement as the client wrote it.

>>> import sqlglot
>>> q = sqlglot.parse_one("SELECT relname FROM pg_class WHERE relname OPERATOR(pg_catalog.~) '^t$' "
...                       "COLLATE pg_catalog.default", read="risingwave")
>>> operators(drop_collations(q, None), None).sql("duckdb")
"SELECT relname FROM pg_class WHERE (REGEXP_MATCHES(relname, '^t$'))"
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, cast

from sqlglot import exp

from frontend.catalog.aggregate_arguments import aggregate_arguments
from frontend.catalog.composite import OPERATOR_NODES, jsonb_operators
from frontend.catalog.concat_operator import concat_operator
from frontend.catalog.extract import extract_fractions
from frontend.catalog.float_aggregates import float_aggregates
from frontend.catalog.float_modulo import float_modulo
from frontend.catalog.float_overflow import float_overflow
from frontend.catalog.float_round import float_round
from frontend.catalog.float_text import float_text
from frontend.catalog.format_function import pg_format
from frontend.catalog.functions import literal_value, rewrite_call
from frontend.catalog.lag_default import lag_default
from frontend.catalog.literal_casts import literal_casts
from frontend.catalog.numeric_quotients import numeric_quotients
from frontend.catalog.oids import SYSTEM_NAMESPACES, format_type, type_oid
from frontend.catalog.operand_types import FLOATS, OperandTypes, is_number
from frontend.catalog.pg_typeof import pg_typeof
from frontend.catalog.real_operands import real_operands
from frontend.catalog.sign_function import sign_function
from frontend.catalog.similar_to import similar_to
from frontend.catalog.strict_functions import strict_functions
from frontend.catalog.sum_types import sum_types
from frontend.catalog.table import SystemContext
from frontend.catalog.to_char import to_char
from frontend.catalog.unknown_arguments import unknown_arguments
from frontend.catalog.with_ties import with_ties
from frontend.dialect import PG_NAME
from risingspark.errors import InvalidSchemaName, UndefinedObject, UndefinedTable
from risingspark.types import UNCONSTRAINED_NUMERIC_PRECISION, UNCONSTRAINED_NUMERIC_SCALE


@dataclass
class RewriteContext:
    """The session's view of the catalog that rewrites consult."""

    sys: SystemContext
    user: str
    database: str
    pid: int = 0
    settings: dict[str, str] = field(default_factory=dict)  # lower-case name -> value
    operand_types: OperandTypes | None = field(default=None, repr=False, compare=False)  # (`OperandTypes.of`)

    def setting(self, name: str) -> str | None:
        return self.settings.get(name.lower())

    def existing_search_path(self) -> list[str]:
        names = {s.name for s in self.sys.schemas()}
        return [s for s in self.sys.search_path if s in names]

    def current_schema(self) -> str | None:
        path = self.existing_search_path()
        return path[0] if path else None

    @cached_property
    def _schemas(self) -> dict[str, int]:
        return {**SYSTEM_NAMESPACES, **{s.name: s.id for s in self.sys.schemas()}}

    @cached_property
    def _relations(self) -> dict[tuple[str, str], int]:
        from frontend.catalog.system import SYSTEM_TABLES

        out = {(t.schema, t.name): t.oid for t in SYSTEM_TABLES.values()}
        out.update({(self.sys.schema_name(r), r.name): r.id for r in self.sys.relations()})
        return out

    def namespace_oid(self, name: str) -> int | None:
        return self._schemas.get(_unquote(name))

    def relation_oid(self, name: str) -> int | None:
        """The OID of a relation name as ``::regclass`` resolves it (``schema.name`` or searched)."""
        parts = [_unquote(p) for p in name.split(".")]
        if len(parts) > 1:
            return self._relations.get((parts[-2], parts[-1]))
        for schema in ["pg_catalog", *self.sys.search_path, "rw_catalog"]:
            oid = self._relations.get((schema, parts[0]))
            if oid is not None:
                return oid
        return None

    def visible_relation_oids(self) -> set[int]:
        """Relations ``pg_table_is_visible``: first of their name along pg_catalog + search_path."""
        seen: set[str] = set()
        out: set[int] = set()
        for schema in ["pg_catalog", *self.sys.search_path]:
            for (s, name), oid in self._relations.items():
                if s == schema and name not in seen:
                    out.add(oid)
            seen |= {name for (s, name) in self._relations if s == schema}
        return out


def _unquote(name: str) -> str:
    name = name.strip()
    return name[1:-1].replace('""', '"') if name.startswith('"') and name.endswith('"') else name.lower()


# ---- output names -----------------------------------------------------------------------------------

_FUNC_NAMES = {exp.CurrentVersion: "version", exp.GroupConcat: "string_agg", exp.Explode: "unnest",
               exp.ArraySize: "array_length", exp.StrPosition: "position", exp.LogicalAnd: "bool_and",
               exp.LogicalOr: "bool_or", exp.CurrentTimestamp: "current_timestamp", exp.CurrentDate: "current_date",
               exp.Localtime: "localtime", exp.Localtimestamp: "localtimestamp", exp.CurrentTime: "current_time", exp.Array: "array", exp.Case: "case",
               exp.Exists: "exists", exp.ArrayAgg: "array_agg"}


def output_name(node: Any) -> str:
    """The column name Postgres gives an unaliased select item."""
    return _figure(node)[0]


_OPERATOR_FUNCS = (exp.RegexpLike, exp.RegexpILike, exp.Pow, exp.And, exp.Or, exp.Not, exp.Xor)


def _figure(node: Any) -> tuple[str, int]:
    """Postgres' ``FigureColname``: a name and its strength — 2 for a column's, an alias's or a
    function's, 1 for the type of a cast or ``case``, 0 for ``?column?``. A cast takes its argument's
    name only when that is strong (``a::text`` is ``a``, ``0::float8::text`` is ``text``), a CASE
    its ELSE's (``CASE ... ELSE a END`` is ``a``)."""
    if isinstance(node, exp.Alias):
        return node.alias, 2
    if isinstance(node, exp.Column):
        return (node.name if node.this.quoted else node.name.lower()), 2
    if isinstance(node, exp.Paren | exp.Window | exp.Filter):  # (a window call is named after its function)
        return _figure(node.this)
    if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Func):
        return _figure(node.expression)
    if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Identifier):  # (s).a: a struct's field
        return (node.expression.name if node.expression.quoted else node.expression.name.lower()), 2
    if isinstance(node, OPERATOR_NODES) or (isinstance(node, _OPERATOR_FUNCS) and PG_NAME not in node.meta):
        return "?column?", 0
    if isinstance(node, exp.Cast | exp.TryCast):
        inner = _figure(node.this)
        return inner if inner[1] == 2 else (_type_name(node.to), 1)
    if isinstance(node, exp.Interval):  # a typed literal
        return "interval", 1
    if isinstance(node, exp.Case):
        default = node.args.get("default")
        inner = _figure(default) if default is not None else ("?column?", 0)
        return inner if inner[1] == 2 else ("case", 1)
    if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Select) and len(node.this.expressions) == 1:
        return _figure(node.this.expressions[0])
    if isinstance(node, exp.Func) and isinstance(node.meta.get(PG_NAME), str):
        return node.meta[PG_NAME].lower(), 2  # (the name as written: `frontend.dialect`)
    if isinstance(node, exp.Trim):  # TRIM([LEADING | TRAILING | BOTH] ...) calls ltrim, rtrim or btrim
        position = str(node.args.get("position") or "").upper()
        return {"LEADING": "ltrim", "TRAILING": "rtrim"}.get(position, "btrim"), 2
    for cls, name in _FUNC_NAMES.items():
        if isinstance(node, cls):
            return name, 2
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower(), 2
    if isinstance(node, exp.Func):
        return node.sql_name().lower(), 2
    return "?column?", 0


def _type_name(to: exp.Expression) -> str:
    """Postgres' typname of a cast target (``int4``, ``text``, ``regclass``...)."""
    name = _target_name(to)
    oid = type_oid(name)
    from frontend.catalog.oids import PG_TYPES_BY_OID

    return PG_TYPES_BY_OID[oid].name if oid is not None else name


def name_outputs(query: exp.Expression) -> exp.Expression:
    """Alias unaliased select items with Postgres' names: of the outermost SELECT(s), and of those
    whose columns are named by a query around them (a subquery in FROM, a CTE: ``SELECT s.count FROM
    (SELECT count(*) FROM t) s`` reads the column Postgres names ``count``). Unquoted identifiers
    are folded to lower case first, as Postgres folds them: DuckDB and Spark bind names without
    regard to case but name a column after its alias as written (``SELECT 1 AS Foo`` is ``foo``)."""
    for node in query.find_all(exp.Identifier):
        if not node.quoted and isinstance(node.this, str) and node.this != node.this.lower():
            node.set("this", node.this.lower())
    query = _name_values(query)
    selects = [s for s in query.find_all(exp.Select) if _names_columns(s)]
    for sel in selects:
        items: list[exp.Expression] = []
        for e in sel.expressions:
            if isinstance(e, exp.Alias | exp.Star | exp.Column):
                items.append(e)
            else:
                items.append(cast(exp.Expression, exp.alias_(e, output_name(e), quoted=True)))
        sel.set("expressions", items)
    return query


def _name_values(query: exp.Expression) -> exp.Expression:
    """A VALUES list's columns are ``column1``, ``column2``... unless its alias names them (DuckDB:
    ``col0``, ``col1``); a VALUES statement is read as ``SELECT * FROM (VALUES ...)``."""
    for node in list(query.find_all(exp.Values)):
        first = node.expressions[0] if node.expressions else None
        if not isinstance(first, exp.Tuple) or not isinstance(node.parent, exp.From | exp.Join | None):
            continue
        alias = node.args.get("alias")
        if alias is not None and alias.columns:
            continue
        names = [exp.to_identifier(f"column{i + 1}", quoted=True) for i in range(len(first.expressions))]
        named = exp.TableAlias(this=alias.this.copy() if alias is not None and alias.this else
                               exp.to_identifier("*VALUES*", quoted=True), columns=names)
        if node is query:
            modifiers = {k: node.args.pop(k) for k in ("order", "limit", "offset") if node.args.get(k) is not None}
            node.set("alias", named)
            select = exp.select("*").from_(node)
            for key, value in modifiers.items():
                select.set(key, value)
            return select
        node.set("alias", named)
    return query


def _names_columns(sel: exp.Select) -> bool:
    """Whether a SELECT's output names are seen: the statement's, a set operation's branch of one, or
    the body of a subquery in FROM or of a CTE (not a scalar, IN or EXISTS subquery's)."""
    node: exp.Expression = sel
    while isinstance(node.parent, exp.Union | exp.Intersect | exp.Except):
        node = node.parent
    parent = node.parent
    if parent is None or isinstance(parent, exp.CTE):
        return True
    return isinstance(parent, exp.Subquery) and isinstance(parent.parent, exp.From | exp.Join)


# ---- rules --------------------------------------------------------------------------------------------

def qualified_names(query: exp.Expression, ctx: RewriteContext | None) -> exp.Expression:
    """Drop ``pg_catalog.`` from function calls and schema parts from column references, and name
    the column of a function in FROM after its alias (``unnest(a) x`` has a column ``x``)."""
    for node in list(query.find_all(exp.Dot)):
        if isinstance(node.this, exp.Identifier) and node.this.name.lower() == "pg_catalog" and \
                isinstance(node.expression, exp.Func):
            node.replace(node.expression)
    for col in query.find_all(exp.Column):
        if col.args.get("db") is not None:
            col.set("db", None)
            col.set("catalog", None)
    for table in query.find_all(exp.Table):
        if isinstance(table.this, exp.Func):
            table.set("db", None)
            alias = table.args.get("alias")
            if isinstance(alias, exp.TableAlias) and not alias.columns and alias.this is not None:
                alias.set("columns", [alias.this.copy()])
    return query


_OPERATORS: dict[str, Callable[[exp.Expression, exp.Expression], exp.Expression]] = {
    "~": lambda a, b: exp.RegexpLike(this=a, expression=b),
    "!~": lambda a, b: exp.Not(this=exp.RegexpLike(this=a, expression=b)),
    "~*": lambda a, b: exp.RegexpILike(this=a, expression=b),
    "!~*": lambda a, b: exp.Not(this=exp.RegexpILike(this=a, expression=b)),
    "~~": lambda a, b: exp.Like(this=a, expression=b),
    "!~~": lambda a, b: exp.Not(this=exp.Like(this=a, expression=b)),
    "~~*": lambda a, b: exp.ILike(this=a, expression=b),
    "!~~*": lambda a, b: exp.Not(this=exp.ILike(this=a, expression=b)),
    "=": lambda a, b: exp.EQ(this=a, expression=b),
    "<>": lambda a, b: exp.NEQ(this=a, expression=b),
    "!=": lambda a, b: exp.NEQ(this=a, expression=b),
    "<": lambda a, b: exp.LT(this=a, expression=b),
    "<=": lambda a, b: exp.LTE(this=a, expression=b),
    ">": lambda a, b: exp.GT(this=a, expression=b),
    ">=": lambda a, b: exp.GTE(this=a, expression=b),
    "||": lambda a, b: exp.DPipe(this=a, expression=b),
}


def group_by_output_names(query: exp.Expression, ctx: RewriteContext | None) -> exp.Expression:
    """A bare GROUP BY name that names a select item ``t.name [AS name]`` groups by that item, as
    RisingWave resolves it, even when the name alone would be ambiguous among the inputs (dbt's
    ``group by database, name, schema`` over a join of two tables with a ``name`` column).

    >>> import sqlglot
    >>> q = sqlglot.parse_one("SELECT f.name AS name FROM f JOIN s ON f.x = s.x GROUP BY name", read="postgres")
    >>> group_by_output_names(q, None).sql()
    'SELECT f.name AS name FROM f JOIN s ON f.x = s.x GROUP BY f.name'
    """
    for select in query.find_all(exp.Select):
        group = select.args.get("group")
        if group is None:
            continue
        items: dict[str, exp.Column] = {}
        for item in select.expressions:
            col = item.this if isinstance(item, exp.Alias) else item
            if isinstance(col, exp.Column) and col.table and output_name(item) == output_name(col):
                items.setdefault(output_name(item), col)
        for i, g in enumerate(group.expressions):
            if isinstance(g, exp.Column) and not g.table and output_name(g) in items:
                group.expressions[i] = items[output_name(g)].copy()
    return query


def operators(query: exp.Expression, ctx: RewriteContext | None) -> exp.Expression:
    """``a OPERATOR(pg_catalog.~) b`` -> ``a ~ b`` (and the other operators by name)."""
    for node in reversed(list(query.find_all(exp.Operator))):
        op = str(node.args.get("operator") or "").split(".")[-1].strip()
        build = _OPERATORS.get(op)
        if build is not None:
            node.replace(exp.Paren(this=build(node.this, node.expression)))
    return query


def drop_collations(query: exp.Expression, ctx: RewriteContext | None) -> exp.Expression:
    """``x COLLATE "C"`` -> ``x`` (DuckDB's collations are not Postgres')."""
    for node in reversed(list(query.find_all(exp.Collate))):
        node.replace(node.this)
    return query


_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv)


def integer_literals(query: exp.Expression, ctx: RewriteContext | None) -> exp.Expression:
    """An integer literal in arithmetic is an ``integer``, as in Postgres: ``smallint_col * 2`` is
    an integer product (DuckDB typed it a smallint and overflowed past 32,767)."""
    for node in list(query.find_all(exp.Literal)):
        if isinstance(node.parent, _ARITHMETIC) and node.is_int and -2**31 <= int(node.name) < 2**31:
            node.replace(exp.cast(node.copy(), "INTEGER"))
    return query


def integer_quotients(query: exp.Expression, ctx: RewriteContext | None) -> exp.Expression:
    """A quotient as DuckDB's ``/``, which the batch engine's ``integer_division`` makes PostgreSQL's
    for integers: truncated, in the operands' type (``10 / 4`` is the integer 2). sqlglot wrote one of
    integer literals or casts ``CAST(TRUNC(a / b) AS BIGINT)``, a bigint.

    >>> import sqlglot
    >>> integer_quotients(sqlglot.parse_one("SELECT 10 / 4", read="risingwave"), None).sql("duckdb")
    'SELECT 10 / 4'
    """
    for node in query.find_all(exp.Div):
        node.set("typed", None)
    return query


_KEYWORD_CALLS = {exp.CurrentDate: "current_date", exp.Localtimestamp: "current_localtimestamp",
                  exp.Localtime: "current_localtime", exp.CurrentTimestamp: "get_current_timestamp",
                  exp.CurrentTime: "get_current_time"}


def keyword_calls(query: exp.Expression, ctx: RewriteContext | None) -> exp.Expression:
    """``current_date``, ``current_timestamp``, ``localtime``... as DuckDB's function calls: named after
    themselves (``AS "current_date"``), DuckDB took the keyword for that alias of the same SELECT and
    failed ("referenced before it is defined")."""
    for node in list(query.find_all(*_KEYWORD_CALLS)):
        node.replace(exp.Anonymous(this=_KEYWORD_CALLS[type(node)], expressions=[]))
    return query


def like_escape(query: exp.Expression, ctx: RewriteContext | None) -> exp.Expression:
    """LIKE without ESCAPE escapes with a backslash, as in Postgres."""
    for node in list(query.find_all(exp.Like, exp.ILike)):
        if not isinstance(node.parent, exp.Escape):
            node.replace(exp.Escape(this=node.copy(), expression=exp.Literal.string("\\")))
    return query


def _parse_array(text: str) -> list[str | None] | None:
    """The items of a one-dimensional Postgres array literal (``{a,"b c",NULL}``)."""
    s = text.strip()
    if not (s.startswith("{") and s.endswith("}")):
        return None
    body, items, cur, quoted, i = s[1:-1], [], "", False, 0
    was_quoted = False
    while i < len(body):
        ch = body[i]
        if quoted:
            if ch == "\\" and i + 1 < len(body):
                i += 1
                cur += body[i]
            elif ch == '"':
                quoted = False
            else:
                cur += ch
        elif ch == '"':
            quoted = was_quoted = True
        elif ch == ",":
            items.append(None if not was_quoted and cur.strip().upper() == "NULL" else cur.strip() if not was_quoted else cur)
            cur, was_quoted = "", False
        else:
            cur += ch
        i += 1
    if body.strip():
        items.append(None if not was_quoted and cur.strip().upper() == "NULL" else cur.strip() if not was_quoted else cur)
    return items


def untyped_array_comparisons(query: exp.Expression, ctx: RewriteContext | None) -> exp.Expression:
    """``x = ANY('{a,b}')`` -> ``x = ANY(['a', 'b'])``, and ``<> ALL`` alike.

    PostgreSQL types an untyped array literal by the other operand; psycopg sends a list of strings
    untyped (``'{a,b}'``), which DuckDB's ANY refuses (not a list). As a list of strings it compares
    with a text column as PostgreSQL does, and against any other column fails (DuckDB: "an explicit
    cast is required") rather than converting the items its own way. An empty array: false and true
    (PostgreSQL's, for a NULL operand too); a nested array is left alone."""
    for node in list(query.find_all(exp.EQ, exp.NEQ)):
        arg, inner = node.expression, None
        if isinstance(node, exp.EQ) and isinstance(arg, exp.Any):
            inner = arg.this
        elif isinstance(node, exp.NEQ) and isinstance(arg, exp.Anonymous) and arg.name.lower() == "all" and \
                len(arg.expressions) == 1:
            inner = arg.expressions[0]
        while isinstance(inner, exp.Paren):
            inner = inner.this
        if not (isinstance(inner, exp.Literal) and inner.is_string) or inner.this.strip()[1:].lstrip().startswith("{"):
            continue
        items = _parse_array(inner.this)
        if items is None:
            continue
        if not items:
            node.replace(exp.false() if isinstance(node, exp.EQ) else exp.true())
            continue
        inner.replace(exp.Array(expressions=[exp.null() if v is None else exp.Literal.string(v) for v in items]))
    return query


def array_literals(query: exp.Expression, ctx: RewriteContext | None) -> exp.Expression:
    """``'{a,b}'::text[]`` -> ``CAST(['a', 'b'] AS TEXT[])``."""
    for node in list(query.find_all(exp.Cast)):
        to = node.to
        if isinstance(node.this, exp.Literal) and node.this.is_string and isinstance(to, exp.DataType) and \
                to.is_type(exp.DataType.Type.ARRAY):
            items = _parse_array(node.this.this)
            if items is not None:
                node.set("this", exp.Array(expressions=[exp.null() if v is None else exp.Literal.string(v)
                                                        for v in items]))
    return query


_REG = ("regclass", "regtype", "regproc", "regprocedure", "regnamespace", "regrole", "regoper", "regconfig")
_TEXTUAL = {"name": "VARCHAR", "char": "VARCHAR", "bpchar": "VARCHAR", "text": "VARCHAR", "oid": "BIGINT",
            "xid": "BIGINT", "cid": "BIGINT", "regdictionary": "VARCHAR"}


def _target_name(to: exp.Expression) -> str:
    if isinstance(to, exp.ObjectIdentifier):
        return to.name.lower()
    if isinstance(to, exp.DataType) and to.this == exp.DataType.Type.USERDEFINED:
        kind = to.args.get("kind")
        return (kind.name if kind is not None else "").lower()
    if isinstance(to, exp.DataType):
        return to.sql(dialect="postgres").lower()
    return to.sql().lower()


def _oid_context(node: exp.Expression) -> bool:
    """Whether a reg* cast is used as an OID (compared, or cast on to an integer) rather than shown."""
    parent = node.parent
    while isinstance(parent, exp.Paren):
        parent = parent.parent
    if isinstance(parent, exp.Cast | exp.TryCast):
        return _target_name(parent.to) in ("oid", "int", "integer", "bigint", "int4", "int8")
    if isinstance(parent, exp.Anonymous | exp.Func) and not isinstance(parent, exp.Cast | exp.TryCast):
        # an argument of a catalog function taking an OID (obj_description('t'::regclass), ...)
        from frontend.catalog.functions import BUILDERS

        name = str(parent.this) if isinstance(parent, exp.Anonymous) else parent.sql_name()
        return name.lower() in BUILDERS
    return isinstance(parent, exp.EQ | exp.NEQ | exp.In | exp.GT | exp.LT | exp.GTE | exp.LTE)


def _relname_subquery(arg: exp.Expression) -> exp.Expression:
    query = exp.select(exp.column("relname", "__c")).from_(
        exp.Table(this=exp.to_identifier("pg_class"), db=exp.to_identifier("pg_catalog"),
                  alias=exp.TableAlias(this=exp.to_identifier("__c")))).where(
        exp.EQ(this=exp.column("oid", "__c"), expression=arg))
    return exp.Subquery(this=query)


def _reg_cast(kind: str, arg: exp.Expression, as_oid: bool, ctx: RewriteContext) -> exp.Expression:
    value = literal_value(arg)
    if value is None:
        return exp.null()
    if isinstance(value, str) and not value.isdigit():
        if kind == "regclass":
            oid = ctx.relation_oid(value)
            if oid is None:
                raise UndefinedTable(f'relation "{value}" does not exist')
        elif kind == "regtype":
            oid = type_oid(value)
            if oid is None:
                raise UndefinedObject(f'type "{value}" does not exist')
        elif kind == "regnamespace":
            oid = ctx.namespace_oid(value)
            if oid is None:
                raise InvalidSchemaName(f'schema "{value}" does not exist')
        elif kind == "regrole":
            oid = next((r.id for r in ctx.sys.roles if r.name == _unquote(value)), None)
            if oid is None:
                raise UndefinedObject(f'role "{value}" does not exist')
        else:
            oid = 0
        if as_oid:
            return exp.Literal.number(oid)
        return exp.Literal.string(format_type(oid, -1) or value) if kind == "regtype" else exp.Literal.string(value)
    if as_oid:
        return exp.cast(arg, "BIGINT")
    if kind == "regclass":
        return _relname_subquery(arg)
    if kind == "regtype":
        return exp.Anonymous(this="rs_format_type", expressions=[arg, exp.null()])
    if kind == "regnamespace":
        names = {oid: name for name, oid in ctx._schemas.items()}
        return exp.Case(ifs=[exp.If(this=exp.EQ(this=arg.copy(), expression=exp.Literal.number(o)),
                                    true=exp.Literal.string(n)) for o, n in names.items()])
    if kind == "regrole":
        return exp.Case(ifs=[exp.If(this=exp.EQ(this=arg.copy(), expression=exp.Literal.number(r.id)),
                                    true=exp.Literal.string(r.name)) for r in ctx.sys.roles])
    return exp.cast(arg, "VARCHAR")


def casts(query: exp.Expression, ctx: RewriteContext | None) -> exp.Expression:
    """Casts to Postgres-only types: reg* types (an OID where compared, a name where shown),
    ``oid`` (a bigint) and ``name``/``"char"``/``text`` (a varchar); and to an unconstrained
    ``numeric``, which DuckDB reads as ``DECIMAL(18,3)`` (``3.14159::numeric`` was 3.142): the scale
    an unconstrained numeric is stored at (`risingspark.types`, ``DECIMAL(38,10)``), and as text
    without the trailing zeros that scale adds (``1.5::numeric::text`` is ``1.5``, as PostgreSQL's for
    a value written so)."""
    types = OperandTypes.of(query, ctx)
    texts = []  # casts to text of a numeric cast: their trailing zeros go once every cast is rewritten
    for node in reversed(list(query.find_all(exp.Cast, exp.TryCast))):
        name = _target_name(node.to)
        if name in _REG and ctx is not None:
            node.replace(_reg_cast(name, node.this, _oid_context(node), ctx))
        elif name in _TEXTUAL:
            node.set("to", exp.DataType.build(_TEXTUAL[name]))
        elif _unconstrained_numeric(node.to):
            node.set("to", exp.DataType.build(f"DECIMAL({UNCONSTRAINED_NUMERIC_PRECISION}, {UNCONSTRAINED_NUMERIC_SCALE})"))
            numeric = _numeric_of(node, types.kind(node.this))
            if numeric is not node:
                node.replace(numeric)
            parent, child = numeric.parent, numeric
            while isinstance(parent, exp.Paren):
                parent, child = parent.parent, parent  # type: ignore[assignment]
            if isinstance(parent, exp.Cast | exp.TryCast) and parent.this is child:
                texts.append(parent)
    for text in texts:
        if isinstance(text.to, exp.DataType) and text.to.this in _TEXT_TYPES:
            text.replace(_without_trailing_zeros(text.copy()))
    return query


def _number_text(e: exp.Expression) -> str:
    """A number literal's text, its signs applied (``-(-1e2)`` is ``1e2``)."""
    negative = False
    while isinstance(e, exp.Paren | exp.Neg):
        negative ^= isinstance(e, exp.Neg)
        e = e.this
    return ("-" if negative else "") + e.name


def _numeric_of(cast: exp.Cast | exp.TryCast, kind: str | None) -> exp.Expression:
    """A cast to an unconstrained numeric; a double or real goes through its shortest text (DuckDB's
    cast of a double to a decimal is not exact: ``1e13`` was ``9999999999999.9991611392``, PostgreSQL
    ``10000000000000``)."""
    if is_number(cast.this):  # (PostgreSQL reads 1e13 as a numeric, DuckDB as a double: its text, exactly)
        literal = cast.copy()
        literal.set("this", exp.Literal.string(_number_text(cast.this)))
        return literal
    if kind is not None and kind not in FLOATS:
        return cast
    via_text = cast.copy()
    via_text.set("this", exp.cast(cast.this.copy(), "VARCHAR"))
    if kind is not None:
        return via_text
    floating = exp.In(this=exp.Anonymous(this="typeof", expressions=[cast.this.copy()]),
                      expressions=[exp.Literal.string("DOUBLE"), exp.Literal.string("FLOAT")])
    return exp.Case(ifs=[exp.If(this=floating, true=via_text)], default=cast.copy())


_TEXT_TYPES = (exp.DataType.Type.VARCHAR, exp.DataType.Type.TEXT)


def _unconstrained_numeric(to: exp.Expression) -> bool:
    return isinstance(to, exp.DataType) and to.this == exp.DataType.Type.DECIMAL and not to.expressions


def _without_trailing_zeros(text: exp.Expression) -> exp.Expression:
    """A numeric's text at the unconstrained scale, without its trailing fractional zeros."""
    stripped = exp.Anonymous(this="regexp_replace", expressions=[text, exp.Literal.string(r"(\.[0-9]*?)0+$"),
                                                                 exp.Literal.string(r"\1")])
    return exp.Anonymous(this="regexp_replace", expressions=[stripped, exp.Literal.string(r"\.$"),
                                                             exp.Literal.string("")])


_NAMED = {exp.CurrentSchema: "current_schema", exp.CurrentSchemas: "current_schemas",
          exp.CurrentDatabase: "current_database", exp.CurrentCatalog: "current_catalog",
          exp.CurrentUser: "current_user", exp.SessionUser: "session_user", exp.CurrentVersion: "version",
          exp.ArraySize: "array_upper"}
_USER_WORDS = ("current_user", "session_user", "current_role", "user")


def is_user_word(node: exp.Column) -> bool:
    """An unquoted, unqualified ``user`` (``current_user``...): PostgreSQL's current user, not a
    column; `functions` replaces it by the session's user."""
    return not node.table and isinstance(node.this, exp.Identifier) and not node.this.quoted and \
        node.name.lower() in _USER_WORDS


def functions(query: exp.Expression, ctx: RewriteContext | None) -> exp.Expression:
    """Postgres catalog functions (`frontend.catalog.functions.BUILDERS`)."""
    if ctx is None:
        return query
    for node in reversed(list(query.find_all(exp.Func, exp.Column))):
        if isinstance(node, exp.Column):
            if is_user_word(node):
                node.replace(exp.Literal.string(ctx.user))
            continue
        name = _NAMED.get(type(node))  # type: ignore[arg-type]
        if name is not None:
            args = [a for a in node.args.values() if isinstance(a, exp.Expression)][:1]
        elif isinstance(node, exp.Anonymous):
            name, args = str(node.this).lower(), list(node.expressions)
        else:
            continue
        out = rewrite_call(name, args, ctx)
        if out is not None:
            node.replace(out)
    return query


Rule = Callable[[exp.Expression, RewriteContext | None], exp.Expression]
RULES: tuple[Rule, ...] = (group_by_output_names, with_ties, jsonb_operators, qualified_names, operators, drop_collations,
                           pg_typeof, concat_operator, float_modulo, aggregate_arguments, like_escape, keyword_calls,
                           similar_to, extract_fractions, float_text, pg_format, to_char, strict_functions,
                           unknown_arguments, sign_function, literal_casts, float_round, real_operands, float_overflow,
                           sum_types, float_aggregates, lag_default,
                           numeric_quotients, integer_literals, integer_quotients, untyped_array_comparisons,
                           array_literals, casts, functions)


def rewrite(query: exp.Expression, ctx: RewriteContext | None) -> exp.Expression:
    """Apply every rule in order."""
    for rule in RULES:
        query = rule(query, ctx)
    return query
