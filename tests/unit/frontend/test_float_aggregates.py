"""Overflow of ``sum``, ``avg``, the variances and standard deviations of reals and doubles in batch queries
(`frontend.catalog.float_aggregates`) against PostgreSQL (the oracle): 22003 where finite rows give an infinite
sum (``float8pl``, ``float4pl``) or, for ``avg``, ``variance``, ``stddev``... of doubles, an infinite sum of squared
deviations (``float8_accum``); infinite rows,
NaN, DISTINCT, FILTER, windows and groups as PostgreSQL's."""

from __future__ import annotations

import math

import psycopg
import pytest
from catalog_session import batch_rows, fail_both, make_session

BIG = "(VALUES (1e308::float8), (1e308::float8)) v(x)"
ERRORS = [f"SELECT sum(x) FROM {BIG}", f"SELECT avg(x) FROM {BIG}",
          "SELECT sum(x) FROM (VALUES (3e38::real), (3e38::real)) v(x)",
          "SELECT sum(x) FROM (VALUES (1e308::float8), (1e308::float8), (-1e308::float8)) v(x)",
          "SELECT avg(x) FROM (VALUES (1e300::float8), (-1e300::float8)) v(x)",
          "SELECT avg(x) FROM (VALUES (1e160::float8), (0::float8)) v(x)", f"SELECT sum(x) * 2 FROM {BIG}",
          "SELECT sum(x * 2) FROM (VALUES (1e308::float8)) v(x)", f"SELECT sum(x) OVER (ORDER BY x) FROM {BIG}",
          "SELECT sum(x) FILTER (WHERE x > 0) FROM (VALUES (1e308::float8), (1e308::float8), (-1e308::float8)) v(x)",
          "SELECT g, sum(x) FROM (VALUES (1, 1e308::float8), (1, 1e308::float8), (2, 1::float8)) v(g, x) GROUP BY g",
          "SELECT g FROM (VALUES (1, 1e308::float8), (1, 1e308::float8)) v(g, x) GROUP BY g HAVING sum(x) > 0",
          f"WITH c AS (SELECT x FROM {BIG}) SELECT avg(y) FROM (SELECT x AS y FROM c) s",
          "SELECT sum(x::float8) FROM (VALUES ('1e308'), ('1e308')) v(x)",
          # (an aggregate of an aggregate: the inner one's check too)
          "SELECT g, sum(sum(x)) OVER () FROM (VALUES (1, 1e308::float8), (1, 1e308::float8), (2, 1::float8)) v(g, x) "
          "GROUP BY g",
          # (variances and standard deviations: float8_accum, as avg)
          *[f"SELECT {f}(x) FROM (VALUES (1e300::float8), (-1e300::float8)) v(x)"
            for f in ("stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop")],
          f"SELECT variance(x) FROM {BIG}", "SELECT stddev_pop(x) FROM (VALUES (1e160::float8), (0::float8)) v(x)",
          f"SELECT var_samp(x) OVER () FROM {BIG}",
          "SELECT g, stddev(x) FILTER (WHERE x <> 0) FROM (VALUES (1, 1e300::float8), (1, -1e300::float8), "
          "(2, 1::float8)) v(g, x) GROUP BY g"]
ANSWERS = ["SELECT avg(x) FROM (VALUES (3e38::real), (3e38::real)) v(x)",
           "SELECT sum(x), avg(x) FROM (VALUES (1e308::float8), ('Infinity'::float8)) v(x)",
           "SELECT sum(x) FROM (VALUES ('NaN'::float8), (1e308::float8)) v(x)",
           f"SELECT sum(x) OVER (ORDER BY x ROWS BETWEEN CURRENT ROW AND CURRENT ROW) FROM {BIG}",
           f"SELECT sum(DISTINCT x), avg(DISTINCT x) FROM {BIG}",
           "SELECT sum(x), avg(x) FROM (VALUES (1.5::float8), (2::float8)) v(x) WHERE false",
           "SELECT sum(x), avg(x), sum(y), avg(y) FROM (VALUES (1.5::float8, 1::real), (NULL, 2::real), (NULL, NULL)) v(x, y)",
           "SELECT sum(x) FROM (VALUES (1::real), (2::real)) v(x)",
           "SELECT stddev(x), var_pop(x) FROM (VALUES (3e38::real), (-3e38::real)) v(x)",
           "SELECT stddev(x), variance(x) FROM (VALUES (1e300::float8), ('Infinity'::float8)) v(x)",
           "SELECT stddev(x), var_samp(x), stddev_pop(x) FROM (VALUES (1e150::float8), (-1e150::float8)) v(x)",
           "SELECT stddev(x), var_pop(x) FROM (VALUES (1e308::float8)) v(x)",
           f"SELECT stddev(DISTINCT x), var_pop(DISTINCT x) FROM {BIG}"]


@pytest.mark.parametrize("query", ERRORS)
def test_overflow_fails_as_in_postgresql(oracle_dsn: str, query: str) -> None:
    got, want = fail_both(oracle_dsn, query)
    assert (got.sqlstate, got.message) == (want.sqlstate, want.diag.message_primary)


def _same(x: object, y: object) -> bool:
    if x is None or y is None:
        return x is y
    assert isinstance(x, float)
    return math.isnan(x) if math.isnan(float(y)) else math.isclose(x, float(y), rel_tol=1e-7)  # type: ignore[arg-type]


@pytest.mark.parametrize("query", ANSWERS)
def test_answers_as_in_postgresql(oracle_dsn: str, query: str) -> None:
    got = batch_rows(make_session(), query)
    with psycopg.connect(oracle_dsn, autocommit=True) as pg:
        want = pg.execute(query).fetchall()
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert all(_same(a, b) for a, b in zip(g, w, strict=True)), (g, w)
