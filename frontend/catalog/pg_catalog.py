"""`pg_catalog` tables that are not about relations: namespaces, types, databases, roles, settings,
sessions, and the (mostly empty) tables clients join while describing objects.

`pg_proc` holds the database's user-defined functions (built-in functions are not listed, so ``\\df``
shows what users created, as it does on PostgreSQL, which hides `pg_catalog`'s).
"""

from __future__ import annotations

import datetime as dt

from frontend.catalog.acl import acl
from frontend.catalog.oids import (
    C_COLLATION_OID,
    DEFAULT_COLLATION_OID,
    DEFAULT_TABLESPACE_OID,
    HEAP_AM_OID,
    LANGUAGE_OIDS,
    PG_CATALOG_OID,
    PG_DATABASE_OID,
    PG_NAMESPACE_OID,
    PG_PROC_OID,
    PG_TYPE_OID,
    PG_TYPES,
    ROOT_OID,
    SYSTEM_NAMESPACES,
    UTF8_ENCODING,
)
from frontend.catalog.table import SystemContext, SystemTable
from frontend.session_vars import MS_VARS, duration_ms
from risingspark.users import ObjectType


def _pg_namespace(ctx: SystemContext) -> list[tuple]:
    rows = [(oid, name, ROOT_OID, None) for name, oid in SYSTEM_NAMESPACES.items()]
    return rows + [(s.id, s.name, s.owner, acl(ctx, s.id, s.owner, ObjectType.SCHEMA)) for s in ctx.schemas()]


def _pg_proc(ctx: SystemContext) -> list[tuple]:
    """One row per user-defined function of the database: a plain function (``prokind`` f), volatile,
    called on NULL input (not strict), in the language it was written in (`pg_language`)."""
    out = []
    for f in ctx.functions():
        names = [n if not n.startswith("$") else "" for n in f.arg_names]
        out.append((f.id, f.name, f.schema_id, f.owner, LANGUAGE_OIDS.get(f.language, 0), 100.0, 0.0, 0, "-", "f",
                    False, False, False, False, "v", "u", len(f.arg_types), 0, f.return_type.oid,
                    [t.oid for t in f.arg_types], None, None, names if any(names) else None, None, None, f.body,
                    None, None, None, None))
    return out


def _pg_type(ctx: SystemContext) -> list[tuple]:
    out = []
    for t in PG_TYPES:
        base = t.name.lstrip("_")
        align = {1: "c", 2: "s", 4: "i", 8: "d"}.get(t.length, "i")
        out.append((t.oid, t.name, PG_CATALOG_OID, ROOT_OID, t.length, t.byval, t.typtype, t.category, False,
                    True, ",", 0, t.elem_oid, t.array_oid, f"{base}in", f"{base}out", f"{base}recv",
                    f"{base}send", align, "p" if t.length > 0 else "x", False, 0, -1, 0, t.collation, None,
                    None, None))
    return out


def _pg_database(ctx: SystemContext) -> list[tuple]:
    return [(d.id, d.name, d.owner, UTF8_ENCODING, "c", False, True, -1, 0, 0, DEFAULT_TABLESPACE_OID, "C", "C",
             None, None, acl(ctx, d.id, d.owner, ObjectType.DATABASE))
            for d in sorted(ctx.snapshot.databases.values(), key=lambda d: d.id)]


def _pg_roles(ctx: SystemContext) -> list[tuple]:
    return [(r.name, r.is_super, True, r.can_create_user, r.can_create_db, r.can_login, False, -1, "********", None,
             False, None, r.id) for r in ctx.roles]


def _pg_authid(ctx: SystemContext) -> list[tuple]:
    """As `pg_roles`, with the stored passwords, which only superusers see (PostgreSQL lets no one
    else read ``pg_authid`` at all)."""
    return [(r.id, r.name, r.is_super, True, r.can_create_user, r.can_create_db, r.can_login, False, False, -1,
             r.password if ctx.is_superuser else None, None) for r in ctx.roles]


def _pg_user(ctx: SystemContext) -> list[tuple]:
    """As PostgreSQL's, the users that may log in."""
    return [(r.name, r.id, r.can_create_db, r.is_super, False, False, "********", None, None)
            for r in ctx.roles if r.can_login]


def _pg_settings(ctx: SystemContext) -> list[tuple]:
    """As PostgreSQL's: a time parameter's setting is its number of milliseconds, with unit ``ms``."""
    rows: list[tuple] = []
    for name, value, desc in ctx.settings:
        if name in MS_VARS:
            ms = str(duration_ms(value))
            rows.append((name, ms, "ms", "Client Connection Defaults", desc, None, "user", "integer", "session",
                         "0", "2147483647", None, ms, ms, None, None, False))
        else:
            rows.append((name, value, None, "Client Connection Defaults", desc, None, "user", "string", "session",
                         None, None, None, value, value, None, None, False))
    return rows


def _timestamp(seconds: float | None) -> dt.datetime | None:
    return None if seconds is None else dt.datetime.fromtimestamp(seconds, dt.UTC)


