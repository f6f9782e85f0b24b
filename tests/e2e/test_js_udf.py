"""JavaScript user-defined functions (``CREATE FUNCTION ... LANGUAGE javascript``) in materialized
views and batch queries, compared with PostgreSQL.

PostgreSQL gets equivalent functions in SQL. A JavaScript function is called on NULL input (as
RisingWave's): ``count_char`` of NULL throws in JavaScript, which a streaming job turns into NULL
(the row's error is logged), as PostgreSQL's SQL function returns NULL for it; a batch query fails
instead (38000, with the JavaScript error).
"""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from conftest import PlaygroundProcess, unique_name
from support.oracle import assert_same, copy_table

pytestmark = pytest.mark.e2e

COUNT_CHAR_JS = """CREATE FUNCTION {name}(s varchar, c varchar) RETURNS int LANGUAGE javascript AS $$
  var count = 0;
  for (var cur of s) { if (cur == c) { count++; } }
  return count;
$$"""
COUNT_CHAR_PG = ("CREATE FUNCTION {name}(s text, c text) RETURNS int AS "
                 "$$ SELECT ((length(s) - length(replace(s, c, ''))) / length(c))::int $$ LANGUAGE sql")
MIX_JS = """CREATE FUNCTION {name}(a bigint, b double precision, f boolean) RETURNS double precision
LANGUAGE javascript AS '
  if (a === null || b === null || f === null) return null;
  return f ? a * b : a + b;
'"""
MIX_PG = ("CREATE FUNCTION {name}(a bigint, b double precision, f boolean) RETURNS double precision AS "
          "$$ SELECT CASE WHEN f THEN a * b ELSE a + b END $$ LANGUAGE sql")
WORDS = ["cat", "chocolate", "", "abc", "ccc", "xyz", "façade c", "😀c😀c", None]


def _row(i: int) -> str:
    w = WORDS[i % len(WORDS)]
    s = "NULL" if w is None else "'" + (w * (1 + i % 3)) + "'"
    return f"({i}, {s}, {i * 7 % 1000 - 300}, {i % 13 / 4}, {'true' if i % 2 else 'false'})"


def _dml(dsn: str, t: str, stop: threading.Event, errors: list[BaseException]) -> None:
    try:
        with psycopg.connect(dsn, autocommit=True) as c:
            i = 10_000
            while not stop.is_set():
                c.execute(f"INSERT INTO {t} VALUES {_row(i)}, {_row(i + 1)}")
                c.execute(f"UPDATE {t} SET s = s || 'c' WHERE id = {i % 300}")
                c.execute(f"DELETE FROM {t} WHERE id = {(i * 7) % 300 + 1}")
                i += 2
                time.sleep(0.05)
    except BaseException as e:  # reported by the test
        errors.append(e)


def test_views_match_postgres(playground: PlaygroundProcess, oracle_dsn: str) -> None:
    t, cc, mix = unique_name("udf_t"), unique_name("count_char"), unique_name("mix")
    views = {
        f"{t}_counts": f"SELECT id, {cc}(s, 'c') AS c_counts, {cc}(s, 'a') + n AS a_plus_n FROM {t}",
        f"{t}_filtered": f"SELECT id, s FROM {t} WHERE {cc}(s, 'c') >= 2",
        f"{t}_mix": f"SELECT id, {mix}(n, x, f) AS m, {mix}(id, 0.5, true) AS half FROM {t}",
        f"{t}_groups": f"SELECT {cc}(s, 'c') AS c, count(*) AS rows_, sum(n) AS total FROM {t} "
                       f"GROUP BY {cc}(s, 'c')",
    }
    with playground.connect() as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        conn.execute(COUNT_CHAR_JS.replace("{name}", cc))
        conn.execute(MIX_JS.replace("{name}", mix))
        pg.execute(COUNT_CHAR_PG.replace("{name}", cc))
        pg.execute(MIX_PG.replace("{name}", mix))
        conn.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, s VARCHAR, n INT, x DOUBLE PRECISION, f BOOLEAN)")
        conn.execute(f"INSERT INTO {t} VALUES " + ", ".join(_row(i) for i in range(3000)))
        conn.execute("FLUSH")

        stop, errors = threading.Event(), []
        writer = threading.Thread(target=_dml, args=(playground.dsn, t, stop, errors))
        writer.start()
        try:
            conn.execute("SET backfill_rate_limit = 1000")  # the backfill spans epochs of changes
            conn.execute("SET background_ddl = true")
            for name, q in views.items():
                conn.execute(f"CREATE MATERIALIZED VIEW {name} AS {q}")
            conn.execute("SET backfill_rate_limit = DEFAULT")
            time.sleep(3)
            for name in views:
                conn.execute(f"ALTER MATERIALIZED VIEW {name} SET BACKFILL_RATE_LIMIT = DEFAULT")
            conn.execute("WAIT")
            time.sleep(1)
        finally:
            stop.set()
            writer.join(60)
        assert not errors, errors
        conn.execute("FLUSH")

        copy_table(conn, pg, t)
        for name, q in views.items():
            assert assert_same(conn, pg, name, q) > 0, name
        # a batch query over the table (NULL rows left out: they fail a batch query) and a constant call
        q = f"SELECT id, {cc}(s, 'c'), {mix}(n, x, f) FROM {t} WHERE s IS NOT NULL"
        assert sorted(conn.execute(q).fetchall()) == sorted(pg.execute(q).fetchall())
        assert conn.execute(f"SELECT {cc}('abcabc', 'c'), {cc}('', 'c')").fetchone() == (2, 0)

        with pytest.raises(psycopg.errors.DependentObjectsStillExist):
            conn.execute(f"DROP FUNCTION {cc}")
        for name in views:
            conn.execute(f"DROP MATERIALIZED VIEW {name}")
        conn.execute(f"DROP FUNCTION {cc}(varchar, varchar)")
        conn.execute(f"DROP FUNCTION {mix}")
        conn.execute(f"DROP TABLE {t}")


