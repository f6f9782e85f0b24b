"""Structs, jsonb and arrays in materialized views.

Structs are Spark structs: ``(s).a`` is a field access, ``ROW(x, y)`` (or ``(x, y)``) an anonymous
struct with fields f1, f2... (`named_struct`), ``CAST(ROW(...) AS STRUCT<...>)`` casts field by
field. jsonb values are their canonical text (`risingspark.jsonb`); every jsonb operator is a
call of a vectorized Arrow UDF registered in the compute node's Spark session
(`compute.jsonb_udf`): Spark's own JSON functions (``get_json_object``, ``from_json``) read JSON
paths and print JSON otherwise than PostgreSQL. A UDF yields NULL where PostgreSQL raises an
error (``jsonb_array_length`` of an object, a bad text cast to jsonb), as RisingWave's streaming
expressions do.

Comparing, grouping or ordering by a struct or a jsonb value fails with 0A000 (`check_comparable`,
and the planner's key check): jsonb's text is not its equality (``1.0`` = ``1``), and Spark's
struct comparison does not treat NULL fields as PostgreSQL's record comparison does. ``=`` and ``<>``
of jsonb values are PostgreSQL's jsonb equality, a UDF (`jsonb_equality`).

Arrays (of array_agg, regexp_match, a materialized view's array column) are Spark arrays; ``||``
concatenates them, appends and prepends an element as PostgreSQL's (`concat_arrays`).
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from frontend.binder.coercion import coerce, is_null_literal, is_unknown_literal, no_operator
from frontend.expr import BoundExpr, Cast, Literal, SparkCall, spark_string
from risingspark import jsonb
from risingspark.errors import DatatypeMismatch, FeatureNotSupported, UndefinedColumn, UndefinedFunction
from risingspark.types import BOOL, INT4, JSONB, NUMERIC, VARCHAR, DataType, TypeName

COMPOSITE = (TypeName.STRUCT, TypeName.JSONB)


def check_comparable(a: BoundExpr, b: BoundExpr | None = None, what: str = "comparison") -> None:
    """0A000 for a comparison (or grouping, ordering) of structs or jsonb values."""
    for e in (a, b):
        if e is not None and e.type.name in COMPOSITE:
            raise FeatureNotSupported(f"{what} of {e.type.name.value} values in a materialized view is not "
                                      f"supported")


# ---- structs ----------------------------------------------------------------------------------------

def field_of(e: BoundExpr, name: str) -> BoundExpr:
    """``(e).name``."""
    if e.type.name is not TypeName.STRUCT:
        raise DatatypeMismatch(f'column notation .{name} applied to type {e.type.display()}, which is not a '
                               f"composite type")
    for n, t in e.type.fields:
        if n == name:
            return SparkCall(f"field {name}", (e,), t, f"({{0}}).`{n.replace('`', '``')}`")
    raise UndefinedColumn(f'column "{name}" not found in data type {e.type.display()}')


def bind_field(node: exp.Dot, rec) -> BoundExpr:
    ident = node.expression
    name = ident.name if ident.quoted else ident.name.lower()
    return field_of(rec(node.this), name)


def struct_is_null(e: BoundExpr, negated: bool) -> BoundExpr:
    """PostgreSQL's row tests: ``s IS NULL`` holds for a NULL struct and for one whose fields are
    all NULL, ``s IS NOT NULL`` only when no field is NULL (a nested struct of NULL fields is a
    value, not NULL)."""
    fields = [f"({{0}}).`{n.replace('`', '``')}`" for n, _ in e.type.fields]
    if negated:
        template = "{0} IS NOT NULL AND " + " AND ".join(f"{f} IS NOT NULL" for f in fields)
    else:
        template = "{0} IS NULL OR (" + " AND ".join(f"{f} IS NULL" for f in fields) + ")"
    return SparkCall("IS NOT NULL" if negated else "IS NULL", (e,), BOOL, template)


def is_row(node: Any) -> bool:
    return (isinstance(node, exp.Anonymous) and str(node.this).lower() == "row") or \
        (isinstance(node, exp.Tuple) and len(node.expressions) > 1)


def row_of(values: list[BoundExpr], names: list[str] | None = None) -> BoundExpr:
    """A struct of `values`, fields named `names` (f1, f2, ... for ``ROW(...)``)."""
    names = names or [f"f{i + 1}" for i in range(len(values))]
    typed = []
    for v in values:
        if is_unknown_literal(v):  # ROW('x'): text, as PostgreSQL resolves an unknown field
            v = Literal(v.value, VARCHAR) if isinstance(v, Literal) else v
        typed.append(v)
    t = DataType.struct_of(tuple((n, v.type) for n, v in zip(names, typed, strict=True)))
    template = "named_struct(" + ", ".join(f"{spark_string(n)}, {{{i}}}" for i, n in enumerate(names)) + ")"
    return SparkCall("row", tuple(typed), t, template)


def bind_row(node: exp.Expression, rec) -> BoundExpr:
    values = [rec(a) for a in node.expressions]
    if not values:
        raise FeatureNotSupported("ROW() without fields is not supported")
    return row_of(values)


def cast_struct(e: BoundExpr, target: DataType) -> BoundExpr:
    """``CAST(e AS STRUCT<...>)``: field by field, by position, as PostgreSQL casts records."""
    if isinstance(e, Literal) and e.value is None:
        return Literal(None, target)
    if e.type.name is not TypeName.STRUCT:
        if is_unknown_literal(e) or e.type.name is TypeName.VARCHAR:
            raise FeatureNotSupported("text input of struct values is not supported; use ROW(...)")
        raise DatatypeMismatch(f"cannot cast type {e.type.display()} to {target.display()}")
    if len(e.type.fields) != len(target.fields):
        raise DatatypeMismatch(f"cannot cast type {e.type.display()} to {target.display()}",
                               detail=f"Input has too {'many' if len(e.type.fields) > len(target.fields) else 'few'} "
                                      f"columns.")
    if isinstance(e, SparkCall) and e.name == "row":
        values = list(e.args)
    else:
        values = [field_of(e, n) for n, _ in e.type.fields]
    out = []
    for v, (_, t) in zip(values, target.fields, strict=True):
        if t.name is TypeName.STRUCT:
            out.append(cast_struct(v, t))
        elif v.type == t:
            out.append(v)
        else:
            out.append(cast_value(v, t))
    built = row_of(out, [n for n, _ in target.fields])
    if isinstance(e, SparkCall) and e.name == "row":
        return built
    # a NULL struct stays NULL (a struct of NULL fields is another value)
    return SparkCall("cast", (e, built), target, "CASE WHEN {0} IS NULL THEN NULL ELSE {1} END")


def cast_value(v: BoundExpr, t: DataType) -> BoundExpr:
    """An explicit cast of a struct field or any value, the composite types' rules included."""
    if t.name is TypeName.JSONB or v.type.name is TypeName.JSONB:
        return cast_jsonb(v, t)
    if t.name is TypeName.STRUCT:
        return cast_struct(v, t)
    if v.type.name is TypeName.STRUCT:
        raise FeatureNotSupported(f"casting a struct to {t.display()} in a materialized view is not supported")
    return Cast(v, t)


