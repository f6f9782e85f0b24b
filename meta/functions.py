"""The function catalog: CREATE FUNCTION and DROP FUNCTION, as meta keeps them (RisingWave's
``CatalogController::create_function`` / ``drop_function``).

A function is a row of the ``functions`` table and part of the `CatalogSnapshot` frontends read (so
a change reaches every frontend with the next catalog version). Each change is decided against the
snapshot and written in one meta-store transaction. The rules:

- One function of a name per schema: a second ``CREATE FUNCTION`` of the name fails with 42723
  whatever its argument types (PostgreSQL would allow an overload of other argument types; RisingWave
  too — not here yet).
- A function a materialized view calls (its plan carries the definition,
  `risingspark.stream_plan.StreamMaterialize.functions`) cannot be dropped: 2BP01 naming the view,
  PostgreSQL's ``cannot drop function ... because other objects depend on it`` (RisingWave refuses
  as well). There is no DROP FUNCTION ... CASCADE yet.
- Only its owner or a superuser drops a function (42501 otherwise), as PostgreSQL.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from meta.catalog import CatalogManager, CatalogSnapshot
from meta.store.schema import functions
from meta.store.store import MetaStore
from risingspark.catalog import RelationCatalog
from risingspark.errors import (
    DependentObjectsStillExist,
    DuplicateFunction,
    InsufficientPrivilege,
    UndefinedFunction,
)
from risingspark.functions import FunctionCatalog
from risingspark.types import DataType

logger = logging.getLogger(__name__)


def load_functions(conn: Connection) -> dict[int, FunctionCatalog]:
    """Every function in the meta store."""
    return {r.id: _from_row(r) for r in conn.execute(sa.select(functions))}


def function_ids_of(rel: RelationCatalog) -> set[int]:
    """The functions a relation's plan calls."""
    plan = rel.plan or {}
    return {f["id"] for f in plan.get("functions", ())}


def dependents_of(snap: CatalogSnapshot, function_id: int) -> list[RelationCatalog]:
    """The relations that call a function, by id."""
    return sorted((r for r in snap.relations.values() if function_id in function_ids_of(r)), key=lambda r: r.id)


class FunctionManager:
    """Meta's function operations (see the module docstring)."""

    def __init__(self, store: MetaStore, catalog: CatalogManager) -> None:
        self._store = store
        self._catalog = catalog

    def create_function(self, fn: FunctionCatalog) -> FunctionCatalog:
        """CREATE FUNCTION; `fn.id` is ignored (a new one is allocated)."""
        with self._store.transaction() as tx:
            if self._catalog.snapshot.function(fn.schema_id, fn.name) is not None:
                raise DuplicateFunction(f'function "{fn.name}" already exists')
            fn = replace(fn, id=self._catalog.allocate_ids(tx, 1))
            tx.conn.execute(functions.insert().values(**_to_row(fn)))
            self._catalog.stage_functions(tx)[fn.id] = fn
        logger.info("created function %s (id %d, language %s)", fn.signature, fn.id, fn.language)
        return fn

    def drop_function(self, actor_id: int, function_id: int) -> None:
        """DROP FUNCTION of a function no relation calls, by its owner or a superuser."""
        with self._store.transaction() as tx:
            snap = self._catalog.snapshot
            fn = snap.functions.get(function_id)
            if fn is None:
                raise UndefinedFunction(f"function with id {function_id} does not exist")
            actor = snap.users.get(actor_id)
            if actor is None or not (actor.is_super or actor.id == fn.owner):
                raise InsufficientPrivilege(f"must be owner of function {fn.name}")
            users = dependents_of(snap, function_id)
            if users:
                raise DependentObjectsStillExist(
                    f"cannot drop function {fn.signature} because other objects depend on it",
                    detail="\n".join(f"{r.kind.display} {r.name} depends on function {fn.signature}" for r in users),
                    hint="Drop the dependent objects first.")
            tx.conn.execute(functions.delete().where(functions.c.id == function_id))
            del self._catalog.stage_functions(tx)[function_id]
        logger.info("dropped function %s (id %d)", fn.signature, function_id)


def _to_row(fn: FunctionCatalog) -> dict:
    return {"id": fn.id, "database_id": fn.database_id, "schema_id": fn.schema_id, "name": fn.name,
            "arg_names": json.dumps(list(fn.arg_names)), "arg_types": json.dumps([t.to_json() for t in fn.arg_types]),
            "return_type": fn.return_type.to_json(), "language": fn.language, "body": fn.body, "owner": fn.owner}


def _from_row(r) -> FunctionCatalog:
    return FunctionCatalog(r.id, r.database_id, r.schema_id, r.name, tuple(json.loads(r.arg_names)),
                           tuple(DataType.from_json(t) for t in json.loads(r.arg_types)),
                           DataType.from_json(r.return_type), r.language, r.body, r.owner)
