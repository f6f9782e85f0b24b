"""CREATE/ALTER/DROP USER, GRANT, REVOKE and ALTER ... OWNER TO.

The frontend resolves names (users, relations, schemas, databases) against its catalog snapshot and
hashes passwords (as its authentication method stores them, `risingspark.passwords`); meta decides
and records the change under its rules (`meta.users`), acting as the session's user.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from frontend.handlers.indexes import table_of
from frontend.pgwire.api import StatementResult
from frontend.statements import (
    AlterOwnerStmt,
    AlterUserStmt,
    CreateUserStmt,
    DropUserStmt,
    GrantObjects,
    GrantStmt,
    RevokeStmt,
)
from meta.users import GrantTarget
from risingspark.catalog import RelationCatalog, RelationKind
from risingspark.errors import (
    FeatureNotSupported,
    InvalidCatalogName,
    InvalidGrantOperation,
    InvalidSchemaName,
    UndefinedObject,
    WrongObjectType,
)
from risingspark.passwords import encrypt_password
from risingspark.users import Action, ObjectType, UserCatalog, UserChange, available_actions

if TYPE_CHECKING:
    from frontend.session import Session

_EMPTY_PASSWORD = "empty string is not a valid password, clearing password"
_GRANT_KINDS = {"TABLE": RelationKind.TABLE, "MATERIALIZED VIEW": RelationKind.MATERIALIZED_VIEW,
                "VIEW": RelationKind.VIEW}
_OBJECT_TYPES = {RelationKind.TABLE: ObjectType.TABLE, RelationKind.MATERIALIZED_VIEW: ObjectType.MATERIALIZED_VIEW,
                 RelationKind.VIEW: ObjectType.VIEW}


def _hashed(session: Session, name: str, options: UserChange, notices: list[str]) -> UserChange:
    """The options with the password as stored (hashed by the frontend's authentication method)."""
    if not options.set_password:
        return options
    if options.password == "":
        notices.append(_EMPTY_PASSWORD)
    return replace(options, password=encrypt_password(name, options.password, session.frontend.password_method))


def create_user(session: Session, stmt: CreateUserStmt) -> StatementResult:
    notices: list[str] = []
    o = _hashed(session, stmt.name, stmt.options, notices)
    user = UserCatalog(0, stmt.name, is_super=bool(o.is_super), can_create_db=bool(o.can_create_db),
                       can_create_user=bool(o.can_create_user), can_login=o.can_login is not False, password=o.password)
    session.frontend.meta.users.create_user(session.user_id, user)
    return StatementResult("CREATE_USER", notices=notices)


def alter_user(session: Session, stmt: AlterUserStmt) -> StatementResult:
    notices: list[str] = []
    options = _hashed(session, stmt.name, stmt.options, notices)
    notices += session.frontend.meta.users.alter_user(session.user_id, stmt.name, options)
    return StatementResult("UPDATE_USER", notices=notices)


def drop_user(session: Session, stmt: DropUserStmt) -> StatementResult:
    notices: list[str] = []
    for name in stmt.names:
        notices += session.frontend.meta.users.drop_user(session.user_id, name, stmt.if_exists)
    return StatementResult("DROP_USER", notices=notices)


def grant(session: Session, stmt: GrantStmt) -> StatementResult:
    _check_grantor(session, stmt.granted_by)
    targets = _targets(session, stmt.actions, stmt.objects)
    notices = session.frontend.meta.users.grant(session.user_id, _grantees(session, stmt.grantees), targets,
                                                stmt.with_grant_option)
    return StatementResult("GRANT_PRIVILEGE", notices=notices)


def revoke(session: Session, stmt: RevokeStmt) -> StatementResult:
    _check_grantor(session, stmt.granted_by)
    targets = _targets(session, stmt.actions, stmt.objects)
    notices = session.frontend.meta.users.revoke(session.user_id, _grantees(session, stmt.grantees), targets,
                                                 grant_option_only=stmt.grant_option_only, cascade=stmt.cascade)
    return StatementResult("REVOKE_PRIVILEGE", notices=notices)


def alter_owner(session: Session, stmt: AlterOwnerStmt) -> StatementResult:
    snap = session.frontend.meta.catalog_snapshot()
    new_owner = snap.user(stmt.new_owner)
    if new_owner is None:
        raise UndefinedObject(f'role "{stmt.new_owner}" does not exist')
    if stmt.kind == "DATABASE":
        db = snap.database(stmt.name[0])
        if db is None:
            raise InvalidCatalogName(f'database "{stmt.name[0]}" does not exist')
        object_id = db.id
    elif stmt.kind == "SCHEMA":
        object_id = session.catalog_reader().schema_id(stmt.name[0])
    else:
        rel = _relation(session, stmt.name)
        want = _GRANT_KINDS[stmt.kind]
        # As PostgreSQL, ALTER TABLE takes views and materialized views too; an index follows its table.
        if rel.kind is RelationKind.INDEX or (want is not RelationKind.TABLE and rel.kind is not want):
            raise WrongObjectType(f'"{rel.name}" is not a {want.display}')
        object_id = rel.id
    session.frontend.meta.users.alter_owner(session.user_id, object_id, new_owner.id)
    return StatementResult(f"ALTER_{stmt.kind.replace(' ', '_')}")


def _check_grantor(session: Session, granted_by: str | None) -> None:
    if granted_by is not None and granted_by != session.user:
        raise FeatureNotSupported("grantor must be current user")


def _grantees(session: Session, names: tuple[str, ...]) -> list[int]:
    snap = session.frontend.meta.catalog_snapshot()
    out = []
    for name in names:
        user = snap.user(name)
        if user is None:
            raise UndefinedObject(f'role "{name}" does not exist')
        out.append(user.id)
    return list(dict.fromkeys(out))


def _relation(session: Session, parts: tuple[str, ...]) -> RelationCatalog:
    reader = session.catalog_reader()
    table = table_of(parts)
    ref = reader.resolve(table)
    if ref.relation is None:
        raise FeatureNotSupported(f'privileges of system table "{ref.schema}.{ref.name}" cannot be changed')
    return ref.relation


def _targets(session: Session, actions: tuple[Action, ...] | None, objects: GrantObjects) -> list[GrantTarget]:
    """The objects a GRANT or REVOKE names, each with the privileges it applies (ALL: every
    privilege the object has)."""
    reader = session.catalog_reader()
    snap = reader.snapshot
    if objects.kind == "DATABASE":
        out = []
        for (name,) in objects.names:
            db = snap.database(name)
            if db is None:
                raise InvalidCatalogName(f'database "{name}" does not exist')
            out.append(GrantTarget(db.id, actions or available_actions(ObjectType.DATABASE)))
        return out
    if objects.kind == "SCHEMA":
        return [GrantTarget(reader.schema_id(name), actions or available_actions(ObjectType.SCHEMA))
                for (name,) in objects.names]
    want = _GRANT_KINDS[objects.kind]
    if objects.all_in_schema:
        rels = []
        for (name,) in objects.names:
            schema = snap.schema(reader.database.id, name)
            if schema is None:
                raise InvalidSchemaName(f'schema "{name}" does not exist')
            rels += sorted((r for r in snap.relations.values() if r.schema_id == schema.id and r.kind is want),
                           key=lambda r: r.id)
    else:
        rels = []
        for parts in objects.names:
            rel = _relation(session, parts)
            if rel.kind is RelationKind.INDEX:
                raise WrongObjectType(f'"{rel.name}" is an index')
            # As PostgreSQL, ON TABLE names any relation; ON MATERIALIZED VIEW / ON VIEW must match.
            if want is not RelationKind.TABLE and rel.kind is not want:
                raise WrongObjectType(f'"{rel.name}" is not a {want.display}')
            rels.append(rel)
    out = []
    for rel in rels:
        allowed = available_actions(_OBJECT_TYPES[rel.kind])
        for a in actions or ():
            if a not in allowed:
                raise InvalidGrantOperation(f"invalid privilege type {a.value} for {rel.kind.display}")
        out.append(GrantTarget(rel.id, actions or allowed))
    return out

