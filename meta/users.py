"""The user catalog: CREATE/ALTER/DROP USER, GRANT and REVOKE, and object ownership, as meta keeps them.

Every change is decided against the catalog snapshot and written in one meta-store transaction
(writers are serialized, so the snapshot read at its start is the one it changes); the users and
privileges are part of the `CatalogSnapshot` frontends read, so a change reaches every frontend with
the next catalog version. The rules and messages are PostgreSQL's (RisingWave follows them):

- Creating users needs the CREATEUSER attribute (PostgreSQL's CREATEROLE); creating, altering or
  dropping superusers needs a superuser. A user may change its own password. ``root`` and
  ``postgres`` always exist (ids 1 and 2, RisingWave's); created users count from 11.
- A user that owns objects, or granted privileges to others, cannot be dropped (2BP01, naming
  them); the privileges granted to it go with it (as RisingWave's).
- GRANT by a superuser or the object's owner is recorded as granted by the owner (PostgreSQL's
  rule). Anyone else grants what they hold WITH GRANT OPTION; the new privilege depends on theirs.
  Granting nothing they may grant fails with 42501 if they hold nothing on the object, else notices.
- REVOKE removes what the revoker granted (a superuser: what anyone granted); privileges that depend
  on it need CASCADE (2BP01 ``dependent privileges exist`` otherwise). ``REVOKE GRANT OPTION FOR``
  keeps the privilege and drops the option (and, with CASCADE, what was granted through it).

Passwords arrive already hashed (`risingspark.passwords`): meta never sees a clear-text password.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, replace

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from meta.catalog import CatalogManager, CatalogSnapshot
from meta.store.schema import user_privileges, users
from meta.store.store import MetaStore, Txn, next_ids
from risingspark.errors import (
    DependentObjectsStillExist,
    DuplicateObject,
    FeatureNotSupported,
    InsufficientPrivilege,
    ObjectInUse,
    ReservedName,
    UndefinedObject,
)
from risingspark.passwords import is_md5_secret
from risingspark.users import (
    NON_RESERVED_USER_ID,
    RESERVED_USERS,
    Action,
    GrantPrivilege,
    UserCatalog,
    UserChange,
    default_users,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class GrantTarget:
    """The privileges a GRANT or REVOKE names on one object."""

    object_id: int
    actions: tuple[Action, ...]


def load_users(conn: Connection) -> tuple[dict[int, UserCatalog], dict[int, GrantPrivilege]]:
    """The users and privileges in the meta store; the default users are created if missing."""
    found = {r.id: _user_from_row(r) for r in conn.execute(sa.select(users))}
    for user in default_users().values():
        if user.id not in found:
            conn.execute(users.insert().values(**_user_to_row(user)))
            found[user.id] = user
    privileges = {r.id: GrantPrivilege(r.id, r.user_id, r.object_id, Action(r.action), r.granted_by,
                                       r.with_grant_option, r.dependent_id)
                  for r in conn.execute(sa.select(user_privileges))}
    return found, privileges


class UserManager:
    """Meta's user and privilege operations (see the module docstring)."""

    def __init__(self, store: MetaStore, catalog: CatalogManager) -> None:
        self._store = store
        self._catalog = catalog

    # ---- users --------------------------------------------------------------------------------
    def bootstrap(self, initial: Iterable[tuple[str, str]]) -> None:
        """The users the server is started with (``--auth-users``, with hashed passwords): created as
        superusers when missing; one that exists gets the password only if it has none (a password
        changed with ALTER USER stays)."""
        with self._store.transaction() as tx:
            known, _ = self._catalog.stage_acl(tx)
            for name, secret in initial:
                user = next((u for u in known.values() if u.name == name), None)
                if user is None:
                    user = UserCatalog(self._next_id(tx), name, is_super=True, can_create_db=True,
                                       can_create_user=True, password=secret)
                    tx.conn.execute(users.insert().values(**_user_to_row(user)))
                    logger.info("created superuser %s (id %d) from the server's configuration", name, user.id)
                elif user.password is None:
                    user = replace(user, password=secret)
                    tx.conn.execute(users.update().where(users.c.id == user.id).values(password=secret))
                    logger.info("user %s (id %d) gets its password from the server's configuration", name, user.id)
                known[user.id] = user

    def create_user(self, actor_id: int, user: UserCatalog) -> UserCatalog:
        """CREATE USER; `user.id` is ignored (a new one is allocated)."""
        with self._store.transaction() as tx:
            snap = self._catalog.snapshot
            actor = _actor(snap, actor_id)
            if not actor.is_super:
                if user.is_super:
                    raise InsufficientPrivilege("must be superuser to create superusers")
                if not actor.can_create_user:
                    raise InsufficientPrivilege("permission denied to create role")
            _check_name(snap, user.name)
            user = replace(user, id=self._next_id(tx))
            tx.conn.execute(users.insert().values(**_user_to_row(user)))
            self._catalog.stage_acl(tx)[0][user.id] = user
        logger.info("created user %s (id %d) by user %d", user.name, user.id, actor_id)
        return user

    def alter_user(self, actor_id: int, name: str, change: UserChange) -> list[str]:
        """ALTER USER name [WITH] options, or ALTER USER name RENAME TO new; returns the notices."""
        notices: list[str] = []
        with self._store.transaction() as tx:
            snap = self._catalog.snapshot
            actor = _actor(snap, actor_id)
            target = _user(snap, name)
            updated = self._check_rename(snap, actor, target, change.name, notices) if change.name is not None \
                else self._check_alter(actor, target, change)
            tx.conn.execute(users.update().where(users.c.id == target.id).values(**_user_to_row(updated)))
            self._catalog.stage_acl(tx)[0][target.id] = updated
        logger.info("altered user %s (id %d) by user %d", name, target.id, actor_id)
        return notices

    @staticmethod
    def _check_alter(actor: UserCatalog, target: UserCatalog, change: UserChange) -> UserCatalog:
        if not actor.is_super:
            if target.is_super or change.is_super is not None:
                raise InsufficientPrivilege("must be superuser to alter superuser roles or change superuser "
                                            "attribute")
            own_password = actor.id == target.id and change == UserChange(set_password=True,
                                                                           password=change.password)
            if not actor.can_create_user and not own_password:
                raise InsufficientPrivilege("permission denied")
        if change.is_super is False and target.id in RESERVED_USERS:
            raise InsufficientPrivilege("permission denied to alter role",
                                        detail=f'The default user "{target.name}" must have the SUPERUSER attribute.')
        def keep(new: bool | None, old: bool) -> bool:
            return old if new is None else new

        return replace(target, is_super=keep(change.is_super, target.is_super),
                       can_create_db=keep(change.can_create_db, target.can_create_db),
                       can_create_user=keep(change.can_create_user, target.can_create_user),
                       can_login=keep(change.can_login, target.can_login),
                       password=change.password if change.set_password else target.password)

    @staticmethod
    def _check_rename(snap: CatalogSnapshot, actor: UserCatalog, target: UserCatalog, new: str,
                      notices: list[str]) -> UserCatalog:
        if actor.id == target.id:
            raise FeatureNotSupported("session user cannot be renamed")
        if not actor.is_super:
            if target.is_super:
                raise InsufficientPrivilege("must be superuser to rename superusers")
            if not actor.can_create_user:
                raise InsufficientPrivilege("permission denied to rename role")
        _check_name(snap, new)
        password = target.password
        if is_md5_secret(password):  # the user name salts an md5 password
            password = None
            notices.append("MD5 password cleared because of role rename")
        return replace(target, name=new, password=password)

    def drop_user(self, actor_id: int, name: str, if_exists: bool = False) -> list[str]:
        """DROP USER [IF EXISTS] name; returns the notices."""
        with self._store.transaction() as tx:
            snap = self._catalog.snapshot
            actor = _actor(snap, actor_id)
            if not actor.is_super and not actor.can_create_user:
                raise InsufficientPrivilege("permission denied to drop role")
            target = snap.user(name)
            if target is None:
                if if_exists:
                    return [f'role "{name}" does not exist, skipping']
                raise UndefinedObject(f'role "{name}" does not exist')
            if target.id == actor.id:
                raise ObjectInUse("current user cannot be dropped")
            if target.id in RESERVED_USERS:
                raise DependentObjectsStillExist(f"cannot drop role {name} because it is required by the database "
                                                 "system")
            if target.is_super and not actor.is_super:
                raise InsufficientPrivilege("must be superuser to drop superusers")
            depending = _dependencies(snap, target.id)
            if depending:
                raise DependentObjectsStillExist(
                    f'role "{name}" cannot be dropped because some objects depend on it', detail="\n".join(depending))
            tx.conn.execute(user_privileges.delete().where(user_privileges.c.user_id == target.id))
            tx.conn.execute(users.delete().where(users.c.id == target.id))
            known, privileges = self._catalog.stage_acl(tx)
            del known[target.id]
            for pid in [p.id for p in privileges.values() if p.user_id == target.id]:
                del privileges[pid]
        logger.info("dropped user %s (id %d) by user %d", name, target.id, actor_id)
        return []

    # ---- privileges ---------------------------------------------------------------------------
    def grant(self, actor_id: int, grantees: list[int], targets: list[GrantTarget],
              with_grant_option: bool = False) -> list[str]:
        """GRANT actions ON objects TO grantees [WITH GRANT OPTION]; returns the notices."""
        notices: list[str] = []
        with self._store.transaction() as tx:
            snap = self._catalog.snapshot
            actor = _actor(snap, actor_id)
            _known(snap, grantees)
            _, privileges = self._catalog.stage_acl(tx)
            for target in targets:
                grantable = self._grantable(snap, actor, target, notices)
                for action, (grantor, through) in grantable.items():
                    for grantee in grantees:
                        self._put(tx, privileges, grantee, target.object_id, action, grantor, with_grant_option,
                                  through)
        return notices

    def _grantable(self, snap: CatalogSnapshot, actor: UserCatalog, target: GrantTarget,
                   notices: list[str]) -> dict[Action, tuple[int, int | None]]:
        """What `actor` may grant on one object: action -> (grantor, the privilege it goes through)."""
        owner = snap.owner_of(target.object_id)
        if actor.is_super or actor.id == owner:
            grantor = owner if owner is not None else actor.id
            return {a: (grantor, None) for a in target.actions}
        held = [p for p in snap.privileges.values() if p.user_id == actor.id and p.object_id == target.object_id]
        out: dict[Action, tuple[int, int | None]] = {}
        for action in target.actions:
            through = next((p for p in held if p.action is action and p.with_grant_option), None)
            if through is not None:
                out[action] = (actor.id, through.id)
        kind, name = snap.object_label(target.object_id)
        if not out and not held:
            raise InsufficientPrivilege(f"permission denied for {kind} {name}")
        if not out:
            notices.append(f'no privileges were granted for "{name}"')
        elif len(out) < len(target.actions):
            notices.append(f'not all privileges were granted for "{name}"')
        return out

    def _put(self, tx: Txn, privileges: dict[int, GrantPrivilege], grantee: int, object_id: int, action: Action,
             grantor: int, with_grant_option: bool, through: int | None) -> None:
        existing = next((p for p in privileges.values() if (p.user_id, p.object_id, p.action, p.granted_by)
                         == (grantee, object_id, action, grantor)), None)
        if existing is not None:
            if with_grant_option and not existing.with_grant_option:
                tx.conn.execute(user_privileges.update().where(user_privileges.c.id == existing.id)
                                .values(with_grant_option=True))
                privileges[existing.id] = replace(existing, with_grant_option=True)
            return
        p = GrantPrivilege(next_ids(tx.conn, "privilege"), grantee, object_id, action, grantor, with_grant_option,
                           through)
        tx.conn.execute(user_privileges.insert().values(
            id=p.id, user_id=p.user_id, object_id=p.object_id, action=p.action.value, granted_by=p.granted_by,
            with_grant_option=p.with_grant_option, dependent_id=p.dependent_id))
        privileges[p.id] = p

    def revoke(self, actor_id: int, grantees: list[int], targets: list[GrantTarget], *,
               grant_option_only: bool = False, cascade: bool = False) -> list[str]:
        """REVOKE [GRANT OPTION FOR] actions ON objects FROM grantees [CASCADE | RESTRICT]."""
        with self._store.transaction() as tx:
            snap = self._catalog.snapshot
            actor = _actor(snap, actor_id)
            _known(snap, grantees)
            _, privileges = self._catalog.stage_acl(tx)
            matched: list[GrantPrivilege] = []
            for target in targets:
                owner = snap.owner_of(target.object_id)
                if not actor.is_super and actor.id != owner and not any(
                        p.user_id == actor.id and p.object_id == target.object_id for p in privileges.values()):
                    kind, name = snap.object_label(target.object_id)
                    raise InsufficientPrivilege(f"permission denied for {kind} {name}")
                grantor = owner if actor.id == owner else actor.id
                matched += [p for p in privileges.values()
                            if p.user_id in grantees and p.object_id == target.object_id and p.action in target.actions
                            and (actor.is_super or p.granted_by == grantor)]
            dependents = _dependents(privileges, {p.id for p in matched})
            if dependents and not cascade:
                raise DependentObjectsStillExist("dependent privileges exist", hint="Use CASCADE to revoke them too.")
            for p in dependents:
                del privileges[p.id]
            ids = [p.id for p in dependents]
            if ids:
                tx.conn.execute(user_privileges.delete().where(user_privileges.c.id.in_(ids)))
            matched_ids = [p.id for p in matched]
            if grant_option_only:
                tx.conn.execute(user_privileges.update().where(user_privileges.c.id.in_(matched_ids))
                                .values(with_grant_option=False))
                for p in matched:
                    privileges[p.id] = replace(p, with_grant_option=False)
            else:
                tx.conn.execute(user_privileges.delete().where(user_privileges.c.id.in_(matched_ids)))
                for p in matched:
                    del privileges[p.id]
        return []

    # ---- ownership ----------------------------------------------------------------------------
    def alter_owner(self, actor_id: int, object_id: int, new_owner: int) -> None:
        """ALTER ... OWNER TO: by a superuser, or by the owner to itself (no roles to be a member
        of, as PostgreSQL requires of the new owner). A table's indexes follow it; the privileges the
        old owner granted become the new owner's grants, as PostgreSQL rewrites the ACL."""
        with self._store.transaction() as tx:
            snap = self._catalog.snapshot
            actor = _actor(snap, actor_id)
            _known(snap, [new_owner])
            owner = snap.owner_of(object_id)
            kind, name = snap.object_label(object_id)
            if not actor.is_super:
                if actor.id != owner:
                    raise InsufficientPrivilege(f"must be owner of {kind} {name}")
                if new_owner != actor.id:
                    raise InsufficientPrivilege(f'must be member of role "{snap.users[new_owner].name}"')
            ids = [object_id, *(r.id for r in snap.dependents(object_id) if r.kind.value == "index")]
            self._catalog.set_owner(tx, ids, new_owner)
            _, privileges = self._catalog.stage_acl(tx)
            moved = [p for p in privileges.values() if p.object_id in ids and p.granted_by == owner]
            for p in moved:
                privileges[p.id] = replace(p, granted_by=new_owner)
            if moved and owner is not None:
                tx.conn.execute(user_privileges.update().where(user_privileges.c.object_id.in_(ids))
                                .where(user_privileges.c.granted_by == owner).values(granted_by=new_owner))
        logger.info("%s %s (id %d) is now owned by user %d", kind, name, object_id, new_owner)

    def _next_id(self, tx: Txn) -> int:
        return next_ids(tx.conn, "user", 1, start=NON_RESERVED_USER_ID)


