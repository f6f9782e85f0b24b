"""jsonb's ``||``, ``-``, ``#-``, ``?|`` and ``?&`` in batch queries, resolved by their operands'
types as PostgreSQL resolves them, as calls of the UDFs of `risingspark.jsonb` (`jsonb_edit`).

DuckDB's ``||`` joins the texts of two JSON values (``'[1]'::jsonb || '[2]'::jsonb`` was ``[1][2]``,
PostgreSQL's ``[1, 2]``) and it has no ``-`` of JSON. So, where an operand is surely jsonb (a cast to
jsonb, a jsonb operator, a jsonb column of a catalog relation, one of these operators):

* ``jsonb || jsonb`` is ``rs_jsonb_concat``; a quoted literal (PostgreSQL's ``unknown``) beside a
  jsonb is read as jsonb (22P02 when it is no JSON), a bare NULL is a NULL jsonb; a text operand
  (a cast to text, a varchar column) is PostgreSQL's ``anynonarray || text``, the texts joined, which
  DuckDB's ``||`` does; any other type has no such operator (42883 ``jsonb || integer``);
* ``jsonb - 'key'`` (a text: ``rs_jsonb_delete_key``), ``jsonb - 1`` (an integer or smallint:
  ``rs_jsonb_delete_index``), ``jsonb - ARRAY['a', 'b']`` (a text[]: ``rs_jsonb_delete_keys``);
  a bigint, numeric... has none (42883);
* ``jsonb #- '{a,0}'`` is ``rs_jsonb_delete_path``, ``jsonb ?| keys`` and ``?&`` are
  ``rs_jsonb_exists_any`` / ``_all`` (keys as an array, or a quoted array literal).

An operand whose type the text does not show (a column of a subquery, a CTE or VALUES, a CASE...)
is dispatched on DuckDB's ``typeof``, which DuckDB folds when it binds the query (a CASE of a
constant condition costs nothing at run time): beside a jsonb, a JSON operand is jsonb and another
type fails with 0A000. Two such operands of ``||`` in a query that reads jsonb values keep DuckDB's
``||`` unless one is JSON, which fails with 0A000 too (``v.j || '{}'`` over VALUES of jsonb): its
text joined would be a wrong answer.

>>> import sqlglot
>>> from frontend.catalog.operand_types import OperandTypes
>>> q = sqlglot.parse_one("SELECT rs_jsonb_in('[1]') || '[2]', rs_jsonb_in('{}') - 1", read="risingwave")
>>> types = OperandTypes(q, None)
>>> for node in list(q.find_all(exp.DPipe, exp.Sub)):
...     _ = node.replace(edit_operator(node, types, reads_jsonb=True))
>>> q.sql("duckdb")
"SELECT RS_JSONB_CONCAT(RS_JSONB_IN('[1]'), RS_JSONB_IN('[2]')), RS_JSONB_DELETE_INDEX(RS_JSONB_IN('{}'), CAST(1 AS INT))"
"""

from __future__ import annotations

from sqlglot import exp

from frontend.catalog.operand_types import OperandTypes, no_operator, unknown_literal
from risingspark import jsonb
from risingspark.errors import FeatureNotSupported
from risingspark.types import DataType, TypeName

JSONB_CASE = "jsonb_case"  # the meta key of a CASE whose every value is jsonb
_TEXTS = (TypeName.VARCHAR,)
_INDEXES = (TypeName.SMALLINT, TypeName.INT)
# nodes whose value may be of any type, a jsonb one too, for all the text shows
_PASSING = (exp.Case, exp.If, exp.Coalesce, exp.Nullif, exp.Greatest, exp.Least, exp.Max, exp.Min, exp.AnyValue,
            exp.First, exp.Last, exp.FirstValue, exp.LastValue, exp.NthValue, exp.Lag, exp.Lead, exp.Window,
            exp.Bracket, exp.Dot, exp.Subquery)


def call(name: str, *args: exp.Expression) -> exp.Expression:
    """A call of the UDF of `risingspark.jsonb.OPERATORS` `name`."""
    return exp.Anonymous(this=jsonb.UDF_PREFIX + name, expressions=list(args))


def is_jsonb(e: exp.Expression, types: OperandTypes) -> bool:
    """Whether `e`, its jsonb operators already rewritten, is surely a jsonb value."""
    while isinstance(e, exp.Paren):
        e = e.this
    if isinstance(e, exp.Anonymous):
        name = str(e.this).lower()
        return name.startswith(jsonb.UDF_PREFIX) and name[len(jsonb.UDF_PREFIX):] in jsonb.JSONB_RESULTS
    if isinstance(e, exp.Case | exp.Coalesce):  # (a dispatch on typeof whose values are jsonb; any jsonb value)
        return e.meta.get(JSONB_CASE) is True or any(is_jsonb(v, types) for v in _values(e))
    if isinstance(e, exp.Column):
        t = types.column_type(e)
        return t is not None and t.name is TypeName.JSONB
    return False


