"""Materialized views answer ``IS [NOT] DISTINCT FROM NULL`` (a bare NULL takes the other side's
type), ``trunc``, ``sqrt``, ``initcap``, ``starts_with`` and ``octet_length`` as PostgreSQL does —
after a backfill and after changes; so do a NULL cast to text, ``round`` and ``trunc`` with constant
places written as expressions, string functions of an untyped literal or NULL, ``abs``, ``ceil``,
``floor`` and ``round`` of any number or an untyped literal, ``||`` of text and any value, and ``||``
of arrays (concatenated, an element appended or prepended), ``substring(s FROM pattern)`` (a
quoted literal or text there is a regular expression, as PostgreSQL resolves it), a double's or a
real's text (PostgreSQL's layout: ``2``, ``1e+300``), ``concat_ws``. A negative
``sqrt`` argument or the smallest integer's ``abs``, an error in PostgreSQL, gives NULL in a view
(as every error on a row of a streaming expression), compared with PostgreSQL's answer for the
query that says so. What
PostgreSQL rejects (a NULL or a literal cast to text compared with a number, a string function of a
number, ``round`` of a double to places, ``||`` of two numbers) fails CREATE MATERIALIZED VIEW with
PostgreSQL's SQLSTATE and message."""

from __future__ import annotations

import psycopg
import pytest

from conftest import PlaygroundProcess, unique_name
from support.oracle import assert_same, copy_table

pytestmark = pytest.mark.e2e

COLUMNS = ("id INT PRIMARY KEY, n NUMERIC, nc NUMERIC(10, 2), d DOUBLE PRECISION, r REAL, k INT, s VARCHAR, "
           "p VARCHAR, ts TIMESTAMP, b BOOLEAN")
BEFORE = [
    "(1, 2.789, 2.78, 2.7, 1.5, 3, 'straße', 'st', '2024-01-02 03:04:05', true)",
    "(2, -2.789, -2.78, -2.7, -1.5, -3, 'élan vital', 'él', '2024-01-03 00:00:00', false)",
    "(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    "(4, 125.5, 125.5, -0.5, 0.25, 0, 'hello-world foo_bar', 'hello', NULL, true)",
    "(5, -0.001, 0.01, 1e300, -0.75, 17, 'ßa 1st x2Y ÉCOLE İSTANBUL', '', '2024-02-29 12:00:00', NULL)",
    "(6, 0, 0, 12345678.9, 2.5, -17, 'ΟΔΟΣ ǅemal a😀b c' || chr(10) || 'd', 'ΟΔ', NULL, false)",
    "(7, 16, -16.25, 'Infinity', 100, 2147483647, '', 'x', '2024-03-01 00:00:00', true)",
]
AFTER = [
    "(8, -125.55, -125.55, '-Infinity', -2.5, -2147483648, '42nd street, o''neil''s', '42', NULL, NULL)",
    "(9, 99999.99999, 99999.99, 'NaN', NULL, NULL, 'ÉLAN--vital__X', NULL, '2024-04-01 00:00:00', true)",
]
CHANGES = ["UPDATE {t} SET n = -7.5, d = -7.5, k = NULL, s = 'gRÜẞE aus köln' WHERE id = 1",
           "UPDATE {t} SET p = NULL, s = NULL, ts = '2025-01-01 00:00:00' WHERE id = 2",
           "DELETE FROM {t} WHERE id = 4"]

NULL_TESTS = ("k IS NOT DISTINCT FROM NULL AS k_null, k IS DISTINCT FROM NULL AS k_set, "
              "n IS NOT DISTINCT FROM NULL AS n_null, NULL IS DISTINCT FROM nc AS nc_set, "
              "d IS DISTINCT FROM NULL AS d_set, r IS NOT DISTINCT FROM NULL AS r_null, "
              "s IS NOT DISTINCT FROM NULL AS s_null, ts IS DISTINCT FROM NULL AS ts_set, "
              "b IS NOT DISTINCT FROM NULL AS b_null")
NUMBERS = ("trunc(n) AS tn, trunc(n, 1) AS tn1, trunc(n, -1) AS tnm1, trunc(n, 3) AS tn3, trunc(nc, 1) AS tnc1, "
           "trunc(nc) AS tnc, trunc(d) AS td, trunc(r) AS tr, trunc(k) AS tk, trunc(k, -1) AS tkm1, "
           "sqrt(abs(n)) AS sn, sqrt(abs(nc)) AS snc, sqrt(abs(d)) AS sd, sqrt(abs(r)) AS sr, sqrt(abs(k::bigint)) AS sk")
