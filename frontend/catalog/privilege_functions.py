"""``has_table_privilege``, ``has_schema_privilege`` and ``has_database_privilege`` over the user
catalog, as PostgreSQL answers them (clients call them to list only what a user may use).

Each call becomes a literal, or a CASE over the object OIDs when the object is a column (``WHERE
has_table_privilege(c.oid, 'SELECT')``). As PostgreSQL: the user is the session's unless named
first; the privilege text may list several (any one held answers true) and end in ``WITH GRANT
OPTION``; owners and superusers hold everything; system catalogs are readable by all. Privileges
RisingSpark does not grant (TRUNCATE, REFERENCES, TRIGGER) are held by owners only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlglot import exp

from frontend.catalog.functions import _case, _lit, literal_value
from frontend.catalog.oids import SYSTEM_NAMESPACES
from risingspark.errors import InvalidParameterValue, UndefinedObject
from risingspark.users import Action, has_privilege

if TYPE_CHECKING:
    from frontend.catalog.rewrite import RewriteContext

_OWNER_ONLY = ("TRUNCATE", "REFERENCES", "TRIGGER")
_KNOWN = {"table": ("SELECT", "INSERT", "UPDATE", "DELETE", *_OWNER_ONLY),
          "schema": ("USAGE", "CREATE"), "database": ("CREATE", "CONNECT", "TEMPORARY", "TEMP")}


def _privileges(text: str, kind: str) -> tuple[list[str], bool]:
    """The privilege names of a ``'SELECT, INSERT WITH GRANT OPTION'`` text, and whether it asks for
    the grant option."""
    out, grant_option = [], False
    for part in text.split(","):
        words = part.upper().split()
        if words[-3:] == ["WITH", "GRANT", "OPTION"]:
            grant_option, words = True, words[:-3]
        name = " ".join(words)
        if name not in _KNOWN[kind]:
            raise InvalidParameterValue(f'unrecognized privilege type: "{part.strip()}"')
        out.append(name)
    return out, grant_option


def _holds(ctx: RewriteContext, user_id: int, object_id: int, names: list[str], grant_option: bool) -> bool:
    snap = ctx.sys.snapshot
    user = snap.users.get(user_id)
    if user is None:
        return False
    if user.is_super or snap.owner_of(object_id) == user_id:
        return True
    for name in names:
        if name in ("CONNECT", "TEMPORARY", "TEMP"):  # every user may connect (PostgreSQL grants it to PUBLIC)
            return True
        if name not in _OWNER_ONLY and has_privilege(snap.privileges.values(), user_id, object_id, Action(name),
                                                     grant_option=grant_option):
            return True
    return False


def _user_id(ctx: RewriteContext, arg: exp.Expression) -> int | None:
    value = literal_value(arg)
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        user = ctx.sys.snapshot.user(value)
        if user is None:
            raise UndefinedObject(f'role "{value}" does not exist')
        return user.id
    return None


def _builder(kind: str, objects: Callable[[RewriteContext], dict[int, bool | None]],
             resolve: Callable[[RewriteContext, str], int | None]):
    """A builder of a ``has_<kind>_privilege`` call; `objects` gives each OID's fixed answer (None:
    check it), `resolve` an object's name to its OID."""

    def build(args: list[exp.Expression], ctx: RewriteContext) -> exp.Expression:
        if ctx is None or len(args) not in (2, 3):
            return exp.true()
        user_id = ctx.sys.user_id if len(args) == 2 else _user_id(ctx, args[0])
        obj, priv = args[-2], literal_value(args[-1])
        if user_id is None or not isinstance(priv, str):
            return exp.true()  # (a user or privilege computed per row: not answered here)
        names, grant_option = _privileges(priv, kind)
        answers = {oid: fixed if fixed is not None else _holds(ctx, user_id, oid, names, grant_option)
                   for oid, fixed in objects(ctx).items()}
        value = literal_value(obj)
        if isinstance(value, str) and not value.isdigit():
            oid = resolve(ctx, value)
            if oid is None:
                raise UndefinedObject(f'{"relation" if kind == "table" else kind} "{value}" does not exist')
            return _lit(answers.get(oid, True))
        if isinstance(value, int | str):
            return _lit(answers.get(int(value), True))
        return _case(obj, answers, exp.true())

    return build


def _tables(ctx: RewriteContext) -> dict[int, bool | None]:
    return {r.id: None for r in ctx.sys.relations()}


def _schemas(ctx: RewriteContext) -> dict[int, bool | None]:
    system: dict[int, bool | None] = {oid: None if ctx.sys.is_superuser else True for oid in SYSTEM_NAMESPACES.values()}
    return {**system, **{s.id: None for s in ctx.sys.schemas()}}


def _databases(ctx: RewriteContext) -> dict[int, bool | None]:
    return {d.id: None for d in ctx.sys.snapshot.databases.values()}


def _database_oid(ctx: RewriteContext, name: str) -> int | None:
    db = ctx.sys.snapshot.database(name)
    return db.id if db is not None else None


PRIVILEGE_BUILDERS = {
    "has_table_privilege": _builder("table", _tables, lambda ctx, name: ctx.relation_oid(name)),
    "has_schema_privilege": _builder("schema", _schemas, lambda ctx, name: ctx.namespace_oid(name)),
    "has_database_privilege": _builder("database", _databases, _database_oid),
}
