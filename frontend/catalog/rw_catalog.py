"""`rw_catalog`, with RisingWave's tables and columns: relations, schemas, columns, streaming jobs and
their fragments, dependencies, table statistics and backfill progress (`rw_ddl_progress`:
``ddl_id, ddl_statement, create_type, progress, initialized_at, is_serverless_backfill,
backfill_type``).

A job has one fragment per stream plan here (the whole plan runs as one Spark job per epoch); its
fragment id is the job id, as in `rw_fragment_backfill_progress`.
"""

from __future__ import annotations

from datetime import UTC, datetime

from frontend.catalog.acl import OBJECT_TYPES, acl
from frontend.catalog.oids import PG_CLASS_OID, PG_TYPES_BY_OID, ROOT_OID, SYSTEM_NAMESPACES
from frontend.catalog.relations import relation_type, system_relation, user_relations
from frontend.catalog.table import SystemContext, SystemTable
from risingspark.catalog import SERVERLESS_BACKFILL, RelationCatalog, RelationKind
from risingspark.epoch import epoch_to_datetime
from risingspark.users import ObjectType
from risingspark.vnode import VNODE_COUNT

_RELATION = "id int4, name text, schema_id int4, owner int4, definition text, acl text[]"
_JOB = (f"{_RELATION}, initialized_at timestamptz, created_at timestamptz, initialized_at_cluster_version text, "
        "created_at_cluster_version text")
CLUSTER_VERSION = "0.1.0"


def _epoch(e: int | None):
    return epoch_to_datetime(e) if e else None


def _ddl_progress(ctx: SystemContext) -> list[tuple]:
    return [(p.ddl_id, p.ddl_statement, p.create_type, p.progress, _epoch(p.initialized_at_epoch),
             p.is_serverless_backfill, p.backfill_type) for p in ctx.ddl_progress()]


