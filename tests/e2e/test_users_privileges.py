"""Users and privileges end to end: a playground started with ``--auth-users root:...`` (passwords
are checked), users created with SQL connecting with psycopg and psql over real sockets, granted and
denied statements (42501, PostgreSQL's messages), revokes, drops, and everything kept across a
restart of the playground."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import errors

from conftest import PlaygroundProcess

pytestmark = pytest.mark.e2e

ROOT_PASSWORD = "r00t pw"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlaygroundProcess]:
    pg = PlaygroundProcess(Path(tmp_path_factory.mktemp("users")) / "data",
                           extra_args=["--auth-users", f"root:{ROOT_PASSWORD}"]).start()
    yield pg
    assert pg.stop() == 0, pg.log_tail()


def dsn(pg: PlaygroundProcess, user: str, password: str) -> str:
    return f"host=127.0.0.1 port={pg.port} user={user} dbname=dev connect_timeout=10 password='{password}'"


def connect(pg: PlaygroundProcess, user: str, password: str) -> psycopg.Connection:
    return psycopg.connect(dsn(pg, user, password), autocommit=True)


def root(pg: PlaygroundProcess) -> psycopg.Connection:
    return connect(pg, "root", ROOT_PASSWORD)


def denied(conn: psycopg.Connection, sql: str, message: str) -> None:
    with pytest.raises(errors.InsufficientPrivilege) as info:
        conn.execute(sql)
    assert info.value.diag.message_primary == message
    assert info.value.sqlstate == "42501"


def test_users_log_in_with_their_passwords(secured: PlaygroundProcess) -> None:
    with root(secured) as c:
        c.execute("create user ann with password 'ann pw'")
        c.execute("create user bob nosuperuser createdb password 'bob pw'")
        c.execute("create user locked nologin password 'x'")
        with pytest.raises(errors.DuplicateObject, match='role "ann" already exists'):
            c.execute("create user ann")
        with pytest.raises(errors.UndefinedObject, match='role "nobody" does not exist'):
            c.execute("drop user nobody")
        with pytest.raises(errors.UndefinedObject, match='role "nobody" does not exist'):
            c.execute("alter user nobody with createdb")
        users = c.execute("select name, is_super, create_db, can_login from rw_users where name in "
                          "('root', 'ann', 'bob', 'locked') order by name").fetchall()
        assert users == [("ann", False, False, True), ("bob", False, True, True), ("locked", False, False, False),
                         ("root", True, True, True)]
        # hashed as the server authenticates (SCRAM-SHA-256), shown to superusers only
        (secret,) = c.execute("select rolpassword from pg_authid where rolname = 'ann'").fetchone()
        assert secret.startswith("SCRAM-SHA-256$4096:") and "ann pw" not in secret
        assert c.execute("select usename from pg_user where usename in ('ann', 'locked')").fetchall() == [("ann",)]
    with connect(secured, "ann", "ann pw") as ann:
        assert ann.execute("select current_user, session_user, user").fetchone() == ("ann", "ann", "ann")
        assert ann.execute("select rolpassword from pg_authid where rolname = 'ann'").fetchone() == (None,)
        ann.execute("alter user ann with password 'new pw'")  # a user may change its own password
        denied(ann, "alter user ann with createdb", "permission denied")
        denied(ann, "create user eve", "permission denied to create role")
    for user, password in (("ann", "ann pw"), ("ann", "wrong"), ("nobody", "x"), ("root", "nope")):
        with pytest.raises(psycopg.OperationalError, match=f'password authentication failed for user "{user}"'):
            connect(secured, user, password)
    with pytest.raises(psycopg.OperationalError, match='role "locked" is not permitted to log in'):
        connect(secured, "locked", "x")
    with connect(secured, "ann", "new pw") as ann:
        assert ann.execute("select current_user").fetchone() == ("ann",)


@pytest.fixture(scope="module")
def shop(secured: PlaygroundProcess) -> None:
    """Root's table t (rows 1, 2, 3), materialized view m over it and table secret."""
    with root(secured) as c:
        c.execute("create table t (id int primary key, v varchar)")
        c.execute("create table secret (x int)")
        c.execute("insert into t values (1, 'a'), (2, 'b'), (3, 'c')")
        c.execute("insert into secret values (42)")
        c.execute("flush")
        c.execute("create materialized view m as select count(*) as n from t")