def _values(e: exp.Case | exp.Coalesce) -> list[exp.Expression]:
    """The values a CASE or a coalesce chooses among."""
    if isinstance(e, exp.Coalesce):
        return [e.this, *e.expressions]
    default = e.args.get("default")
    return [i.args["true"] for i in e.args.get("ifs") or []] + ([default] if default is not None else [])


def unknowns_as_jsonb(node: exp.Case | exp.Coalesce, types: OperandTypes) -> None:
    """The quoted literals among the values of a CASE or coalesce with a jsonb value read as jsonb,
    as PostgreSQL gives them the common type (DuckDB took their text as JSON as it is:
    ``coalesce(NULL::jsonb, '{"b":1, "a":2}')`` was ``{"b":1, "a":2}``, PostgreSQL's ``{"a": 2, "b": 1}``)."""
    values = _values(node)
    if any(is_jsonb(v, types) for v in values):
        for v in values:
            if isinstance(lit := unknown_literal(v), exp.Literal):
                lit.replace(call("jsonb_in", lit.copy()))


def _maybe_jsonb(e: exp.Expression, types: OperandTypes) -> bool:
    """Whether `e` may be a jsonb value for all the text shows."""
    while isinstance(e, exp.Paren):
        e = e.this
    if isinstance(e, exp.Column):
        return types.column_type(e) is None
    if isinstance(e, exp.Anonymous):
        return not str(e.this).lower().startswith(jsonb.UDF_PREFIX)
    return isinstance(e, _PASSING)


def _typeof_is(e: exp.Expression, *names: str) -> exp.Expression:
    return exp.In(this=exp.Anonymous(this="typeof", expressions=[e.copy()]),
                  expressions=[exp.Literal.string(n) for n in names])


def _fail(message: str) -> exp.Expression:
    """DuckDB's ``error()`` of a 0A000 (`frontend.catalog.composite.udf_error` reads it back)."""
    return exp.Anonymous(this="error", expressions=[exp.Literal.string(f"[rs:0A000] {message}")])


def _by_typeof(branches: list[tuple[exp.Expression, exp.Expression]], otherwise: str) -> exp.Expression:
    """A CASE of jsonb `branches`, failing with 0A000 (`otherwise`) when none is taken."""
    case = exp.Case(ifs=[exp.If(this=cond, true=then) for cond, then in branches], default=_fail(otherwise))
    case.meta[JSONB_CASE] = True
    return case




def _as_jsonb(e: exp.Expression) -> exp.Expression:
    """A quoted literal read as jsonb (a NULL stays NULL)."""
    return call("jsonb_in", e.copy()) if isinstance(e, exp.Literal) else e.copy()


def _type(e: exp.Expression, types: OperandTypes) -> DataType | None:
    if isinstance(e, exp.Array):
        if e.expressions and all(is_jsonb(x, types) for x in e.expressions):
            return DataType.array_of(DataType(TypeName.JSONB))
        items = [types.type_of(x) for x in e.expressions]
        known = [t for t in items if t is not None]
        if all(t is None and unknown_literal(x) is not None for t, x in zip(items, e.expressions, strict=True)):
            return DataType.array_of(DataType(TypeName.VARCHAR))  # (PostgreSQL's ARRAY['a'] is a text[])
        return DataType.array_of(known[0]) if known else None
    return types.type_of(e)


def edit_operator(node: exp.Expression, types: OperandTypes, reads_jsonb: bool) -> exp.Expression | None:
    """The UDF call (or typeof dispatch) for `node`, a ``||``, ``-``, ``#-``, ``?|``, ``?&`` or
    ``jsonb_exists``, whose operands are rewritten already; None to leave it (see the module doc).
    `reads_jsonb`: whether the query has jsonb values at all."""
    if isinstance(node, exp.DPipe):
        return _concat(node, types, reads_jsonb)
    if isinstance(node, exp.Sub):
        return _minus(node, types) if is_jsonb(node.this, types) else None
    left = node.this
    value = _as_jsonb(lit) if (lit := unknown_literal(left)) is not None else left.copy()
    if isinstance(node, exp.JSONBDeleteAtPath):
        name, path = path_argument("jsonb_delete_path", node.expression, types)
        return call(name, value, path)
    if isinstance(node, exp.JSONBContainsAnyTopKeys | exp.JSONBContainsAllTopKeys):
        name = "jsonb_exists_any" if isinstance(node, exp.JSONBContainsAnyTopKeys) else "jsonb_exists_all"
        return call(name, value, _keys(node.expression))
    if isinstance(node, exp.JSONBExists):
        return call("jsonb_exists", value, _exists_key(node))
    return None


