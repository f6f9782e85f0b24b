"""Password authentication (SCRAM-SHA-256 and md5) with psycopg 3, psycopg2 and psql: the right
password connects, a wrong or missing one is refused with SQLSTATE 28P01, as Postgres does."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import shutil
import struct
import subprocess
from collections.abc import Iterator

import psycopg
import psycopg2
import pytest

from frontend.pgwire.auth import PasswordAuth

from .fakes import RawClient, ServerThread


@pytest.fixture(params=[("scram-sha-256", "uvloop"), ("md5", "uvloop"), ("scram-sha-256", "asyncio"), ("md5", "asyncio")],
                ids=lambda p: "-".join(p))
def server(request: pytest.FixtureRequest) -> Iterator[ServerThread]:
    method, loop = request.param
    with ServerThread(PasswordAuth.with_passwords({"root": "s3cret", "ann": "pä ss"}, method), event_loop=loop) as srv:
        yield srv


def _dsn(server: ServerThread, user: str, password: str | None) -> str:
    dsn = f"host=127.0.0.1 port={server.port} user={user} dbname=dev connect_timeout=10"
    return dsn if password is None else f"{dsn} password='{password}'"


def test_psycopg(server: ServerThread) -> None:
    with psycopg.connect(_dsn(server, "root", "s3cret")) as c:
        assert c.execute("select 1").fetchone() == (1,)
    with psycopg.connect(_dsn(server, "ann", "pä ss")) as c:
        assert c.info.user == "ann"
    for user, password in [("root", "wrong"), ("ann", "s3cret"), ("nobody", "s3cret")]:
        with pytest.raises(psycopg.OperationalError) as info:
            psycopg.connect(_dsn(server, user, password))
        assert f'password authentication failed for user "{user}"' in str(info.value)


def _error_fields(body: bytes) -> dict[str, str]:
    return {f[:1].decode(): f[1:].decode() for f in body.split(b"\0") if f}


def test_wrong_password_is_28p01(server: ServerThread) -> None:
    """libpq does not expose the SQLSTATE of a failed connection: read the ErrorResponse itself,
    after a real md5 or SCRAM-SHA-256 exchange with a wrong password."""
    for user in ("root", "nobody"):
        client = RawClient(server.port)
        try:
            client.send_startup(196608, {"user": user, "database": "dev"})
            kind, body = client.recv()
            assert kind == b"R"
            (code,) = struct.unpack("!i", body[:4])
            if code == 5:  # AuthenticationMD5Password
                salt = body[4:8]
                inner = hashlib.md5(b"wrong" + user.encode()).hexdigest().encode()
                client.send(b"p", b"md5" + hashlib.md5(inner + salt).hexdigest().encode() + b"\0")
            else:
                assert code == 10 and b"SCRAM-SHA-256" in body  # AuthenticationSASL
                _scram_with_wrong_password(client)
            kind, body = client.recv()
            assert kind == b"E"
            fields = _error_fields(body)
            assert (fields["S"], fields["C"], fields["M"]) == \
                ("FATAL", "28P01", f'password authentication failed for user "{user}"')
        finally:
            client.close()


def _scram_with_wrong_password(client: RawClient) -> None:
    nonce = base64.b64encode(os.urandom(18)).decode()
    first_bare = f"n=,r={nonce}"
    first = ("n,," + first_bare).encode()
    client.send(b"p", b"SCRAM-SHA-256\0" + struct.pack("!i", len(first)) + first)
    kind, body = client.recv()
    assert kind == b"R" and struct.unpack("!i", body[:4])[0] == 11  # AuthenticationSASLContinue
    server_first = body[4:].decode()
    attrs = dict(a.split("=", 1) for a in server_first.split(","))
    salted = hashlib.pbkdf2_hmac("sha256", b"wrong", base64.b64decode(attrs["s"]), int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    without_proof = f"c=biws,r={attrs['r']}"
    message = f"{first_bare},{server_first},{without_proof}".encode()
    signature = hmac.new(hashlib.sha256(client_key).digest(), message, "sha256").digest()
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True))).decode()
    client.send(b"p", f"{without_proof},p={proof}".encode())


def test_psycopg2(server: ServerThread) -> None:
    conn = psycopg2.connect(_dsn(server, "root", "s3cret"))
    try:
        with conn.cursor() as cur:
            cur.execute("select 1")
            assert cur.fetchone() == (1,)
    finally:
        conn.close()
    with pytest.raises(psycopg2.OperationalError) as info:
        psycopg2.connect(_dsn(server, "root", "nope"))
    assert 'password authentication failed for user "root"' in str(info.value)


@pytest.mark.skipif(shutil.which("psql") is None, reason="psql is not installed")
def test_psql(server: ServerThread) -> None:
    env = {**os.environ, "PGCONNECT_TIMEOUT": "10"}
    args = ["psql", "-X", "-w", "-h", "127.0.0.1", "-p", str(server.port), "-U", "root", "-d", "dev", "-c", "select 1"]
    ok = subprocess.run(args, env={**env, "PGPASSWORD": "s3cret"}, capture_output=True, text=True, timeout=30)
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run(args, env={**env, "PGPASSWORD": "nope"}, capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2
    assert 'FATAL:  password authentication failed for user "root"' in bad.stderr
    missing = subprocess.run(args, env={k: v for k, v in env.items() if k != "PGPASSWORD"}, capture_output=True,
                             text=True, timeout=30)
    assert missing.returncode == 2 and "no password supplied" in missing.stderr