# ---- jsonb ------------------------------------------------------------------------------------------

def _udf(name: str, args: tuple[BoundExpr, ...], t: DataType) -> BoundExpr:
    placeholders = ", ".join(f"{{{i}}}" for i in range(len(args)))
    return SparkCall(name, args, t, f"{jsonb.UDF_PREFIX}{name}({placeholders})")


def jsonb_literal(text: str) -> Literal:
    """A constant jsonb: checked and made canonical at CREATE (22P02 as PostgreSQL)."""
    return Literal(jsonb.canonical(text), JSONB)


def to_jsonb(e: BoundExpr) -> BoundExpr:
    """An operand that must be jsonb: a jsonb value, or an unknown literal read as jsonb."""
    if e.type.name is TypeName.JSONB:
        return e
    if isinstance(e, Literal) and e.value is None:
        return Literal(None, JSONB)
    if is_unknown_literal(e):
        return jsonb_literal(str(e.value))  # type: ignore[attr-defined]
    raise UndefinedFunction(f"operator does not exist: jsonb and {e.type.display()}",
                            hint="No operator matches the given name and argument types. You might need to "
                                 "add explicit type casts.")


def concat_jsonb(a: BoundExpr, b: BoundExpr) -> BoundExpr:
    """``a || b`` of two jsonb values (an unknown literal is one): PostgreSQL's jsonb_concat."""
    return _udf("jsonb_concat", (to_jsonb(a), to_jsonb(b)), JSONB)


