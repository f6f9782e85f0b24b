"""The meta store: a SQL database reached through SQLAlchemy (SQLite embedded by default, PostgreSQL
for deployments). Its schema comes from the alembic migrations, applied at start."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Connection, Engine

from meta.store.schema import id_counters

logger = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"


def alembic_config(connection: Connection | None = None, url: str | None = None) -> Config:
    cfg = Config(str(MIGRATIONS_DIR / "alembic.ini"))
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    if url:
        cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


class Txn:
    """A meta-store transaction plus what to do in memory once it has committed.

    Managers stage their in-memory changes in `staged` (keyed by manager) and register
    `on_commit` callbacks that install them; a failed transaction leaves memory untouched.
    """

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.staged: dict[str, Any] = {}
        self._callbacks: list[Callable[[], None]] = []

    def on_commit(self, fn: Callable[[], None]) -> None:
        self._callbacks.append(fn)


class MetaStore:
    """A connection pool to the meta store, with the schema at the newest migration."""

    def __init__(self, url: str) -> None:
        self.url = url
        kwargs: dict = {"future": True}
        if url.startswith("sqlite"):
            path = url.split("///", 1)[-1]
            if path and path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
        else:
            kwargs["pool_pre_ping"] = True
        self.engine: Engine = sa.create_engine(url, **kwargs)
        if url.startswith("sqlite"):
            sa.event.listen(self.engine, "connect", _sqlite_pragmas)
        self._write_lock = threading.RLock()

    def upgrade(self) -> None:
        """Apply every pending migration (`alembic upgrade head`)."""
        with self.engine.begin() as conn:
            command.upgrade(alembic_config(conn), "head")
        logger.info("meta store schema is up to date (%s)", _safe_url(self.url))

    def downgrade(self, revision: str = "base") -> None:
        with self.engine.begin() as conn:
            command.downgrade(alembic_config(conn), revision)

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        """One meta-store transaction: everything in it commits or nothing does."""
        with self.engine.begin() as conn:
            yield conn

    @contextmanager
    def transaction(self) -> Iterator[Txn]:
        """A write transaction. Writers are serialized; callbacks run after the commit."""
        with self._write_lock:
            with self.engine.begin() as conn:
                tx = Txn(conn)
                yield tx
            for fn in tx._callbacks:
                fn()

    def close(self) -> None:
        self.engine.dispose()


def next_ids(conn: Connection, name: str, count: int = 1, start: int = 1) -> int:
    """Reserve `count` consecutive ids of the counter `name`; returns the first."""
    row = conn.execute(sa.select(id_counters.c.next_id).where(id_counters.c.name == name)
                       .with_for_update()).first()
    if row is None:
        first = start
        conn.execute(id_counters.insert().values(name=name, next_id=first + count))
    else:
        first = int(row[0])
        conn.execute(id_counters.update().where(id_counters.c.name == name).values(next_id=first + count))
    return first


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=FULL")
    cur.close()


def _safe_url(url: str) -> str:
    return sa.engine.make_url(url).render_as_string(hide_password=True)
