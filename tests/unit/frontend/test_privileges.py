"""The privilege checker (`frontend.privileges`) over an in-memory catalog, and the session paths that
call it: a batch query, a key query (its plan is cached, so the check happens when it is compiled),
EXPLAIN, DML and DDL fail with 42501 and PostgreSQL's message before anything runs."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pyarrow as pa
import pytest
from catalog_session import DB, EVENTS, HIDDEN, ORDERS, OTHER, PUBLIC, SUMMARY, FakeMeta, relation

from frontend.binder import CatalogReader
from frontend.pgwire.api import StatementResult
from frontend.privileges import PrivilegeChecker, relations_read
from frontend.session import Frontend, Session
from meta.catalog import CatalogSnapshot
from risingspark.catalog import DatabaseCatalog, RelationKind, SchemaCatalog
from risingspark.errors import InsufficientPrivilege
from risingspark.storage.object_store import ObjectStore
from risingspark.types import INT4, INT8, Field
from risingspark.users import Action, GrantPrivilege, UserCatalog, default_users

ANN, BOB = 11, 12
# a view owned by bob over orders, and one owned by root
BOBS_VIEW = relation(1020, "bobs_view", RelationKind.VIEW, (Field("customer", INT4),), (),
                     extra={"query": 'SELECT "customer" FROM "public"."orders"'}, owner=BOB)
ROOTS_VIEW = relation(1021, "roots_view", RelationKind.VIEW, (Field("n", INT8),), (),
                      extra={"query": 'SELECT "n" FROM "public"."summary"'})
BOBS_TABLE = relation(1022, "bobs", RelationKind.TABLE, (Field("x", INT4),), (0,), owner=BOB)


def snapshot(*grants: tuple[int, int, Action]) -> CatalogSnapshot:
    users = {**default_users(), ANN: UserCatalog(ANN, "ann"), BOB: UserCatalog(BOB, "bob")}
    privileges = {i: GrantPrivilege(i, user, obj, action, 1) for i, (user, obj, action) in enumerate(grants, 1)}
    rels = [ORDERS, EVENTS, SUMMARY, HIDDEN, BOBS_VIEW, ROOTS_VIEW, BOBS_TABLE]
    return CatalogSnapshot(3, {DB: DatabaseCatalog(DB, "dev")},
                           {PUBLIC: SchemaCatalog(PUBLIC, DB, "public"), OTHER: SchemaCatalog(OTHER, DB, "other", BOB)},
                           {r.id: r for r in rels}, users, privileges)


def _query(sql: str):
    import sqlglot

    return sqlglot.parse_one(sql, read="postgres")


def reader(snap: CatalogSnapshot) -> CatalogReader:
    return CatalogReader(snap, "dev", ["public"])


def check(snap: CatalogSnapshot, user: int, sql: str) -> None:
    PrivilegeChecker(snap, user).check_query(_query(sql), reader(snap))


def test_select_needs_a_grant_owners_and_superusers_need_none() -> None:
    snap = snapshot()
    with pytest.raises(InsufficientPrivilege, match="^permission denied for table orders$"):
        check(snap, ANN, "SELECT * FROM orders")
    with pytest.raises(InsufficientPrivilege, match="^permission denied for materialized view summary$"):
        check(snap, ANN, "SELECT count(*) FROM (SELECT * FROM summary) s")
    check(snap, 1, "SELECT * FROM orders JOIN summary USING (customer)")  # root, a superuser
    check(snap, BOB, "SELECT * FROM bobs")  # the owner
    check(snap, ANN, "SELECT * FROM pg_catalog.pg_class, rw_tables")  # system catalogs
    check(snap, ANN, "WITH orders AS (SELECT 1 AS a) SELECT * FROM orders")  # a CTE, not the table
    check(snapshot((ANN, ORDERS.id, Action.SELECT)), ANN, "SELECT * FROM orders")
    # a grant of another privilege, or on another relation of the name, does not do
    with pytest.raises(InsufficientPrivilege):
        check(snapshot((ANN, ORDERS.id, Action.INSERT)), ANN, "SELECT * FROM orders")
    with pytest.raises(InsufficientPrivilege, match="permission denied for table orders"):
        check(snapshot((ANN, HIDDEN.id, Action.SELECT)), ANN, "SELECT * FROM orders")
    # a subquery in WHERE is read as much as FROM
    with pytest.raises(InsufficientPrivilege, match="permission denied for table events"):
        check(snapshot((ANN, ORDERS.id, Action.SELECT)), ANN,
              "SELECT * FROM orders WHERE note IN (SELECT v FROM events)")


def test_a_view_reads_its_relations_as_its_owner() -> None:
    # ann may read root's view over summary without a grant on summary
    check(snapshot((ANN, ROOTS_VIEW.id, Action.SELECT)), ANN, "SELECT * FROM roots_view")
    with pytest.raises(InsufficientPrivilege, match="permission denied for view roots_view"):
        check(snapshot(), ANN, "SELECT * FROM roots_view")
    # bob's view reads orders, which bob may not read: reading it fails for anyone but a superuser
    with pytest.raises(InsufficientPrivilege, match="permission denied for table orders"):
        check(snapshot((ANN, BOBS_VIEW.id, Action.SELECT)), ANN, "SELECT * FROM bobs_view")
    check(snapshot((ANN, BOBS_VIEW.id, Action.SELECT), (BOB, ORDERS.id, Action.SELECT)), ANN,
          "SELECT * FROM bobs_view")


def test_ownership_checks() -> None:
    snap = snapshot((ANN, ORDERS.id, Action.SELECT))
    ann, bob = PrivilegeChecker(snap, ANN), PrivilegeChecker(snap, BOB)
    with pytest.raises(InsufficientPrivilege, match="^must be owner of table orders$"):
        ann.check_owner(ORDERS.id)
    with pytest.raises(InsufficientPrivilege, match="^must be owner of materialized view summary$"):
        ann.check_drop(SUMMARY)
    bob.check_drop(HIDDEN)  # bob owns schema "other"
    with pytest.raises(InsufficientPrivilege, match="^permission denied for schema public$"):
        ann.check_create_in(PUBLIC)
    bob.check_create_in(OTHER)
    with pytest.raises(InsufficientPrivilege, match="^permission denied to create database$"):
        ann.check_create_database()
    PrivilegeChecker(replace(snap, users={**snap.users, ANN: UserCatalog(ANN, "ann", can_create_db=True)}),
                     ANN).check_create_database()
    gone = PrivilegeChecker(snap, 99)  # a user dropped while connected may do nothing
    assert not gone.holds(ORDERS.id, Action.SELECT) and not gone.is_super


def test_relations_read_skips_the_dml_target() -> None:
    snap = snapshot()
    ast = _query("UPDATE orders SET note = 'x' WHERE customer IN (SELECT customer FROM summary)")
    assert [r.name for r in relations_read(ast, reader(snap), skip=ast.this)] == ["summary"]


class _Meta(FakeMeta):
    def __init__(self, snap: CatalogSnapshot) -> None:
        super().__init__([])
        self.snapshot = snap


def _session(snap: CatalogSnapshot, user: str) -> Session:
    import tempfile

    frontend = Frontend(_Meta(snap), ObjectStore(tempfile.mkdtemp(prefix="privileges-test-")), cache_bytes=1 << 20,
                        workers=2)
    session = frontend.new_session()
    asyncio.run(session.startup({"user": user, "database": "dev"}))
    return session


def run(session: Session, sql: str) -> StatementResult:
    return asyncio.run(session.execute(sql, [], []))


@pytest.mark.parametrize("sql, message", [
    ("SELECT * FROM orders", "permission denied for table orders"),
    ("SELECT * FROM orders WHERE id = 3", "permission denied for table orders"),  # a key query
    ("EXPLAIN SELECT * FROM summary", "permission denied for materialized view summary"),
    ("INSERT INTO orders (id) VALUES (1)", "permission denied for table orders"),
    ("INSERT INTO bobs SELECT customer FROM orders", "permission denied for table bobs"),
    ("DELETE FROM events", "permission denied for table events"),
    ("UPDATE events SET v = 'x'", "permission denied for table events"),
    ("CREATE TABLE t (a INT)", "permission denied for schema public"),
    ("CREATE MATERIALIZED VIEW m AS SELECT * FROM orders", "permission denied for schema public"),
    ("DROP TABLE orders", "must be owner of table orders"),
    ("ALTER TABLE orders RENAME TO o", "must be owner of table orders"),
    ("COMMENT ON TABLE orders IS 'x'", "must be owner of table orders"),
    ("CREATE SCHEMA s", "permission denied for database dev"),
    ("CREATE DATABASE d", "permission denied to create database"),
    ("ALTER SYSTEM SET barrier_interval_ms = 100", 'permission denied to set parameter "barrier_interval_ms"'),
])
def test_statements_of_a_user_without_privileges(sql: str, message: str) -> None:
    session = _session(snapshot(), "ann")
    with pytest.raises(InsufficientPrivilege) as info:
        run(session, sql)
    assert info.value.message == message and info.value.sqlstate == "42501"


def test_a_cached_key_plan_is_checked_per_user() -> None:
    snap = snapshot((ANN, ORDERS.id, Action.SELECT))
    frontend_meta = _Meta(snap)
    import tempfile

    frontend = Frontend(frontend_meta, ObjectStore(tempfile.mkdtemp(prefix="privileges-test-")), cache_bytes=1 << 20,
                        workers=2)
    ann, bob = frontend.new_session(), frontend.new_session()
    asyncio.run(ann.startup({"user": "ann", "database": "dev"}))
    asyncio.run(bob.startup({"user": "bob", "database": "dev"}))
    assert run(ann, "SELECT * FROM orders WHERE id = 3").tag == "SELECT 0"
    assert run(ann, "SELECT * FROM orders WHERE id = 3").tag == "SELECT 0"  # from the plan cache
    with pytest.raises(InsufficientPrivilege, match="permission denied for table orders"):
        run(bob, "SELECT * FROM orders WHERE id = 3")
    # a revoke is a new catalog version: the cached plan is compiled (and checked) again
    frontend_meta.snapshot = replace(snapshot(), version=4)
    with pytest.raises(InsufficientPrivilege, match="permission denied for table orders"):
        run(ann, "SELECT * FROM orders WHERE id = 3")


def test_unknown_and_nologin_users_cannot_start_a_session() -> None:
    from risingspark.errors import InvalidAuthorizationSpecification

    snap = snapshot()
    snap = replace(snap, users={**snap.users, 13: UserCatalog(13, "locked", can_login=False)})
    with pytest.raises(InvalidAuthorizationSpecification, match='role "nobody" does not exist'):
        _session(snap, "nobody")
    with pytest.raises(InvalidAuthorizationSpecification, match='role "locked" is not permitted to log in'):
        _session(snap, "locked")


def test_catalogs_show_users_owners_and_grants() -> None:
    snap = snapshot((ANN, ORDERS.id, Action.SELECT), (ANN, ORDERS.id, Action.INSERT))
    snap = replace(snap, users={**snap.users, ANN: UserCatalog(ANN, "ann", can_create_db=True, password="md5" + "0" * 32),
                                13: UserCatalog(13, "locked", can_login=False)})
    root, ann = _session(snap, "root"), _session(snap, "ann")

    def rows(session: Session, sql: str) -> list[tuple]:
        table = run(session, sql).rows
        assert isinstance(table, pa.Table)
        return [tuple(r.values()) for r in table.to_pylist()]

    assert rows(root, "SELECT rolname, rolsuper, rolcreatedb, rolcanlogin, oid FROM pg_roles ORDER BY oid") == [
        ("root", True, True, True, 1), ("postgres", True, True, True, 2), ("ann", False, True, True, ANN),
        ("bob", False, False, True, BOB), ("locked", False, False, False, 13)]
    assert rows(root, "SELECT usename FROM pg_user ORDER BY usesysid") == [("root",), ("postgres",), ("ann",),
                                                                            ("bob",)]
    assert rows(root, "SELECT rolpassword FROM pg_authid WHERE rolname = 'ann'") == [("md5" + "0" * 32,)]
    assert rows(ann, "SELECT rolpassword FROM pg_authid WHERE rolname = 'ann'") == [(None,)]  # superusers only
    assert rows(root, "SELECT name, is_super, create_db, can_login FROM rw_users WHERE id = 11") == \
        [("ann", False, True, True)]
    assert rows(ann, "SELECT current_user, session_user") == [("ann", "ann")]
    assert rows(root, "SELECT relname, pg_get_userbyid(relowner), relacl FROM pg_class "
                      "WHERE oid IN (1010, 1022) ORDER BY 1") == \
        [("bobs", "bob", None), ("orders", "root", ["root=arwd/root", "ann=ar/root"])]
    assert rows(root, "SELECT tableowner FROM pg_tables WHERE tablename = 'bobs'") == [("bob",)]
    assert rows(root, "SELECT nspname, pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = 'other'") == \
        [("other", "bob")]
    assert rows(ann, "SELECT grantor, grantee, table_name, privilege_type, is_grantable "
                     "FROM information_schema.table_privileges ORDER BY privilege_type") == \
        [("root", "ann", "orders", "INSERT", "NO"), ("root", "ann", "orders", "SELECT", "NO")]


def test_has_privilege_functions_answer_from_the_user_catalog() -> None:
    from risingspark.errors import InvalidParameterValue

    snap = snapshot((ANN, ORDERS.id, Action.SELECT), (ANN, SUMMARY.id, Action.SELECT))
    ann = _session(snap, "ann")

    def one(sql: str) -> object:
        table = run(ann, sql).rows
        assert isinstance(table, pa.Table)
        return table.column(0).to_pylist()

    assert one("SELECT has_table_privilege('orders', 'SELECT')") == [True]
    assert one("SELECT has_table_privilege('orders', 'insert, update')") == [False]
    assert one("SELECT has_table_privilege('orders', 'SELECT WITH GRANT OPTION')") == [False]
    assert one("SELECT has_table_privilege('bob', 'public.orders', 'SELECT')") == [False]
    assert one("SELECT has_table_privilege('bob', 'bobs', 'TRUNCATE')") == [True]  # the owner
    assert one("SELECT has_table_privilege('pg_class', 'SELECT')") == [True]
    assert one("SELECT relname FROM pg_class WHERE relnamespace = 1001 AND has_table_privilege(oid, 'SELECT') "
               "ORDER BY 1") == ["orders", "summary"]
    assert one("SELECT has_schema_privilege('public', 'CREATE')") == [False]
    assert one("SELECT has_schema_privilege('pg_catalog', 'USAGE')") == [True]
    assert one("SELECT has_schema_privilege('bob', 'other', 'CREATE')") == [True]
    assert one("SELECT has_database_privilege('dev', 'CONNECT')") == [True]
    with pytest.raises(InvalidParameterValue, match='unrecognized privilege type: "BOGUS"'):
        run(ann, "SELECT has_table_privilege('orders', 'BOGUS')")
