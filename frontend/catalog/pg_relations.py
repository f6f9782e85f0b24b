"""`pg_catalog` tables about relations: `pg_class`, `pg_attribute`, `pg_index`, `pg_constraint`,
`pg_description`, `pg_depend` and the views over them (`pg_tables`, `pg_matviews`, `pg_views`,
`pg_indexes`), plus the empty ones clients join (`pg_attrdef`, `pg_inherits`, `pg_policy`, ...).

Tables are relkind ``r``, materialized views ``m`` (as RisingWave). A table's primary key appears as
a constraint (``contype = 'p'``) backed by an index entry in `pg_index` whose OID is
`PK_INDEX_OID_BASE` + the table's; the index has no `pg_class` row, so ``\\di`` lists no index
(RisingWave keeps the primary key in the table itself). Indexes made by CREATE INDEX are relkind
``i`` with access method btree, in `pg_index` and `pg_indexes`.
"""

from __future__ import annotations

from frontend.catalog.acl import relation_acl
from frontend.catalog.oids import BTREE_AM_OID, PG_CLASS_OID, PK_INDEX_OID_BASE
from frontend.catalog.relations import (
    CatalogRelation,
    all_relations,
    user_relations,
    view_query,
)
from frontend.catalog.table import SystemContext, SystemTable
from risingspark.catalog import RelationCatalog, RelationKind


def _owner(ctx: SystemContext, oid: int) -> str | None:
    return ctx.user_name(oid)


def has_pk(rel: RelationCatalog) -> bool:
    """Whether the table declares a primary key (not the hidden row id)."""
    return rel.kind is RelationKind.TABLE and rel.row_id_index is None and bool(rel.pk)


def pk_attnums(rel: RelationCatalog) -> list[int]:
    """The `attnum`s (1-based among visible columns) of the primary key's columns."""
    visible = [f.name for f in rel.fields if not f.hidden]
    return [visible.index(rel.fields[i].name) + 1 for i in rel.pk]


def pk_definition(rel: RelationCatalog) -> str:
    return "PRIMARY KEY (" + ", ".join(rel.fields[i].name for i in rel.pk) + ")"


def user_indexes(ctx: SystemContext) -> list[tuple[RelationCatalog, RelationCatalog]]:
    """Every index of the session's database with the relation it indexes."""
    rels = {r.id: r for r in ctx.relations()}
    return [(r, rels[r.dependencies[0]]) for r in rels.values()
            if r.kind is RelationKind.INDEX and r.dependencies and r.dependencies[0] in rels]


def index_attnums(index: RelationCatalog, base: RelationCatalog) -> list[int]:
    """The `attnum`s in the indexed relation of an index's visible columns."""
    visible = [f.name for f in base.fields if not f.hidden]
    return [visible.index(f.name) + 1 for f in index.fields if not f.hidden and f.name in visible]


def index_key_count(index: RelationCatalog) -> int:
    return len(index.extra.get("index_columns") or [])


def index_definition(ctx: SystemContext, index: RelationCatalog, base: RelationCatalog) -> str:
    """As `pg_indexes.indexdef`: ``CREATE INDEX i ON s.t USING btree (a, b)``."""
    keys = ", ".join(index.extra.get("index_columns") or [])
    return f"CREATE INDEX {index.name} ON {ctx.schema_name(base)}.{base.name} USING btree ({keys})"


def _pg_class(ctx: SystemContext) -> list[tuple]:
    out = []
    indexed = {base.id for _, base in user_indexes(ctx)}
    for r in all_relations(ctx):
        pk = r.user is not None and (has_pk(r.user) or r.user.id in indexed)
        am = BTREE_AM_OID if r.kind == "index" else 0
        out.append((r.oid, r.name, r.namespace, 0, 0, r.owner, am, r.oid, 0, 0, -1.0, 0, 0, pk, False, "p",
                    r.relkind, len(r.columns), 0, False, False, False, False, False, True, "d", False, 0, 0, 0,
                    relation_acl(ctx, r.user) if r.user is not None else None, None, None))
    return out


def _align(length: int) -> str:
    return {1: "c", 2: "s", 4: "i", 8: "d"}.get(length, "i")