def _actor(snap: CatalogSnapshot, actor_id: int) -> UserCatalog:
    actor = snap.users.get(actor_id)
    if actor is None:
        raise InsufficientPrivilege("session user is invalid: it was dropped")
    return actor


def _known(snap: CatalogSnapshot, user_ids: Iterable[int]) -> None:
    """Users the caller resolved still exist (one may have been dropped since)."""
    for user_id in user_ids:
        if user_id not in snap.users:
            raise UndefinedObject(f"role with OID {user_id} does not exist")


def _user(snap: CatalogSnapshot, name: str) -> UserCatalog:
    user = snap.user(name)
    if user is None:
        raise UndefinedObject(f'role "{name}" does not exist')
    return user


def _check_name(snap: CatalogSnapshot, name: str) -> None:
    if name.startswith("pg_"):
        raise ReservedName(f'role name "{name}" is reserved',
                           detail='Role names starting with "pg_" are reserved.')
    if snap.user(name) is not None:
        raise DuplicateObject(f'role "{name}" already exists')


def _dependencies(snap: CatalogSnapshot, user_id: int) -> list[str]:
    """What keeps a user from being dropped, as PostgreSQL's DETAIL lines: what it owns, and the
    privileges it granted to others."""
    lines = []
    for db in sorted(snap.databases.values(), key=lambda d: d.id):
        if db.owner == user_id:
            lines.append(f"owner of database {db.name}")
    for schema in sorted(snap.schemas.values(), key=lambda s: s.id):
        if schema.owner == user_id:
            lines.append(f"owner of schema {schema.name}")
    for rel in sorted(snap.relations.values(), key=lambda r: r.id):
        if rel.owner == user_id and rel.kind.value != "index":
            lines.append(f"owner of {rel.kind.display} {rel.name}")
    for fn in sorted(snap.functions.values(), key=lambda f: f.id):
        if fn.owner == user_id:
            lines.append(f"owner of function {fn.signature}")
    granted = sorted({p.object_id for p in snap.privileges.values() if p.granted_by == user_id and p.user_id != user_id})
    for object_id in granted:
        kind, name = snap.object_label(object_id)
        lines.append(f"privileges for {kind} {name}")
    return lines


def _dependents(privileges: dict[int, GrantPrivilege], roots: set[int]) -> list[GrantPrivilege]:
    """Every privilege granted through one of `roots`, transitively."""
    out: list[GrantPrivilege] = []
    frontier = set(roots)
    while frontier:
        found = [p for p in privileges.values() if p.dependent_id in frontier and p.id not in roots]
        found = [p for p in found if all(p.id != q.id for q in out)]
        out += found
        frontier = {p.id for p in found}
    return out


def _user_to_row(u: UserCatalog) -> dict:
    return {"id": u.id, "name": u.name, "is_super": u.is_super, "can_create_db": u.can_create_db,
            "can_create_user": u.can_create_user, "can_login": u.can_login, "password": u.password}


def _user_from_row(r) -> UserCatalog:
    return UserCatalog(r.id, r.name, bool(r.is_super), bool(r.can_create_db), bool(r.can_create_user),
                       bool(r.can_login), r.password)