STRINGS = ("initcap(s) AS ic, starts_with(s, p) AS sw, starts_with(s, 'st') AS swc, octet_length(s) AS ol, "
           "octet_length(p) AS olp")
# a NULL cast to text is text; constant places written as expressions; untyped literals and NULL
# as string functions' arguments
TYPED = ("NULL::text AS nt, COALESCE(s, NULL::text) AS cs, CASE WHEN b THEN p ELSE NULL::varchar END AS cb, "
         "s IS DISTINCT FROM NULL::text AS sd, trunc(n, 1 + 1) AS tn2, trunc(nc, '1'::int) AS tnc1, "
         "trunc(n, -(1)::smallint) AS tnm1, round(n, 2::smallint) AS rn2, round(nc, 3 - 4) AS rncm1, "
         "round(n, NULL) AS rnn, trunc(n, NULL::int) AS tnn, lower(NULL) AS ln, upper('abc') AS ua, "
         "length('straße') AS la, left(s, NULL) AS lsn, left(s, 2::smallint) AS ls2, lpad(p, 4, NULL) AS lpn")
# numeric functions of any number or an untyped literal (a double precision); ceil and floor of a
# double's infinities, NaN and magnitudes past a bigint's; || of text and another value; a literal
# cast to text as a constant
CALLS = ("abs('5') AS a5, ceil('2.5') AS c25, floor(NULL) AS fnl, round('2.5') AS r25, round(k) AS rk, "
         "ceil(d) AS cd, floor(d) AS fd, ceiling(r) AS cr, floor(r) AS fr, ceil(k) AS ck, floor(n) AS fn, abs(d) AS ad, "
         "abs(r) AS ar, 'a' || k AS ak, s || b AS sb, k || NULL AS kn, regexp_match(s, '(.)'::text) AS rm, "
         "round(n, '1'::text::int) AS rn1, substring(s, 'a') AS sa, substring(s FROM '[0-9]+') AS sdig, "
         "substring(s, '(.)a') AS sga, substring(s, 'l'::text) AS sl, substring(s, '2', 3) AS s23, "
         "d::text AS d_text, p || d AS p_d, r::varchar AS r_text, concat(p, r, d / 3) AS c_prd, (d / 7)::text AS d_7, (r * 1000000)::text AS r_big, "
         "concat_ws(',', s, b, k, NULL) AS cws, concat_ws(NULL, s) AS cwn, concat_ws(p, s, d) AS cwp")
# || of arrays: an element appended or prepended (NULL arrays and elements included), two arrays
# concatenated (either or both NULL), elements of another type made the common one
ARRAYS = ("regexp_match(s, '(.)(.)') || s AS ms, p || regexp_match(s, '(.)') AS pm, "
          "regexp_match(s, '^(s)') || regexp_match(s, '(l)') AS mm, regexp_match(s, '(o)') || NULL AS mn, "
          "regexp_match(s, '(.)') || NULL::text AS mnt")
ARRAY_AGGS = ("b, array_agg(k ORDER BY id) || array_agg(k::bigint ORDER BY id) AS cat, "
              "array_agg(k ORDER BY id) || 0 AS app, min(k) || array_agg(k ORDER BY id) AS pre, "
              "NULL || array_agg(s ORDER BY id) AS nc, array_agg(k ORDER BY id) || NULL::int AS an, "
              "array_agg(k ORDER BY id) || min(n) AS num, CASE WHEN b THEN array_agg(k ORDER BY id) END || 7 AS nap, "
              "CASE WHEN b THEN array_agg(s ORDER BY id) END || CASE WHEN NOT b THEN array_agg(p ORDER BY id) END AS cc")
# PostgreSQL's errors, which CREATE MATERIALIZED VIEW gives too
REJECTED = ("k = NULL::text", "k IS DISTINCT FROM NULL::varchar", "lower(k)", "length(123)", "upper(n)", "trim(k)",
            "left(s, 2::bigint)", "round(n, 2::bigint)", "trunc(n, 1 / 0)", "round(d, 2)", "round(r, 2)",
            "round(d, k)", "abs(s)", "ceil(s)", "floor(s)", "k || k", "k = 'abc'::text")
# PostgreSQL's answer, 0A000 here (so CREATE fails rather than answering otherwise): the SQL regular
# expression form of substring, and a pattern that is not a constant
UNSUPPORTED = ("substring(s, 'a', '#')", "substring(s, '2', '3')", "substring(s, s)")


