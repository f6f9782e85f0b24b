"""Postgres catalog functions for batch queries on DuckDB.

Functions that depend on the session (``current_setting``, ``pg_table_is_visible``,
``pg_get_userbyid``, ``pg_get_viewdef``...) become literals or small CASE expressions built from the
catalog snapshot when the query is rewritten; ``obj_description``/``col_description`` become
subqueries on `pg_catalog.pg_description`; context-free ones (``format_type``, ``quote_ident``...)
are DuckDB macros (`MACROS`, created once per engine) under ``rs_`` names, so DuckDB's own
`pg_catalog` macros of the same names are never used.

>>> from sqlglot import exp
>>> rewrite_call("pg_has_role", [], None).sql()
'TRUE'
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from frontend.catalog.oids import PG_CLASS_OID, PG_TYPES, PK_INDEX_OID_BASE, UTF8_ENCODING, type_oid
from frontend.catalog.pg_relations import has_pk, pk_definition
from frontend.catalog.relations import view_query
from risingspark.errors import UndefinedParameter

if TYPE_CHECKING:
    from frontend.catalog.rewrite import RewriteContext
    from risingspark.functions import FunctionCatalog

SERVER_VERSION = "13.14.0"
VERSION_TEXT = (f"PostgreSQL {SERVER_VERSION}-RisingSpark-0.1.0 on x86_64-pc-linux-gnu, compiled by Python, "
                "64-bit (RisingSpark, a streaming database on Apache Spark)")
STARTED_AT = dt.datetime.now(dt.UTC)


def _case(subject: exp.Expression, cases: dict, default: exp.Expression | None = None) -> exp.Expression:
    """``CASE subject WHEN k THEN v ... ELSE default END`` over literal keys and values."""
    if not cases:
        return default if default is not None else exp.null()
    ifs = [exp.If(this=exp.EQ(this=subject.copy(), expression=_lit(k)), true=_lit(v)) for k, v in cases.items()]
    return exp.Case(ifs=ifs, default=default)


def _lit(v: object) -> exp.Expression:
    if v is None:
        return exp.null()
    if isinstance(v, bool):
        return exp.true() if v else exp.false()
    if isinstance(v, int):
        return exp.Literal.number(v)
    return exp.Literal.string(str(v))


def literal_value(e: exp.Expression) -> object:
    """The Python value of a literal argument, or `NotImplemented` when it is not a literal."""
    while isinstance(e, exp.Cast | exp.Paren) and isinstance(e.this, exp.Literal | exp.Null | exp.Cast | exp.Paren):
        e = e.this
    if isinstance(e, exp.Null):
        return None
    if isinstance(e, exp.Literal):
        return e.this if e.is_string else int(e.this) if e.this.lstrip("-").isdigit() else NotImplemented
    return NotImplemented


# ---- macros (context-free) ---------------------------------------------------------------------

def _format_type_macro() -> str:
    names = " ".join(f"WHEN {t.oid} THEN '{t.display.replace(chr(39), chr(39) * 2)}'" for t in PG_TYPES)
    return ("CREATE OR REPLACE MACRO rs_format_type(t, m) AS CASE "
            "WHEN t IS NULL THEN NULL "
            "WHEN t = 1700 AND m >= 4 THEN 'numeric(' || ((m - 4) >> 16) || ',' || ((m - 4) & 65535) || ')' "
            "WHEN t = 1231 AND m >= 4 THEN 'numeric(' || ((m - 4) >> 16) || ',' || ((m - 4) & 65535) || ')[]' "
            "WHEN t = 1043 AND m >= 4 THEN 'character varying(' || (m - 4) || ')' "
            "WHEN t = 1042 AND m >= 4 THEN 'character(' || (m - 4) || ')' "
            f"ELSE CASE t {names} ELSE '???' END END")


def _to_regtype_macro() -> str:
    names: dict[str, int] = {}
    for t in PG_TYPES:
        names.setdefault(t.name, t.oid)
        names.setdefault(t.display, t.oid)
    for alias in ("integer", "int", "character varying", "boolean", "double precision", "decimal", "text"):
        oid = type_oid(alias)
        if oid is not None:
            names.setdefault(alias, oid)
    whens = " ".join(f"WHEN '{n.replace(chr(39), chr(39) * 2)}' THEN {o}" for n, o in names.items())
    return f"CREATE OR REPLACE MACRO rs_to_regtype(n) AS CASE lower(trim(n)) {whens} ELSE NULL END"


MACROS = (
    _format_type_macro(),
    _to_regtype_macro(),
    "CREATE OR REPLACE MACRO rs_quote_ident(s) AS CASE WHEN regexp_full_match(s, '[a-z_][a-z0-9_$]*') "
    "THEN s ELSE '\"' || replace(s, '\"', '\"\"') || '\"' END",
    f"CREATE OR REPLACE MACRO rs_encoding_to_char(n) AS CASE n WHEN {UTF8_ENCODING} THEN 'UTF8' "
    "WHEN 0 THEN 'SQL_ASCII' ELSE '' END",
    "CREATE OR REPLACE MACRO rs_array_length(a) AS CASE WHEN len(a) > 0 THEN len(a) END",
    "CREATE OR REPLACE MACRO rs_array_lower(a) AS CASE WHEN len(a) > 0 THEN 1 END",
)


# ---- calls ----------------------------------------------------------------------------------------
Builder = Callable[[list[exp.Expression], "RewriteContext"], exp.Expression]


def _const(value: object) -> Builder:
    return lambda args, ctx: _lit(value)


def _macro(name: str, nargs: int | None = None) -> Builder:
    def build(args: list[exp.Expression], ctx: RewriteContext) -> exp.Expression:
        return exp.Anonymous(this=name, expressions=args if nargs is None else args[:nargs])
    return build


def _current_setting(args: list[exp.Expression], ctx: RewriteContext) -> exp.Expression:
    missing_ok = len(args) > 1 and isinstance(args[1], exp.Boolean) and bool(args[1].this)
    name = literal_value(args[0])
    if isinstance(name, str):
        value = ctx.setting(name)
        if value is None and not missing_ok:
            raise UndefinedParameter(f'unrecognized configuration parameter "{name}"')
        return _lit(value)
    return _case(exp.Lower(this=args[0]), ctx.settings)


def _userbyid(args: list[exp.Expression], ctx: RewriteContext) -> exp.Expression:
    unknown = exp.DPipe(this=exp.DPipe(this=exp.Literal.string("unknown (OID="),
                                       expression=exp.cast(args[0].copy(), "VARCHAR")),
                        expression=exp.Literal.string(")"))
    return _case(args[0], {r.id: r.name for r in ctx.sys.roles}, unknown)


def _table_is_visible(args: list[exp.Expression], ctx: RewriteContext) -> exp.Expression:
    oids = sorted(ctx.visible_relation_oids())
    if not oids:
        return exp.false()
    return exp.In(this=args[0], expressions=[exp.Literal.number(o) for o in oids])


def _function_is_visible(args: list[exp.Expression], ctx: RewriteContext) -> exp.Expression:
    """User-defined functions ``pg_function_is_visible``: in a schema of the search path, and the
    first there with their name and argument types (built-in functions are not in `pg_proc`)."""
    schema_names = {s.id: s.name for s in ctx.sys.schemas()}
    functions = ctx.sys.functions()
    seen: set[tuple] = set()
    oids: list[int] = []
    for schema in ctx.sys.search_path:
        here = [f for f in functions if schema_names.get(f.schema_id) == schema]
        oids += [f.id for f in here if (f.name, f.arg_types) not in seen]
        seen |= {(f.name, f.arg_types) for f in here}
    if not oids:
        return exp.false()
    return exp.In(this=args[0], expressions=[exp.Literal.number(o) for o in sorted(oids)])


def _viewdef(args: list[exp.Expression], ctx: RewriteContext) -> exp.Expression:
    defs = {r.id: f" {view_query(r.definition)};" for r in ctx.sys.relations() if r.kind.value != "table"}
    arg = literal_value(args[0])
    if isinstance(arg, str) and not arg.isdigit():
        oid = ctx.relation_oid(arg)
        return _lit(defs.get(oid)) if oid is not None else exp.null()
    if isinstance(arg, int | str):
        return _lit(defs.get(int(arg)))
    return _case(args[0], defs)


def _constraintdef(args: list[exp.Expression], ctx: RewriteContext) -> exp.Expression:
    return _case(args[0], {PK_INDEX_OID_BASE + r.id: pk_definition(r) for r in ctx.sys.relations() if has_pk(r)})


def _indexdef(args: list[exp.Expression], ctx: RewriteContext) -> exp.Expression:
    from frontend.catalog.pg_relations import index_definition, user_indexes

    column = literal_value(args[1]) if len(args) > 1 else 0
    if column is NotImplemented:  # per attribute (psql's \d of an index): the column's name
        ifs = [exp.If(this=exp.and_(exp.EQ(this=args[0].copy(), expression=_lit(index.id)),
                                    exp.EQ(this=args[1].copy(), expression=_lit(n))), true=_lit(f.name))
               for index, _ in user_indexes(ctx.sys)
               for n, f in enumerate((f for f in index.fields if not f.hidden), 1)]
        return exp.Case(ifs=ifs, default=exp.null()) if ifs else exp.null()
    if column not in (0, None):
        return exp.null()
    defs = {index.id: index_definition(ctx.sys, index, base) for index, base in user_indexes(ctx.sys)}
    for r in ctx.sys.relations():
        if has_pk(r):
            cols = ", ".join(r.fields[i].name for i in r.pk)
            defs[PK_INDEX_OID_BASE + r.id] = (f"CREATE UNIQUE INDEX {r.name}_pkey ON "
                                              f"{ctx.sys.schema_name(r)}.{r.name} USING btree ({cols})")
    return _case(args[0], defs)


def _description(args: list[exp.Expression], ctx: RewriteContext, classoid: int | None,
                 subid: exp.Expression) -> exp.Expression:
    cond: Any = exp.and_(exp.EQ(this=exp.column("objoid", "__d"), expression=args[0]),
                                    exp.EQ(this=exp.column("objsubid", "__d"), expression=subid))
    if classoid is not None:
        cond = exp.and_(cond, exp.EQ(this=exp.column("classoid", "__d"), expression=exp.Literal.number(classoid)))
    query = exp.select(exp.column("description", "__d")).from_(
        exp.Table(this=exp.to_identifier("pg_description"), db=exp.to_identifier("pg_catalog"),
                  alias=exp.TableAlias(this=exp.to_identifier("__d")))).where(cond).limit(1)
    return exp.Subquery(this=query)


def _obj_description(args: list[exp.Expression], ctx: RewriteContext) -> exp.Expression:
    catalog = literal_value(args[1]) if len(args) > 1 else None
    classoid = ctx.relation_oid(str(catalog)) if isinstance(catalog, str) else None
    return _description(args, ctx, classoid, exp.Literal.number(0))


def _col_description(args: list[exp.Expression], ctx: RewriteContext) -> exp.Expression:
    return _description(args, ctx, PG_CLASS_OID, args[1])


def function_arguments(f: FunctionCatalog) -> str:
    """PostgreSQL's ``pg_get_function_arguments``: ``s character varying, integer`` (unnamed
    arguments by type alone)."""
    return ", ".join(t.display() if n.startswith("$") else f"{n} {t.display()}"
                     for n, t in zip(f.arg_names, f.arg_types, strict=True))


def _by_function(args: list[exp.Expression], ctx: RewriteContext,
                 text: Callable[[FunctionCatalog], str]) -> exp.Expression:
    """A ``pg_get_function_*(oid)`` call: the text for each user-defined function of the database
    (`pg_proc` lists only those), NULL for any other oid."""
    return _case(args[0], {f.id: text(f) for f in ctx.sys.functions()})


def _to_regtype(args: list[exp.Expression], ctx: RewriteContext) -> exp.Expression:
    name = literal_value(args[0])
    if name is NotImplemented:
        return exp.Anonymous(this="rs_to_regtype", expressions=args[:1])
    return _lit(type_oid(str(name)) if name is not None else None)


def _to_regclass(args: list[exp.Expression], ctx: RewriteContext) -> exp.Expression:
    name = literal_value(args[0])
    return _lit(ctx.relation_oid(str(name)) if isinstance(name, str) else None)


def _to_regnamespace(args: list[exp.Expression], ctx: RewriteContext) -> exp.Expression:
    name = literal_value(args[0])
    return _lit(ctx.namespace_oid(str(name)) if isinstance(name, str) else None)


def _current_schemas(args: list[exp.Expression], ctx: RewriteContext) -> exp.Expression:
    implicit = bool(args) and isinstance(args[0], exp.Boolean) and bool(args[0].this)
    names = (["pg_catalog", "rw_catalog"] if implicit else []) + ctx.existing_search_path()
    return exp.Array(expressions=[exp.Literal.string(n) for n in names])


_NULL_TEXT = _const(None)

BUILDERS: dict[str, Builder] = {
    "version": lambda args, ctx: _lit(VERSION_TEXT),
    "current_schema": lambda args, ctx: _lit(ctx.current_schema()),
    "current_schemas": _current_schemas,
    "current_database": lambda args, ctx: _lit(ctx.database),
    "current_catalog": lambda args, ctx: _lit(ctx.database),
    "current_user": lambda args, ctx: _lit(ctx.user),
    "session_user": lambda args, ctx: _lit(ctx.user),
    "current_role": lambda args, ctx: _lit(ctx.user),
    "user": lambda args, ctx: _lit(ctx.user),
    "getpgusername": lambda args, ctx: _lit(ctx.user),
    "pg_backend_pid": lambda args, ctx: _lit(ctx.pid),
    "pg_postmaster_start_time": lambda args, ctx: exp.cast(exp.Literal.string(STARTED_AT.isoformat()), "TIMESTAMPTZ"),
    "pg_is_in_recovery": _const(False),
    "txid_current": _const(1),
    "inet_server_port": _NULL_TEXT,
    "inet_server_addr": _NULL_TEXT,
    "inet_client_addr": _NULL_TEXT,
    "current_setting": _current_setting,
    "pg_get_userbyid": _userbyid,
    "pg_table_is_visible": _table_is_visible,
    "pg_function_is_visible": _function_is_visible,
    "format_type": _macro("rs_format_type", 2),
    "quote_ident": _macro("rs_quote_ident", 1),
    "pg_encoding_to_char": _macro("rs_encoding_to_char", 1),
    "pg_char_to_encoding": _const(UTF8_ENCODING),
    "json_build_object": _macro("json_object"),
    "array_upper": _macro("rs_array_length", 1),
    "array_lower": _macro("rs_array_lower", 1),
    "pg_get_expr": lambda args, ctx: exp.cast(args[0], "VARCHAR"),
    "pg_get_viewdef": _viewdef,
    "pg_get_indexdef": _indexdef,
    "pg_get_constraintdef": _constraintdef,
    "obj_description": _obj_description,
    "col_description": _col_description,
    "shobj_description": _NULL_TEXT,
    "to_regtype": _to_regtype,
    "to_regclass": _to_regclass,
    "to_regnamespace": _to_regnamespace,
    "to_regproc": _NULL_TEXT,
    "to_regprocedure": _NULL_TEXT,
    "to_regrole": lambda args, ctx: _case(args[0], {r.name: r.id for r in ctx.sys.roles}),
    "pg_relation_is_publishable": _const(False),
    "pg_relation_size": _const(0),
    "pg_total_relation_size": _const(0),
    "pg_table_size": _const(0),
    "pg_indexes_size": _const(0),
    **{name: _const(True) for name in (
        "pg_type_is_visible", "pg_collation_is_visible", "pg_opclass_is_visible",
        "pg_operator_is_visible", "pg_conversion_is_visible", "pg_opfamily_is_visible", "pg_has_role",
        "has_column_privilege",
        "has_any_column_privilege", "has_function_privilege", "has_sequence_privilege",
        "has_tablespace_privilege", "has_type_privilege")},
    "pg_get_function_result": lambda args, ctx: _by_function(args, ctx, lambda f: f.return_type.display()),
    "pg_get_function_arguments": lambda args, ctx: _by_function(args, ctx, function_arguments),
    "pg_get_function_identity_arguments": lambda args, ctx: _by_function(args, ctx, function_arguments),
    **{name: _NULL_TEXT for name in (
        "pg_get_ruledef", "pg_get_triggerdef", "pg_get_partkeydef", "pg_get_partition_constraintdef",
        "pg_get_statisticsobjdef_columns", "pg_get_serial_sequence", "pg_get_functiondef")},
}


def rewrite_call(name: str, args: list[exp.Expression], ctx: RewriteContext | None) -> exp.Expression | None:
    """The DuckDB expression for a call of Postgres function `name`, or None to leave it as is."""
    builder = BUILDERS.get(name)
    if builder is None:
        return None
    return builder(args, ctx)  # type: ignore[arg-type]


# has_table_privilege and its kin answer from the user catalog; they build on the helpers above
from frontend.catalog.privilege_functions import PRIVILEGE_BUILDERS  # noqa: E402

BUILDERS.update(PRIVILEGE_BUILDERS)
