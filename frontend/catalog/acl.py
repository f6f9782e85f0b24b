"""Who owns what and who may do what, as the system catalogs show it: owners' names, PostgreSQL's
``aclitem[]`` columns (``relacl``, ``nspacl``, ``datacl``) and the rows of
`information_schema.table_privileges`.

As PostgreSQL, an object nobody was granted anything on has a NULL acl (its owner's default
privileges); once it has grants, the acl lists the owner's privileges first, then the grants.
"""

from __future__ import annotations

from frontend.catalog.table import SystemContext
from risingspark.catalog import RelationCatalog, RelationKind
from risingspark.users import GrantPrivilege, ObjectType, acl_text, available_actions

OBJECT_TYPES = {RelationKind.TABLE: ObjectType.TABLE, RelationKind.MATERIALIZED_VIEW: ObjectType.MATERIALIZED_VIEW,
                RelationKind.VIEW: ObjectType.VIEW}


def owner_name(ctx: SystemContext, user_id: int) -> str | None:
    return ctx.user_name(user_id)


def acl(ctx: SystemContext, object_id: int, owner: int, kind: ObjectType, *, always: bool = False) -> list[str] | None:
    """The ``aclitem[]`` text of an object: None when nothing was granted on it (the owner's
    default privileges, as PostgreSQL shows them), unless `always` (RisingWave's catalogs list the
    owner's privileges then too)."""
    grants = ctx.snapshot.privileges_on(object_id)
    if not grants and not always:
        return None
    names = {u.id: u.name for u in ctx.roles}
    own = [GrantPrivilege(0, owner, object_id, a, owner) for a in available_actions(kind)]  # (no "*", as PostgreSQL)
    return acl_text(own, names) + acl_text([g for g in grants if g.user_id != owner or g.granted_by != owner], names)


def relation_acl(ctx: SystemContext, rel: RelationCatalog) -> list[str] | None:
    kind = OBJECT_TYPES.get(rel.kind)
    return acl(ctx, rel.id, rel.owner, kind) if kind is not None else None


def table_privileges(ctx: SystemContext) -> list[tuple]:
    """`information_schema.table_privileges`: the privileges on the database's tables, views and
    materialized views that the session's user granted or was granted (the owner's own included),
    as PostgreSQL lists them."""
    names = {u.id: u.name for u in ctx.roles}
    me = ctx.user_id
    out = []
    for rel in ctx.relations():
        kind = OBJECT_TYPES.get(rel.kind)
        if kind is None:
            continue
        rows = [(rel.owner, rel.owner, a, True) for a in available_actions(kind)]
        rows += [(p.granted_by, p.user_id, p.action, p.with_grant_option) for p in ctx.snapshot.privileges_on(rel.id)]
        schema = ctx.schema_name(rel)
        for grantor, grantee, action, grantable in rows:
            if me not in (grantor, grantee):
                continue
            out.append((names.get(grantor), names.get(grantee), ctx.database, schema, rel.name, action.value,
                        "YES" if grantable else "NO", "YES" if action.value == "SELECT" else "NO"))
    return out