def test_null_tests_and_functions_in_a_view_are_postgresqls(playground: PlaygroundProcess, oracle_dsn: str) -> None:
    t = unique_name("mvf_t")
    views = {
        unique_name("mvf_all"): f"SELECT id, {NULL_TESTS}, {NUMBERS}, {STRINGS} FROM {t}",
        unique_name("mvf_typed"): f"SELECT id, {TYPED} FROM {t}",
        unique_name("mvf_calls"): f"SELECT id, {CALLS} FROM {t}",
        unique_name("mvf_arrays"): f"SELECT id, {ARRAYS} FROM {t}",
        unique_name("mvf_array_aggs"): f"SELECT {ARRAY_AGGS} FROM {t} GROUP BY b",
        # in a filter too, and over an expression's result
        unique_name("mvf_where"): f"SELECT id, s FROM {t} WHERE k IS NOT DISTINCT FROM NULL "
                                  f"OR trunc(d) IS DISTINCT FROM NULL AND starts_with(initcap(s), 'S')",
    }
    # sqrt of a negative number, abs of the smallest integer: NULL in a view, an error (2201F, 22003)
    # in PostgreSQL
    negative = unique_name("mvf_sqrt")
    view_of_negative = (f"SELECT id, sqrt(n) AS sn, sqrt(nc) AS snc, sqrt(d) AS sd, sqrt(r) AS sr, sqrt(k) AS sk, "
                        f"abs(k) AS ak FROM {t}")
    postgres_of_negative = ("SELECT id, CASE WHEN n >= 0 THEN sqrt(n) END, CASE WHEN nc >= 0 THEN sqrt(nc) END, "
                            "CASE WHEN d >= 0 THEN sqrt(d) END, CASE WHEN r >= 0 THEN sqrt(r) END, "
                            f"CASE WHEN k >= 0 THEN sqrt(k) END, CASE WHEN k > -2147483648 THEN abs(k) END FROM {t}")
    with playground.connect() as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        conn.execute(f"CREATE TABLE {t} ({COLUMNS})")
        conn.execute(f"INSERT INTO {t} VALUES {', '.join(BEFORE)}")
        conn.execute("FLUSH")
        for m, query in views.items():
            conn.execute(f"CREATE MATERIALIZED VIEW {m} AS {query}")
        conn.execute(f"CREATE MATERIALIZED VIEW {negative} AS {view_of_negative}")
        conn.execute(f"INSERT INTO {t} VALUES {', '.join(AFTER)}")
        conn.execute("FLUSH")
        for change in CHANGES:
            conn.execute(change.format(t=t))
        conn.execute("FLUSH")
        copy_table(conn, pg, t)
        for m, query in views.items():
            assert assert_same(conn, pg, m, query) > 0
        assert assert_same(conn, pg, negative, postgres_of_negative) == 8
        assert conn.execute(f"SELECT sn, sd, sk FROM {negative} WHERE id = 2").fetchone() == (None, None, None)
        assert conn.execute(f"SELECT ak FROM {negative} WHERE id = 8").fetchone() == (None,)


def test_what_postgresql_rejects_fails_create(playground: PlaygroundProcess, oracle_dsn: str) -> None:
    t = unique_name("mvf_e")
    with playground.connect() as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        conn.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, k INT, n NUMERIC, s VARCHAR, d DOUBLE PRECISION, r REAL)")
        copy_table(conn, pg, t)
        for expr in REJECTED:
            with pytest.raises(psycopg.Error) as want:
                pg.execute(f"SELECT {expr} FROM {t}")
            with pytest.raises(type(want.value)) as got:
                conn.execute(f"CREATE MATERIALIZED VIEW {unique_name('mvf_e')} AS SELECT {expr} AS x FROM {t}")
            # (text is character varying here)
            assert got.value.diag.message_primary == \
                str(want.value.diag.message_primary).replace(" text", " character varying"), expr
        # what PostgreSQL answers and a view here cannot: 0A000, nothing answered otherwise
        for expr in UNSUPPORTED:
            pg.execute(f"SELECT {expr} FROM {t}")  # (an answer in PostgreSQL)
            with pytest.raises(psycopg.errors.FeatureNotSupported, match="substring"):
                conn.execute(f"CREATE MATERIALIZED VIEW {unique_name('mvf_e')} AS SELECT {expr} AS x FROM {t}")
        # a column as the places: Spark's scale must be a constant
        for name in ("round", "trunc"):
            with pytest.raises(psycopg.errors.FeatureNotSupported, match="needs a constant n"):
                conn.execute(f"CREATE MATERIALIZED VIEW {unique_name('mvf_e')} AS SELECT {name}(n, k) FROM {t}")
