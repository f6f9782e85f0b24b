"""Password authentication: SCRAM-SHA-256 (RFC 5802/7677, as Postgres) or md5, against the
password each user has in the catalog (`risingspark.passwords`: an md5 or SCRAM-SHA-256 secret,
never the clear text).

As PostgreSQL: a user whose password is stored as a SCRAM secret authenticates with SCRAM even
where md5 is configured; one whose password is an md5 secret cannot pass SCRAM (it needs the clear
text's SCRAM keys), nor can a user without a password or an unknown one. An unknown user goes
through the same exchange as a known one, so the answer does not tell which names exist. A failed
exchange is reported as Postgres does: FATAL 28P01 ``password authentication failed for user "..."``.

>>> parse_auth_users("alice:secret, bob:pw")
{'alice': 'secret', 'bob': 'pw'}
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING

from risingspark.errors import InvalidParameterValue, InvalidPassword, ProtocolViolation
from risingspark.passwords import (
    METHODS,
    SCRAM_ITERATIONS,
    encrypt_password,
    is_md5_secret,
    parse_scram_secret,
)

from . import backend as be
from . import messages as m

if TYPE_CHECKING:
    from .connection import Connection

logger = logging.getLogger(__name__)

SCRAM = "SCRAM-SHA-256"


def _hmac(key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, hashlib.sha256).digest()


def parse_auth_users(spec: str) -> dict[str, str]:
    """``user:password[,user:password...]`` (the ``--auth-users`` option) as user -> password."""
    users = {}
    for item in spec.split(","):
        if not item.strip():
            continue
        name, sep, password = item.strip().partition(":")
        if not sep or not name:
            raise InvalidParameterValue(f"expected user:password, got {item.strip()!r}")
        users[name] = password
    return users


def check_method(method: str) -> str:
    method = method.lower()
    if method not in METHODS:
        raise InvalidParameterValue(f"unknown authentication method {method!r}; use one of {', '.join(METHODS)}")
    return method


class PasswordAuth:
    """How clients prove their password.

    Args:
        secret_of: a user's stored password (an md5 or SCRAM-SHA-256 secret), None for an unknown
            user or one without a password; asked at each connection, so password changes apply to
            the next one.
        method: ``scram-sha-256`` or ``md5``: what is asked of users whose secret allows either.
    """

    def __init__(self, secret_of: Callable[[str], str | None], method: str = "scram-sha-256") -> None:
        self.method = check_method(method)
        self._secret_of = secret_of

    @classmethod
    def with_passwords(cls, passwords: dict[str, str], method: str = "scram-sha-256") -> PasswordAuth:
        """A fixed set of users with clear-text passwords, hashed as `method` stores them."""
        method = check_method(method)
        stored = {name: encrypt_password(name, pw, method) for name, pw in passwords.items()}
        return cls(stored.get, method)

    async def authenticate(self, conn: Connection, user: str) -> None:
        """Run the exchange on a connection; raises `InvalidPassword` when it fails."""
        secret = self._secret_of(user)
        use_md5 = self.method == "md5" and parse_scram_secret(secret) is None
        ok = await (self._md5(conn, user, secret) if use_md5 else self._scram(conn, user, secret))
        if not ok:
            logger.info("connection %d: password authentication failed for user %r", conn.pid, user)
            raise InvalidPassword(f'password authentication failed for user "{user}"')

    async def _read_password(self, conn: Connection) -> m.PasswordMessage:
        await conn.sink.flush()
        msg = await conn.messages.read()
        if not isinstance(msg, m.PasswordMessage):
            raise ProtocolViolation(f"expected password response, got {type(msg).__name__}")
        return msg

    async def _md5(self, conn: Connection, user: str, secret: str | None) -> bool:
        salt = secrets.token_bytes(4)
        conn.sink.send(be.authentication_md5_password(salt))
        answer = (await self._read_password(conn)).password
        if secret is None or not is_md5_secret(secret):
            return False
        expected = "md5" + hashlib.md5(secret[3:].encode() + salt).hexdigest()
        return hmac.compare_digest(answer, expected)

    async def _scram(self, conn: Connection, user: str, secret: str | None) -> bool:
        scram = parse_scram_secret(secret)
        conn.sink.send(be.authentication_sasl([SCRAM]))
        mechanism, first = (await self._read_password(conn)).sasl_initial_response()
        if mechanism != SCRAM:
            raise ProtocolViolation(f"unsupported SASL mechanism {mechanism!r}")
        client_first = first.decode()
        bare = client_first[_nth(client_first, ",", 2) + 1:]  # after the GS2 header "n,,"
        attrs = _attributes(bare)
        client_nonce = attrs.get("r", "")
        # A user without a SCRAM secret gets a made-up salt, so the exchange looks the same until its end.
        salt = scram.salt if scram is not None else secrets.token_bytes(16)
        iterations = scram.iterations if scram is not None else SCRAM_ITERATIONS
        nonce = client_nonce + base64.b64encode(secrets.token_bytes(18)).decode()
        server_first = f"r={nonce},s={base64.b64encode(salt).decode()},i={iterations}"
        conn.sink.send(be.authentication_sasl_continue(server_first.encode()))
        final = (await self._read_password(conn)).data.decode()
        without_proof, _, proof_part = final.rpartition(",p=")
        if _attributes(without_proof).get("r") != nonce or scram is None or not proof_part:
            return False
        auth_message = f"{bare},{server_first},{without_proof}".encode()
        signature = _hmac(scram.stored_key, auth_message)
        try:
            proof = base64.b64decode(proof_part)
        except ValueError:
            return False
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=False))
        if len(proof) != len(signature) or not hmac.compare_digest(hashlib.sha256(client_key).digest(),
                                                                   scram.stored_key):
            return False
        server_signature = _hmac(scram.server_key, auth_message)
        conn.sink.send(be.authentication_sasl_final(b"v=" + base64.b64encode(server_signature)))
        return True


def _nth(s: str, ch: str, n: int) -> int:
    pos = -1
    for _ in range(n):
        pos = s.index(ch, pos + 1)
    return pos


def _attributes(message: str) -> dict[str, str]:
    out = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if sep:
            out[key] = value
    return out