def jsonb_equality(op: str, a: BoundExpr, b: BoundExpr) -> BoundExpr | None:
    """``a = b`` or ``a <> b`` of jsonb values (an unknown literal beside one is one): PostgreSQL's
    jsonb equality (``1.0`` = ``1``, keys in any order); None for other operators and operands."""
    jsonbs = [e.type.name is TypeName.JSONB for e in (a, b)]
    if op not in ("=", "<>") or not any(jsonbs) or \
            not all(j or is_unknown_literal(e) or is_null_literal(e) for j, e in zip(jsonbs, (a, b), strict=True)):
        return None
    equal = _udf("jsonb_equal", (to_jsonb(a), to_jsonb(b)), BOOL)
    return equal if op == "=" else SparkCall("<>", (equal,), BOOL, "(NOT {0})")


def jsonb_minus(a: BoundExpr, b: BoundExpr) -> BoundExpr:
    """``jsonb - b``: without a key (a text; an unknown literal is one), an index (an integer or
    smallint) or keys (a text[]); 42883 for any other type of `b`."""
    if b.type.name is TypeName.VARCHAR or is_unknown_literal(b):
        return _udf("jsonb_delete_key", (a, coerce(b, VARCHAR)), JSONB)
    if b.type.name in (TypeName.INT, TypeName.SMALLINT):
        return _udf("jsonb_delete_index", (a, coerce(b, INT4)), JSONB)
    if b.type.element is not None and b.type.element.name is TypeName.VARCHAR:
        return _udf("jsonb_delete_keys", (a, b), JSONB)
    raise no_operator(a, "-", b)


def _text_array(e: BoundExpr, op: str) -> BoundExpr:
    """The text[] operand of ``?|``, ``?&``, ``#-``: a text[] value, or an unknown literal read as one."""
    if e.type.element is not None and e.type.element.name is TypeName.VARCHAR:
        return e
    texts = DataType.array_of(VARCHAR)
    if isinstance(e, Literal) and e.value is None:
        return Literal(None, texts)
    if is_unknown_literal(e):
        items = jsonb.parse_path(str(e.value))  # type: ignore[attr-defined]
        spark = ", ".join("CAST(NULL AS STRING)" if k is None else spark_string(k) for k in items)
        return SparkCall("text[]", (), texts, f"CAST(array({spark}) AS ARRAY<STRING>)")
    raise UndefinedFunction(f"operator does not exist: jsonb {op} {e.type.display()}",
                            hint="No operator matches the given name and argument types. You might need to add "
                                 "explicit type casts.")


def cast_jsonb(e: BoundExpr, target: DataType) -> BoundExpr:
    if target.name is TypeName.JSONB:
        if e.type.name is TypeName.JSONB:
            return e
        if isinstance(e, Literal) and e.value is None:
            return Literal(None, JSONB)
        if is_unknown_literal(e):
            return jsonb_literal(str(e.value))  # type: ignore[attr-defined]
        if e.type.name is TypeName.VARCHAR:
            return _udf("jsonb_in", (e,), JSONB)
        raise DatatypeMismatch(f"cannot cast type {e.type.display()} to jsonb")
    if target.name is TypeName.VARCHAR:
        return SparkCall("text", (e,), VARCHAR, "{0}")  # the canonical text is jsonb's text
    raise FeatureNotSupported(f"casting jsonb to {target.display()} in a materialized view is not supported yet; "
                              f"cast the text of ->> instead")


_JSONB_NODES = (exp.JSONExtract, exp.JSONExtractScalar, exp.JSONBExtract, exp.JSONBExtractScalar,
                exp.JSONBContainsTopKey, exp.JSONBContainsAnyTopKeys, exp.JSONBContainsAllTopKeys,
                exp.ArrayContainsAll, exp.ArrayContainedBy, exp.JSONBDeleteAtPath)