def test_privileges_are_checked_and_granted(secured: PlaygroundProcess, shop: None) -> None:
    with root(secured) as admin, connect(secured, "ann", "new pw") as ann:
        denied(ann, "select * from t", "permission denied for table t")
        denied(ann, "select * from t where id = 2", "permission denied for table t")  # a point query
        denied(ann, "select * from m", "permission denied for materialized view m")
        denied(ann, "insert into t values (9, 'z')", "permission denied for table t")
        denied(ann, "create table mine (a int)", "permission denied for schema public")
        denied(ann, "drop table t", "must be owner of table t")
        denied(ann, "alter table t rename to t2", "must be owner of table t")
        assert ann.execute("select count(*) from pg_class where relname = 't'").fetchone() == (1,)  # catalogs

        admin.execute("grant select on t to ann")
        admin.execute("grant select on materialized view m to ann")
        assert ann.execute("select id, v from t order by id").fetchall() == [(1, "a"), (2, "b"), (3, "c")]
        assert ann.execute("select v from t where id = 2").fetchall() == [("b",)]
        assert ann.execute("select n from m").fetchall() == [(3,)]
        denied(ann, "insert into t values (9, 'z')", "permission denied for table t")
        denied(ann, "update t set v = 'q'", "permission denied for table t")
        denied(ann, "delete from t", "permission denied for table t")
        with pytest.raises(errors.InsufficientPrivilege, match="permission denied for table t"), \
                ann.cursor().copy("COPY t FROM STDIN") as copy:
            copy.write_row((7, "g"))

        admin.execute("grant insert, delete on table t to ann")
        ann.execute("insert into t values (4, 'd')")
        with ann.cursor().copy("COPY t FROM STDIN") as copy:
            copy.write_row((5, "e"))
        ann.execute("flush")  # (a statement reads the committed state)
        ann.execute("delete from t where id = 5")
        denied(ann, "update t set v = 'q'", "permission denied for table t")
        denied(ann, "insert into t select x, 'x' from secret", "permission denied for table secret")

        # CREATE on the schema: ann's relations are hers
        admin.execute("grant create on schema public to ann")
        ann.execute("create table mine (a int)")
        ann.execute("insert into mine values (1)")
        ann.execute("create materialized view mine_total as select count(*) as n from t")
        denied(ann, "create materialized view peek as select * from secret", "permission denied for table secret")
        ann.execute("flush")
        assert ann.execute("select n from mine_total").fetchone() == (4,)
        owners = admin.execute("select c.relname, r.rolname from pg_class c join pg_roles r on r.oid = c.relowner "
                               "where c.relname in ('t', 'mine', 'mine_total') order by 1").fetchall()
        assert owners == [("mine", "ann"), ("mine_total", "ann"), ("t", "root")]
        assert admin.execute("select r.name, u.name from rw_relations r join rw_users u on u.id = r.owner "
                             "where r.name = 'mine'").fetchone() == ("mine", "ann")
        grants = ann.execute("select grantor, grantee, privilege_type, is_grantable from "
                             "information_schema.table_privileges where table_name = 't' order by 3").fetchall()
        assert grants == [("root", "ann", "DELETE", "NO"), ("root", "ann", "INSERT", "NO"),
                          ("root", "ann", "SELECT", "NO")]
        (acl,) = admin.execute("select relacl from pg_class where relname = 't'").fetchone()
        assert acl == ["root=arwd/root", "ann=ard/root"]

        admin.execute("revoke select on t from ann")
        denied(ann, "select * from t", "permission denied for table t")
        denied(ann, "select * from t where id = 2", "permission denied for table t")
        admin.execute("revoke all on t from ann")
        denied(ann, "insert into t values (9, 'z')", "permission denied for table t")


