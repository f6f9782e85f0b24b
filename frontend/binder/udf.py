"""Calls of user-defined functions: resolved in the parsed statement, bound as PostgreSQL binds them.

`resolve_udfs` is a rewrite pass over the sqlglot tree (run by the stream binder on every query block
and by the batch engine): a call ``name(args)`` (or ``schema.name(args)``) of a function in the
catalog becomes a call of ``rs_udf_<id>`` — the name the engines register the function under —
carrying the `FunctionCatalog` in the node's ``meta``. Only calls sqlglot does not know are looked
up (``exp.Anonymous``): a function named as a built-in (``lower``, ``length``...) stays the
built-in, as PostgreSQL finds ``pg_catalog``'s first on the search path.

`bind_udf` types a call: as many arguments as the function declares, each of its type, or of one an
implicit cast reaches — an unknown literal (``'c'`` is varchar for a varchar argument, as
PostgreSQL resolves it), a NULL, or a wider numeric type; anything else is 42883 with
PostgreSQL's ``function count_char(integer, unknown) does not exist``.

>>> import sqlglot
>>> from risingspark.types import INT4, VARCHAR
>>> f = FunctionCatalog(7, 1, 2, "count_char", ("s", "c"), (VARCHAR, VARCHAR), INT4, "javascript", "", 1)
>>> class Reader:
...     def function(self, name, schema=None): return f if name == "count_char" else None
>>> q, used = resolve_udfs(sqlglot.parse_one("SELECT count_char(x, 'c') FROM t", read="postgres"), Reader())
>>> q.sql(dialect="postgres"), list(used)
("SELECT RS_UDF_7(x, 'c') FROM t", [7])
"""

from __future__ import annotations

from typing import Any, Protocol

from sqlglot import exp

from frontend.binder.coercion import is_unknown_literal
from frontend.expr import BoundExpr, Cast, Literal, SparkCall
from risingspark.errors import UndefinedFunction
from risingspark.functions import UDF_PREFIX, FunctionCatalog
from risingspark.types import DataType, TypeName

_META = "function"
_NUMERIC_RANK = {TypeName.SMALLINT: 0, TypeName.INT: 1, TypeName.BIGINT: 2, TypeName.NUMERIC: 3, TypeName.REAL: 4,
                 TypeName.DOUBLE: 5}


class FunctionReader(Protocol):
    def function(self, name: str, schema: str | None = None) -> FunctionCatalog | None: ...


def _name(node: exp.Expression) -> str:
    ident = node.this if isinstance(node, exp.Anonymous) else node
    if isinstance(ident, exp.Identifier):
        return ident.name if ident.quoted else ident.name.lower()
    return str(ident).lower()


def resolve_udfs(node: exp.Expression, catalog: FunctionReader) -> tuple[exp.Expression, dict[int, FunctionCatalog]]:
    """`node` with the calls of catalog functions resolved (a copy; `node` itself when nothing is to
    resolve), and the functions it calls by id."""
    used: dict[int, FunctionCatalog] = {}

    def lookup(n: Any) -> tuple[exp.Anonymous, FunctionCatalog] | None:
        call, schema = n, None
        if isinstance(n, exp.Dot) and isinstance(n.this, exp.Identifier) and isinstance(n.expression, exp.Anonymous):
            call, schema = n.expression, _name(n.this)
        if not isinstance(call, exp.Anonymous) or _META in call.meta:
            return None
        if isinstance(n, exp.Anonymous) and isinstance(n.parent, exp.Dot) and n.parent.expression is n:
            return None  # (the Dot is the call)
        fn = catalog.function(_name(call), schema)
        return (call, fn) if fn is not None else None

    pending = False
    for n in node.walk():
        if isinstance(n, exp.Anonymous) and _META in n.meta:
            used[n.meta[_META].id] = n.meta[_META]
        elif lookup(n) is not None:
            pending = True
    if not pending:
        return node, used

    def visit(n: exp.Expression) -> exp.Expression:
        found = lookup(n)
        if found is None:
            return n
        call, fn = found
        used[fn.id] = fn
        out = exp.Anonymous(this=fn.udf_name, expressions=[a.copy() for a in call.expressions])
        out.meta[_META] = fn
        return out

    return node.copy().transform(visit, copy=False), used


def resolved_function(node: exp.Expression) -> FunctionCatalog | None:
    """The catalog function a call resolved to (`resolve_udfs`), if it is one."""
    return node.meta.get(_META) if isinstance(node, exp.Anonymous) and str(node.this).lower().startswith(UDF_PREFIX) \
        else None


def _implicit(source: DataType, target: DataType) -> bool:
    """Whether PostgreSQL casts `source` to `target` implicitly (for the types functions take)."""
    if source == target:
        return True
    if source.name in _NUMERIC_RANK and target.name in _NUMERIC_RANK:
        return _NUMERIC_RANK[source.name] <= _NUMERIC_RANK[target.name]
    return False


def bind_udf(node: exp.Anonymous, fn: FunctionCatalog, rec: Any) -> BoundExpr:
    """A call of `fn` (see the module docstring)."""
    args = [rec(a) for a in node.expressions]
    ok = len(args) == len(fn.arg_types)
    typed: list[BoundExpr] = []
    for a, t in zip(args, fn.arg_types, strict=False):
        if isinstance(a, Literal) and a.value is None:
            typed.append(Literal(None, t))
        elif is_unknown_literal(a) or _implicit(a.type, t):
            typed.append(a if a.type == t else Cast(a, t))
        else:
            ok = False
    if not ok:
        shown = ", ".join("unknown" if is_unknown_literal(a) else a.type.display() for a in args)
        raise UndefinedFunction(f"function {fn.name}({shown}) does not exist",
                                hint="No function matches the given name and argument types. You might need to add "
                                     "explicit type casts.")
    placeholders = ", ".join(f"{{{i}}}" for i in range(len(typed)))
    return SparkCall(fn.name, tuple(typed), fn.return_type, f"{fn.udf_name}({placeholders})")