JSONB_FUNCTIONS = ("jsonb_typeof", "jsonb_array_length")


def unlambda(node: exp.Lambda) -> exp.Expression:
    """sqlglot reads ``f(j -> 'a')`` as a lambda of parameter ``j``; PostgreSQL has no lambdas,
    so it is the jsonb operator ``j -> 'a'``."""
    params = node.expressions
    if len(params) != 1:
        raise FeatureNotSupported(f"{node.sql('postgres')} is not supported")
    target = params[0]
    column = exp.Column(this=target.copy()) if isinstance(target, exp.Identifier) else target.copy()
    return exp.JSONExtract(this=column, expression=node.this.copy())


def is_jsonb_node(node: Any) -> bool:
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower() in JSONB_FUNCTIONS
    return isinstance(node, _JSONB_NODES)


def _step(node: exp.Expression, rec) -> tuple[str, BoundExpr]:
    """``->``'s right operand: ("key", text) or ("index", integer)."""
    step = node.expression
    if isinstance(step, exp.JSONPath):
        parts = [p for p in step.expressions if not isinstance(p, exp.JSONPathRoot)]
        if len(parts) == 1 and isinstance(parts[0], exp.JSONPathKey):
            return "key", Literal(str(parts[0].this), VARCHAR)
        if len(parts) == 1 and isinstance(parts[0], exp.JSONPathSubscript):
            return "index", Literal(int(parts[0].this), INT4)
        raise FeatureNotSupported(f"json path {step.sql('postgres')} is not supported")
    e = rec(step)
    if e.type.is_integer:
        return "index", coerce(e, INT4) if e.type.name is not TypeName.BIGINT else Cast(e, INT4)
    if e.type.name is TypeName.VARCHAR:
        return "key", e
    raise UndefinedFunction(f"operator does not exist: jsonb -> {e.type.display()}")


def bind_jsonb(node: exp.Expression, rec) -> BoundExpr:
    if isinstance(node, exp.Anonymous):
        name = str(node.this).lower()
        args = [to_jsonb(rec(a)) for a in node.expressions]
        if len(args) != 1:
            raise UndefinedFunction(f"function {name} with {len(args)} arguments does not exist")
        return _udf(name, (args[0],), VARCHAR if name == "jsonb_typeof" else INT4)
    if isinstance(node, exp.JSONBContainsAnyTopKeys | exp.JSONBContainsAllTopKeys):
        name = "jsonb_exists_any" if isinstance(node, exp.JSONBContainsAnyTopKeys) else "jsonb_exists_all"
        op = "?|" if isinstance(node, exp.JSONBContainsAnyTopKeys) else "?&"
        return _udf(name, (to_jsonb(rec(node.this)), _text_array(rec(node.expression), op)), BOOL)
    left = rec(node.this)
    if isinstance(node, exp.ArrayContainsAll | exp.ArrayContainedBy):
        right = rec(node.expression)
        if left.type.name is not TypeName.JSONB and right.type.name is not TypeName.JSONB:
            raise FeatureNotSupported("array containment (@>, <@) in a materialized view is not supported yet")
        name = "jsonb_contains" if isinstance(node, exp.ArrayContainsAll) else "jsonb_contained"
        return _udf(name, (to_jsonb(left), to_jsonb(right)), BOOL)
    value = to_jsonb(left)
    if isinstance(node, exp.JSONExtract | exp.JSONExtractScalar):
        kind, step = _step(node, rec)
        text = "_text" if isinstance(node, exp.JSONExtractScalar) else ""
        return _udf(f"jsonb_get_{kind}{text}", (value, step), VARCHAR if text else JSONB)
    if isinstance(node, exp.JSONBExtract | exp.JSONBExtractScalar):
        name, t = ("jsonb_path", JSONB) if isinstance(node, exp.JSONBExtract) else ("jsonb_path_text", VARCHAR)
        path = rec(node.expression)
        if path.type.element is not None:
            return _udf(f"{name}_array", (value, _text_array(path, "#>")), t)
        return _udf(name, (value, coerce(path, VARCHAR)), t)
    if isinstance(node, exp.JSONBContainsTopKey):
        return _udf("jsonb_exists", (value, coerce(rec(node.expression), VARCHAR)), BOOL)
    if isinstance(node, exp.JSONBDeleteAtPath):
        path = rec(node.expression)
        if path.type.element is not None:
            return _udf("jsonb_delete_path_array", (value, _text_array(path, "#-")), JSONB)
        return _udf("jsonb_delete_path", (value, coerce(path, VARCHAR)), JSONB)
    raise FeatureNotSupported(f"{node.sql('postgres')} is not supported in a materialized view")


