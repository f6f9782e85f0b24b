"""Stored passwords, in PostgreSQL's formats: a password is never kept in clear.

- ``md5`` followed by the hex MD5 of password + user name: what md5 authentication proves
  knowledge of (the name is the salt, so a rename clears it, as PostgreSQL does).
- ``SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`` (base64 parts, RFC 5802/7677): what
  SCRAM-SHA-256 authentication verifies; PostgreSQL 14's default.

A password given already in one of these forms is stored as given (PostgreSQL and RisingWave do the
same, as the server cannot recover the clear text to hash it another way).

>>> md5_secret("foo", "bar")
'md596948aad3fcae80c08a35c9b5958cd89'
>>> encrypt_password("foo", "md596948aad3fcae80c08a35c9b5958cd89", "scram-sha-256")
'md596948aad3fcae80c08a35c9b5958cd89'
>>> s = parse_scram_secret(scram_secret("pw", salt=b"0123456789abcdef"))
>>> s.iterations, s.salt
(4096, b'0123456789abcdef')
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

SCRAM_ITERATIONS = 4096
METHODS = ("scram-sha-256", "md5")
_MD5 = re.compile(r"md5[0-9a-f]{32}")
_SCRAM = re.compile(r"SCRAM-SHA-256\$(\d+):([^$]+)\$([^:]+):(.+)")


def _hmac(key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, hashlib.sha256).digest()


@dataclass(frozen=True)
class ScramSecret:
    iterations: int
    salt: bytes
    stored_key: bytes
    server_key: bytes


def md5_secret(user: str, password: str) -> str:
    return "md5" + hashlib.md5((password + user).encode()).hexdigest()


def scram_secret(password: str, *, salt: bytes | None = None, iterations: int = SCRAM_ITERATIONS) -> str:
    salt = salt if salt is not None else secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    stored_key = hashlib.sha256(_hmac(salted, b"Client Key")).digest()
    server_key = _hmac(salted, b"Server Key")
    b64 = base64.b64encode
    return f"SCRAM-SHA-256${iterations}:{b64(salt).decode()}${b64(stored_key).decode()}:{b64(server_key).decode()}"


def parse_scram_secret(secret: str | None) -> ScramSecret | None:
    """The parts of a SCRAM-SHA-256 secret; None when `secret` is not one."""
    m = _SCRAM.fullmatch(secret or "")
    if m is None:
        return None
    try:
        return ScramSecret(int(m.group(1)), base64.b64decode(m.group(2), validate=True),
                           base64.b64decode(m.group(3), validate=True), base64.b64decode(m.group(4), validate=True))
    except (binascii.Error, ValueError):
        return None


def is_md5_secret(secret: str | None) -> bool:
    return bool(secret) and _MD5.fullmatch(secret or "") is not None


def encrypt_password(user: str, password: str | None, method: str = "scram-sha-256") -> str | None:
    """The stored form of a password given to CREATE/ALTER USER, hashed as `method` says unless
    already hashed; None for no password (NULL, or the empty string, which PostgreSQL refuses as a
    password and clears)."""
    if not password:
        return None
    if is_md5_secret(password) or parse_scram_secret(password) is not None:
        return password
    if method == "md5":
        return md5_secret(user, password)
    return scram_secret(password)
