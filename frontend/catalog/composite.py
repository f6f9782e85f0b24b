"""Batch queries over jsonb and struct values: PostgreSQL's jsonb operators as the UDFs of
`risingspark.jsonb`, and the comparisons DuckDB would answer otherwise refused.

DuckDB has a JSON type, but its operators are not PostgreSQL's (``->`` takes JSON paths, its
output text is not jsonb's canonical text, containment differs), so every jsonb operator becomes a
call of an Arrow UDF registered on the batch engine's database (`register_udfs`): ``j -> 'a'`` is
``rs_jsonb_get_key(j, 'a')``, ``j @> '{"a": 1}'`` is ``rs_jsonb_contains(j, '{"a": 1}')`` and so
on; ``'...'::jsonb`` is ``rs_jsonb_in('...')``, which checks and canonicalizes the text. Stored
jsonb columns are registered as DuckDB ``JSON`` (`frontend.batch`), and the UDFs returning jsonb
return ``JSON``, so a result column of jsonb is known as such (OID 3802) on the wire.

Comparisons of jsonb values (``<``, ``ORDER BY`` and its ordinals and output names, ``GROUP BY``,
``DISTINCT``, aggregates' DISTINCT, UNION, INTERSECT and EXCEPT, ``greatest``, ``least``, ``nullif``)
and of structs are refused with 0A000 where this pass sees them (operands that are jsonb or struct
columns of the relations the query reads, jsonb operators, casts to jsonb, ``ROW(...)``): jsonb's text
is not its equality (``1.0`` = ``1``) nor its order, and DuckDB compares structs with NULL fields
otherwise than PostgreSQL (``ROW(1, NULL) = ROW(1, NULL)`` is NULL there, true in DuckDB). ``=`` and
``<>`` of values surely jsonb are ``rs_jsonb_equal``, PostgreSQL's jsonb equality; ``max`` and ``min``
of a jsonb are 42883 as in PostgreSQL. A jsonb column of a subquery, a CTE or VALUES is not seen:
compared, grouped or deduplicated it still goes by its text.

jsonb's ``||``, ``-``, ``#-``, ``?|`` and ``?&`` are `frontend.catalog.jsonb_edit`'s; a quoted literal
among the values of a coalesce, a CASE or a VALUES column with a jsonb value is read as jsonb (its
canonical text). PostgreSQL's functions of type json, some of whose names DuckDB has with other
answers (``to_json(1.50)`` was 1.5), fail with 0A000, as casts to json do.

>>> import sqlglot
>>> q = sqlglot.parse_one("SELECT j -> 'a', j ->> 0, j @> '[1]' FROM t", read="risingwave")
>>> jsonb_operators(q, None).sql("duckdb")
"SELECT RS_JSONB_GET_KEY(j, 'a'), RS_JSONB_GET_INDEX_TEXT(j, 0), RS_JSONB_CONTAINS(CAST(j AS TEXT), '[1]') FROM t"
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
from duckdb import func
from sqlglot import exp

from frontend.binder.composite import unlambda
from frontend.catalog.jsonb_edit import (
    JSONB_CASE,
    call,
    edit_operator,
    is_jsonb,
    path_argument,
    unknowns_as_jsonb,
)
from frontend.catalog.operand_types import OperandTypes, no_function, unknown_literal
from frontend.dialect import PG_NAME
from risingspark import jsonb
from risingspark.errors import FeatureNotSupported, RisingSparkError
from risingspark.functions import FunctionCatalog
from risingspark.types import DataType, TypeName

if TYPE_CHECKING:
    from frontend.catalog.rewrite import RewriteContext

_ERROR_MARK = "[rs:"  # a UDF's error crosses DuckDB as "[rs:SQLSTATE] message"


# ---- UDFs on the batch engine's DuckDB --------------------------------------------------------------

_DUCK_ARG = {"jsonb": "VARCHAR", "text": "VARCHAR", "int": "INTEGER", "text[]": "VARCHAR[]"}


def _duck_result(name: str, out: pa.DataType) -> str:
    if out == pa.bool_():
        return "BOOLEAN"
    if out == pa.int32():
        return "INTEGER"
    return "JSON" if name in jsonb.JSONB_RESULTS else "VARCHAR"


def _udf(fn: Any, arity: int, json: bool) -> Any:
    """`fn` as DuckDB calls it (it counts the parameters), its errors marked with their SQLSTATE;
    a `json` result is of Arrow's JSON extension type, as DuckDB wants for ``JSON``."""
    def run(*arrays: pa.Array) -> pa.Array:
        try:
            out = fn(*arrays, strict=True)
            return pa.ExtensionArray.from_storage(pa.json_(), out) if json else out
        except RisingSparkError as e:
            raise udf_failure(e) from None

    if arity == 1:
        return lambda a: run(a)
    return lambda a, b: run(a, b)


