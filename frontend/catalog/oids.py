"""Stable object ids of the system catalogs: namespaces, system tables, roles and `pg_type`.

User relations and schemas keep their catalog ids as OIDs (meta allocates them from 1000 up); every
id below 1000 is fixed here, so OIDs never change across restarts. Types use Postgres' OIDs, as
`risingspark.types` does for column types.

>>> PG_TYPES_BY_OID[1043].name, format_type(1700, ((12 << 16) | 2) + 4), format_type(1007, -1)
('varchar', 'numeric(12,2)', 'integer[]')
>>> type_oid("character varying"), type_oid("int4[]"), type_oid("hstore")
(1043, 1007, None)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from risingspark.types import DataType, TypeName
from risingspark.users import DEFAULT_SUPER_USER_ID

# Namespaces of the system schemas (user schemas use their catalog ids).
PG_CATALOG_OID = 11
INFORMATION_SCHEMA_OID = 12
RW_CATALOG_OID = 13
SYSTEM_NAMESPACES = {"pg_catalog": PG_CATALOG_OID, "information_schema": INFORMATION_SCHEMA_OID,
                     "rw_catalog": RW_CATALOG_OID}

# OIDs of the pg_catalog tables that other catalogs refer to (`pg_description.classoid`, ...).
PG_CLASS_OID = 101
PG_CONSTRAINT_OID = 104
PG_NAMESPACE_OID = 120
PG_TYPE_OID = 121
PG_DATABASE_OID = 122
PG_PROC_OID = 128
# `pg_language` rows of the languages user-defined functions are written in (PostgreSQL's
# procedural languages get oids from the range its extensions use)
LANGUAGE_OIDS = {"javascript": 13_600}

# The index behind a table's primary key has no relation of its own; its OID is derived from the
# table's (`pg_index.indexrelid`, `pg_constraint.conindid`, `pg_constraint.oid`).
PK_INDEX_OID_BASE = 1 << 30

HEAP_AM_OID = 2
BTREE_AM_OID = 403
DEFAULT_COLLATION_OID = 100
C_COLLATION_OID = 950
DEFAULT_TABLESPACE_OID = 1663
UTF8_ENCODING = 6


ROOT_OID = DEFAULT_SUPER_USER_ID  # the owner of the system catalogs


@dataclass(frozen=True)
class PgType:
    """One row of `pg_type`."""

    oid: int
    name: str
    display: str  # what format_type prints
    length: int
    category: str
    array_oid: int = 0
    elem_oid: int = 0
    collation: int = 0
    byval: bool = False
    typtype: str = "b"


_BASE = [
    # oid, typname, format_type text, typlen, typcategory, array oid, collation, byval
    (16, "bool", "boolean", 1, "B", 1000, 0, True),
    (17, "bytea", "bytea", -1, "U", 1001, 0, False),
    (18, "char", '"char"', 1, "Z", 1002, 0, True),
    (19, "name", "name", 64, "S", 1003, C_COLLATION_OID, False),
    (20, "int8", "bigint", 8, "N", 1016, 0, True),
    (21, "int2", "smallint", 2, "N", 1005, 0, True),
    (22, "int2vector", "int2vector", -1, "A", 1006, 0, False),
    (23, "int4", "integer", 4, "N", 1007, 0, True),
    (24, "regproc", "regproc", 4, "N", 1008, 0, True),
    (25, "text", "text", -1, "S", 1009, DEFAULT_COLLATION_OID, False),
    (26, "oid", "oid", 4, "N", 1028, 0, True),
    (30, "oidvector", "oidvector", -1, "A", 1013, 0, False),
    (114, "json", "json", -1, "U", 199, 0, False),
    (700, "float4", "real", 4, "N", 1021, 0, True),
    (701, "float8", "double precision", 8, "N", 1022, 0, True),
    (1042, "bpchar", "character", -1, "S", 1014, DEFAULT_COLLATION_OID, False),
    (1043, "varchar", "character varying", -1, "S", 1015, DEFAULT_COLLATION_OID, False),
    (1082, "date", "date", 4, "D", 1182, 0, True),
    (1083, "time", "time without time zone", 8, "D", 1183, 0, True),
    (1114, "timestamp", "timestamp without time zone", 8, "D", 1115, 0, True),
    (1184, "timestamptz", "timestamp with time zone", 8, "D", 1185, 0, True),
    (1186, "interval", "interval", 16, "T", 1187, 0, False),
    (1700, "numeric", "numeric", -1, "N", 1231, 0, False),
    (2205, "regclass", "regclass", 4, "N", 2210, 0, True),
    (2206, "regtype", "regtype", 4, "N", 2211, 0, True),
    (2950, "uuid", "uuid", 16, "U", 2951, 0, False),
    (3802, "jsonb", "jsonb", -1, "U", 3807, 0, False),
    (4089, "regnamespace", "regnamespace", 4, "N", 4090, 0, True),
]
_PSEUDO = [(705, "unknown", "unknown", -2), (2249, "record", "record", -1), (2278, "void", "void", 4),
           (2276, "any", '"any"', 4), (2277, "anyarray", "anyarray", -1), (2283, "anyelement", "anyelement", 4)]


def _build_types() -> list[PgType]:
    out = []
    for oid, name, display, length, cat, arr, coll, byval in _BASE:
        out.append(PgType(oid, name, display, length, cat, arr, 0, coll, byval))
        out.append(PgType(arr, "_" + name, display + "[]", -1, "A", 0, oid, coll, False))
    out.extend(PgType(oid, name, display, length, "P", typtype="p") for oid, name, display, length in _PSEUDO)
    return sorted(out, key=lambda t: t.oid)


PG_TYPES = _build_types()
PG_TYPES_BY_OID = {t.oid: t for t in PG_TYPES}

# Names `::regtype` and `to_regtype` accept, besides every typname.
_TYPE_ALIASES = {
    "boolean": 16, "bigint": 20, "smallint": 21, "integer": 23, "int": 23, "real": 700, "float": 701,
    "double precision": 701, "character varying": 1043, "character": 1042, "char": 1042, "decimal": 1700,
    "timestamp without time zone": 1114, "timestamp with time zone": 1184, "time without time zone": 1083,
    "string": 1043, '"char"': 18,
}
_TYPES_BY_NAME = {**{t.name: t.oid for t in PG_TYPES}, **_TYPE_ALIASES}


def type_oid(name: str) -> int | None:
    """The OID of a type name as `::regtype` reads it (``int4``, ``character varying(10)``,
    ``pg_catalog.text``, ``integer[]``), or None if there is no such type."""
    s = " ".join(name.strip().lower().split())
    s = re.sub(r"^pg_catalog\.", "", s)
    s = re.sub(r"\s*\(\s*\d+\s*(,\s*\d+\s*)?\)", "", s)
    if s.endswith("[]"):
        elem = type_oid(s[:-2])
        if elem is None:
            return None
        arr = PG_TYPES_BY_OID[elem].array_oid
        return arr or None
    return _TYPES_BY_NAME.get(s)


def format_type(oid: int | None, typmod: int | None) -> str | None:
    """Postgres' ``format_type(oid, typmod)``."""
    if oid is None:
        return None
    t = PG_TYPES_BY_OID.get(oid)
    if t is None:
        return "???"
    if typmod is None or typmod < 0:
        return t.display
    base = PG_TYPES_BY_OID.get(t.elem_oid, t)
    suffix = "[]" if t.elem_oid else ""
    if base.oid == 1700 and typmod >= 4:
        return f"numeric({(typmod - 4) >> 16},{(typmod - 4) & 0xFFFF}){suffix}"
    if base.oid in (1043, 1042) and typmod >= 4:
        return f"{base.display}({typmod - 4}){suffix}"
    if base.oid in (1114, 1184, 1083):
        words = base.display.split(" ", 1)
        return f"{words[0]}({typmod}) {words[1]}{suffix}"
    return t.display


@dataclass(frozen=True)
class ColumnType:
    """How a column of a user relation appears in `pg_attribute` and `information_schema`."""

    oid: int
    typmod: int
    length: int
    collation: int
    byval: bool

    @classmethod
    def of(cls, t: DataType) -> ColumnType:
        pg = PG_TYPES_BY_OID[t.oid]
        return cls(t.oid, t.typmod, pg.length, pg.collation, pg.byval)


def storage_of(t: DataType) -> str:
    """`pg_attribute.attstorage`: plain for fixed-width types, extended for the others."""
    return "x" if t.name in (TypeName.VARCHAR, TypeName.NUMERIC) else "p"
