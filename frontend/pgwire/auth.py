"""Password authentication: SCRAM-SHA-256 (RFC 5802/7677, as Postgres) or md5.

The server keeps, per user, a random salt and the SCRAM keys derived from the password (the
plaintext is needed only for md5, whose hash includes a per-connection salt). A failed exchange
is reported as Postgres does: FATAL 28P01 ``password authentication failed for user "..."``.

>>> auth = PasswordAuth.from_spec("alice:secret, bob:pw", "md5")
>>> sorted(auth.users), auth.method
(['alice', 'bob'], 'md5')
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING

from risingspark.errors import InvalidParameterValue, InvalidPassword, ProtocolViolation

from . import backend as be
from . import messages as m

if TYPE_CHECKING:
    from .connection import Connection

logger = logging.getLogger(__name__)

SCRAM = "SCRAM-SHA-256"
ITERATIONS = 4096
METHODS = ("scram-sha-256", "md5")


def _hmac(key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, hashlib.sha256).digest()


@dataclass(frozen=True)
class _Secret:
    password: str
    salt: bytes
    stored_key: bytes
    server_key: bytes

    @classmethod
    def of(cls, password: str) -> _Secret:
        salt = secrets.token_bytes(16)
        salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, ITERATIONS)
        return cls(password, salt, hashlib.sha256(_hmac(salted, b"Client Key")).digest(), _hmac(salted, b"Server Key"))


class PasswordAuth:
    """The users a server accepts and how they prove their password.

    Args:
        users: user name -> password.
        method: ``scram-sha-256`` or ``md5``.
    """

    def __init__(self, users: dict[str, str], method: str = "scram-sha-256") -> None:
        method = method.lower()
        if method not in METHODS:
            raise InvalidParameterValue(f"unknown authentication method {method!r}; use one of {', '.join(METHODS)}")
        self.method = method
        self.users = {name: _Secret.of(pw) for name, pw in users.items()}

    @classmethod
    def from_spec(cls, spec: str, method: str = "scram-sha-256") -> PasswordAuth:
        """From ``user:password[,user:password...]``."""
        users = {}
        for item in spec.split(","):
            if not item.strip():
                continue
            name, sep, password = item.strip().partition(":")
            if not sep or not name:
                raise InvalidParameterValue(f"expected user:password, got {item.strip()!r}")
            users[name] = password
        return cls(users, method)

    async def authenticate(self, conn: Connection, user: str) -> None:
        """Run the exchange on a connection; raises `InvalidPassword` when it fails."""
        secret = self.users.get(user)
        ok = await (self._scram(conn, user, secret) if self.method == "scram-sha-256" else
                    self._md5(conn, user, secret))
        if not ok:
            logger.info("connection %d: password authentication failed for user %r", conn.pid, user)
            raise InvalidPassword(f'password authentication failed for user "{user}"')

    async def _read_password(self, conn: Connection) -> m.PasswordMessage:
        await conn.sink.flush()
        msg = await m.read_message(conn.reader)
        if not isinstance(msg, m.PasswordMessage):
            raise ProtocolViolation(f"expected password response, got {type(msg).__name__}")
        return msg

    async def _md5(self, conn: Connection, user: str, secret: _Secret | None) -> bool:
        salt = secrets.token_bytes(4)
        conn.sink.send(be.authentication_md5_password(salt))
        answer = (await self._read_password(conn)).password
        if secret is None:
            return False
        inner = hashlib.md5((secret.password + user).encode()).hexdigest()
        expected = "md5" + hashlib.md5(inner.encode() + salt).hexdigest()
        return hmac.compare_digest(answer, expected)

    async def _scram(self, conn: Connection, user: str, secret: _Secret | None) -> bool:
        conn.sink.send(be.authentication_sasl([SCRAM]))
        mechanism, first = (await self._read_password(conn)).sasl_initial_response()
        if mechanism != SCRAM:
            raise ProtocolViolation(f"unsupported SASL mechanism {mechanism!r}")
        client_first = first.decode()
        bare = client_first[_nth(client_first, ",", 2) + 1:]  # after the GS2 header "n,,"
        attrs = _attributes(bare)
        client_nonce = attrs.get("r", "")
        # An unknown user gets a made-up salt, so the exchange looks the same until its end.
        salt = secret.salt if secret is not None else secrets.token_bytes(16)
        nonce = client_nonce + base64.b64encode(secrets.token_bytes(18)).decode()
        server_first = f"r={nonce},s={base64.b64encode(salt).decode()},i={ITERATIONS}"
        conn.sink.send(be.authentication_sasl_continue(server_first.encode()))
        final = (await self._read_password(conn)).data.decode()
        without_proof, _, proof_part = final.rpartition(",p=")
        if _attributes(without_proof).get("r") != nonce or secret is None or not proof_part:
            return False
        auth_message = f"{bare},{server_first},{without_proof}".encode()
        signature = _hmac(secret.stored_key, auth_message)
        try:
            proof = base64.b64decode(proof_part)
        except ValueError:
            return False
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=False))
        if len(proof) != len(signature) or not hmac.compare_digest(hashlib.sha256(client_key).digest(),
                                                                   secret.stored_key):
            return False
        server_signature = _hmac(secret.server_key, auth_message)
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