def _pg_attribute(ctx: SystemContext) -> list[tuple]:
    out = []
    for r in all_relations(ctx):
        for num, c in enumerate(r.columns, 1):
            t = c.type
            out.append((r.oid, c.name, t.oid, -1, t.length, num, 0, -1, t.typmod, t.byval, _align(t.length),
                        "p" if t.length > 0 else "x", "", c.not_null, False, False, "", "", False, True, 0,
                        t.collation, None, None, None))
    return out


def _pk_tables(ctx: SystemContext) -> list[CatalogRelation]:
    return [r for r in user_relations(ctx, RelationKind.TABLE) if r.user is not None and has_pk(r.user)]


def _pg_index(ctx: SystemContext) -> list[tuple]:
    out = []
    for r in _pk_tables(ctx):
        assert r.user is not None
        keys = pk_attnums(r.user)
        out.append((PK_INDEX_OID_BASE + r.oid, r.oid, len(keys), len(keys), True, False, True, False, True,
                    False, True, False, True, True, False, keys, [0] * len(keys), [0] * len(keys),
                    [0] * len(keys), None, None))
    for index, base in user_indexes(ctx):
        keys = index_attnums(index, base)
        out.append((index.id, base.id, len(keys), index_key_count(index), False, False, False, False, True, False,
                    not index.is_creating, False, True, True, False, keys, [0] * len(keys), [0] * len(keys),
                    [0] * len(keys), None, None))
    return out


def _pg_constraint(ctx: SystemContext) -> list[tuple]:
    out = []
    for r in _pk_tables(ctx):
        assert r.user is not None
        index = PK_INDEX_OID_BASE + r.oid
        out.append((index, f"{r.name}_pkey", r.namespace, "p", False, False, True, r.oid, 0, index, 0, 0,
                    " ", " ", " ", True, 0, True, pk_attnums(r.user), None, None, None, None, None, None, None))
    return out


def _pg_indexes(ctx: SystemContext) -> list[tuple]:
    out = []
    for r in _pk_tables(ctx):
        assert r.user is not None
        cols = ", ".join(r.user.fields[i].name for i in r.user.pk)
        out.append((r.schema, r.name, f"{r.name}_pkey", None,
                    f"CREATE UNIQUE INDEX {r.name}_pkey ON {r.schema}.{r.name} USING btree ({cols})"))
    for index, base in user_indexes(ctx):
        out.append((ctx.schema_name(base), base.name, index.name, None, index_definition(ctx, index, base)))
    return out


def _pg_description(ctx: SystemContext) -> list[tuple]:
    out = []
    for r in user_relations(ctx):
        if r.comment is not None:
            out.append((r.oid, PG_CLASS_OID, 0, r.comment))
        for num, c in enumerate(r.columns, 1):
            if c.comment is not None:
                out.append((r.oid, PG_CLASS_OID, num, c.comment))
    return out


def _pg_depend(ctx: SystemContext) -> list[tuple]:
    return [(PG_CLASS_OID, r.id, 0, PG_CLASS_OID, dep, 0, "n") for r in ctx.relations() for dep in r.depends_on]


def _pg_tables(ctx: SystemContext) -> list[tuple]:
    return [(r.schema, r.name, _owner(ctx, r.owner), None, r.user is not None and has_pk(r.user), False, False,
             False) for r in all_relations(ctx) if r.relkind == "r"]


def _pg_matviews(ctx: SystemContext) -> list[tuple]:
    return [(r.schema, r.name, _owner(ctx, r.owner), None, False, r.user is not None and not r.user.is_creating,
             view_query(r.definition)) for r in user_relations(ctx, RelationKind.MATERIALIZED_VIEW)]


def _pg_views(ctx: SystemContext) -> list[tuple]:
    return [(r.schema, r.name, _owner(ctx, r.owner), view_query(r.definition))
            for r in user_relations(ctx) if r.relkind == "v"]


