"""Table kinds, as RisingWave's: ON CONFLICT behaviours of a table with a primary key (PostgreSQL's
``INSERT ... ON CONFLICT`` gives the oracle's rows, one statement per row, as RisingWave applies
them in order), APPEND ONLY tables (inserts only; the planner keeps no input state for min and max
over them), MVs created over such tables then changed, and the errors."""

from __future__ import annotations

import random

import psycopg
import pytest
from psycopg import errors

from conftest import PlaygroundProcess, unique_name
from support.oracle import assert_same

pytestmark = pytest.mark.e2e

# the clause, and PostgreSQL's INSERT that gives the same rows
BEHAVIOURS = {
    "": "ON CONFLICT (k) DO UPDATE SET a = EXCLUDED.a, b = EXCLUDED.b",
    "ON CONFLICT OVERWRITE": "ON CONFLICT (k) DO UPDATE SET a = EXCLUDED.a, b = EXCLUDED.b",
    "ON CONFLICT IGNORE": "ON CONFLICT (k) DO NOTHING",
    "ON CONFLICT DO NOTHING": "ON CONFLICT (k) DO NOTHING",
    "ON CONFLICT DO UPDATE IF NOT NULL": "ON CONFLICT (k) DO UPDATE SET a = COALESCE(EXCLUDED.a, {t}.a), "
                                         "b = COALESCE(EXCLUDED.b, {t}.b)",
}
MVS = {
    "rows": "SELECT k, a, b FROM {t} WHERE k % 4 <> 3",
    "groups": "SELECT a % 5 AS g, count(*) AS n, count(b) AS nb, max(b) AS mb, min(k) AS mk FROM {t} GROUP BY a % 5",
}


def _random_rows(rng: random.Random, n: int) -> list[tuple]:
    return [(rng.randint(1, 40), rng.choice([None, rng.randint(0, 99)]), rng.choice([None, "p", "q", "r", "s"]))
            for _ in range(n)]


def _values(rows: list[tuple]) -> str:
    return ", ".join("(" + ", ".join("NULL" if v is None else repr(v) for v in r) + ")" for r in rows)


@pytest.mark.parametrize("clause", list(BEHAVIOURS))
def test_on_conflict_matches_postgres(playground: PlaygroundProcess, oracle_dsn: str, clause: str) -> None:
    t = unique_name("kinds")
    rng = random.Random(len(clause))
    with playground.connect() as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        conn.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, a INT, b VARCHAR) {clause}")
        pg.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, a INT, b VARCHAR)")
        upsert = f"INSERT INTO {t} VALUES (%s, %s, %s) " + BEHAVIOURS[clause].format(t=t)

        def insert(rows: list[tuple]) -> None:
            conn.execute(f"INSERT INTO {t} VALUES {_values(rows)}")  # repeated keys in one statement
            with pg.cursor() as cur:
                cur.executemany(upsert, rows)

        insert(_random_rows(rng, 30))
        conn.execute("FLUSH")
        for name, q in MVS.items():  # created over existing rows, then changed
            conn.execute(f"CREATE MATERIALIZED VIEW {t}_{name} AS {q.format(t=t)}")
        for _ in range(4):
            insert(_random_rows(rng, 25))
            insert(_random_rows(rng, 5))
            for sql in (f"UPDATE {t} SET b = NULL WHERE k % 7 = {rng.randint(0, 6)}",
                        f"UPDATE {t} SET a = a + 1 WHERE k % 5 = {rng.randint(0, 4)}",
                        f"DELETE FROM {t} WHERE k % 6 = {rng.randint(0, 5)}"):
                conn.execute("FLUSH")  # UPDATE and DELETE read the committed rows
                conn.execute(sql)
                pg.execute(sql)
            conn.execute("FLUSH")
        assert assert_same(conn, pg, t, f"SELECT * FROM {t}") > 0
        for name, q in MVS.items():
            assert assert_same(conn, pg, f"{t}_{name}", q.format(t=t)) > 0


