"""A playground configured with users (``RISINGSPARK_AUTH_USERS``): clients must give the right
password (md5 here; SCRAM-SHA-256, the default, is covered against the wire server in
tests/unit/pgwire/test_server_auth.py, which also checks the SQLSTATE 28P01 byte by byte)."""

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
