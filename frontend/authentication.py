"""Connections authenticate against the user catalog; the users the server is started with
(``--auth-users``) are its first superusers.

With ``--auth-users`` set, every connection proves its user's password (`frontend.pgwire.auth`) as
stored in the catalog at the time it connects; without it the server trusts the user a client names,
as long as that user exists and may log in (`Session.startup`), as PostgreSQL's ``trust``.
"""

from __future__ import annotations

import logging
from typing import Any

from frontend.pgwire.auth import PasswordAuth, check_method, parse_auth_users
from risingspark.passwords import encrypt_password

logger = logging.getLogger(__name__)


def setup_auth(meta: Any, auth_users: str, auth_method: str) -> PasswordAuth | None:
    """Create the configured users that are missing (`meta.users.UserManager.bootstrap`) and return
    the password authentication of the server, or None to trust clients when none are configured."""
    method = check_method(auth_method)
    if not auth_users.strip():
        return None
    initial = [(name, secret) for name, password in parse_auth_users(auth_users).items()
               if (secret := encrypt_password(name, password, method)) is not None]
    meta.users.bootstrap(initial)
    logger.info("password authentication (%s) against the user catalog", method)

    def secret_of(name: str) -> str | None:
        user = meta.catalog_snapshot().user(name)
        return user.password if user is not None else None

    return PasswordAuth(secret_of, method)