def _pg_stat_activity(ctx: SystemContext) -> list[tuple]:
    users = {r.name: r.id for r in ctx.roles}
    db = ctx.snapshot.database(ctx.database)
    out = []
    for s in ctx.sessions():
        out.append((db.id if db else 0, s.database, s.pid, None, users.get(s.user), s.user, s.application_name,
                    s.host, None, None, _timestamp(s.backend_start), None, _timestamp(s.query_start), None, None,
                    None, "active" if s.query_start is not None else "idle", None, None, None, s.query or "",
                    "client backend"))
    return out


_EMPTY = {
    "pg_publication": (131, "oid oid, pubname name, pubowner oid, puballtables bool, pubinsert bool, "
                            "pubupdate bool, pubdelete bool, pubtruncate bool, pubviaroot bool"),
    "pg_publication_rel": (132, "oid oid, prpubid oid, prrelid oid, prqual text, prattrs int2[]"),
    "pg_sequence": (133, "seqrelid oid, seqtypid oid, seqstart int8, seqincrement int8, seqmax int8, "
                         "seqmin int8, seqcache int8, seqcycle bool"),
    "pg_opclass": (134, "oid oid, opcmethod oid, opcname name, opcnamespace oid, opcowner oid, opcfamily oid, "
                        "opcintype oid, opcdefault bool, opckeytype oid"),
    "pg_enum": (135, "oid oid, enumtypid oid, enumsortorder float4, enumlabel name"),
    "pg_extension": (136, "oid oid, extname name, extowner oid, extnamespace oid, extrelocatable bool, "
                          "extversion text, extconfig oid[], extcondition text[]"),
    "pg_cast": (138, "oid oid, castsource oid, casttarget oid, castfunc oid, castcontext char, castmethod char"),
    "pg_operator": (139, "oid oid, oprname name, oprnamespace oid, oprowner oid, oprkind char, "
                         "oprcanmerge bool, oprcanhash bool, oprleft oid, oprright oid, oprresult oid, "
                         "oprcom oid, oprnegate oid, oprcode text, oprrest text, oprjoin text"),
    "pg_shdescription": (141, "objoid oid, classoid oid, description text"),
    "pg_partitioned_table": (142, "partrelid oid, partstrat char, partnatts int2, partdefid oid, "
                                  "partattrs int2[], partclass oid[], partcollation oid[], partexprs text"),
    "pg_foreign_table": (143, "ftrelid oid, ftserver oid, ftoptions text[]"),
    "pg_event_trigger": (144, "oid oid, evtname name, evtevent name, evtowner oid, evtfoid oid, "
                              "evtenabled char, evttags text[]"),
    "pg_range": (145, "rngtypid oid, rngsubtype oid, rngmultitypid oid, rngcollation oid, rngsubopc oid, "
                      "rngcanonical text, rngsubdiff text"),
    "pg_aggregate": (146, "aggfnoid oid, aggkind char, aggnumdirectargs int2, aggtransfn text, "
                          "aggfinalfn text, aggtranstype oid, agginitval text"),
    "pg_locks": (147, "locktype text, database oid, relation oid, page int4, tuple int2, virtualxid text, "
                      "transactionid int8, classid oid, objid oid, objsubid int2, virtualtransaction text, "
                      "pid int4, mode text, granted bool, fastpath bool, waitstart timestamptz"),
    "pg_sequences": (148, "schemaname name, sequencename name, sequenceowner name, data_type text, "
                          "start_value int8, min_value int8, max_value int8, increment_by int8, cycle bool, "
                          "cache_size int8, last_value int8"),
    "pg_foreign_data_wrapper": (150, "oid oid, fdwname name, fdwowner oid, fdwhandler oid, fdwvalidator oid, "
                                     "fdwacl text[], fdwoptions text[]"),
    "pg_foreign_server": (151, "oid oid, srvname name, srvowner oid, srvfdw oid, srvtype text, "
                               "srvversion text, srvacl text[], srvoptions text[]"),
    "pg_conversion": (152, "oid oid, conname name, connamespace oid, conowner oid, conforencoding int4, "
                           "contoencoding int4, conproc text, condefault bool"),
    "pg_default_acl": (155, "oid oid, defaclrole oid, defaclnamespace oid, defaclobjtype char, "
                            "defaclacl text[]"),
    "pg_auth_members": (125, "roleid oid, member oid, grantor oid, admin_option bool"),
}

