"""The edges of ``substring`` (and its pattern form), ``sqrt``, ``ln``/``log``, ``power`` and ``exp`` in batch queries
(`frontend.catalog.strict_functions`) against PostgreSQL (the oracle): values where it answers, the
same SQLSTATE where it fails."""

from __future__ import annotations

import psycopg
from catalog_session import make_session

from risingspark.errors import RisingSparkError

VALUES = ["substr('hello', -1, 3)", "substring('hello', -3)", "substr('hello', 0, 3)", "substr('hello', 2, 0)",
          "substr('hello', -5, 7)", "substr('hello', 7)", "substr('hello', 2)", "substr('hello', 2, 2)",
          "substring('hello' FROM -1 FOR 4)", "substr('hello', NULL, 2)", "substr('hello', 2, NULL)",
          "sqrt(4.0)", "ln(1.0)", "log(100.0)", "log(2.0, 8.0)", "power(-8.0, 3)", "power(2.0, -1)", "exp(1.0)",
          "sqrt(0.0)",
          # a quoted start is a POSIX regular expression (PostgreSQL resolves it to text), quoted with a
          # count not quoted a position
          "substring('abc2d', '2')", "substring('abcdef' FROM 'c.')", "substring('abc', '(b.)')",
          "substring('abc', 'x')", "substring(NULL, 'a')", "substring('abc', '(a|x)c?')", "substring('abcdef', '2', 3)",
          "substring('ab12cd', '[0-9]+')", "substr('abcdef', '2')", "substring('a2b', 'a(.)'::varchar)"]
ERRORS = ["substr('hello', 2, -1)", "sqrt(-1.0)", "ln(0.0)", "ln(-1.0)", "log(-1.0)", "log(0.0)",
          "power(0.0, -1)", "power(-8.0, 0.5)", "exp(1000::float8)"]


def test_values_and_errors_are_postgresqls(oracle_dsn: str):
    session = make_session()
    query = "SELECT " + ", ".join(f"{v} AS c{i}" for i, v in enumerate(VALUES))
    got = list(session.run_batch(session.parse_sql(query)).to_pylist()[0].values())
    with psycopg.connect(oracle_dsn, autocommit=True) as pg:
        want = list(pg.execute(query).fetchone())
        assert [float(g) if isinstance(g, float) else g for g in got] == \
            [float(w) if w is not None and not isinstance(w, str) else w for w in want]
        for call in ERRORS:
            try:
                pg.execute(f"SELECT {call}")
                raise AssertionError(f"PostgreSQL answered {call}")
            except psycopg.Error as e:
                want_state = e.sqlstate
            try:
                session.run_batch(session.parse_sql(f"SELECT {call}"))
                raise AssertionError(f"{call} answered")
            except RisingSparkError as e:
                assert e.sqlstate == want_state, call


def test_the_sql_regular_expression_form_and_optional_groups_are_not_supported():
    # (PostgreSQL answers both: 0A000 rather than another answer)
    session = make_session()
    for call in ("substring('ab2c', '2', '3')", "substring('abc', '(x)?a')"):
        try:
            session.run_batch(session.parse_sql(f"SELECT {call}"))
            raise AssertionError(f"{call} answered")
        except RisingSparkError as e:
            assert e.sqlstate == "0A000", call
