"""Running a benchmark workload's queries as materialized views against the PostgreSQL oracle:
loading generated rows, creating the views (each with an expectation: supported, or failing
cleanly as unsupported), and comparing every view with PostgreSQL — a ``LIMIT`` query by a check
that accepts any choice among rows tied at the limit."""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal

import psycopg

from support.oracle import STRATEGIES, assert_same, normalize, use_strategy


@dataclass(frozen=True)
class Expectation:
    """SUPPORTED: the view equals PostgreSQL. Otherwise CREATE fails with SQLSTATE 0A000 and a
    message containing `message`, and leaves nothing behind."""

    supported: bool
    message: str = ""


SUPPORTED = Expectation(True)


def unsupported(message: str) -> Expectation:
    return Expectation(False, message)


def sql_literal(v: object) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int | Decimal):
        return str(v)
    if isinstance(v, dt.datetime):
        return f"TIMESTAMP '{v.isoformat(sep=' ')}'"
    if isinstance(v, dt.date):
        return f"DATE '{v.isoformat()}'"
    return "'" + str(v).replace("'", "''") + "'"


def values_sql(row: Sequence[object]) -> str:
    return "(" + ", ".join(sql_literal(v) for v in row) + ")"


def insert_rows(conn: psycopg.Connection, table: str, rows: Iterable[Sequence[object]], batch: int = 250) -> None:
    """INSERTs of multi-row VALUES, `batch` rows each."""
    rows = list(rows)
    for i in range(0, len(rows), batch):
        conn.execute(f"INSERT INTO {table} VALUES " + ", ".join(values_sql(r) for r in rows[i:i + batch]))


def relation_exists(conn: psycopg.Connection, name: str) -> bool:
    return conn.execute("SELECT count(*) FROM rw_catalog.rw_relations WHERE name = %s", (name,)).fetchone() != (0,)


@contextmanager
def backfills_at_once(conn: psycopg.Connection) -> Iterator[None]:
    """Every creating job backfills at once (``max_concurrent_creating_streaming_jobs = 0``), not
    one after the other, so each backfills under the writes that follow its CREATE; the system
    parameter is restored after."""
    before = dict((r[0], r[1]) for r in conn.execute("SHOW PARAMETERS").fetchall())
    conn.execute("ALTER SYSTEM SET max_concurrent_creating_streaming_jobs = 0")
    try:
        yield
    finally:
        conn.execute("ALTER SYSTEM SET max_concurrent_creating_streaming_jobs = "
                     f"{before['max_concurrent_creating_streaming_jobs']}")


def create_views(conn: psycopg.Connection, queries: dict[str, str], expectations: dict[str, Expectation],
                 prefix: str, between: Callable[[], None], wait_timeout: str = "15min") -> tuple[dict[str, str], list[str]]:
    """CREATE each query as the MV ``<prefix>_<name>`` in the background (the backfill strategies
    in turn), `between()` after each (writes while the views backfill), then WAIT for all. Returns
    the views created and the failures: a CREATE that does not do what its expectation says."""
    created: dict[str, str] = {}
    failures: list[str] = []
    conn.execute("SET background_ddl = true")
    for i, (name, query) in enumerate(queries.items()):
        mv, want = f"{prefix}_{name}", expectations[name]
        use_strategy(conn, list(STRATEGIES)[i % len(STRATEGIES)])
        try:
            conn.execute(f"CREATE MATERIALIZED VIEW {mv} AS {query}")
        except psycopg.Error as e:
            got = f"{e.sqlstate} {str(e).splitlines()[0]}"
            if want.supported:
                failures.append(f"{name}: CREATE failed: {got}")
            elif e.sqlstate != "0A000" or want.message not in str(e):
                failures.append(f"{name}: expected 0A000 containing {want.message!r}, got {got}")
            if relation_exists(conn, mv):
                failures.append(f"{name}: the failed CREATE left {mv} behind")
        else:
            created[name] = mv
            if not want.supported:
                failures.append(f"{name}: expected to fail (0A000 {want.message!r}) but was created; "
                                "if it equals PostgreSQL, mark it SUPPORTED")
        between()
    conn.execute(f"SET statement_timeout = '{wait_timeout}'")  # a backfill that never finishes fails the test
    try:
        conn.execute("WAIT")
    except psycopg.Error as e:
        failures.append(f"WAIT failed: {e.sqlstate} {e}")
    conn.execute("SET statement_timeout = 0")
    conn.execute("SET background_ddl = false")
    return created, failures


_LIMIT = re.compile(r"\s+limit\s+(\d+)\s*$", re.IGNORECASE)


def _key(r: tuple) -> tuple:
    return tuple((x is None, str(type(x)), x) for x in r)


def assert_same_top_n(rs: psycopg.Connection, pg: psycopg.Connection, mv: str, query: str) -> int:
    """The MV of an ``ORDER BY ... LIMIT n`` query equals PostgreSQL's answer up to the rows tied
    at the limit: when the ORDER BY does not order the n-th row strictly before the (n+1)-th, either
    system may keep any of the tied rows. The MV must hold every row ranked before that tie and fill
    the rest of its n rows from the tied ones. (The ORDER BY must name output columns.)"""
    m = _LIMIT.search(query)
    assert m, f"no trailing LIMIT in {query!r}"
    limit, body = int(m.group(1)), query[:m.start()]
    at = body.lower().rfind("order by")
    inner, order = body[:at], body[at + len("order by"):]
    ranked = [tuple(normalize(v) for v in r) for r in pg.execute(
        f"SELECT *, rank() OVER (ORDER BY {order}) FROM ({inner}) AS q ORDER BY {order}").fetchall()]
    got = Counter(tuple(normalize(v) for v in r) for r in rs.execute(f'SELECT * FROM "{mv}"').fetchall())
    if len(ranked) <= limit:
        must, tied = Counter(r[:-1] for r in ranked), Counter[tuple]()
    else:
        edge = ranked[limit - 1][-1]
        must = Counter(r[:-1] for r in ranked if r[-1] < edge)
        tied = Counter(r[:-1] for r in ranked if r[-1] == edge)
    rest = got - must
    ok = sum(got.values()) == min(limit, len(ranked)) and not (must - got) and not (rest - tied)
    if not ok:
        raise AssertionError(
            f"MV {mv} differs from PostgreSQL's top {limit}: {sum(got.values())} rows; missing "
            f"{sorted(must - got, key=_key)[:5]}, unexpected {sorted(rest - tied, key=_key)[:5]}")
    return sum(got.values())


def check_views(rs: psycopg.Connection, pg: psycopg.Connection, views: dict[str, str],
                oracle: dict[str, str]) -> list[str]:
    """Each created view (name -> MV) against PostgreSQL's answer to its oracle query; the failures."""
    failures = []
    for name, mv in views.items():
        query = oracle[name]
        try:
            (assert_same_top_n if _LIMIT.search(query) else assert_same)(rs, pg, mv, query)
        except AssertionError as e:
            failures.append(f"{name}: {e}")
        except psycopg.Error as e:
            failures.append(f"{name}: reading the MV failed: {e.sqlstate} {e}")
    return failures


def empty_answers(pg: psycopg.Connection, oracle: dict[str, str]) -> list[str]:
    """The queries whose PostgreSQL answer has no row with a non-NULL value: data that misses
    their filters (the generated data should reach every query)."""
    return [name for name, q in oracle.items()
            if not any(v is not None for r in pg.execute(q).fetchall() for v in r)]
