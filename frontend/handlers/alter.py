"""``ALTER {TABLE | VIEW | MATERIALIZED VIEW | INDEX} name RENAME TO new_name``.

Streaming jobs refer to their upstreams by id, so a rename changes only the name; views keep their
query with schema-qualified names, so the views that name the relation get their query rewritten in
the same meta transaction (as RisingWave rewrites the definitions of dependents).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from frontend.handlers.indexes import table_of
from frontend.handlers.views import QUERY, rename_in_query
from frontend.parser import RenameStmt
from frontend.pgwire.api import StatementResult
from risingspark.catalog import RelationKind
from risingspark.errors import UndefinedTable, WrongObjectType

if TYPE_CHECKING:
    from frontend.session import Session

_KINDS = {"TABLE": RelationKind.TABLE, "VIEW": RelationKind.VIEW,
          "MATERIALIZED VIEW": RelationKind.MATERIALIZED_VIEW, "INDEX": RelationKind.INDEX}


def rename(session: Session, stmt: RenameStmt) -> StatementResult:
    want = _KINDS[stmt.kind]
    tag = f"ALTER_{stmt.kind.replace(' ', '_')}"
    reader = session.catalog_reader()
    table = table_of(stmt.name)
    ref = reader.lookup(stmt.name[-1], stmt.name[-2] if len(stmt.name) > 1 else None)
    if ref is None or ref.relation is None:
        if stmt.if_exists:
            return StatementResult(tag, notices=[f'relation "{stmt.name[-1]}" does not exist, skipping'])
        reader.resolve(table)  # the error Postgres gives (schema or relation)
        raise UndefinedTable(f'relation "{stmt.name[-1]}" does not exist')
    rel = ref.relation
    # As Postgres, ALTER TABLE renames any relation; the other forms must match its kind.
    if want is not RelationKind.TABLE and rel.kind is not want:
        raise WrongObjectType(f'"{rel.name}" is not a {want.display}')
    session.privileges().check_owner(rel.id)
    snap = session.frontend.meta.catalog_snapshot()
    extras = {}
    for other in snap.relations.values():
        if other.kind is RelationKind.VIEW and rel.id in other.dependencies:
            extras[other.id] = {**other.extra, QUERY: rename_in_query(other.extra[QUERY], ref.schema, rel.name,
                                                                      stmt.new_name)}
    session.frontend.meta.rename_relation(rel.id, stmt.new_name, extras)
    return StatementResult(tag)
