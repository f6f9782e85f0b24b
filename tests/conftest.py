"""Shared fixtures: a real playground process (started once per test session) and a PostgreSQL
database that serves as the correctness oracle.

The meta store is SQLite by default. With ``RISINGSPARK_TEST_META_STORE=postgresql`` every
playground and cluster of the run keeps its metadata in PostgreSQL instead (127.0.0.1:5432), each
in a database of its own created for the run and dropped at its end.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest

from support.cluster import free_port

PG_ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"
READY = "RisingSpark playground is ready"
META_STORE = os.environ.get("RISINGSPARK_TEST_META_STORE", "sqlite").strip().lower()
if META_STORE not in ("sqlite", "postgresql"):
    raise pytest.UsageError(f"RISINGSPARK_TEST_META_STORE must be sqlite or postgresql, not {META_STORE!r}")
_RUN_ID = f"{os.getpid()}_{int(time.time()) % 1_000_000}"
_META_DATABASES: list[str] = []


def pg_meta_store_url(label: str) -> str:
    """A PostgreSQL meta store for this run: database ``rs_meta_<run>_<label>``, created once (so a
    restarted service finds its metadata again) and dropped when the run ends."""
    name = f"rs_meta_{_RUN_ID}_{label}".lower()[:63]
    if name not in _META_DATABASES:
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
            admin.execute(f'CREATE DATABASE "{name}"')
        _META_DATABASES.append(name)
    return f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"


# The longest files (minutes each: several clusters, kills and restarts, whole workloads) run first,
# longest first: with the workers taking whole files (`.ci/run`), a long file started last would
# finish alone. Measured in a full run (--junitxml, 2026-11-27: 927 s for the first, 117 s for the
# last); the rest keep their order.
SLOW_FIRST = ("test_serverless_backfill.py", "test_crash_resume.py", "test_differential.py",
              "test_service_faults.py", "test_oracle.py", "test_table_kinds.py", "test_backfill_order.py",
              "test_tpch.py", "test_set_operations.py", "test_joins.py", "test_services.py",
              "test_full_aggregates.py", "test_join_conditions.py", "test_datetime_functions.py",
              "test_composite_types.py", "test_users_privileges.py", "test_auth.py", "test_s3_object_store.py",
              "test_nexmark.py", "test_hash_join_kernel.py", "test_psycopg.py", "test_progress.py",
              "test_top_n.py")

# The JVMs of the clusters the tests start compile with C1 only and collect with the serial GC: the
# tests run thousands of small epochs on JVMs that live minutes, where C2's compilations cost more
# CPU than they win back (measured: a playground's 20 rounds over two views took 29 % less CPU and
# 15 % less time per round, and its start 40 % less CPU). Semantics do not change; the suite is
# CPU-bound on two cores. RISINGSPARK_SPARK_CONF reaches every service the tests start (playgrounds,
# compute nodes, compactors, backfillers) through the environment; set it to override.
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
os.environ.setdefault("RISINGSPARK_SPARK_CONF", f"spark.driver.extraJavaOptions={TEST_JVM_OPTIONS},"
                                                f"spark.executor.extraJavaOptions={TEST_JVM_OPTIONS}")


def pytest_collection_modifyitems(session, config, items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(SLOW_FIRST)))  # (stable: files stay whole)


def pytest_sessionfinish(session, exitstatus) -> None:
    if not _META_DATABASES:
        return
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        for name in _META_DATABASES:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    _META_DATABASES.clear()


@pytest.fixture(scope="session")
def meta_store_url() -> Callable[[str], str]:
    """`make(label)`: the meta store URL of a cluster ("" for the default SQLite store under its
    data directory; a run-scoped PostgreSQL database with RISINGSPARK_TEST_META_STORE=postgresql)."""
    return lambda label: pg_meta_store_url(label) if META_STORE == "postgresql" else ""




@dataclass
class PlaygroundProcess:
    """`risingspark playground` as a child process, on its own ports and data directory."""

    data_dir: Path
    port: int = field(default_factory=free_port)
    meta_port: int = field(default_factory=free_port)
    proc: subprocess.Popen | None = None
    log_path: Path | None = None
    meta_store_url: str = ""
    extra_args: list[str] = field(default_factory=list)  # more playground flags

    def __post_init__(self) -> None:
        if not self.meta_store_url and META_STORE == "postgresql":
            digest = hashlib.sha1(str(self.data_dir.resolve()).encode()).hexdigest()[:10]
            self.meta_store_url = pg_meta_store_url(f"pg_{digest}")

    def start(self, timeout: float = 180) -> PlaygroundProcess:
        self.log_path = self.data_dir.parent / f"{self.data_dir.name}-{int(time.time() * 1000)}.log"
        log = open(self.log_path, "wb")  # noqa: SIM115 - closed with the process
        env = {**os.environ, "RISINGSPARK_LOG_LEVEL": "INFO", "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "risingspark.cli", "playground", "--data-dir", str(self.data_dir),
             "--port", str(self.port), "--meta-port", str(self.meta_port), "--spark-driver-memory", "3g",
             *(["--meta-store-url", self.meta_store_url] if self.meta_store_url else []), *self.extra_args],
            stdout=subprocess.PIPE, stderr=log, env=env, start_new_session=True)
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline().decode()
            if READY in line:
                return self
            if not line and self.proc.poll() is not None:
                break
        raise RuntimeError(f"playground did not start; log: {self.log_tail()}")

    def log_tail(self, lines: int = 60) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        with open(self.log_path, "rb") as f:  # (the end only: a long-lived playground's log is big)
            f.seek(max(0, f.seek(0, os.SEEK_END) - 256 * 1024))
            return "\n".join(f.read().decode(errors="replace").splitlines()[-lines:])

    @property
    def dsn(self) -> str:
        return f"host=127.0.0.1 port={self.port} user=root dbname=dev"

    def connect(self, **kwargs) -> psycopg.Connection:
        return psycopg.connect(self.dsn, autocommit=True, **kwargs)

    def stop(self, sig: int = signal.SIGINT, timeout: float = 60) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait(10)

    def kill(self) -> None:
        """kill -9 of the whole service: the process and its children (Spark's JVM, Python
        workers), with no chance to clean up."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:  # until every process of the group is gone
                try:
                    os.killpg(self.proc.pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)