TABLES = [
    SystemTable("pg_catalog", "pg_class", PG_CLASS_OID,
                "oid oid, relname name, relnamespace oid, reltype oid, reloftype oid, relowner oid, relam oid, "
                "relfilenode oid, reltablespace oid, relpages int4, reltuples float4, relallvisible int4, "
                "reltoastrelid oid, relhasindex bool, relisshared bool, relpersistence char, relkind char, "
                "relnatts int2, relchecks int2, relhasrules bool, relhastriggers bool, relhassubclass bool, "
                "relrowsecurity bool, relforcerowsecurity bool, relispopulated bool, relreplident char, "
                "relispartition bool, relrewrite oid, relfrozenxid int8, relminmxid int8, relacl text[], "
                "reloptions text[], relpartbound text", _pg_class),
    SystemTable("pg_catalog", "pg_attribute", 102,
                "attrelid oid, attname name, atttypid oid, attstattarget int4, attlen int2, attnum int2, "
                "attndims int4, attcacheoff int4, atttypmod int4, attbyval bool, attalign char, attstorage char, "
                "attcompression char, attnotnull bool, atthasdef bool, atthasmissing bool, attidentity char, "
                "attgenerated char, attisdropped bool, attislocal bool, attinhcount int4, attcollation oid, "
                "attacl text[], attoptions text[], attfdwoptions text[]", _pg_attribute),
    SystemTable("pg_catalog", "pg_index", 103,
                "indexrelid oid, indrelid oid, indnatts int2, indnkeyatts int2, indisunique bool, "
                "indnullsnotdistinct bool, indisprimary bool, indisexclusion bool, indimmediate bool, "
                "indisclustered bool, indisvalid bool, indcheckxmin bool, indisready bool, indislive bool, "
                "indisreplident bool, indkey int2vector, indcollation oidvector, indclass oidvector, indoption int2vector, "
                "indexprs text, indpred text", _pg_index),
    SystemTable("pg_catalog", "pg_constraint", 104,
                "oid oid, conname name, connamespace oid, contype char, condeferrable bool, condeferred bool, "
                "convalidated bool, conrelid oid, contypid oid, conindid oid, conparentid oid, confrelid oid, "
                "confupdtype char, confdeltype char, confmatchtype char, conislocal bool, coninhcount int4, "
                "connoinherit bool, conkey int2[], confkey int2[], conpfeqop oid[], conppeqop oid[], "
                "conffeqop oid[], confdelsetcols int2[], conexclop oid[], conbin text", _pg_constraint),
    SystemTable("pg_catalog", "pg_description", 105, "objoid oid, classoid oid, objsubid int4, description text",
                _pg_description),
    SystemTable("pg_catalog", "pg_attrdef", 106, "oid oid, adrelid oid, adnum int2, adbin text"),
    SystemTable("pg_catalog", "pg_matviews", 107,
                "schemaname name, matviewname name, matviewowner name, tablespace name, hasindexes bool, "
                "ispopulated bool, definition text", _pg_matviews),
    SystemTable("pg_catalog", "pg_views", 108, "schemaname name, viewname name, viewowner name, definition text",
                _pg_views),
    SystemTable("pg_catalog", "pg_tables", 109,
                "schemaname name, tablename name, tableowner name, tablespace name, hasindexes bool, "
                "hasrules bool, hastriggers bool, rowsecurity bool", _pg_tables),
    SystemTable("pg_catalog", "pg_indexes", 110,
                "schemaname name, tablename name, indexname name, tablespace name, indexdef text", _pg_indexes),
    SystemTable("pg_catalog", "pg_depend", 111,
                "classid oid, objid oid, objsubid int4, refclassid oid, refobjid oid, refobjsubid int4, "
                "deptype char", _pg_depend),
    SystemTable("pg_catalog", "pg_inherits", 112, "inhrelid oid, inhparent oid, inhseqno int4, inhdetachpending bool"),
    SystemTable("pg_catalog", "pg_statistic_ext", 113,
                "oid oid, stxrelid oid, stxname name, stxnamespace oid, stxowner oid, stxstattarget int4, "
                "stxkeys int2[], stxkind char[], stxexprs text"),
    SystemTable("pg_catalog", "pg_policy", 114,
                "oid oid, polname name, polrelid oid, polcmd char, polpermissive bool, polroles oid[], "
                "polqual text, polwithcheck text"),
    SystemTable("pg_catalog", "pg_rewrite", 115,
                "oid oid, rulename name, ev_class oid, ev_type char, ev_enabled char, is_instead bool, "
                "ev_qual text, ev_action text"),
    SystemTable("pg_catalog", "pg_trigger", 116,
                "oid oid, tgrelid oid, tgparentid oid, tgname name, tgfoid oid, tgtype int2, tgenabled char, "
                "tgisinternal bool, tgconstrrelid oid, tgconstrindid oid, tgconstraint oid, tgdeferrable bool, "
                "tginitdeferred bool, tgnargs int2, tgattr int2[], tgargs text, tgqual text, tgoldtable name, "
                "tgnewtable name"),
]