def _concat(node: exp.DPipe, types: OperandTypes, reads_jsonb: bool) -> exp.Expression | None:
    a, b = node.this, node.expression
    ja, jb = is_jsonb(a, types), is_jsonb(b, types)
    if ja and jb:
        return call("jsonb_concat", a.copy(), b.copy())
    if not (ja or jb):
        unseen = [e for e in (a, b) if _maybe_jsonb(e, types)] if reads_jsonb else []
        if not unseen:
            return None
        guard = exp.or_(*[_typeof_is(e, "JSON") for e in unseen])
        failing = _fail("|| of a jsonb value whose type the query does not show (a column of a subquery, a CTE or "
                        "VALUES...) is not supported; cast it to jsonb")
        return exp.Case(ifs=[exp.If(this=guard, true=failing)], default=node.copy())
    other = b if ja else a
    if (lit := unknown_literal(other)) is not None:
        args = (a.copy(), _as_jsonb(lit)) if ja else (_as_jsonb(lit), b.copy())
        return call("jsonb_concat", *args)
    t = _type(other, types)
    if t is not None:
        if t.name in _TEXTS or (t.element is not None and t.element.name is TypeName.JSONB):
            return None  # (anynonarray || text: the texts joined, DuckDB's ||; a jsonb[]'s, `concat_operator`)
        raise no_operator("jsonb" if ja else t.display(), "||", t.display() if ja else "jsonb")
    text = exp.TryCast(this=other.copy(), to=exp.DataType.build("VARCHAR"))  # (every branch binds, of any type)
    args = (a.copy(), text) if ja else (text, b.copy())
    return _by_typeof([(_typeof_is(other, "JSON"), call("jsonb_concat", *args))],
                      "|| of jsonb and a value whose type the query does not show is not supported; cast it")


def _minus(node: exp.Sub, types: OperandTypes) -> exp.Expression:
    value, what = node.this.copy(), node.expression
    if unknown_literal(what) is not None:  # (an unknown is a text: PostgreSQL's jsonb - text)
        return call("jsonb_delete_key", value, what.copy())
    t = _type(what, types)
    if t is None:
        return _by_typeof([(_typeof_is(what, "INTEGER", "SMALLINT", "TINYINT"),
                            call("jsonb_delete_index", value, exp.TryCast(this=what.copy(), to=_INTEGER.copy()))),
                           (_typeof_is(what, "VARCHAR"),
                            call("jsonb_delete_key", value.copy(), exp.TryCast(this=what.copy(), to=_VARCHAR.copy()))),
                           (_typeof_is(what, "VARCHAR[]"),
                            call("jsonb_delete_keys", value.copy(), exp.TryCast(this=what.copy(), to=_TEXTS_TYPE.copy())))],
                          "- of jsonb and a value whose type the query does not show is not supported; cast it")
    if t.name in _TEXTS:
        return call("jsonb_delete_key", value, what.copy())
    if t.name in _INDEXES:
        return call("jsonb_delete_index", value, exp.cast(what.copy(), _INTEGER.copy()))
    if t.element is not None and t.element.name in _TEXTS:
        return call("jsonb_delete_keys", value, what.copy())
    raise no_operator("jsonb", "-", t.display())


_INTEGER = exp.DataType.build("INTEGER")
_VARCHAR = exp.DataType.build("VARCHAR")
_TEXTS_TYPE = exp.DataType.build("VARCHAR[]")


def path_argument(name: str, path: exp.Expression, types: OperandTypes) -> tuple[str, exp.Expression]:
    """The UDF (`name` or its ``_array`` form) and the argument for the path of ``#>``, ``#>>`` or
    ``#-``: an array (``ARRAY['a', 'b']``, a text[] cast or column) as a list, else its text
    (``'{a,b}'``)."""
    t = _type(path, types) if unknown_literal(path) is None else None
    if t is not None and t.element is not None:
        return f"{name}_array", path.copy()
    return name, path.copy() if unknown_literal(path) is not None else exp.cast(path.copy(), _VARCHAR.copy())


def _keys(e: exp.Expression) -> exp.Expression:
    """The keys of ``?|`` and ``?&``: a quoted literal read as a text[] (22P02 when it is none)."""
    lit = unknown_literal(e)
    if isinstance(lit, exp.Literal):
        items = jsonb.parse_path(lit.this)
        array = exp.Array(expressions=[exp.null() if k is None else exp.Literal.string(k) for k in items])
        return exp.cast(array, _TEXTS_TYPE.copy())
    return e.copy()


def _exists_key(node: exp.JSONBExists) -> exp.Expression:
    """``jsonb_exists(j, key)``'s key: sqlglot made a literal a JSON path, whose one key is the text."""
    path = node.args.get("path")
    if isinstance(path, exp.JSONPath):
        keys = [p for p in path.expressions if not isinstance(p, exp.JSONPathRoot)]
        if len(keys) == 1 and isinstance(keys[0], exp.JSONPathKey) and isinstance(keys[0].this, str):
            return exp.Literal.string(keys[0].this)
        raise FeatureNotSupported("jsonb_exists of a key written with . or [ is not supported; use the operator ?")
    if path is None:
        raise FeatureNotSupported("jsonb_exists without a key is not supported")
    return exp.cast(path.copy(), exp.DataType.build("VARCHAR"))