def register_udfs(con: duckdb.DuckDBPyConnection) -> None:
    """The jsonb operators as vectorized Arrow UDFs (``rs_jsonb_get_key``, ...)."""
    for name, (fn, kinds, out) in jsonb.OPERATORS.items():
        con.create_function(jsonb.UDF_PREFIX + name, _udf(fn, len(kinds), name in jsonb.JSONB_RESULTS), [duckdb.sqltype(_DUCK_ARG[k]) for k in kinds],
                            duckdb.sqltype(_duck_result(name, out)), type=func.ARROW,
                            null_handling=func.SPECIAL, side_effects=False)


def register_js_function(con: duckdb.DuckDBPyConnection, fn: FunctionCatalog) -> None:
    """A JavaScript function (`risingspark.js_udf`) as the vectorized DuckDB function ``rs_udf_<id>``,
    called on NULL input too (as RisingWave calls it); a failing row fails the query."""
    from risingspark.js_udf import compiled, with_arity

    def run(*arrays: pa.Array) -> pa.Array:
        try:
            js = compiled(fn.name, fn.arg_names, fn.body, fn.arg_types, fn.return_type)
            return js.call_arrays([a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for a in arrays])
        except RisingSparkError as e:
            raise udf_failure(e) from None

    con.create_function(fn.udf_name, with_arity(run, len(fn.arg_types)), [duckdb.sqltype(t.to_duckdb()) for t in fn.arg_types],
                        duckdb.sqltype(fn.return_type.to_duckdb()), type=func.ARROW, null_handling=func.SPECIAL,
                        side_effects=False)


def udf_failure(e: RisingSparkError) -> ValueError:
    """What a DuckDB function raises for `e`: DuckDB reports its message, `udf_error` reads it back."""
    return ValueError(f"{_ERROR_MARK}{e.sqlstate}] {e.message}")


def failure_call(e: RisingSparkError) -> exp.Expression:
    """A call that fails a DuckDB query with `e` when it is evaluated (``error()``; `udf_error` reads
    it back)."""
    return exp.Anonymous(this="error", expressions=[exp.Literal.string(str(udf_failure(e)))])


def udf_error(message: str) -> RisingSparkError | None:
    """The error a UDF raised, from DuckDB's message about it."""
    at = message.find(_ERROR_MARK)
    if at < 0:
        return None
    sqlstate, _, text = message[at + len(_ERROR_MARK):].partition("] ")
    return RisingSparkError.from_json({"sqlstate": sqlstate, "message": text.strip()})


# ---- the rewrite ------------------------------------------------------------------------------------

def _text(e: exp.Expression) -> exp.Expression:
    return e if isinstance(e, exp.Literal) and e.is_string else exp.cast(e, exp.DataType.build("VARCHAR"))


