"""Meta's function catalog (`meta.functions`) on a real SQLite meta store: functions persist (a new
catalog manager reads them back) and CREATE / DROP FUNCTION give PostgreSQL's errors."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from meta.catalog import CatalogManager
from meta.functions import FunctionManager, dependents_of
from meta.store.store import MetaStore
from meta.users import UserManager
from risingspark.catalog import JobStatus, RelationCatalog, RelationKind
from risingspark.errors import (
    DependentObjectsStillExist,
    DuplicateFunction,
    InsufficientPrivilege,
    UndefinedFunction,
)
from risingspark.functions import FunctionCatalog
from risingspark.storage.desc import StateTableDesc
from risingspark.stream_plan import StreamMaterialize, node_from_json, node_to_json
from risingspark.types import INT4, VARCHAR, Field
from risingspark.users import DEFAULT_SUPER_USER_ID, UserCatalog

ROOT = DEFAULT_SUPER_USER_ID


@pytest.fixture
def store(tmp_path) -> Iterator[MetaStore]:
    s = MetaStore(f"sqlite:///{tmp_path / 'meta.db'}")
    s.upgrade()
    yield s
    s.close()


def _count_char(catalog: CatalogManager, owner: int = ROOT) -> FunctionCatalog:
    snap = catalog.snapshot
    db = snap.database("dev")
    assert db is not None
    schema = snap.schema(db.id, "public")
    assert schema is not None
    return FunctionCatalog(0, db.id, schema.id, "count_char", ("s", "c"), (VARCHAR, VARCHAR), INT4, "javascript",
                           "var n = 0; for (var x of s) { if (x == c) n++; } return n;", owner)


def _mv_calling(catalog: CatalogManager, store: MetaStore, fn: FunctionCatalog) -> RelationCatalog:
    with store.transaction() as tx:
        rel_id = catalog.allocate_ids(tx, 1)
        fields = (Field("c", INT4),)
        desc = StateTableDesc(rel_id, fields, (0,), (0,))
        plan = StreamMaterialize(fields=fields, stream_key=(0,), table=desc, functions=(fn,))
        rel = RelationCatalog(rel_id, fn.database_id, fn.schema_id, "mv", RelationKind.MATERIALIZED_VIEW, fields,
                              (0,), (0,), "CREATE MATERIALIZED VIEW mv AS ...", JobStatus.CREATED,
                              plan=node_to_json(plan), state_tables=(desc,))
        catalog.create_relation(tx, rel)
    return rel


def test_functions_persist(store: MetaStore) -> None:
    catalog = CatalogManager(store)
    fn = FunctionManager(store, catalog).create_function(_count_char(catalog))
    assert fn.id >= 1000 and catalog.snapshot.functions == {fn.id: fn}
    assert catalog.snapshot.function(fn.schema_id, "count_char") == fn
    reloaded = CatalogManager(store).snapshot
    assert reloaded.functions == {fn.id: fn}
    assert reloaded.owner_of(fn.id) == ROOT


def test_duplicate_and_unknown(store: MetaStore) -> None:
    catalog = CatalogManager(store)
    functions = FunctionManager(store, catalog)
    fn = functions.create_function(_count_char(catalog))
    with pytest.raises(DuplicateFunction, match='function "count_char" already exists'):
        functions.create_function(_count_char(catalog))
    functions.drop_function(ROOT, fn.id)
    assert catalog.snapshot.functions == {}
    assert CatalogManager(store).snapshot.functions == {}
    with pytest.raises(UndefinedFunction):
        functions.drop_function(ROOT, fn.id)


def test_a_function_a_view_calls_is_not_dropped(store: MetaStore) -> None:
    catalog = CatalogManager(store)
    functions = FunctionManager(store, catalog)
    fn = functions.create_function(_count_char(catalog))
    mv = _mv_calling(catalog, store, fn)
    assert node_from_json(mv.plan).functions == (fn,)  # the plan carries the definition
    assert dependents_of(catalog.snapshot, fn.id) == [mv]
    with pytest.raises(DependentObjectsStillExist, match="other objects depend on it") as e:
        functions.drop_function(ROOT, fn.id)
    assert e.value.detail == "materialized view mv depends on function count_char(character varying, " \
                             "character varying)"
    with store.transaction() as tx:
        catalog.drop_relations(tx, [mv.id])
    functions.drop_function(ROOT, fn.id)
    assert catalog.snapshot.functions == {}


def test_owner_or_superuser_drops(store: MetaStore) -> None:
    catalog = CatalogManager(store)
    users = UserManager(store, catalog)
    functions = FunctionManager(store, catalog)
    ann = users.create_user(ROOT, UserCatalog(0, "ann"))
    bob = users.create_user(ROOT, UserCatalog(0, "bob"))
    fn = functions.create_function(_count_char(catalog, owner=ann.id))
    with pytest.raises(InsufficientPrivilege, match="must be owner of function count_char"):
        functions.drop_function(bob.id, fn.id)
    with pytest.raises(DependentObjectsStillExist) as e:
        users.drop_user(ROOT, "ann")  # (it owns the function)
    assert "owner of function count_char" in (e.value.detail or "")
    functions.drop_function(ann.id, fn.id)