TABLES = [
    SystemTable("pg_catalog", "pg_namespace", PG_NAMESPACE_OID, "oid oid, nspname name, nspowner oid, nspacl text[]",
                _pg_namespace),
    SystemTable("pg_catalog", "pg_type", PG_TYPE_OID,
                "oid oid, typname name, typnamespace oid, typowner oid, typlen int2, typbyval bool, "
                "typtype char, typcategory char, typispreferred bool, typisdefined bool, typdelim char, "
                "typrelid oid, typelem oid, typarray oid, typinput text, typoutput text, typreceive text, "
                "typsend text, typalign char, typstorage char, typnotnull bool, typbasetype oid, "
                "typtypmod int4, typndims int4, typcollation oid, typdefaultbin text, typdefault text, "
                "typacl text[]", _pg_type),
    SystemTable("pg_catalog", "pg_database", PG_DATABASE_OID,
                "oid oid, datname name, datdba oid, encoding int4, datlocprovider char, datistemplate bool, "
                "datallowconn bool, datconnlimit int4, datfrozenxid int8, datminmxid int8, dattablespace oid, "
                "datcollate text, datctype text, daticulocale text, datcollversion text, datacl text[]",
                _pg_database),
    SystemTable("pg_catalog", "pg_roles", 123,
                "rolname name, rolsuper bool, rolinherit bool, rolcreaterole bool, rolcreatedb bool, "
                "rolcanlogin bool, rolreplication bool, rolconnlimit int4, rolpassword text, "
                "rolvaliduntil timestamptz, rolbypassrls bool, rolconfig text[], oid oid", _pg_roles),
    SystemTable("pg_catalog", "pg_authid", 156,
                "oid oid, rolname name, rolsuper bool, rolinherit bool, rolcreaterole bool, rolcreatedb bool, "
                "rolcanlogin bool, rolreplication bool, rolbypassrls bool, rolconnlimit int4, rolpassword text, "
                "rolvaliduntil timestamptz", _pg_authid, cached=False),
    SystemTable("pg_catalog", "pg_user", 124,
                "usename name, usesysid oid, usecreatedb bool, usesuper bool, userepl bool, usebypassrls bool, "
                "passwd text, valuntil timestamptz, useconfig text[]", _pg_user),
    SystemTable("pg_catalog", "pg_settings", 126,
                "name text, setting text, unit text, category text, short_desc text, extra_desc text, "
                "context text, vartype text, source text, min_val text, max_val text, enumvals text[], "
                "boot_val text, reset_val text, sourcefile text, sourceline int4, pending_restart bool",
                _pg_settings, cached=False),
    SystemTable("pg_catalog", "pg_am", 127, "oid oid, amname name, amhandler text, amtype char",
                lambda ctx: [(HEAP_AM_OID, "heap", "heap_tableam_handler", "t"), (403, "btree", "bthandler", "i")]),
    SystemTable("pg_catalog", "pg_proc", PG_PROC_OID,
                "oid oid, proname name, pronamespace oid, proowner oid, prolang oid, procost float4, "
                "prorows float4, provariadic oid, prosupport text, prokind char, prosecdef bool, "
                "proleakproof bool, proisstrict bool, proretset bool, provolatile char, proparallel char, "
                "pronargs int2, pronargdefaults int2, prorettype oid, proargtypes oid[], proallargtypes oid[], "
                "proargmodes char[], proargnames text[], proargdefaults text, protrftypes oid[], prosrc text, "
                "probin text, prosqlbody text, proconfig text[], proacl text[]", _pg_proc),
    SystemTable("pg_catalog", "pg_tablespace", 129, "oid oid, spcname name, spcowner oid, spcacl text[], spcoptions text[]",
                lambda ctx: [(DEFAULT_TABLESPACE_OID, "pg_default", ROOT_OID, None, None),
                             (1664, "pg_global", ROOT_OID, None, None)]),
    SystemTable("pg_catalog", "pg_collation", 130,
                "oid oid, collname name, collnamespace oid, collowner oid, collprovider char, "
                "collisdeterministic bool, collencoding int4, collcollate text, collctype text, "
                "colliculocale text, collversion text",
                lambda ctx: [(DEFAULT_COLLATION_OID, "default", PG_CATALOG_OID, ROOT_OID, "d", True, -1, None, None,
                              None, None),
                             (C_COLLATION_OID, "C", PG_CATALOG_OID, ROOT_OID, "c", True, -1, "C", "C", None, None),
                             (951, "POSIX", PG_CATALOG_OID, ROOT_OID, "c", True, -1, "POSIX", "POSIX", None, None)]),
    SystemTable("pg_catalog", "pg_language", 137,
                "oid oid, lanname name, lanowner oid, lanispl bool, lanpltrusted bool, lanplcallfoid oid, "
                "laninline oid, lanvalidator oid, lanacl text[]",
                lambda ctx: [(12, "internal", ROOT_OID, False, False, 0, 0, 0, None),
                             (13, "c", ROOT_OID, False, False, 0, 0, 0, None),
                             (14, "sql", ROOT_OID, False, True, 0, 0, 0, None),
                             (LANGUAGE_OIDS["javascript"], "javascript", ROOT_OID, True, True, 0, 0, 0, None)]),
    SystemTable("pg_catalog", "pg_stat_activity", 140,
                "datid oid, datname name, pid int4, leader_pid int4, usesysid oid, usename name, "
                "application_name text, client_addr text, client_hostname text, client_port int4, "
                "backend_start timestamptz, xact_start timestamptz, query_start timestamptz, "
                "state_change timestamptz, wait_event_type text, wait_event text, state text, backend_xid int8, "
                "backend_xmin int8, query_id int8, query text, backend_type text", _pg_stat_activity, cached=False),
    *(SystemTable("pg_catalog", name, oid, columns) for name, (oid, columns) in _EMPTY.items()),
]
