"""Privilege checks of a session's statements, as PostgreSQL makes them (RisingWave follows it).

A `PrivilegeChecker` answers for one user at one catalog snapshot. Superusers pass every check; an
object's owner holds every privilege on it; anyone else needs a grant (`risingspark.users`). What a
statement needs:

- SELECT on every table, materialized view and view a query reads (a batch query, the query of a
  CREATE MATERIALIZED VIEW or CREATE TABLE AS, the subqueries of DML). A view's own query is checked
  as its owner, so a grant on a view is enough to read it. System catalogs are readable by everyone.
- INSERT (also COPY), UPDATE or DELETE on the table a DML statement writes.
- CREATE on the schema a relation is created in, CREATE on the database for CREATE SCHEMA, the
  CREATEDB attribute for CREATE DATABASE.
- Ownership for DROP (or owning its schema), ALTER, COMMENT ON, CREATE INDEX and changing a job's
  rate limit or parallelism: the right to alter an object is not grantable.

A failed check is SQLSTATE 42501 with PostgreSQL's wording: ``permission denied for table t``,
``must be owner of materialized view m``.

>>> from meta.catalog import CatalogSnapshot
>>> PrivilegeChecker(CatalogSnapshot(1), 1).is_super
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import sqlglot
from sqlglot import exp

from frontend.binder import CatalogReader, ident
from risingspark.catalog import DatabaseCatalog, RelationCatalog, RelationKind, SchemaCatalog
from risingspark.errors import InsufficientPrivilege, RisingSparkError
from risingspark.users import Action, UserCatalog, has_privilege

if TYPE_CHECKING:
    from meta.catalog import CatalogSnapshot

VIEW_QUERY = "query"  # `RelationCatalog.extra` key of a view's schema-qualified query (`frontend.handlers.views`)
_MAX_VIEW_DEPTH = 64


class PrivilegeChecker:
    """What one user may do at one catalog snapshot."""

    def __init__(self, snapshot: CatalogSnapshot, user_id: int) -> None:
        self.snapshot = snapshot
        self.user_id = user_id
        self.user: UserCatalog | None = snapshot.users.get(user_id)  # None: dropped while connected

    @property
    def is_super(self) -> bool:
        return self.user is not None and self.user.is_super

    def holds(self, object_id: int, action: Action) -> bool:
        """Whether the user may `action` on an object: as a superuser, its owner or by a grant."""
        if self.user is None:
            return False
        if self.user.is_super or self.snapshot.owner_of(object_id) == self.user_id:
            return True
        return has_privilege(self.snapshot.privileges.values(), self.user_id, object_id, action)

    def owns(self, object_id: int) -> bool:
        return self.is_super or (self.user is not None and self.snapshot.owner_of(object_id) == self.user_id)

    # ---- checks ---------------------------------------------------------------------------------
    def check_relation(self, rel: RelationCatalog, action: Action) -> None:
        if not self.holds(rel.id, action):
            raise InsufficientPrivilege(f"permission denied for {rel.kind.display} {rel.name}")

    def check_schema(self, schema: SchemaCatalog, action: Action) -> None:
        if not self.holds(schema.id, action):
            raise InsufficientPrivilege(f"permission denied for schema {schema.name}")

    def check_database(self, database: DatabaseCatalog, action: Action) -> None:
        if not self.holds(database.id, action):
            raise InsufficientPrivilege(f"permission denied for database {database.name}")

    def check_owner(self, object_id: int) -> None:
        """Only the owner (or a superuser) alters an object."""
        if not self.owns(object_id):
            kind, name = self.snapshot.object_label(object_id)
            raise InsufficientPrivilege(f"must be owner of {kind} {name}")

    def check_drop(self, rel: RelationCatalog) -> None:
        """The owner of a relation or of its schema (or a superuser) drops it."""
        if not self.owns(rel.schema_id):
            self.check_owner(rel.id)

    def check_create_in(self, schema_id: int) -> None:
        """CREATE on the schema a relation is created in."""
        self.check_schema(self.snapshot.schemas[schema_id], Action.CREATE)

    def check_create_database(self) -> None:
        if not self.is_super and not (self.user is not None and self.user.can_create_db):
            raise InsufficientPrivilege("permission denied to create database")

    def check_superuser(self, message: str) -> None:
        if not self.is_super:
            raise InsufficientPrivilege(message)

    def check_query(self, query: exp.Expression, reader: CatalogReader, *, skip: exp.Expression | None = None,
                    _depth: int = 0) -> None:
        """SELECT on every user relation `query` reads (except the node `skip`: a DML target).
        Names resolve as the query's execution resolves them; a name that does not resolve is left
        for the execution to report."""
        if self.is_super:
            return
        for rel in relations_read(query, reader, skip):
            self.check_relation(rel, Action.SELECT)
            if rel.kind is RelationKind.VIEW and _depth < _MAX_VIEW_DEPTH:
                view_query = cast(exp.Expression, sqlglot.parse_one(rel.extra[VIEW_QUERY], read="postgres"))
                PrivilegeChecker(self.snapshot, rel.owner).check_query(view_query, reader, _depth=_depth + 1)


def relations_read(query: exp.Expression, reader: CatalogReader,
                   skip: exp.Expression | None = None) -> list[RelationCatalog]:
    """The user relations a query names, in order, each once (CTE names and table functions are
    not relations; system tables are left out)."""
    ctes = {ident(c.args["alias"].this) for c in query.find_all(exp.CTE) if c.args.get("alias")}
    out: dict[int, RelationCatalog] = {}
    for table in query.find_all(exp.Table):
        if table is skip or not isinstance(table.this, exp.Identifier):
            continue
        if not table.args.get("db") and ident(table.this) in ctes:
            continue
        try:
            ref = reader.resolve(table)
        except RisingSparkError:  # the statement itself reports a name that does not resolve
            continue
        if ref.relation is not None:
            out.setdefault(ref.relation.id, ref.relation)
    return list(out.values())