_SHARED: list[PlaygroundProcess] = []  # the session's shared playground, once started
_SYSTEM_SCHEMAS = ("pg_catalog", "information_schema", "rw_catalog", "public")


@pytest.fixture(scope="session")
def playground(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlaygroundProcess]:
    """One playground shared by the test files that need no special one. What a file creates in it is
    dropped when the file is done (`pytest_runtest_teardown`)."""
    pg = PlaygroundProcess(tmp_path_factory.mktemp("playground") / "data").start()
    _SHARED.append(pg)
    yield pg
    _SHARED.clear()
    code = pg.stop()
    assert code == 0, f"the playground did not stop cleanly (exit {code}): {pg.log_tail()}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """A test that fails (a timeout included) while the shared playground runs carries the tail of
    its log: what the server did is often the only clue to why a statement never came back."""
    report = yield
    if report.failed and _SHARED and "playground" in getattr(item, "fixturenames", ()):
        report.sections.append(("shared playground log (last lines)", _SHARED[0].log_tail(80)))
    return report


@pytest.hookimpl(trylast=True)  # after the file's own fixtures are torn down
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After the last test of a file that used the shared playground, drop every schema and relation
    it left there. A view whose query reads ``now()`` runs a Spark job every epoch for as long as it
    exists, and the files after it (unit tests included, while the playground lives) would share the
    machine's two cores with it."""
    if not _SHARED or (nextitem is not None and nextitem.path == item.path):
        return
    if not any("playground" in i.fixturenames for i in item.session.items if i.path == item.path):
        return
    pg = _SHARED[0]
    if pg.proc is None or pg.proc.poll() is not None:
        return
    with pg.connect() as c:
        for (schema,) in c.execute("SELECT name FROM rw_catalog.rw_schemas").fetchall():
            if schema not in _SYSTEM_SCHEMAS:
                c.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        # tables first: CASCADE takes their views and indexes along
        for kind in ("table", "materialized view", "view"):
            for (name,) in c.execute("SELECT r.name FROM rw_catalog.rw_relations r JOIN rw_catalog.rw_schemas s "
                                     "ON r.schema_id = s.id WHERE s.name = 'public' AND r.relation_type = %s",
                                     (kind,)).fetchall():
                c.execute(f'DROP {kind.upper()} IF EXISTS "{name}" CASCADE')


@pytest.fixture
def conn(playground: PlaygroundProcess) -> Iterator[psycopg.Connection]:
    with playground.connect() as c:
        yield c


@pytest.fixture(scope="session")
def oracle_dsn() -> Iterator[str]:
    """A database of its own on the PostgreSQL server, dropped at the end."""
    name = f"risingspark_oracle_{os.getpid()}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    yield f"host=127.0.0.1 port=5432 user=postgres dbname={name}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def unique_name(prefix: str) -> str:
    return f"{prefix}_{int(time.time() * 1000) % 10_000_000}_{os.getpid() % 1000}"