def _step(node: exp.Expression, key_name: str, index_name: str, target: exp.Expression) -> exp.Expression:
    """``->`` / ``->>``'s right operand: a key (text) or an index (integer)."""
    step = node.expression
    if isinstance(step, exp.JSONPath):
        parts = [p for p in step.expressions if not isinstance(p, exp.JSONPathRoot)]
        if len(parts) == 1 and isinstance(parts[0], exp.JSONPathKey):
            return call(key_name, target, exp.Literal.string(str(parts[0].this)))
        if len(parts) == 1 and isinstance(parts[0], exp.JSONPathSubscript):
            return call(index_name, target, exp.Literal.number(int(parts[0].this)))
        raise FeatureNotSupported(f"json path {step.sql('postgres')} is not supported")
    if isinstance(step, exp.Literal):
        if step.is_string:
            return call(key_name, target, step)
        return call(index_name, target, step)
    if isinstance(step, exp.Neg | exp.Add | exp.Sub | exp.Mul):
        return call(index_name, target, exp.cast(step, exp.DataType.build("INTEGER")))
    # a column or an expression of a type this pass does not know: both readings, chosen by its type
    is_int = exp.In(this=exp.Anonymous(this="typeof", expressions=[step.copy()]),
                    expressions=[exp.Literal.string(t) for t in ("INTEGER", "SMALLINT", "BIGINT", "TINYINT")])
    case = exp.Case(ifs=[exp.If(this=is_int, true=call(index_name, target.copy(),
                                                        exp.TryCast(this=step.copy(), to=exp.DataType.build("INTEGER"))))],
                    default=call(key_name, target, exp.cast(step, exp.DataType.build("VARCHAR"))))
    case.meta[JSONB_CASE] = key_name in jsonb.JSONB_RESULTS
    return case


def _is_jsonb_cast(node: exp.Expression) -> bool:
    return isinstance(node, exp.Cast | exp.TryCast) and isinstance(node.to, exp.DataType) and \
        node.to.this == exp.DataType.Type.JSONB


_JSONB_NODES = (exp.JSONExtract, exp.JSONExtractScalar, exp.JSONBExtract, exp.JSONBExtractScalar,
                exp.JSONBContainsTopKey, exp.JSONBContainsAnyTopKeys, exp.JSONBContainsAllTopKeys)


def _composite_columns(query: exp.Expression, ctx: RewriteContext | None) -> dict[str, TypeName]:
    """Names of the jsonb and struct columns of the user relations the query names."""
    if ctx is None:
        return {}
    out: dict[str, TypeName] = {}
    for rel in ctx.sys.relations_named({t.name for t in query.find_all(exp.Table)}):
        for f in rel.fields:
            if f.type.name in (TypeName.JSONB, TypeName.STRUCT):
                out[f.name] = f.type.name
    return out


def _composite_kind(e: exp.Expression, columns: dict[str, TypeName]) -> TypeName | None:
    """jsonb or struct when `e` is surely one of them (as far as this pass can tell)."""
    while isinstance(e, exp.Paren):
        e = e.this
    if isinstance(e, exp.Column) and not isinstance(e.this, exp.Star):
        return columns.get(e.name)
    if _is_jsonb_cast(e) or isinstance(e, exp.JSONExtract | exp.JSONBExtract | exp.JSONBDeleteAtPath):
        return TypeName.JSONB
    if isinstance(e, exp.DPipe | exp.Coalesce):  # (jsonb || jsonb, and jsonb || an unknown, is a jsonb)
        args = [e.this, *e.expressions] if isinstance(e, exp.Coalesce) else [e.this, e.expression]
        kinds = [_composite_kind(a, columns) for a in args]
        if TypeName.JSONB in kinds and all(k is TypeName.JSONB or unknown_literal(a) is not None for k, a in zip(kinds, args, strict=True)):
            return TypeName.JSONB
    if isinstance(e, exp.Sub) and _composite_kind(e.this, columns) is TypeName.JSONB:
        return TypeName.JSONB
    if isinstance(e, exp.Anonymous) and str(e.this).lower() == "row":
        return TypeName.STRUCT
    if isinstance(e, exp.Tuple) and len(e.expressions) > 1:
        return TypeName.STRUCT
    if isinstance(e, exp.Cast | exp.TryCast) and isinstance(e.to, exp.DataType) and \
            e.to.this == exp.DataType.Type.STRUCT:
        return TypeName.STRUCT
    return None


# jsonb operators that are functions to sqlglot: PostgreSQL names their output column "?column?"
OPERATOR_NODES = (*_JSONB_NODES, exp.ArrayContainsAll, exp.ArrayContainedBy)

_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.NullSafeEQ, exp.NullSafeNEQ)


