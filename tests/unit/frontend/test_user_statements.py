"""The user and privilege statements (`frontend.handlers.users`) through a session, over meta's real
user catalog on a SQLite meta store (no storage, no Spark): what GRANT resolves its objects to, the
errors of bad objects, users and privilege types, how passwords are stored, ALTER ... OWNER TO."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from frontend.pgwire.api import StatementResult
from frontend.session import Frontend, Session
from meta.catalog import CatalogManager, CatalogSnapshot
from meta.store.store import MetaStore
from meta.users import UserManager
from risingspark.catalog import JobStatus, RelationCatalog, RelationKind, SchemaCatalog
from risingspark.errors import (
    InsufficientPrivilege,
    InvalidGrantOperation,
    InvalidSchemaName,
    UndefinedObject,
    UndefinedTable,
    WrongObjectType,
)
from risingspark.storage.desc import HummockVersion, StateTableDesc
from risingspark.types import INT4, Field


class StoreMeta:
    """Meta's catalog and user catalog on a real meta store; the rest of meta is not needed."""

    def __init__(self, path: Path) -> None:
        self.store = MetaStore(f"sqlite:///{path / 'meta.db'}")
        self.store.upgrade()
        self.catalog = CatalogManager(self.store)
        self.users = UserManager(self.store, self.catalog)

    def catalog_snapshot(self) -> CatalogSnapshot:
        return self.catalog.snapshot

    def reads_locally(self) -> bool:
        return True

    def statement_mark(self) -> None:
        return None

    def catalog_moved_since(self, mark: None) -> bool:
        return False  # (the catalog read is the current one)

    def pin_version(self) -> HummockVersion:
        return HummockVersion(1, 0)

    def unpin_version(self, version: HummockVersion) -> None:
        pass

    def ddl_progress(self) -> list:
        return []

    def write_stalls(self) -> list:
        return []

    def row_count(self, table_id: int) -> int:
        return 0

    def add(self, name: str, kind: RelationKind, schema: str = "public") -> RelationCatalog:
        snap = self.catalog.snapshot
        db = snap.database("dev")
        assert db is not None
        with self.store.transaction() as tx:
            sch = snap.schema(db.id, schema)
            if sch is None:
                sch = SchemaCatalog(self.catalog.allocate_ids(tx, 1), db.id, schema)
                self.catalog.create_schema(tx, sch)
            rel_id = self.catalog.allocate_ids(tx, 1)
            fields = (Field("a", INT4),)
            rel = RelationCatalog(rel_id, db.id, sch.id, name, kind, fields, (0,), (0,), f"CREATE {name}",
                                  JobStatus.CREATED, state_tables=(StateTableDesc(rel_id, fields, (0,), (0,)),),
                                  extra={"query": "SELECT 1 AS a"} if kind is RelationKind.VIEW else {})
            self.catalog.create_relation(tx, rel)
        return rel


@pytest.fixture
def meta(tmp_path: Path) -> Iterator[StoreMeta]:
    m = StoreMeta(tmp_path)
    m.add("t", RelationKind.TABLE)
    m.add("t2", RelationKind.TABLE)
    m.add("m", RelationKind.MATERIALIZED_VIEW)
    m.add("v", RelationKind.VIEW)
    m.add("other_t", RelationKind.TABLE, schema="s")
    yield m
    m.store.close()


def session(meta: StoreMeta, user: str = "root", method: str = "scram-sha-256") -> Session:
    frontend = Frontend(meta, _store(), cache_bytes=1 << 20, workers=2, password_method=method)
    s = frontend.new_session()
    asyncio.run(s.startup({"user": user, "database": "dev"}))
    return s


def _store():
    from risingspark.storage.object_store import ObjectStore

    return ObjectStore(tempfile.mkdtemp(prefix="user-statements-"))


def run(s: Session, sql: str) -> StatementResult:
    return asyncio.run(s.execute(sql, [], []))


def grants(meta: StoreMeta, user: str) -> set[tuple[str, str]]:
    snap = meta.catalog.snapshot
    u = snap.user(user)
    assert u is not None
    return {(snap.object_label(p.object_id)[1], p.action.value) for p in snap.privileges.values() if p.user_id == u.id}


def test_grant_resolves_its_objects(meta: StoreMeta) -> None:
    root = session(meta)
    run(root, "CREATE USER ann")
    run(root, "GRANT SELECT ON ALL TABLES IN SCHEMA public TO ann")  # as RisingWave: tables only
    assert grants(meta, "ann") == {("t", "SELECT"), ("t2", "SELECT")}
    run(root, "GRANT ALL ON ALL MATERIALIZED VIEWS IN SCHEMA public TO ann")
    run(root, "GRANT ALL PRIVILEGES ON s.other_t, v TO ann")  # ALL: what each relation has
    run(root, "GRANT ALL ON SCHEMA s TO ann")
    run(root, "GRANT CREATE ON DATABASE dev TO ann")
    assert grants(meta, "ann") == {
        ("t", "SELECT"), ("t2", "SELECT"), ("m", "SELECT"), ("v", "SELECT"), ("s", "USAGE"), ("s", "CREATE"),
        ("other_t", "SELECT"), ("other_t", "INSERT"), ("other_t", "UPDATE"), ("other_t", "DELETE"),
        ("dev", "CREATE")}
    run(root, "REVOKE ALL ON ALL TABLES IN SCHEMA s FROM ann")
    run(root, "REVOKE USAGE ON SCHEMA s FROM ann")
    run(root, "REVOKE SELECT ON TABLE t, t2, m, v FROM ann")  # ON TABLE names any relation, as PostgreSQL
    assert grants(meta, "ann") == {("s", "CREATE"), ("dev", "CREATE")}


