"""`information_schema`: schemata, tables, columns, views, the primary keys of tables and the
privileges on them (`table_privileges`, and `role_table_grants`, the same rows here), over user
relations (materialized views have table_type ``MATERIALIZED VIEW``, as in RisingWave)."""

from __future__ import annotations

from frontend.catalog.acl import table_privileges
from frontend.catalog.oids import INFORMATION_SCHEMA_OID, PG_CATALOG_OID, RW_CATALOG_OID
from frontend.catalog.pg_relations import has_pk
from frontend.catalog.relations import table_type, user_relations, view_query
from frontend.catalog.table import SystemContext, SystemTable
from risingspark.catalog import RelationKind
from risingspark.types import TypeName

_SYSTEM_SCHEMAS = {"pg_catalog": PG_CATALOG_OID, "information_schema": INFORMATION_SCHEMA_OID,
                   "rw_catalog": RW_CATALOG_OID}


def _schemata(ctx: SystemContext) -> list[tuple]:
    rows = [(n, "root") for n in _SYSTEM_SCHEMAS] + [(s.name, ctx.user_name(s.owner)) for s in ctx.schemas()]
    return [(ctx.database, n, owner, None, None, None, None) for n, owner in rows]


def _tables(ctx: SystemContext) -> list[tuple]:
    return [(ctx.database, r.schema, r.name, table_type(r.kind), None, None, None, None, None,
             "YES" if r.kind == "table" else "NO", "NO", None) for r in user_relations(ctx) if r.kind != "index"]


def _numeric(name: TypeName, precision: int | None, scale: int | None) -> tuple:
    """(numeric_precision, numeric_precision_radix, numeric_scale) as Postgres reports them."""
    bits = {TypeName.SMALLINT: 16, TypeName.INT: 32, TypeName.BIGINT: 64, TypeName.REAL: 24, TypeName.DOUBLE: 53}
    if name in bits:
        return bits[name], 2, 0 if name in (TypeName.SMALLINT, TypeName.INT, TypeName.BIGINT) else None
    if name is TypeName.NUMERIC:
        return precision, 10, scale
    return None, None, None


def _columns(ctx: SystemContext) -> list[tuple]:
    out = []
    for r in user_relations(ctx):
        assert r.user is not None
        if r.kind == "index":
            continue
        types = {f.name: f.type for f in r.user.fields}
        for pos, c in enumerate(r.columns, 1):
            t = types[c.name]
            precision, radix, scale = _numeric(t.name, t.precision, t.scale)
            datetime_precision = 6 if t.name in (TypeName.TIMESTAMP, TypeName.TIMESTAMPTZ) else (
                0 if t.name is TypeName.DATE else None)
            out.append((ctx.database, r.schema, r.name, c.name, pos, None, "NO" if c.not_null else "YES",
                        t.name.value, None, 1073741824 if t.name is TypeName.VARCHAR else None, precision, radix,
                        scale, datetime_precision, None, None, ctx.database, "pg_catalog", t.pg_typname, "NO",
                        "NO", None, "NEVER", None, "YES" if r.kind == "table" else "NO", str(pos)))
    return out


def _views(ctx: SystemContext) -> list[tuple]:
    return [(ctx.database, r.schema, r.name, view_query(r.definition), "NONE", "NO", "NO", "NO", "NO", "NO")
            for r in user_relations(ctx) if r.relkind == "v"]


def _table_constraints(ctx: SystemContext) -> list[tuple]:
    return [(ctx.database, r.schema, f"{r.name}_pkey", ctx.database, r.schema, r.name, "PRIMARY KEY", "NO", "NO",
             "YES") for r in user_relations(ctx, RelationKind.TABLE) if r.user is not None and has_pk(r.user)]


def _key_column_usage(ctx: SystemContext) -> list[tuple]:
    out = []
    for r in user_relations(ctx, RelationKind.TABLE):
        if r.user is None or not has_pk(r.user):
            continue
        for pos, i in enumerate(r.user.pk, 1):
            out.append((ctx.database, r.schema, f"{r.name}_pkey", ctx.database, r.schema, r.name,
                        r.user.fields[i].name, pos, None))
    return out


_TABLE_PRIVILEGES = ("grantor name, grantee name, table_catalog name, table_schema name, table_name name, "
                     "privilege_type text, is_grantable text, with_hierarchy text")

TABLES = [
    SystemTable("information_schema", "schemata", 300,
                "catalog_name name, schema_name name, schema_owner name, default_character_set_catalog name, "
                "default_character_set_schema name, default_character_set_name name, sql_path text", _schemata),
    SystemTable("information_schema", "tables", 301,
                "table_catalog name, table_schema name, table_name name, table_type text, "
                "self_referencing_column_name name, reference_generation text, user_defined_type_catalog name, "
                "user_defined_type_schema name, user_defined_type_name name, is_insertable_into text, "
                "is_typed text, commit_action text", _tables),
    SystemTable("information_schema", "columns", 302,
                "table_catalog name, table_schema name, table_name name, column_name name, ordinal_position int4, "
                "column_default text, is_nullable text, data_type text, character_maximum_length int4, "
                "character_octet_length int4, numeric_precision int4, numeric_precision_radix int4, "
                "numeric_scale int4, datetime_precision int4, interval_type text, interval_precision int4, "
                "udt_catalog name, udt_schema name, udt_name name, is_self_referencing text, is_identity text, "
                "identity_generation text, is_generated text, generation_expression text, is_updatable text, "
                "dtd_identifier text", _columns),
    SystemTable("information_schema", "views", 303,
                "table_catalog name, table_schema name, table_name name, view_definition text, check_option text, "
                "is_updatable text, is_insertable_into text, is_trigger_updatable text, "
                "is_trigger_deletable text, is_trigger_insertable_into text", _views),
    SystemTable("information_schema", "table_constraints", 304,
                "constraint_catalog name, constraint_schema name, constraint_name name, table_catalog name, "
                "table_schema name, table_name name, constraint_type text, is_deferrable text, "
                "initially_deferred text, enforced text", _table_constraints),
    SystemTable("information_schema", "key_column_usage", 305,
                "constraint_catalog name, constraint_schema name, constraint_name name, table_catalog name, "
                "table_schema name, table_name name, column_name name, ordinal_position int4, "
                "position_in_unique_constraint int4", _key_column_usage),
    SystemTable("information_schema", "table_privileges", 306, _TABLE_PRIVILEGES, table_privileges, cached=False),
    SystemTable("information_schema", "role_table_grants", 307, _TABLE_PRIVILEGES, table_privileges, cached=False),
]