def _row_equal(a: exp.Tuple, b: exp.Tuple) -> exp.Expression:
    """``(a1, a2) = (b1, b2)`` as PostgreSQL defines it: ``a1 = b1 AND a2 = b2`` (three-valued)."""
    return exp.Paren(this=exp.and_(*[exp.EQ(this=x.copy(), expression=y.copy())
                                     for x, y in zip(a.expressions, b.expressions, strict=True)]))


def _expand_row_comparisons(query: exp.Expression) -> None:
    """Row constructors compared for equality (``=``, ``<>``, ``IN (list)``) as the field
    comparisons PostgreSQL defines them by; the batch engine would compare struct values, with other
    NULL semantics. Other row comparisons stay, and are refused."""
    def row(e: object, width: int) -> bool:
        return isinstance(e, exp.Tuple) and len(e.expressions) == width and width > 1

    for node in list(query.find_all(exp.EQ, exp.NEQ, exp.In)):
        this = node.this
        if not isinstance(this, exp.Tuple):
            continue
        n = len(this.expressions)
        if isinstance(node, exp.EQ | exp.NEQ) and row(node.expression, n):
            equal = _row_equal(this, node.expression)
            node.replace(equal if isinstance(node, exp.EQ) else exp.Not(this=equal))
        elif isinstance(node, exp.In) and node.args.get("query") is None and node.expressions \
                and all(row(e, n) for e in node.expressions):
            node.replace(exp.Paren(this=exp.or_(*[_row_equal(this, e) for e in node.expressions])))


def _row_value_in_subquery(cmp: object, operand: object) -> bool:
    return isinstance(cmp, exp.In) and cmp.args.get("query") is not None and operand is cmp.this \
        and isinstance(operand, exp.Tuple)


_JSONB_EQUALITY = "jsonb_equality"  # the meta key of an = or <> of jsonb values (`_jsonb_equality`)


def _jsonb_equality(cmp: object, columns: dict[str, TypeName], types: OperandTypes) -> bool:
    """Whether `cmp` is an ``=`` or ``<>`` of two values surely jsonb (a quoted literal or a NULL is one
    beside a jsonb): PostgreSQL's jsonb equality, ``rs_jsonb_equal``. A column is surely one when the
    catalog relation it reads is known (not only its name)."""
    if not isinstance(cmp, exp.EQ | exp.NEQ):
        return False
    operands = (cmp.this, cmp.expression)
    kinds = [_composite_kind(e, columns) for e in operands]
    if TypeName.JSONB not in kinds:
        return False
    for e, kind in zip(operands, kinds, strict=True):
        while isinstance(e, exp.Paren):
            e = e.this
        if kind is None and unknown_literal(e) is None:
            return False
        if isinstance(e, exp.Column) and not is_jsonb(e, types):
            return False
    return True


def _jsonb_operand(e: exp.Expression) -> exp.Expression:
    """An operand of `_jsonb_equality` (its jsonb operators rewritten): a quoted literal read as jsonb."""
    inner = e
    while isinstance(inner, exp.Paren):
        inner = inner.this
    return call("jsonb_in", inner.copy()) if isinstance(inner, exp.Literal) and inner.is_string else e.copy()