@pytest.mark.parametrize("sql, error, message", [
    ("GRANT INSERT ON m TO ann", InvalidGrantOperation, "invalid privilege type INSERT for materialized view"),
    ("GRANT SELECT ON MATERIALIZED VIEW t TO ann", WrongObjectType, '"t" is not a materialized view'),
    ("GRANT SELECT ON nosuch TO ann", UndefinedTable, 'relation "nosuch" does not exist'),
    ("GRANT SELECT ON t TO nobody", UndefinedObject, 'role "nobody" does not exist'),
    ("GRANT SELECT ON ALL TABLES IN SCHEMA nosuch TO ann", InvalidSchemaName, 'schema "nosuch" does not exist'),
    ("REVOKE SELECT ON t FROM nobody", UndefinedObject, 'role "nobody" does not exist'),
    ("ALTER TABLE t OWNER TO nobody", UndefinedObject, 'role "nobody" does not exist'),
    ("ALTER MATERIALIZED VIEW t OWNER TO ann", WrongObjectType, '"t" is not a materialized view'),
])
def test_grant_errors(meta: StoreMeta, sql: str, error: type[Exception], message: str) -> None:
    root = session(meta)
    run(root, "CREATE USER ann")
    with pytest.raises(error) as info:
        run(root, sql)
    assert str(info.value) == message


def test_passwords_are_stored_hashed_as_the_frontend_authenticates(meta: StoreMeta) -> None:
    run(session(meta), "CREATE USER ann PASSWORD 'pw'")
    run(session(meta, method="md5"), "CREATE USER bob PASSWORD 'pw'")
    assert run(session(meta), "ALTER USER bob PASSWORD ''").notices == \
        ["empty string is not a valid password, clearing password"]
    run(session(meta), "CREATE USER cy PASSWORD 'md5827ccb0eea8a706c4c34a16891f84e7b'")  # already hashed
    snap = meta.catalog.snapshot
    ann, bob, cy = snap.user("ann"), snap.user("bob"), snap.user("cy")
    assert ann is not None and ann.password is not None and ann.password.startswith("SCRAM-SHA-256$")
    assert bob is not None and bob.password is None
    assert cy is not None and cy.password == "md5827ccb0eea8a706c4c34a16891f84e7b"


def test_alter_owner(meta: StoreMeta) -> None:
    root = session(meta)
    run(root, "CREATE USER ann")
    run(root, "CREATE USER bob")
    t = next(r for r in meta.catalog.snapshot.relations.values() if r.name == "t")
    run(root, "GRANT SELECT ON t TO bob")
    run(root, "ALTER TABLE t OWNER TO ann")
    snap = meta.catalog.snapshot
    assert snap.relations[t.id].owner == snap.user("ann").id  # type: ignore[union-attr]
    # the grant root made as the owner is now the new owner's
    assert {snap.users[p.granted_by].name for p in snap.privileges.values()} == {"ann"}
    ann = session(meta, "ann")
    with pytest.raises(InsufficientPrivilege, match='must be member of role "bob"'):
        run(ann, "ALTER TABLE t OWNER TO bob")
    run(ann, "REVOKE SELECT ON t FROM bob")  # the owner revokes what was granted as owner
    assert grants(meta, "bob") == set()
    with pytest.raises(InsufficientPrivilege, match="must be owner of schema s"):
        run(ann, "ALTER SCHEMA s OWNER TO ann")
    run(root, "ALTER SCHEMA s OWNER TO ann")
    assert meta.catalog.snapshot.schema(meta.catalog.snapshot.database("dev").id, "s").owner == \
        meta.catalog.snapshot.user("ann").id  # type: ignore[union-attr]


def test_dbt_grants_and_reads_them_back(meta: StoreMeta) -> None:
    """dbt-risingwave's ``grants`` config: a GRANT with a three-part name, then its query of
    ``rw_relations.acl`` (a ``varchar[]``, as RisingWave's)."""
    root = session(meta)
    run(root, "CREATE USER reporter")
    run(root, 'grant select on view\n    "dev"."public"."v" to reporter;\n')
    result = run(root, """with relation_acl as (
        select unnest(rw_relations.acl) as acl_entry
        from rw_catalog.rw_relations
        join rw_catalog.rw_schemas on rw_relations.schema_id = rw_schemas.id
        where rw_schemas.name = 'public' and rw_relations.name = 'v')
      select split_part(acl_entry, '=', 1) as grantee,
        case when split_part(split_part(acl_entry, '=', 2), '/', 1) = 'dwar' then 'all'
             when split_part(split_part(acl_entry, '=', 2), '/', 1) like '%r%' then 'select' end as privilege_type
      from relation_acl
      where split_part(acl_entry, '=', 1) not in ('root', 'rwadmin', 'postgres')
        and split_part(split_part(acl_entry, '=', 2), '/', 1) like '%r%'""")
    assert result.rows is not None and result.rows.to_pylist() == [{"grantee": "reporter", "privilege_type": "select"}]
    acls = run(root, "SELECT name, acl FROM rw_relations WHERE name IN ('t', 'v') ORDER BY name").rows
    assert acls is not None and acls.to_pylist() == [{"name": "t", "acl": ["root=arwd/root"]},
                                                     {"name": "v", "acl": ["root=r/root", "reporter=r/root"]}]
