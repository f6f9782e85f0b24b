"""Users and the privileges granted to them, shared by meta (which owns and persists them) and the
frontends (which authenticate against them and check privileges), as RisingWave's ``UserInfo`` and
``user_privilege`` rows.

A privilege is one row ``(user, object, action, granted_by, with_grant_option)``. Databases, schemas
and relations take their ids from one counter, so an object id alone names the object. A privilege
granted by a user who holds it only through a grant option depends on that user's own row
(`dependent_id`): revoking the grantor's privilege with CASCADE takes the dependent ones along, and
RESTRICT refuses while there are any (PostgreSQL's and RisingWave's rule). Owners hold every
privilege on their objects without rows, and superusers bypass every check.

>>> Action.SELECT.acl_char, [a.value for a in available_actions(ObjectType.SCHEMA)]
('r', ['USAGE', 'CREATE'])
>>> acl_text([GrantPrivilege(1, 11, 1005, Action.SELECT, 1), GrantPrivilege(2, 11, 1005, Action.INSERT, 1, True)],
...          {1: "root", 11: "ann"})
['ann=a*r/root']
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

DEFAULT_SUPER_USER = "root"
DEFAULT_SUPER_USER_ID = 1
# As RisingWave: "postgres" is a second default superuser, for tools that assume one.
DEFAULT_SUPER_USER_FOR_PG = "postgres"
DEFAULT_SUPER_USER_FOR_PG_ID = 2
RESERVED_USERS = {DEFAULT_SUPER_USER_ID: DEFAULT_SUPER_USER, DEFAULT_SUPER_USER_FOR_PG_ID: DEFAULT_SUPER_USER_FOR_PG}
NON_RESERVED_USER_ID = 11  # the first id of a created user (RisingWave's)


class Action(enum.StrEnum):
    """A grantable privilege, with its letter in PostgreSQL's ``aclitem`` text."""

    SELECT = "SELECT"
    INSERT = "INSERT"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    USAGE = "USAGE"
    CREATE = "CREATE"
    CONNECT = "CONNECT"

    @property
    def acl_char(self) -> str:
        return _ACL_CHARS[self]


_ACL_CHARS = {Action.INSERT: "a", Action.SELECT: "r", Action.UPDATE: "w", Action.DELETE: "d", Action.USAGE: "U",
              Action.CREATE: "C", Action.CONNECT: "c"}
_ACL_ORDER = list(_ACL_CHARS)  # PostgreSQL prints the letters in this order


class ObjectType(enum.StrEnum):
    """What a privilege can be granted on, as the GRANT statement names it."""

    DATABASE = "database"
    SCHEMA = "schema"
    TABLE = "table"
    MATERIALIZED_VIEW = "materialized view"
    VIEW = "view"


# The privileges each kind of object has (RisingWave's ``ALL_AVAILABLE_*_MODES``): ALL grants these.
_AVAILABLE = {
    ObjectType.DATABASE: (Action.CREATE, Action.CONNECT),
    ObjectType.SCHEMA: (Action.USAGE, Action.CREATE),
    ObjectType.TABLE: (Action.INSERT, Action.SELECT, Action.UPDATE, Action.DELETE),
    ObjectType.MATERIALIZED_VIEW: (Action.SELECT,),
    ObjectType.VIEW: (Action.SELECT,),
}


def available_actions(kind: ObjectType) -> tuple[Action, ...]:
    return _AVAILABLE[kind]


@dataclass(frozen=True)
class UserCatalog:
    """A user (a role that may log in): its attributes and its password as PostgreSQL stores it
    (``rolpassword``: ``md5`` and a hex digest, or a ``SCRAM-SHA-256$`` secret; None: no password)."""

    id: int
    name: str
    is_super: bool = False
    can_create_db: bool = False
    can_create_user: bool = False
    can_login: bool = True
    password: str | None = None


@dataclass(frozen=True)
class GrantPrivilege:
    """User `user_id` may `action` on object `object_id`, granted by `granted_by`; with
    `with_grant_option` it may grant it on. `dependent_id`: the grantor's own privilege this one was
    granted through (None when the grantor owns the object or is a superuser)."""

    id: int
    user_id: int
    object_id: int
    action: Action
    granted_by: int
    with_grant_option: bool = False
    dependent_id: int | None = None


@dataclass(frozen=True)
class UserChange:
    """What ALTER USER changes: each attribute that is not None, and the password when
    `set_password` (to `password`, None clearing it); `name` renames."""

    is_super: bool | None = None
    can_create_db: bool | None = None
    can_create_user: bool | None = None
    can_login: bool | None = None
    set_password: bool = False
    password: str | None = None
    name: str | None = None


def default_users() -> dict[int, UserCatalog]:
    """The users every cluster has from its start: ``root`` and ``postgres``, superusers."""
    return {i: UserCatalog(i, name, is_super=True, can_create_db=True, can_create_user=True)
            for i, name in RESERVED_USERS.items()}


def has_privilege(privileges: Iterable[GrantPrivilege], user_id: int, object_id: int, action: Action,
                  *, grant_option: bool = False) -> bool:
    """Whether `user_id` holds `action` on `object_id` through a grant (owners and superusers are
    the caller's concern)."""
    return any(p.user_id == user_id and p.object_id == object_id and p.action is action
               and (p.with_grant_option or not grant_option) for p in privileges)


def acl_text(privileges: Iterable[GrantPrivilege], names: Mapping[int, str]) -> list[str]:
    """PostgreSQL's ``aclitem[]`` text of one object's grants: ``grantee=letters/grantor``, a ``*``
    after each letter held with grant option."""
    grouped: dict[tuple[int, int], dict[Action, bool]] = {}
    for p in privileges:
        held = grouped.setdefault((p.user_id, p.granted_by), {})
        held[p.action] = held.get(p.action, False) or p.with_grant_option
    out = []
    for (grantee, grantor), held in sorted(grouped.items()):
        letters = "".join(a.acl_char + ("*" if held[a] else "") for a in _ACL_ORDER if a in held)
        out.append(f"{names.get(grantee, str(grantee))}={letters}/{names.get(grantor, str(grantor))}")
    return out