def _refuse_comparisons(query: exp.Expression, columns: dict[str, TypeName], types: OperandTypes) -> None:
    def check(e: exp.Expression, what: str) -> None:
        kind = _composite_kind(e, columns)
        if kind is not None:
            raise FeatureNotSupported(f"{what} of {kind.value} values is not supported")

    for cmp in query.find_all(*_COMPARISONS, exp.In, exp.Between):
        if _jsonb_equality(cmp, columns, types):
            cmp.meta[_JSONB_EQUALITY] = True
            continue
        for operand in (cmp.this, cmp.args.get("expression"), *cmp.args.get("expressions", [])):
            if _row_value_in_subquery(cmp, operand):
                # (a, b) IN (SELECT ...) compares field by field with PostgreSQL's NULL semantics in the
                # batch engine too; a row constructor elsewhere is a struct value (NULLs differ)
                for field in operand.expressions:
                    check(field, "comparison")
            elif isinstance(operand, exp.Expression):
                check(operand, "comparison")
    for ordered in query.find_all(exp.Ordered):
        check(_ordered_item(ordered), "ordering")
    for group in query.find_all(exp.Group):
        for e in group.expressions:
            check(e, "grouping")
    for select in query.find_all(exp.Select):
        if select.args.get("distinct") is not None or _in_distinct_set_operation(select):
            for e in select.expressions:
                check(e.this if isinstance(e, exp.Alias) else e, "DISTINCT")
    for distinct in query.find_all(exp.Distinct):  # count(DISTINCT j), array_agg(DISTINCT j)
        if isinstance(distinct.parent, exp.AggFunc):
            for e in distinct.expressions:
                check(e, "DISTINCT")
    for node in query.find_all(exp.Greatest, exp.Least, exp.Nullif):
        for e in (node.this, node.args.get("expression"), *node.expressions):
            if isinstance(e, exp.Expression):
                check(e, "comparison")
    for agg in query.find_all(exp.Max, exp.Min):
        if _composite_kind(agg.this, columns) is TypeName.JSONB:  # (PostgreSQL has no max(jsonb))
            raise no_function("max" if isinstance(agg, exp.Max) else "min", "jsonb")


def _ordered_item(ordered: exp.Ordered) -> exp.Expression:
    """What an ORDER BY item orders by: the select item an ordinal (``ORDER BY 1``) or an output name
    (``ORDER BY alias``) names, else the expression itself."""
    e, scope = ordered.this, ordered.parent.parent if ordered.parent is not None else None
    while isinstance(scope, exp.Union | exp.Intersect | exp.Except):
        scope = scope.this  # (a set operation's output columns are its first branch's)
    while isinstance(scope, exp.Subquery | exp.Paren):
        scope = scope.this
    if not isinstance(scope, exp.Select):
        return e
    items = scope.expressions
    if isinstance(e, exp.Literal) and e.is_int and 1 <= int(e.name) <= len(items):
        item = items[int(e.name) - 1]
        return item.this if isinstance(item, exp.Alias) else item
    if isinstance(e, exp.Column) and not e.table:
        for item in items:
            if isinstance(item, exp.Alias) and item.alias == e.name:
                return item.this
    return e


def _in_distinct_set_operation(select: exp.Select) -> bool:
    """Whether `select` is a branch of a UNION, INTERSECT or EXCEPT without ALL (which compares rows)."""
    node: exp.Expression = select
    while isinstance(node.parent, exp.Subquery | exp.Paren):
        node = node.parent
    parent = node.parent
    return isinstance(parent, exp.Union | exp.Intersect | exp.Except) and parent.args.get("distinct") is not False


def _struct_type(e: exp.Expression, structs: dict[str, DataType]) -> DataType | None:
    """The struct type of a struct column or of a field of one (``(s).c``), else None."""
    while isinstance(e, exp.Paren):
        e = e.this
    if isinstance(e, exp.Column) and not isinstance(e.this, exp.Star):
        return structs.get(e.name)
    if isinstance(e, exp.Dot) and isinstance(e.expression, exp.Identifier):
        outer = _struct_type(e.this, structs)
        name = e.expression.name if e.expression.quoted else e.expression.name.lower()
        inner = dict(outer.fields).get(name) if outer is not None else None
        return inner if inner is not None and inner.name is TypeName.STRUCT else None
    return None


def _struct_null_tests(query: exp.Expression, ctx: RewriteContext | None) -> None:
    """``s IS NULL`` / ``s IS NOT NULL`` of a struct column (or struct field) with PostgreSQL's row
    semantics (see `frontend.binder.composite.struct_is_null`); DuckDB tests only the struct."""
    if ctx is None:
        return
    structs = {f.name: f.type for rel in ctx.sys.relations_named({t.name for t in query.find_all(exp.Table)})
               for f in rel.fields if f.type.name is TypeName.STRUCT}
    if not structs:
        return
    for node in list(query.find_all(exp.Is)):
        t = _struct_type(node.this, structs)
        if t is None or not isinstance(node.expression, exp.Null):
            continue
        target = node.this
        parent = node.parent
        negated = isinstance(parent, exp.Not)
        fields = [exp.Dot(this=exp.Paren(this=target.copy()), expression=exp.to_identifier(n, quoted=True))
                  for n, _ in t.fields]
        test: Any
        if negated and parent is not None:
            test = exp.and_(exp.Not(this=exp.Is(this=target.copy(), expression=exp.Null())),
                            *[exp.Not(this=exp.Is(this=f, expression=exp.Null())) for f in fields])
            parent.replace(exp.Paren(this=test))
        else:
            test = exp.or_(exp.Is(this=target.copy(), expression=exp.Null()),
                           exp.Paren(this=exp.and_(*[exp.Is(this=f, expression=exp.Null()) for f in fields])))
            node.replace(exp.Paren(this=test))