def test_grant_option_and_cascading_revoke(secured: PlaygroundProcess, shop: None) -> None:
    with root(secured) as admin, connect(secured, "ann", "new pw") as ann, connect(secured, "bob", "bob pw") as bob:
        denied(ann, "grant select on t to bob", "permission denied for table t")
        admin.execute("grant select on t to ann with grant option")
        ann.execute("grant select on t to bob")
        assert bob.execute("select count(*) from t").fetchone() == (4,)
        with pytest.raises(errors.DependentObjectsStillExist, match="dependent privileges exist"):
            admin.execute("revoke select on t from ann")
        admin.execute("revoke select on t from ann cascade")
        denied(bob, "select count(*) from t", "permission denied for table t")
        denied(ann, "select count(*) from t", "permission denied for table t")
        # ann owns her table: she grants on it without any grant option
        ann.execute("grant select on mine to bob")
        assert bob.execute("select a from mine").fetchall() == [(1,)]


def test_drop_user_is_refused_while_it_owns_objects(secured: PlaygroundProcess, shop: None) -> None:
    with root(secured) as admin:
        admin.execute("create user tmp password 'tmp'")
        admin.execute("grant create on schema public to tmp")
        with connect(secured, "tmp", "tmp") as tmp:
            tmp.execute("create table tmp_t (a int)")
        with pytest.raises(errors.DependentObjectsStillExist) as info:
            admin.execute("drop user tmp")
        assert info.value.diag.message_primary == 'role "tmp" cannot be dropped because some objects depend on it'
        assert info.value.diag.message_detail == "owner of table tmp_t"
        admin.execute("drop table tmp_t")
        admin.execute("drop user tmp")  # the privileges granted to it go with it
        assert admin.execute("select count(*) from rw_users where name = 'tmp'").fetchone() == (0,)
        assert admin.execute("select count(*) from information_schema.table_privileges "
                             "where grantee = 'tmp'").fetchone() == (0,)
    with pytest.raises(psycopg.OperationalError, match='password authentication failed for user "tmp"'):
        connect(secured, "tmp", "tmp")


@pytest.mark.skipif(shutil.which("psql") is None, reason="psql is not installed")
def test_psql_lists_users(secured: PlaygroundProcess) -> None:
    env = {**os.environ, "PGCONNECT_TIMEOUT": "10", "PGPASSWORD": ROOT_PASSWORD}
    out = subprocess.run(["psql", "-X", "-h", "127.0.0.1", "-p", str(secured.port), "-U", "root", "-d", "dev", "-c",
                          r"\du"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    rows = {cells[0]: cells[1] for line in out.stdout.splitlines()[3:]
            if len(cells := [c.strip() for c in line.split("|")]) >= 2}
    assert rows["root"] == "Superuser, Create role, Create DB"
    assert rows["bob"] == "Create DB"
    assert rows["locked"] == "Cannot login"
    assert rows["ann"] == ""


def test_users_and_privileges_survive_a_restart(secured: PlaygroundProcess, shop: None) -> None:
    with root(secured) as admin:
        admin.execute("grant select on materialized view m to bob")
    assert secured.stop() == 0, secured.log_tail()
    secured.start()
    with connect(secured, "ann", "new pw") as ann, connect(secured, "bob", "bob pw") as bob:
        assert ann.execute("select current_user").fetchone() == ("ann",)
        assert bob.execute("select n from m").fetchone() == (4,)
        assert bob.execute("select a from mine").fetchall() == [(1,)]  # granted by ann
        denied(bob, "select * from t", "permission denied for table t")
        denied(ann, "select * from t", "permission denied for table t")  # revoked before the restart
        ann.execute("create table after_restart (a int)")  # CREATE on public, kept
        denied(ann, "drop table t", "must be owner of table t")
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        connect(secured, "ann", "ann pw")
    with root(secured) as admin:
        assert admin.execute("select tableowner from pg_tables where tablename = 'mine'").fetchone() == ("ann",)
        admin.execute("alter table mine owner to root")
        admin.execute("alter materialized view mine_total owner to root")
        admin.execute("alter table after_restart owner to root")
        admin.execute("revoke create on schema public from ann")
        admin.execute("drop user ann")
    with pytest.raises(psycopg.OperationalError, match='password authentication failed for user "ann"'):
        connect(secured, "ann", "new pw")
