"""A batch query's result in the binder's (PostgreSQL's) types where DuckDB's differ
(`frontend.batch_types`): the casts themselves, and a session's queries over an in-memory catalog."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest
from catalog_session import make_session

from frontend.batch_types import conform, conform_schema
from frontend.binder import QueryBinder
from risingspark.errors import NumericValueOutOfRange

NUMERIC = pa.decimal128(38, 10)


def table(**cols: pa.Array) -> pa.Table:
    return pa.table(cols)


def test_a_hugeint_sum_becomes_the_bigint_postgresql_gives():
    t = conform(table(s=pa.array([Decimal(3), None], pa.decimal128(38, 0))), (pa.int64(),))
    assert t.schema.types == [pa.int64()] and t.column(0).to_pylist() == [3, None]


def test_a_double_average_becomes_a_numeric_rounded_to_its_scale():
    t = conform(table(a=pa.array([1 / 3, 1.5])), (NUMERIC,))
    assert t.schema.types == [NUMERIC]
    assert t.column(0).to_pylist() == [Decimal("0.3333333333"), Decimal("1.5000000000")]


def test_a_double_sum_of_reals_becomes_a_real():
    assert conform(table(s=pa.array([2.0])), (pa.float32(),)).schema.types == [pa.float32()]


def test_a_sum_past_bigint_is_22003_as_in_postgresql():
    with pytest.raises(NumericValueOutOfRange, match="bigint out of range") as e:
        conform(table(s=pa.array([Decimal(2**63)], pa.decimal128(38, 0))), (pa.int64(),))
    assert e.value.sqlstate == "22003"


def test_other_differences_and_unbound_queries_keep_duckdbs_types():
    t = table(v=pa.array(["1"]), d=pa.array([1.5]), i=pa.array([1], pa.int32()))
    # a string is not cast to an integer, a double not to a bigint, an integer not to a double
    assert conform(t, (pa.int64(), pa.int64(), pa.float64())) is t
    assert conform(t, None) is t
    assert conform(t, (pa.int64(),)) is t  # the binder's column count differs: nothing is cast
    assert conform_schema(t.schema, (None, NUMERIC, None)).types == [pa.string(), NUMERIC, pa.int32()]


QUERY = "SELECT customer, sum(customer) AS s, avg(amount) AS a, avg(customer) AS ai, count(*) AS n FROM orders " \
        "GROUP BY customer"


def test_a_clients_query_is_described_and_run_in_the_binders_types():
    session = make_session()
    ast = session.parse_sql(QUERY)
    want = [pa.int32(), pa.int64(), NUMERIC, NUMERIC, pa.int64()]
    assert session.result_schema(ast).schema.types == want
    assert session.run_batch(ast, typed=True).schema.types == want
    # what DuckDB gives by itself: the sum a HUGEINT, the averages doubles
    assert session.run_batch(ast).schema.types == [pa.int32(), pa.decimal128(38, 0), pa.float64(), pa.float64(),
                                                   pa.int64()]


def test_a_query_the_binder_cannot_type_runs_with_duckdbs_types(monkeypatch):
    session = make_session()
    # a FROM-less SELECT is not a materialized view's query: DuckDB's double stays
    assert session.run_batch(session.parse_sql("SELECT 7.0 / 2 AS q"), typed=True).to_pylist() == [{"q": 3.5}]

    def broken(self, node):
        raise KeyError("a binder bug")

    monkeypatch.setattr(QueryBinder, "query", broken)
    out = session.run_batch(session.parse_sql(QUERY), typed=True)
    assert out.schema.types[1] == pa.decimal128(38, 0)  # ran, in DuckDB's types