def jsonb_operators(query: exp.Expression, ctx: RewriteContext | None) -> exp.Expression:
    """PostgreSQL's jsonb operators and casts as UDF calls; comparisons of jsonb and structs
    refused (see the module doc)."""
    for lam in list(query.find_all(exp.Lambda)):
        lam.replace(unlambda(lam))
    columns = _composite_columns(query, ctx)
    _expand_row_comparisons(query)
    types = OperandTypes.of(query, ctx)
    _refuse_comparisons(query, columns, types)
    _struct_null_tests(query, ctx)
    _refuse_json_functions(query)
    reads_jsonb = TypeName.JSONB in columns.values() or any(query.find_all(*_JSONB_NODES)) or \
        any(_is_jsonb_cast(n) for n in query.find_all(exp.Cast, exp.TryCast))
    nodes: list[exp.Expression] = list(query.find_all(*_JSONB_NODES, exp.ArrayContainsAll, exp.ArrayContainedBy, exp.Cast, exp.TryCast,
                                exp.Anonymous, *_EDIT_NODES, exp.Coalesce, exp.Case, exp.EQ, exp.NEQ))
    for node in reversed(nodes):  # innermost first
        if isinstance(node, exp.Coalesce | exp.Case):
            unknowns_as_jsonb(node, types)
            continue
        if isinstance(node, exp.EQ | exp.NEQ):
            if node.meta.get(_JSONB_EQUALITY):
                equal = call("jsonb_equal", *(_jsonb_operand(e) for e in (node.this, node.expression)))
                node.replace(equal if isinstance(node, exp.EQ) else exp.Not(this=equal))
            continue
        if isinstance(node, _EDIT_NODES):
            out = edit_operator(node, types, reads_jsonb)
        else:
            out = _rewrite_node(node, columns, types)
        if out is not None:
            node.replace(out)
    for values in query.find_all(exp.Values):
        _values_as_jsonb(values, types)
    return query


def _values_as_jsonb(values: exp.Values, types: OperandTypes) -> None:
    """The quoted literals of a VALUES column with a jsonb value read as jsonb (as `unknowns_as_jsonb`)."""
    rows = [r.expressions for r in values.expressions if isinstance(r, exp.Tuple)]
    if not rows or len(rows) != len(values.expressions) or len({len(r) for r in rows}) != 1:
        return
    for column in zip(*rows, strict=True):
        if any(is_jsonb(v, types) for v in column):
            for v in column:
                if isinstance(v, exp.Literal) and v.is_string:
                    v.replace(call("jsonb_in", v.copy()))


# jsonb's operators that make values and test keys (`frontend.catalog.jsonb_edit`), and ``-`` and ``||``
# of any operands (the ones of jsonb among them)
_EDIT_NODES = (exp.DPipe, exp.Sub, exp.JSONBDeleteAtPath, exp.JSONBContainsAnyTopKeys, exp.JSONBContainsAllTopKeys,
               exp.JSONBExists)

