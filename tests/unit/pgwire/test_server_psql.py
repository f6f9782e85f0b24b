"""The wire server against the `psql` binary (sslmode=prefer: it asks for TLS first and gets 'N')."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from .fakes import ServerThread

pytestmark = pytest.mark.skipif(shutil.which("psql") is None, reason="psql is not installed")


def psql(server: ServerThread, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PGCONNECT_TIMEOUT": "10", "PGCLIENTENCODING": "UTF8", "PGSSLMODE": "prefer",
           "PGAPPNAME": "psql-test"}
    env.pop("PGPASSWORD", None)
    return subprocess.run(["psql", "-X", "-h", "127.0.0.1", "-p", str(server.port), "-U", "root", "-d", "dev",
                           *args], env=env, input=input, capture_output=True, text=True, timeout=30)


def test_select_1(server: ServerThread) -> None:
    out = psql(server, "-c", "select 1")
    assert out.returncode == 0, out.stderr
    assert out.stdout == " ?column? \n----------\n        1\n(1 row)\n\n"
    assert server.state.startups[0]["application_name"] == "psql-test"


def test_error(server: ServerThread) -> None:
    out = psql(server, "-c", "select * from missing")
    assert out.returncode == 1
    assert out.stderr.startswith('ERROR:  relation "missing" does not exist\nLINE 1: select * from missing\n')
    assert out.stdout == ""


def test_postgres_text_formats(server: ServerThread) -> None:
    out = psql(server, "-A", "-t", "-c", "select * from t")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "1|100|1099511627776|1.5|100|61.5|61.50|t|héllo|2024-01-02|2024-01-02 03:04:05.12|2024-01-02 03:04:05+00",
        "-2||0||1e+16|100||f||||1970-01-01 00:00:00.000001+00",
        "|-7||1e+06|||-0.01|||1999-12-31|2000-01-01 00:00:00|",
    ]


def test_several_statements_and_command_tags(server: ServerThread) -> None:
    out = psql(server, "-c", "create table a (x int); select 2; notice")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "CREATE_TABLE"
    assert "(1 row)" in out.stdout
    assert out.stdout.rstrip().endswith("DO")
    assert "NOTICE:  hello from RisingSpark" in out.stderr


def test_error_inside_transaction_block(server: ServerThread) -> None:
    # statements auto-commit: after an error the block goes on (no "current transaction is aborted")
    out = psql(server, "-f", "-", input="begin;\nselect * from missing;\nselect 2;\ncommit;\n")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "BEGIN"
    assert "(1 row)" in out.stdout
    assert out.stdout.rstrip().endswith("COMMIT")
    assert 'relation "missing" does not exist' in out.stderr