def test_append_only_table(playground: PlaygroundProcess, oracle_dsn: str) -> None:
    t = unique_name("clicks")
    rng = random.Random(3)
    with playground.connect() as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        conn.execute(f"CREATE TABLE {t} (page VARCHAR, user_id INT, ms DOUBLE PRECISION) APPEND ONLY")
        pg.execute(f"CREATE TABLE {t} (page VARCHAR, user_id INT, ms DOUBLE PRECISION)")

        def insert(n: int) -> None:
            rows = [(rng.choice(["a", "b", "c", None]), rng.randint(1, 9), rng.choice([None, rng.uniform(0, 100)]))
                    for _ in range(n)]
            conn.execute(f"INSERT INTO {t} VALUES {_values(rows)}")
            with pg.cursor() as cur:
                cur.executemany(f"INSERT INTO {t} VALUES (%s, %s, %s)", rows)

        insert(200)
        conn.execute("FLUSH")
        agg = f"SELECT page, min(ms) AS fastest, max(ms) AS slowest, max(user_id) AS u, count(*) AS n FROM {t} " \
              f"GROUP BY page"
        plan = [r[0] for r in conn.execute(f"EXPLAIN CREATE MATERIALIZED VIEW x AS {agg}").fetchall()]
        assert any(line.lstrip("└─ ").startswith("StreamHashAgg [in_append_only]") for line in plan), plan
        conn.execute(f"CREATE MATERIALIZED VIEW {t}_agg AS {agg}")
        # min and max keep no input state: the job's state tables are its own and the agg's
        tables = conn.execute("SELECT f.state_table_ids FROM rw_catalog.rw_fragments f JOIN rw_catalog.rw_relations r "
                              "ON f.table_id = r.id WHERE r.name = %s", (f"{t}_agg",)).fetchone()
        assert tables is not None and len(tables[0]) == 2, tables
        # a filter keeps the view append-only; an MV on it plans over an append-only input again
        fast = f"SELECT page, user_id, ms FROM {t} WHERE ms < 50"
        plan = [r[0] for r in conn.execute(f"EXPLAIN CREATE MATERIALIZED VIEW x AS {fast}").fetchall()]
        assert plan[0].startswith("StreamMaterialize [append_only]"), plan
        conn.execute(f"CREATE MATERIALIZED VIEW {t}_fast AS {fast}")
        on_mv = f"SELECT user_id, max(ms) AS m FROM {t}_fast GROUP BY user_id"
        plan = [r[0] for r in conn.execute(f"EXPLAIN CREATE MATERIALIZED VIEW x AS {on_mv}").fetchall()]
        assert any("StreamHashAgg [in_append_only]" in line for line in plan), plan
        conn.execute(f"CREATE MATERIALIZED VIEW {t}_on_mv AS {on_mv}")
        for _ in range(3):
            insert(60)
            conn.execute("FLUSH")
        assert assert_same(conn, pg, f"{t}_agg", agg) > 0
        assert assert_same(conn, pg, f"{t}_fast", fast) > 0
        assert assert_same(conn, pg, f"{t}_on_mv", on_mv.replace(f"{t}_fast", f"({fast}) f")) > 0
        for sql in (f"UPDATE {t} SET ms = 0", f"DELETE FROM {t} WHERE ms > 1"):
            with pytest.raises(errors.FeatureNotSupported, match="append-only table does not support update or delete"):
                conn.execute(sql)


def test_append_only_table_with_primary_key_ignores_conflicts(conn: psycopg.Connection) -> None:
    t = unique_name("ao_pk")
    conn.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v VARCHAR) APPEND ONLY")
    conn.execute(f"INSERT INTO {t} VALUES (1, 'first'), (2, 'x'), (1, 'second')")
    conn.execute("FLUSH")
    conn.execute(f"INSERT INTO {t} VALUES (2, 'later')")
    conn.execute("FLUSH")
    assert conn.execute(f"SELECT k, v FROM {t} ORDER BY k").fetchall() == [(1, "first"), (2, "x")]
    definition = conn.execute("SELECT definition FROM rw_catalog.rw_tables WHERE name = %s", (t,)).fetchone()
    assert definition is not None and "APPEND ONLY" in definition[0]


@pytest.mark.parametrize(("sql", "error", "message"), [
    ("CREATE TABLE {t} (k INT PRIMARY KEY) APPEND ONLY ON CONFLICT OVERWRITE", errors.SyntaxError,
     "the ON CONFLICT behavior must be DO NOTHING"),
    ("CREATE TABLE {t} (k INT PRIMARY KEY, v INT) ON CONFLICT DO UPDATE SET v = 1", errors.SyntaxError,
     "syntax error"),
    ("CREATE TABLE {t} (k INT PRIMARY KEY, v INT) ON CONFLICT OVERWRITE WITH VERSION COLUMN (v)",
     errors.FeatureNotSupported, "WITH VERSION COLUMN"),
    ("CREATE TABLE {t} (k INT PRIMARY KEY, v INT) ON CONFLICT", errors.SyntaxError, "syntax error"),
])
def test_table_kind_errors(conn: psycopg.Connection, sql: str, error: type[Exception], message: str) -> None:
    t = unique_name("bad_kind")
    with pytest.raises(error, match=message):
        conn.execute(sql.format(t=t))
    assert conn.execute("SELECT count(*) FROM rw_catalog.rw_tables WHERE name = %s", (t,)).fetchone() == (0,)