# PostgreSQL's functions of type json (DuckDB has some of the names, and answers with its JSON's text:
# ``to_json(1.50)`` was 1.5) and jsonb functions sqlglot reads as DuckDB's JSON functions
# (json_build_object is left to `frontend.catalog.functions`, DuckDB's json_object: the same JSON
# value with other spacing — `{"a":1}` where PostgreSQL writes `{"a" : 1}` —, which SQLAlchemy's
# reflection queries need and read as JSON)
_JSON_FUNCTIONS = {"to_json", "array_to_json", "row_to_json", "json_array_length", "json_build_array", "json_object", "json_strip_nulls", "json_each", "json_each_text", "json_typeof",
                   "json_extract_path", "json_extract_path_text", "json_object_keys", "json_array_elements",
                   "json_array_elements_text", "json_agg", "json_object_agg", "jsonb_object_agg", "json_populate_record",
                   "json_to_record", "json_object_field", "json_object_field_text", "json_array_element",
                   "json_array_element_text"}
_JSON_NODES = {exp.JSONObject: "json_object", exp.JSONArrayAgg: "json_agg", exp.JSONObjectAgg: "json_object_agg",
               exp.JSONBObjectAgg: "jsonb_object_agg", exp.JSONStripNulls: "json_strip_nulls"}


def _refuse_json_functions(query: exp.Expression) -> None:
    """0A000 for the functions of `_JSON_FUNCTIONS`."""
    for node in query.find_all(exp.Anonymous, exp.JSONExtract, exp.JSONExtractScalar, *_JSON_NODES):
        name = node.meta.get(PG_NAME) or (node.this if isinstance(node, exp.Anonymous) else _JSON_NODES.get(type(node)))
        if isinstance(name, str) and name.lower() in _JSON_FUNCTIONS:
            raise FeatureNotSupported(f"function {name.lower()}() is not supported in batch queries yet")


def _rewrite_node(node: exp.Expression, columns: dict[str, TypeName], types: OperandTypes) -> exp.Expression | None:
    if isinstance(node, exp.JSONExtract):
        return _step(node, "jsonb_get_key", "jsonb_get_index", node.this)
    if isinstance(node, exp.JSONExtractScalar):
        return _step(node, "jsonb_get_key_text", "jsonb_get_index_text", node.this)
    if isinstance(node, exp.JSONBExtract | exp.JSONBExtractScalar):
        name, path = path_argument("jsonb_path" if isinstance(node, exp.JSONBExtract) else "jsonb_path_text",
                                   node.expression, types)
        return call(name, node.this, path)
    if isinstance(node, exp.JSONBContainsTopKey):
        return call("jsonb_exists", node.this, _text(node.expression))
    if isinstance(node, exp.ArrayContainsAll | exp.ArrayContainedBy):
        if not any(_looks_jsonb(x) or _composite_kind(x, columns) is TypeName.JSONB
                   for x in (node.this, node.expression)):
            return None  # array containment
        name = "jsonb_contains" if isinstance(node, exp.ArrayContainsAll) else "jsonb_contained"
        return call(name, _text(node.this), _text(node.expression))
    if isinstance(node, exp.Cast | exp.TryCast) and isinstance(node.to, exp.DataType):
        if node.to.this == exp.DataType.Type.JSON:
            raise FeatureNotSupported("type json is not supported, use jsonb")
        if node.to.this == exp.DataType.Type.JSONB:
            return call("jsonb_in", _text(node.this))
        if node.to.this == exp.DataType.Type.STRUCT and isinstance(node.this, exp.Literal) and node.this.is_string:
            raise FeatureNotSupported("text input of struct values is not supported; use ROW(...)")
        return None
    if isinstance(node, exp.Anonymous) and str(node.this).lower() in ("jsonb_typeof", "jsonb_array_length"):
        return call(str(node.this).lower(), *node.expressions)
    return None


def _looks_jsonb(e: exp.Expression) -> bool:
    """An operand of ``@>`` / ``<@`` that makes it jsonb's: a jsonb value or a JSON text literal
    (an array literal ``'{1,2}'`` is no JSON object; ``'{}'`` is read as jsonb's)."""
    if isinstance(e, exp.Literal) and e.is_string:
        try:
            jsonb.parse(e.this)
            return True
        except RisingSparkError:
            return False
    if isinstance(e, exp.Anonymous) and str(e.this).lower().startswith(jsonb.UDF_PREFIX + "jsonb"):
        return True
    return _is_jsonb_cast(e) or isinstance(e, _JSONB_NODES)
