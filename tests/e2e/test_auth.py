"""A playground configured with users (``RISINGSPARK_AUTH_USERS``): clients must give the right
password (md5 here; SCRAM-SHA-256, the default, is covered against the wire server in
tests/unit/pgwire/test_server_auth.py, which also checks the SQLSTATE 28P01 byte by byte). The same
playground then restarts, keeping views, indexes and OIDs."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa

from conftest import PlaygroundProcess

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlaygroundProcess]:
    saved = {k: os.environ.get(k) for k in ("RISINGSPARK_AUTH_USERS", "RISINGSPARK_AUTH_METHOD")}
    os.environ["RISINGSPARK_AUTH_USERS"] = "root:s3cret,ann:pw2"
    os.environ["RISINGSPARK_AUTH_METHOD"] = "md5"
    try:
        pg = PlaygroundProcess(Path(tmp_path_factory.mktemp("secured")) / "data").start()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    yield pg
    assert pg.stop() == 0, pg.log_tail()


def test_password_is_required(secured: PlaygroundProcess) -> None:
    with psycopg.connect(secured.dsn + " password=s3cret", autocommit=True) as c:
        assert c.execute("select current_user").fetchone() == ("root",)
    with psycopg.connect(secured.dsn.replace("user=root", "user=ann") + " password=pw2", autocommit=True) as c:
        assert c.execute("select current_user").fetchone() == ("ann",)
    for dsn in (secured.dsn + " password=wrong", secured.dsn.replace("user=root", "user=nobody") + " password=s3cret"):
        with pytest.raises(psycopg.OperationalError, match="password authentication failed for user"):
            psycopg.connect(dsn)
    engine = sa.create_engine(f"postgresql+psycopg2://root:s3cret@127.0.0.1:{secured.port}/dev")
    with engine.connect() as c:
        assert c.execute(sa.text("select 1")).scalar() == 1
    engine.dispose()


@pytest.mark.skipif(shutil.which("psql") is None, reason="psql is not installed")
def test_psql_with_password(secured: PlaygroundProcess) -> None:
    args = ["psql", "-X", "-w", "-h", "127.0.0.1", "-p", str(secured.port), "-U", "root", "-d", "dev", "-c", "select 1"]
    env = {**os.environ, "PGCONNECT_TIMEOUT": "10"}
    ok = subprocess.run(args, env={**env, "PGPASSWORD": "s3cret"}, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run(args, env={**env, "PGPASSWORD": "nope"}, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2
    assert 'FATAL:  password authentication failed for user "root"' in bad.stderr


def test_views_indexes_and_oids_survive_a_restart(secured: PlaygroundProcess) -> None:
    dsn = secured.dsn + " password=s3cret"
    catalog = ("select c.oid, c.relname, c.relkind from pg_class c join pg_namespace n on n.oid = c.relnamespace "
               "where n.nspname = 'kept' order by c.oid")
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("create schema kept")
        c.execute("create table kept.t (id int primary key, city varchar)")
        c.execute("insert into kept.t values (1, 'a'), (2, 'b'), (3, 'a')")
        c.execute("flush")
        c.execute("create view kept.v as select city, count(*) as n from kept.t group by city")
        c.execute("create materialized view kept.m as select * from kept.v")
        c.execute("create index kept_t_city on kept.t (city)")
        c.execute("comment on view kept.v is 'per city'")
        before = c.execute(catalog).fetchall()
    assert [r[2] for r in before] == ["r", "v", "m", "i"]
    assert secured.stop() == 0, secured.log_tail()
    secured.start()
    with psycopg.connect(dsn, autocommit=True) as c:
        assert c.execute(catalog).fetchall() == before
        assert c.execute("select city, n from kept.v order by city").fetchall() == [("a", 2), ("b", 1)]
        assert c.execute("select id from kept.t where city = 'a' order by id").fetchall() == [(1,), (3,)]
        c.execute("insert into kept.t values (4, 'b')")
        c.execute("flush")
        assert c.execute("select city, n from kept.m order by city").fetchall() == [("a", 2), ("b", 2)]
        assert c.execute("select obj_description('kept.v'::regclass)").fetchone() == ("per city",)