# ---- arrays -----------------------------------------------------------------------------------------

# PostgreSQL's array_cat, array_append and array_prepend: a NULL array is none (array_cat of two is
# NULL), a NULL element is appended as any other; Spark's concat is NULL when an argument is
_ARRAY_CAT = "coalesce(concat({0}, {1}), {0}, {1})"
_ARRAY_APPEND = "concat(coalesce({0}, array()), array({1}))"
_ARRAY_PREPEND = "concat(array({0}), coalesce({1}, array()))"

# the numeric types in the order of PostgreSQL's implicit casts (each reaches those after it)
_NUMERIC_ORDER = (TypeName.SMALLINT, TypeName.INT, TypeName.BIGINT, TypeName.NUMERIC, TypeName.REAL,
                  TypeName.DOUBLE)


def concat_arrays(a: BoundExpr, b: BoundExpr) -> BoundExpr:
    """``a || b`` where either side is an array: PostgreSQL's ``anycompatiblearray ||
    anycompatiblearray`` (array_cat), ``anycompatiblearray || anycompatible`` (array_append) and
    ``anycompatible || anycompatiblearray`` (array_prepend). Elements meet in their common type
    (``int[] || bigint`` is a bigint[]); a bare NULL is a NULL array (``arr || NULL`` is `arr`), a
    quoted literal an array's text (0A000 here: its input is not supported), and an element of
    another kind has no operator (42883: ``int[] || varchar``).

    >>> from frontend.expr import InputRef
    >>> concat_arrays(InputRef(0, "xs", DataType.array_of(INT4)), Literal(1, INT4)).to_spark()
    '(concat(coalesce(`xs`, array()), array(CAST(1 AS INT))))'
    """
    for array, other in ((a, b), (b, a)):
        if array.type.element is not None and is_null_literal(other):
            return array  # (array_cat skips a NULL array)
        if array.type.element is not None and is_unknown_literal(other):
            raise FeatureNotSupported(f"an array written as text ({other.display()}) in a materialized view is not "
                                      f"supported yet")
    ea, eb = (e.type.element or e.type for e in (a, b))
    element = _common_element(ea, eb)
    if element is None:
        raise no_operator(a, "||", b)
    array_type = DataType.array_of(element)
    if a.type.element is not None and b.type.element is not None:
        name, template = "array_cat", _ARRAY_CAT
    elif a.type.element is not None:
        name, template = "array_append", _ARRAY_APPEND
    else:
        name, template = "array_prepend", _ARRAY_PREPEND
    # (an array of another element type is cast as a whole: Spark casts it element by element)
    args = tuple((e if e.type == array_type else Cast(e, array_type)) if e.type.element is not None
                 else coerce(e, element) for e in (a, b))
    return SparkCall(name, args, array_type, template)


def _common_element(a: DataType, b: DataType) -> DataType | None:
    """The type two elements meet in (PostgreSQL's anycompatible: the type the other casts to
    implicitly), None when neither casts to the other; 0A000 for dates and timestamps of different
    kinds (their casts depend on the time zone or are not supported yet)."""
    if a == b:
        return a
    if a.is_numeric and b.is_numeric:
        later = max(a, b, key=lambda t: _NUMERIC_ORDER.index(t.name))
        # (a numeric of a precision and scale does not hold every integer or other numeric: numeric)
        return NUMERIC if later.name is TypeName.NUMERIC else later
    dates = {TypeName.DATE, TypeName.TIMESTAMP, TypeName.TIMESTAMPTZ}
    if {a.name, b.name} <= dates:
        raise FeatureNotSupported(f"|| of {a.display()} and {b.display()} elements in a materialized view is not "
                                  f"supported yet")
    return None