def test_batch_errors_and_catalog(playground: PlaygroundProcess) -> None:
    cc, boom = unique_name("count_char"), unique_name("boom")
    with playground.connect() as conn:
        conn.execute(COUNT_CHAR_JS.replace("{name}", cc))
        conn.execute(f"CREATE FUNCTION {boom}(x int) RETURNS int LANGUAGE javascript AS "
                     f"$$ if (x > 1) {{ throw new Error('too big: ' + x); }} return x + 1; $$")
        assert conn.execute(f"SELECT {boom}(1)").fetchone() == (2,)
        with pytest.raises(psycopg.errors.ExternalRoutineException, match="too big: 5"):
            conn.execute(f"SELECT {boom}(5)")
        with pytest.raises(psycopg.errors.ExternalRoutineException, match="TypeError"):
            conn.execute(f"SELECT {cc}(NULL, 'c')")
        with pytest.raises(psycopg.errors.UndefinedFunction):
            conn.execute(f"SELECT {cc}(1, 'c')")  # no implicit cast from integer to varchar
        conn.execute(f"CREATE TABLE {boom}_t (i INT)")
        with pytest.raises(psycopg.errors.UndefinedFunction):
            conn.execute(f"CREATE MATERIALIZED VIEW {boom}_mv AS SELECT {cc}(i, 'c') AS c FROM {boom}_t")
        conn.execute(f"DROP TABLE {boom}_t")

        rows = conn.execute("SELECT name, type, arg_type_ids, return_type_id, language FROM rw_catalog.rw_functions "
                            "WHERE name IN (%s, %s) ORDER BY name", (boom, cc)).fetchall()
        assert rows == sorted([(cc, "udf", [1043, 1043], 23, "javascript"), (boom, "udf", [23], 23, "javascript")])

        with pytest.raises(psycopg.errors.DuplicateFunction):
            conn.execute(COUNT_CHAR_JS.replace("{name}", cc))
        conn.execute(COUNT_CHAR_JS.replace("{name}", cc).replace("CREATE FUNCTION", "CREATE FUNCTION IF NOT EXISTS"))
        with pytest.raises(psycopg.errors.FeatureNotSupported, match="language python"):
            conn.execute("CREATE FUNCTION py_f(x int) RETURNS int LANGUAGE python AS $$\ndef py_f(x): return x\n$$")
        with pytest.raises(psycopg.errors.FeatureNotSupported, match="jsonb"):
            conn.execute("CREATE FUNCTION js_j(x jsonb) RETURNS int LANGUAGE javascript AS $$ return 1; $$")
        with pytest.raises(psycopg.errors.SyntaxError):
            conn.execute("CREATE FUNCTION js_bad(x int) RETURNS int LANGUAGE javascript AS $$ return ( ; $$")
        with pytest.raises(psycopg.errors.UndefinedFunction):
            conn.execute("DROP FUNCTION no_such_function")
        with pytest.raises(psycopg.errors.UndefinedFunction):
            conn.execute(f"DROP FUNCTION {cc}(int)")
        conn.execute("DROP FUNCTION IF EXISTS no_such_function")
        conn.execute(f"DROP FUNCTION {boom}, {cc}")
        assert conn.execute("SELECT count(*) FROM rw_catalog.rw_functions WHERE name IN (%s, %s)",
                            (boom, cc)).fetchone() == (0,)
