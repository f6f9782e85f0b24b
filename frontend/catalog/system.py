"""System catalogs: `pg_catalog`, `information_schema` and `rw_catalog`, built on demand from the
catalog snapshot and meta's job state as Arrow tables that batch queries read like any relation.

Each table is declared once (`frontend.catalog.table.SystemTable`): schema, name, a stable OID, its
columns as ``"name type, ..."`` with Postgres type names, and a function of the session's
`SystemContext` giving its rows. The declarations live in `pg_catalog`, `pg_relations`,
`information_schema` and `rw_catalog`; this module gathers and finds them.

>>> system_table("pg_catalog", "pg_class").column_names()[:3]
['oid', 'relname', 'relnamespace']
>>> find_system_table("rw_tables"), find_system_table("pg_type"), find_system_table("tables")
('rw_catalog', 'pg_catalog', None)
"""

from __future__ import annotations

from frontend.catalog.table import SessionInfo, SystemContext, SystemTable

__all__ = ["SYSTEM_TABLES", "SessionInfo", "SystemContext", "SystemTable", "find_system_table", "system_table"]


def _all_tables() -> dict[tuple[str, str], SystemTable]:
    from frontend.catalog.information_schema import TABLES as INFORMATION_SCHEMA
    from frontend.catalog.pg_catalog import TABLES as PG_CATALOG
    from frontend.catalog.pg_relations import TABLES as PG_RELATIONS
    from frontend.catalog.rw_catalog import TABLES as RW_CATALOG

    tables = [*PG_CATALOG, *PG_RELATIONS, *INFORMATION_SCHEMA, *RW_CATALOG]
    out = {(t.schema, t.name): t for t in tables}
    assert len(out) == len(tables) and len({t.oid for t in tables}) == len(tables), "duplicate system table"
    return out


SYSTEM_TABLES: dict[tuple[str, str], SystemTable] = _all_tables()
SYSTEM_TABLES_BY_OID: dict[int, SystemTable] = {t.oid: t for t in SYSTEM_TABLES.values()}

# Tables found without a schema name, in search order (rw_catalog and pg_catalog are on the
# implicit search path, as in RisingWave).
_IMPLICIT = ("rw_catalog", "pg_catalog")


def find_system_table(name: str) -> str | None:
    """The schema of a system table reachable without qualification, if any."""
    for schema in _IMPLICIT:
        if (schema, name) in SYSTEM_TABLES:
            return schema
    return None


def system_table(schema: str, name: str) -> SystemTable | None:
    return SYSTEM_TABLES.get((schema, name))
