"""One active meta per meta store; the others wait as standbys (RisingWave elects its meta leader
through its meta store the same way).

- PostgreSQL: a session-level advisory lock held on a dedicated connection. PostgreSQL releases it
  when that session ends, so when the active meta dies (even by kill -9) a standby gets it at once.
- SQLite: an exclusive `flock` on a file next to the database, released by the kernel when the
  process dies.

The active meta checks its hold every few seconds; if it lost it (the PostgreSQL connection broke),
it must stop serving at once, since a standby may already be active: the process exits.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import threading
import time
from pathlib import Path
from typing import IO

import sqlalchemy as sa

logger = logging.getLogger(__name__)

# pg_advisory_lock key: "RSMETA" as an integer, shared by every meta of one database.
ADVISORY_LOCK_KEY = 0x52534D455441
LOST_LEADERSHIP_EXIT_CODE = 75


class LeaderLock:
    def __init__(self, meta_store_url: str) -> None:
        self.url = meta_store_url
        self._engine: sa.Engine | None = None
        self._conn: sa.Connection | None = None
        self._file: IO[bytes] | None = None
        self._stop = threading.Event()
        self._watch: threading.Thread | None = None

    def try_acquire(self) -> bool:
        if self.url.startswith("sqlite"):
            return self._try_file_lock()
        if self._engine is None:
            self._engine = sa.create_engine(self.url, poolclass=sa.pool.NullPool)
        if self._conn is None:
            self._conn = self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        got = bool(self._conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": ADVISORY_LOCK_KEY}).scalar())
        return got

    def acquire(self, stop: threading.Event, poll_s: float = 1.0, timeout_s: float | None = None) -> bool:
        """Wait until this meta is the active one; False if `stop` was set or `timeout_s` passed first."""
        if self.try_acquire():
            return True
        logger.info("another meta is active on this meta store: standing by")
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while not stop.wait(poll_s):
            if deadline is not None and time.monotonic() >= deadline:
                return False
            try:
                if self.try_acquire():
                    logger.info("the active meta is gone: taking over")
                    return True
            except sa.exc.OperationalError as e:
                logger.warning("standby cannot reach the meta store: %s", e)
                self._drop_connection()
        return False

    def watch(self, period_s: float = 2.0) -> None:
        """Exit the process if the lock is lost (the connection holding it broke)."""
        if self._conn is None:
            return  # a file lock cannot be lost while the process lives

        def check() -> None:
            while not self._stop.wait(period_s):
                try:
                    assert self._conn is not None
                    self._conn.execute(sa.text("SELECT 1"))
                except Exception as e:  # noqa: BLE001 - any failure means the lock may be gone
                    logger.critical("lost the connection holding the meta leader lock (%s): another meta may be "
                                    "active now; exiting", e)
                    logging.shutdown()
                    os._exit(LOST_LEADERSHIP_EXIT_CODE)

        self._watch = threading.Thread(target=check, name="leader-lock", daemon=True)
        self._watch.start()

    def release(self) -> None:
        self._stop.set()
        if self._conn is not None:
            with contextlib.suppress(Exception):  # closing the session releases it anyway
                self._conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": ADVISORY_LOCK_KEY})
        self._drop_connection()
        if self._engine is not None:
            self._engine.dispose()
        if self._file is not None:
            self._file.close()
            self._file = None

    def _drop_connection(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None

    def _try_file_lock(self) -> bool:
        path = self.url.split("///", 1)[-1]
        if not path or path == ":memory:":
            return True
        lock_path = Path(path + ".leader")
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        f = open(lock_path, "ab")  # noqa: SIM115 - held open while this meta is active
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            return False
        self._file = f
        return True