def _eta(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    s = int(round(seconds))
    return f"{s // 3600}h {s // 60 % 60}m {s % 60}s" if s >= 3600 else (f"{s // 60}m {s % 60}s" if s >= 60 else f"{s}s")


def _fragment_backfill_progress(ctx: SystemContext) -> list[tuple]:
    """One row per upstream a creating job backfills (a job's whole plan is one fragment here, so
    the fragment id is the job id, and the upstream tells the rows apart). A job over one upstream
    shows the job's progress; over several, each upstream its own rows, and one that waits for its
    place in the backfill order says so: ``0.00% (0/100000) waiting for car_info``. The rate and ETA
    are the job's, shown on the upstreams still being read; the rate limit is the job's:
    ``adaptive (n rows/s)`` with an adaptive rate's current limit (`meta.backfill_rate`), the fixed
    limit, or NULL."""
    out = []
    names = {r.id: r.name for r in ctx.snapshot.relations.values()}
    for p in ctx.ddl_progress():
        rel = ctx.snapshot.relations.get(p.ddl_id)
        if rel is None or rel.database_id != ctx.database_id:
            continue
        rate = round(p.rows_per_second, 1) if p.rows_per_second is not None else None
        if len(p.upstreams) <= 1:
            up = names.get(rel.dependencies[0]) if rel.dependencies else None
            out.append((p.ddl_id, p.ddl_id, rel.name, up, p.progress, rate, _eta(p.eta_seconds), p.rate_limit))
            continue
        for u in p.upstreams:
            eta = p.eta_seconds * (u.total_rows - u.consumed_rows) / max(1, p.total_rows - p.consumed_rows) \
                if u.reading and p.eta_seconds is not None else None
            out.append((p.ddl_id, p.ddl_id, rel.name, names.get(u.upstream_id), u.text(names),
                        rate if u.reading else None, _eta(eta), p.rate_limit))
    return out


def _jobs_of(kind: RelationKind):
    def rows(ctx: SystemContext) -> list[tuple]:
        return [(r.id, r.name, r.schema_id, r.owner, r.definition, _acl(ctx, r), _epoch(r.initialized_at_epoch),
                 _epoch(r.created_at_epoch), CLUSTER_VERSION, CLUSTER_VERSION)
                for r in ctx.relations() if r.kind is kind]
    return rows


def _views(ctx: SystemContext) -> list[tuple]:
    return [(r.oid, r.name, r.namespace, r.owner, r.definition, _acl(ctx, r.user)) for r in user_relations(ctx)
            if r.relkind == "v" and r.user is not None]


def _indexes(ctx: SystemContext) -> list[tuple]:
    from frontend.catalog.pg_relations import index_attnums, user_indexes

    return [(i.id, i.name, base.id, [n - 1 for n in index_attnums(i, base)], i.schema_id, i.owner, i.definition,
             [], _epoch(i.initialized_at_epoch), _epoch(i.created_at_epoch)) for i, base in user_indexes(ctx)]


def _relations(ctx: SystemContext) -> list[tuple]:
    from frontend.catalog.system import SYSTEM_TABLES

    out = [(r.id, r.name, relation_type(r.kind.value), r.schema_id, r.owner, r.definition, _acl(ctx, r))
           for r in ctx.relations()]
    out += [(t.oid, t.name, "system table", SYSTEM_NAMESPACES[t.schema], ROOT_OID, "", [])
            for t in SYSTEM_TABLES.values()]
    return out


def _system_tables(ctx: SystemContext) -> list[tuple]:
    from frontend.catalog.system import SYSTEM_TABLES

    return [(t.oid, t.name, SYSTEM_NAMESPACES[t.schema], ROOT_OID, "", []) for t in SYSTEM_TABLES.values()]


def _schemas(ctx: SystemContext) -> list[tuple]:
    rows: list[tuple] = [(oid, name, ROOT_OID, []) for name, oid in SYSTEM_NAMESPACES.items()]
    return rows + [(s.id, s.name, s.owner, acl(ctx, s.id, s.owner, ObjectType.SCHEMA, always=True))
                   for s in ctx.schemas()]


def _acl(ctx: SystemContext, rel: RelationCatalog | None) -> list[str]:
    """An ``acl`` column, as RisingWave's (``varchar[]``): the owner's privileges, then the grants
    (``grantee=letters/grantor``)."""
    if rel is None:
        return []
    kind = OBJECT_TYPES.get(rel.kind)
    if kind is None:  # an index: its table's privileges apply
        return []
    return acl(ctx, rel.id, rel.owner, kind, always=True) or []


def _columns(ctx: SystemContext) -> list[tuple]:
    from frontend.catalog.system import SYSTEM_TABLES

    out = []
    for rel in ctx.relations():
        pk = set(rel.pk)
        dist = set(rel.dist_key)
        for pos, f in enumerate(rel.fields, 1):
            out.append((rel.id, f.name, pos, f.hidden, pos - 1 in pk, pos - 1 in dist, False, None,
                        f.type.display(), f.type.oid, f.type.typlen, f.type.pg_typname))
    for table in SYSTEM_TABLES.values():
        for pos, c in enumerate(system_relation(table).columns, 1):
            t = PG_TYPES_BY_OID[c.type.oid]
            out.append((table.oid, c.name, pos, False, False, False, False, None, c.display, t.oid, t.length,
                        t.name))
    return out


def _functions(ctx: SystemContext) -> list[tuple]:
    """The database's user-defined functions, as RisingWave lists them (``type`` udf, no ``link`` for
    an embedded language; the owner's privileges are implicit, so ``acl`` is empty)."""
    return [(f.id, f.name, f.schema_id, f.owner, "udf", [t.oid for t in f.arg_types], f.return_type.oid, f.language,
             None, []) for f in ctx.functions()]


def _depend(ctx: SystemContext) -> list[tuple]:
    return [(r.id, dep) for r in ctx.relations() for dep in r.depends_on]


def _fragment_flags(rel: RelationCatalog) -> list[str]:
    flags = ["MVIEW", "DML"] if rel.kind is RelationKind.TABLE else ["MVIEW"]
    if rel.dependencies:
        flags.append("STREAM_SCAN")
    return flags


def _fragments(ctx: SystemContext) -> list[tuple]:
    out = []
    for r in ctx.relations():
        if r.plan is None:
            continue
        out.append((r.id, r.id, "HASH", [d.table_id for d in r.state_tables], list(r.dependencies),
                    _fragment_flags(r), r.parallelism or None, VNODE_COUNT))
    return out


def _streaming_jobs(ctx: SystemContext) -> list[tuple]:
    out = []
    for r in ctx.relations():
        if r.plan is None:
            continue
        parallelism = f"FIXED({r.parallelism})" if r.parallelism else "ADAPTIVE"
        out.append((r.id, r.name, r.status.value.upper(), parallelism, VNODE_COUNT, job_resource_group(r),
                    r.database_id, r.schema_id))
    return out


def job_resource_group(rel: RelationCatalog) -> str:
    """Where a job runs now: the temporary group of its serverless backfiller while it backfills
    there (`meta.serverless`), else its own."""
    state = rel.extra.get(SERVERLESS_BACKFILL)
    if isinstance(state, dict) and rel.is_creating and not state.get("migrated") and state.get("group"):
        return str(state["group"])
    return rel.resource_group


def _table_stats(ctx: SystemContext) -> list[tuple]:
    return [(d.table_id, ctx.row_count(d.table_id), 0, 0) for r in ctx.relations() for d in r.state_tables]


def _hummock_sstables(ctx: SystemContext) -> list[tuple]:
    """Every live SST of the database's state tables (RisingWave's `rw_hummock_sstables`, with the
    table id in place of the compaction group): L0 sub-levels overlap, the levels below do not. Key
    ranges are the memcomparable keys in hex (RisingWave's are bytea; hex keeps their order)."""
    if ctx.version is None:
        return []
    out = []
    for r in ctx.relations():
        for d in r.state_tables:
            for s in ctx.version.levels(d.table_id).all_ssts():
                lo, hi = s.key_range
                out.append((s.sst_id, s.path, d.table_id, s.level, s.sub_level,
                            "OVERLAPPING" if s.level == 0 else "NONOVERLAPPING", lo.hex(), hi.hex(), s.size_bytes,
                            s.row_count, s.tombstone_count, s.min_epoch, s.max_epoch))
    return out


def _write_stalls(ctx: SystemContext) -> list[tuple]:
    """Tables whose writes are held because a state table they feed has too deep an L0."""
    live = {r.id for r in ctx.relations()}
    return [(s.table_id, s.name, s.state_table_id, s.l0_sub_levels, datetime.fromtimestamp(s.since, UTC))
            for s in ctx.write_stalls() if s.table_id in live]


def _description(ctx: SystemContext) -> list[tuple]:
    out = []
    for r in user_relations(ctx):
        if r.comment is not None:
            out.append((r.oid, PG_CLASS_OID, 0, r.comment))
        out += [(r.oid, PG_CLASS_OID, n, c.comment) for n, c in enumerate(r.columns, 1) if c.comment is not None]
    return out


TABLES = [
    SystemTable("rw_catalog", "rw_ddl_progress", 500,
                "ddl_id int8, ddl_statement text, create_type text, progress text, initialized_at timestamptz, "
                "is_serverless_backfill bool, backfill_type text", _ddl_progress, cached=False),
    SystemTable("rw_catalog", "rw_fragment_backfill_progress", 501,
                "job_id int4, fragment_id int4, job_name text, upstream_table_name text, progress text, "
                "rows_per_second float8, eta text, rate_limit text", _fragment_backfill_progress, cached=False),
    SystemTable("rw_catalog", "rw_tables", 502, _JOB, _jobs_of(RelationKind.TABLE)),
    SystemTable("rw_catalog", "rw_materialized_views", 503, _JOB, _jobs_of(RelationKind.MATERIALIZED_VIEW)),
    SystemTable("rw_catalog", "rw_relations", 504, "id int4, name text, relation_type text, schema_id int4, "
                "owner int4, definition text, acl text[]", _relations),
    SystemTable("rw_catalog", "rw_schemas", 505, "id int4, name text, owner int4, acl text[]", _schemas),
    SystemTable("rw_catalog", "rw_columns", 506,
                "relation_id int4, name text, position int2, is_hidden bool, is_primary_key bool, "
                "is_distribution_key bool, is_generated bool, generation_expression text, data_type text, "
                "type_oid int4, type_len int2, udt_type text", _columns),
    SystemTable("rw_catalog", "rw_views", 507, _RELATION, _views),
    SystemTable("rw_catalog", "rw_indexes", 508,
                "id int4, name text, primary_table_id int4, indkey int2[], schema_id int4, owner int4, "
                "definition text, acl text[], initialized_at timestamptz, created_at timestamptz", _indexes),
    SystemTable("rw_catalog", "rw_functions", 509,
                "id int4, name text, schema_id int4, owner int4, type text, arg_type_ids int4[], "
                "return_type_id int4, language text, link text, acl text[]", _functions),
    SystemTable("rw_catalog", "rw_depend", 510, "objid int4, refobjid int4", _depend),
    SystemTable("rw_catalog", "rw_fragments", 511,
                "fragment_id int4, table_id int4, distribution_type text, state_table_ids int4[], "
                "upstream_fragment_ids int4[], flags text[], parallelism int4, max_parallelism int4", _fragments),
    SystemTable("rw_catalog", "rw_table_stats", 512,
                "id int4, total_key_count int8, total_key_size int8, total_value_size int8", _table_stats,
                cached=False),
    SystemTable("rw_catalog", "rw_streaming_jobs", 513,
                "job_id int4, name text, status text, parallelism text, max_parallelism int4, "
                "resource_group text, database_id int4, schema_id int4", _streaming_jobs),
    SystemTable("rw_catalog", "rw_databases", 514, "id int4, name text, owner int4, acl text[], resource_group text",
                lambda ctx: [(d.id, d.name, d.owner, acl(ctx, d.id, d.owner, ObjectType.DATABASE, always=True),
                              d.resource_group)
                             for d in sorted(ctx.snapshot.databases.values(), key=lambda d: d.id)]),
    SystemTable("rw_catalog", "rw_users", 515,
                "id int4, name text, is_super bool, create_db bool, create_user bool, can_login bool",
                lambda ctx: [(r.id, r.name, r.is_super, r.can_create_db, r.can_create_user, r.can_login)
                             for r in ctx.roles]),
    SystemTable("rw_catalog", "rw_system_tables", 516, _RELATION, _system_tables),
    SystemTable("rw_catalog", "rw_sources", 517, f"{_RELATION}, connector text"),
    SystemTable("rw_catalog", "rw_sinks", 518, f"{_RELATION}, connector text"),
    SystemTable("rw_catalog", "rw_subscriptions", 519, _RELATION),
    SystemTable("rw_catalog", "rw_hummock_sstables", 521,
                "sstable_id int8, object_path text, table_id int4, level_id int4, sub_level_id int8, level_type text, "
                "key_range_left text, key_range_right text, file_size int8, total_key_count int8, "
                "stale_key_count int8, min_epoch int8, max_epoch int8", _hummock_sstables, cached=False),
    SystemTable("rw_catalog", "rw_write_stalls", 522,
                "table_id int4, table_name text, state_table_id int4, l0_sub_levels int4, stalled_since timestamptz",
                _write_stalls, cached=False),
    SystemTable("rw_catalog", "rw_description", 520, "objoid int4, classoid int4, objsubid int4, description text",
                _description),
]
