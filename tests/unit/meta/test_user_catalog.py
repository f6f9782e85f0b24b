"""Meta's user catalog (`meta.users`) on a real SQLite meta store: users and privileges persist
(a new catalog manager reads them back), and the rules of CREATE/ALTER/DROP USER, GRANT and REVOKE
give PostgreSQL's errors."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from meta.catalog import CatalogManager
from meta.store.store import MetaStore
from meta.users import GrantTarget, UserManager
from risingspark.catalog import JobStatus, RelationCatalog, RelationKind
from risingspark.errors import (
    DependentObjectsStillExist,
    DuplicateObject,
    FeatureNotSupported,
    InsufficientPrivilege,
    ObjectInUse,
    ReservedName,
    UndefinedObject,
)
from risingspark.passwords import md5_secret, scram_secret
from risingspark.storage.desc import StateTableDesc
from risingspark.types import INT4, Field
from risingspark.users import DEFAULT_SUPER_USER_ID, Action, UserCatalog, UserChange

ROOT = DEFAULT_SUPER_USER_ID


@pytest.fixture
def store(tmp_path) -> Iterator[MetaStore]:
    s = MetaStore(f"sqlite:///{tmp_path / 'meta.db'}")
    s.upgrade()
    yield s
    s.close()


def _managers(store: MetaStore) -> tuple[CatalogManager, UserManager]:
    catalog = CatalogManager(store)
    return catalog, UserManager(store, catalog)


def _table(catalog: CatalogManager, store: MetaStore, name: str, owner: int) -> RelationCatalog:
    snap = catalog.snapshot
    db = snap.database("dev")
    assert db is not None
    schema = snap.schema(db.id, "public")
    assert schema is not None
    with store.transaction() as tx:
        rel_id = catalog.allocate_ids(tx, 1)
        fields = (Field("a", INT4),)
        rel = RelationCatalog(rel_id, db.id, schema.id, name, RelationKind.TABLE, fields, (0,), (0,),
                              f"CREATE TABLE {name} (a INT)", JobStatus.CREATED,
                              state_tables=(StateTableDesc(rel_id, fields, (0,), (0,)),), owner=owner)
        catalog.create_relation(tx, rel)
    return rel


def test_default_users_and_persistence(store: MetaStore) -> None:
    catalog, users = _managers(store)
    assert {u.name for u in catalog.snapshot.users.values()} == {"root", "postgres"}
    assert all(u.is_super for u in catalog.snapshot.users.values())
    ann = users.create_user(ROOT, UserCatalog(0, "ann", can_create_db=True, password=md5_secret("ann", "pw")))
    assert ann.id == 11  # RisingWave's first non-reserved user id
    t = _table(catalog, store, "t", ROOT)
    users.grant(ROOT, [ann.id], [GrantTarget(t.id, (Action.SELECT, Action.INSERT))], with_grant_option=True)
    version = catalog.snapshot.version
    users.alter_user(ROOT, "ann", UserChange(can_login=False))
    assert catalog.snapshot.version > version  # frontends see the change with the next version

    again, _ = _managers(store)  # a restarted meta reads the same catalog back
    got = again.snapshot.user("ann")
    assert got == UserCatalog(11, "ann", can_create_db=True, can_login=False, password=md5_secret("ann", "pw"))
    assert {(p.user_id, p.object_id, p.action, p.granted_by, p.with_grant_option)
            for p in again.snapshot.privileges.values()} == \
        {(11, t.id, Action.SELECT, ROOT, True), (11, t.id, Action.INSERT, ROOT, True)}
    assert again.snapshot.relations[t.id].owner == ROOT


def test_create_alter_drop_errors(store: MetaStore) -> None:
    catalog, users = _managers(store)
    ann = users.create_user(ROOT, UserCatalog(0, "ann"))
    with pytest.raises(DuplicateObject, match='role "ann" already exists'):
        users.create_user(ROOT, UserCatalog(0, "ann"))
    with pytest.raises(ReservedName):
        users.create_user(ROOT, UserCatalog(0, "pg_x"))
    with pytest.raises(InsufficientPrivilege, match="permission denied to create role"):
        users.create_user(ann.id, UserCatalog(0, "bob"))
    with pytest.raises(InsufficientPrivilege, match="permission denied to drop role"):
        users.drop_user(ann.id, "nobody")
    with pytest.raises(InsufficientPrivilege, match="must be superuser to create superusers"):
        users.create_user(ann.id, UserCatalog(0, "bob", is_super=True))
    with pytest.raises(UndefinedObject, match='role "nobody" does not exist'):
        users.alter_user(ROOT, "nobody", UserChange(can_login=False))
    with pytest.raises(UndefinedObject, match='role "nobody" does not exist'):
        users.drop_user(ROOT, "nobody")
    assert users.drop_user(ROOT, "nobody", if_exists=True) == ['role "nobody" does not exist, skipping']
    # a user changes its own password, not its other attributes
    users.alter_user(ann.id, "ann", UserChange(set_password=True, password=scram_secret("new")))
    with pytest.raises(InsufficientPrivilege, match="permission denied"):
        users.alter_user(ann.id, "ann", UserChange(can_create_db=True))
    with pytest.raises(InsufficientPrivilege, match="must be superuser to alter superuser roles"):
        users.alter_user(ann.id, "root", UserChange(set_password=True, password=None))
    with pytest.raises(InsufficientPrivilege, match="permission denied to alter role"):
        users.alter_user(ROOT, "root", UserChange(is_super=False))
    # CREATEUSER lets a user manage non-superusers
    users.alter_user(ROOT, "ann", UserChange(can_create_user=True))
    bob = users.create_user(ann.id, UserCatalog(0, "bob", password=md5_secret("bob", "x")))
    assert users.alter_user(ann.id, "bob", UserChange(name="bobby")) == ["MD5 password cleared because of role rename"]
    assert catalog.snapshot.users[bob.id].name == "bobby" and catalog.snapshot.users[bob.id].password is None
    with pytest.raises(DuplicateObject, match='role "ann" already exists'):
        users.alter_user(ROOT, "bobby", UserChange(name="ann"))
    with pytest.raises(FeatureNotSupported, match="session user cannot be renamed"):
        users.alter_user(ann.id, "ann", UserChange(name="anna"))
    users.create_user(ROOT, UserCatalog(0, "admin", is_super=True))
    with pytest.raises(InsufficientPrivilege, match="must be superuser to drop superusers"):
        users.drop_user(ann.id, "admin")
    with pytest.raises(ObjectInUse, match="current user cannot be dropped"):
        users.drop_user(ann.id, "ann")
    with pytest.raises(DependentObjectsStillExist, match="required by the database system"):
        users.drop_user(ROOT, "postgres")
    users.drop_user(ann.id, "bobby")
    assert catalog.snapshot.user("bobby") is None


def test_drop_user_refused_while_it_owns_objects(store: MetaStore) -> None:
    catalog, users = _managers(store)
    ann = users.create_user(ROOT, UserCatalog(0, "ann"))
    bob = users.create_user(ROOT, UserCatalog(0, "bob"))
    t = _table(catalog, store, "t", ann.id)
    with pytest.raises(DependentObjectsStillExist) as info:
        users.drop_user(ROOT, "ann")
    assert info.value.message == 'role "ann" cannot be dropped because some objects depend on it'
    assert info.value.detail == "owner of table t"
    # the privileges granted to a user go with it; those it granted to others keep it
    users.grant(ann.id, [bob.id], [GrantTarget(t.id, (Action.SELECT,))])
    users.alter_owner(ROOT, t.id, ROOT)
    assert catalog.snapshot.relations[t.id].owner == ROOT
    assert [p.granted_by for p in catalog.snapshot.privileges.values()] == [ROOT]  # the owner's grant now
    users.drop_user(ROOT, "bob")
    assert catalog.snapshot.privileges == {}
    users.drop_user(ROOT, "ann")


def test_grant_needs_ownership_or_grant_option(store: MetaStore) -> None:
    catalog, users = _managers(store)
    ann = users.create_user(ROOT, UserCatalog(0, "ann"))
    bob = users.create_user(ROOT, UserCatalog(0, "bob"))
    carol = users.create_user(ROOT, UserCatalog(0, "carol"))
    t = _table(catalog, store, "t", ROOT)
    select = [GrantTarget(t.id, (Action.SELECT,))]
    with pytest.raises(InsufficientPrivilege, match="permission denied for table t"):
        users.grant(ann.id, [bob.id], select)
    users.grant(ROOT, [ann.id], select)
    assert users.grant(ann.id, [bob.id], select) == ['no privileges were granted for "t"']
    users.grant(ROOT, [ann.id], [GrantTarget(t.id, (Action.SELECT, Action.INSERT))], with_grant_option=True)
    assert users.grant(ann.id, [bob.id], [GrantTarget(t.id, (Action.SELECT, Action.DELETE))]) == \
        ['not all privileges were granted for "t"']
    assert users.grant(bob.id, [carol.id], select) == ['no privileges were granted for "t"']  # no grant option
    snap = catalog.snapshot
    by_bob = [p for p in snap.privileges.values() if p.user_id == bob.id]
    assert [(p.action, p.granted_by) for p in by_bob] == [(Action.SELECT, ann.id)]
    assert by_bob[0].dependent_id is not None and snap.privileges[by_bob[0].dependent_id].user_id == ann.id

    # revoking ann's privilege needs CASCADE: bob's depends on it
    with pytest.raises(DependentObjectsStillExist, match="dependent privileges exist"):
        users.revoke(ROOT, [ann.id], select)
    users.revoke(ROOT, [ann.id], select, grant_option_only=True, cascade=True)
    snap = catalog.snapshot
    assert not [p for p in snap.privileges.values() if p.user_id == bob.id]
    assert {(p.action, p.with_grant_option) for p in snap.privileges.values() if p.user_id == ann.id} == \
        {(Action.SELECT, False), (Action.INSERT, True)}
    users.revoke(ROOT, [ann.id], [GrantTarget(t.id, (Action.SELECT, Action.INSERT))])
    assert catalog.snapshot.privileges == {}


def test_privileges_go_with_their_object(store: MetaStore) -> None:
    catalog, users = _managers(store)
    ann = users.create_user(ROOT, UserCatalog(0, "ann"))
    t = _table(catalog, store, "t", ROOT)
    users.grant(ROOT, [ann.id], [GrantTarget(t.id, (Action.SELECT,))])
    assert len(catalog.snapshot.privileges) == 1
    with store.transaction() as tx:
        catalog.drop_relations(tx, [t.id])
    assert catalog.snapshot.privileges == {}
    assert CatalogManager(store).snapshot.privileges == {}


def test_bootstrap_creates_superusers_once(store: MetaStore) -> None:
    catalog, users = _managers(store)
    users.bootstrap([("root", md5_secret("root", "s3cret")), ("ann", md5_secret("ann", "pw"))])
    snap = catalog.snapshot
    assert snap.users[ROOT].password == md5_secret("root", "s3cret")
    ann = snap.user("ann")
    assert ann is not None and ann.is_super and ann.password == md5_secret("ann", "pw")
    users.alter_user(ROOT, "ann", UserChange(set_password=True, password=md5_secret("ann", "changed")))
    users.bootstrap([("ann", md5_secret("ann", "pw"))])  # a restart with the same option
    assert catalog.snapshot.user("ann").password == md5_secret("ann", "changed")  # type: ignore[union-attr]
