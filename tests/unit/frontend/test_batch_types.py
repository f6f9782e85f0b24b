"""A batch query's result in the binder's (PostgreSQL's) types where DuckDB's differ
(`frontend.batch_types`): the casts themselves, and a session's queries over an in-memory catalog."""

from __future__ import annotations

import asyncio
import datetime
from decimal import Decimal

import pyarrow as pa
import pytest
from catalog_session import make_session

from frontend.batch_types import _renamed_repeats, conform
from frontend.binder import QueryBinder
from risingspark.errors import NumericValueOutOfRange

NUMERIC = pa.decimal128(38, 10)


def table(**cols: pa.Array) -> pa.Table:
    return pa.table(cols)


def test_a_hugeint_sum_becomes_the_bigint_postgresql_gives():
    t = conform(table(s=pa.array([Decimal(3), None], pa.decimal128(38, 0))), (("s", pa.int64()),))
    assert t.schema.types == [pa.int64()] and t.column(0).to_pylist() == [3, None]


def test_a_double_average_becomes_a_numeric_rounded_to_its_scale():
    t = conform(table(a=pa.array([1 / 3, 2 / 3, 1.5, 617283945.56, -5e-11])), (("a", NUMERIC),))
    assert t.schema.types == [NUMERIC]
    # rounded half away from zero, and by the double's shortest text: not its binary neighbour
    # (617283945.56 as a double is 617283945.55999994277...)
    assert t.column(0).to_pylist() == [Decimal("0.3333333333"), Decimal("0.6666666667"), Decimal("1.5"),
                                       Decimal("617283945.56"), Decimal("-1E-10")]


def test_a_double_sum_of_reals_becomes_a_real():
    assert conform(table(s=pa.array([2.0])), (("s", pa.float32()),)).schema.types == [pa.float32()]


def test_a_sum_past_bigint_is_22003_as_in_postgresql():
    with pytest.raises(NumericValueOutOfRange, match="bigint out of range") as e:
        conform(table(s=pa.array([Decimal(2**63)], pa.decimal128(38, 0))), (("s", pa.int64()),))
    assert e.value.sqlstate == "22003"


def test_other_differences_and_unbound_queries_keep_duckdbs_types():
    t = table(v=pa.array(["1"]), d=pa.array([1.5]), i=pa.array([1], pa.int32()))
    # a string is not cast to an integer, a double not to a bigint, an integer not to a double
    assert conform(t, (("v", pa.int64()), ("d", pa.int64()), ("i", pa.float64()))) is t
    assert conform(t, None) is t
    assert conform(t, (("v", pa.int64()),)) is t  # the binder's columns differ: nothing is cast
    # the same columns in another order (a USING join's, as the binder orders them): nothing is cast
    assert conform(t, (("d", NUMERIC), ("v", None), ("i", None))) is t
    assert conform(t.schema.empty_table(), (("v", None), ("d", NUMERIC), ("i", None))).schema.types == \
        [pa.string(), NUMERIC, pa.int32()]


QUERY = "SELECT customer, sum(customer) AS s, avg(amount) AS a, avg(customer) AS ai, count(*) AS n FROM orders " \
        "GROUP BY customer"


def test_a_clients_query_is_described_and_run_in_the_binders_types():
    session = make_session()
    ast = session.parse_sql(QUERY)
    want = [pa.int32(), pa.int64(), NUMERIC, NUMERIC, pa.int64()]
    assert session.result_schema(ast).schema.types == want
    assert session.run_batch(ast, typed=True).schema.types == want
    # what DuckDB gives by itself: the averages doubles (the sum a bigint already: its rewrite casts
    # DuckDB's HUGEINT, `frontend.catalog.sum_types`)
    assert session.run_batch(ast).schema.types == [pa.int32(), pa.int64(), pa.float64(), pa.float64(), pa.int64()]


def test_a_query_the_binder_cannot_type_runs_with_duckdbs_types(monkeypatch):
    session = make_session()
    # a FROM-less SELECT is not a materialized view's query: DuckDB's double stays
    assert session.run_batch(session.parse_sql("SELECT 7.0 / 2 AS q"), typed=True).to_pylist() == [{"q": 3.5}]

    def broken(self, node):
        raise KeyError("a binder bug")

    monkeypatch.setattr(QueryBinder, "query", broken)
    out = session.run_batch(session.parse_sql(QUERY), typed=True)
    assert out.schema.types[2] == pa.float64()  # ran, in DuckDB's types (the average a double)


def test_a_using_join_star_lists_and_types_its_columns_as_postgresql():
    """The binder lists a USING join's columns first, as PostgreSQL; DuckDB's star is expanded to
    the same order (`frontend.join_star`), so the names match and the binder's types apply."""
    session = make_session()
    query = "SELECT * FROM orders JOIN (SELECT customer, avg(amount) AS a FROM orders GROUP BY customer) AS s " \
            "USING (customer)"
    out = session.run_batch(session.parse_sql(query), typed=True)
    assert out.column_names == ["customer", "id", "amount", "note", "created_at", "a"]
    assert out.schema.types[-1] == NUMERIC  # (DuckDB's: a double)


def test_a_prepared_statement_runs_in_the_types_its_describe_announced():
    """Execute binds the text Describe bound (parameters as typed NULLs), not the text with the
    values: a LIMIT parameter or an untyped one would bind in one and not in the other."""
    session = make_session()

    async def cycle(text: str, oids: list[int], params: list) -> tuple[list[int], list[int]]:
        _, described = await session.describe(text, oids)
        result = await session.execute(text, oids, params)
        return [c.type_oid for c in described or []], [c.type_oid for c in result.columns or []]

    for text, oids, params in [
            ("SELECT customer, sum(customer) AS s, avg(amount) AS a FROM orders GROUP BY customer LIMIT $1",
             [20], [5]),
            ("SELECT customer, sum(customer) AS s FROM orders WHERE customer > $1 GROUP BY customer", [0], ["3"]),
            ("SELECT customer, sum(customer) AS s FROM orders WHERE customer > $1 GROUP BY customer", [23], [3])]:
        described, executed = asyncio.run(cycle(text, oids, params))
        assert described == executed, text
    # a statement whose Describe binds: PostgreSQL's types at both
    assert executed == [23, 20]


def test_columns_are_named_as_postgresql_names_them_in_subqueries_and_windows():
    """The names the binder's types are matched by: a window call is named after its function, and
    a derived table's or a CTE's unaliased items get PostgreSQL's names (before, DuckDB's:
    ``count_star()``, ``avg(amount)``)."""
    session = make_session()
    for text, names in [("SELECT s.count FROM (SELECT count(*) FROM orders) s", ["count"]),
                        ("WITH c AS (SELECT customer, avg(amount) FROM orders GROUP BY customer) SELECT * FROM c",
                         ["customer", "avg"]),
                        ("SELECT id, sum(customer) OVER (), row_number() OVER (ORDER BY id) FROM orders",
                         ["id", "sum", "row_number"])]:
        assert session.run_batch(session.parse_sql(text), typed=True).column_names == names, text
    out = session.run_batch(session.parse_sql("SELECT * FROM (SELECT customer, sum(customer) FROM orders "
                                              "GROUP BY customer) s"), typed=True)
    assert out.schema.types == [pa.int32(), pa.int64()]


def test_a_derived_tables_repeated_names_stay_postgresqls():
    """DuckDB renames a derived table's or a CTE's second ``id`` to ``id_1``; PostgreSQL (and the
    binder) keep ``id`` twice. A real column named like a suffix is left alone."""
    session = make_session()
    for query in ["SELECT * FROM (SELECT a.id, b.id, a.customer FROM orders a JOIN orders b ON a.id = b.id) t",
                  "WITH q AS (SELECT a.id, b.id, a.customer FROM orders a JOIN orders b ON a.id = b.id) SELECT * FROM q"]:
        ast = session.parse_sql(query)
        assert session.run_batch(ast, typed=True).column_names == ["id", "id", "customer"], query
        assert session.result_schema(ast).column_names == ["id", "id", "customer"], query
    assert session.run_batch(session.parse_sql("SELECT id AS id_1, id FROM orders"), typed=True).column_names == \
        ["id_1", "id"]
    assert not _renamed_repeats(["id", "x_1"], ["id", "x"])  # (x_1 is not a second x)
    assert not _renamed_repeats(["id_1", "id"], ["id", "id"])
    assert _renamed_repeats(["id", "v", "id_1", "id_2"], ["id", "v", "id", "id"])


def test_unquoted_names_are_folded_to_lower_case_as_postgresql_folds_them():
    session = make_session()
    for query, names in [("SELECT 1 AS Foo, 3 AS UPPER_CASE, 4 AS \"Q\"", ["foo", "upper_case", "Q"]),
                         ("WITH Cte AS (SELECT 1 AS Val) SELECT * FROM Cte", ["val"]),
                         ("SELECT * FROM (SELECT 1 AS a) AS S(X)", ["x"]),
                         ("SELECT Id, CUSTOMER FROM ORDERS", ["id", "customer"])]:
        assert session.run_batch(session.parse_sql(query), typed=True).column_names == names, query


def test_an_integer_literal_in_arithmetic_is_an_integer():
    """``smallint * 2`` is an integer in PostgreSQL; DuckDB typed the literal a smallint and failed
    with an overflow past 32,767."""
    session = make_session()
    out = session.run_batch(session.parse_sql("SELECT CAST(32767 AS SMALLINT) * 2 AS a, CAST(32767 AS SMALLINT) + 1 AS b, "
                                              "'2024-01-01'::date + 1 AS d, 3000000000 * 2 AS f"))
    assert out.to_pylist() == [{"a": 65534, "b": 32768, "d": datetime.date(2024, 1, 2), "f": 6000000000}]
    assert out.schema.types[:2] == [pa.int32(), pa.int32()]


def test_function_columns_are_named_as_written_as_postgresql_names_them(oracle_dsn):
    """sqlglot maps ``substr``, ``lpad``, ``strpos``... to nodes named ``substring``, ``pad``,
    ``position``; PostgreSQL names the column after the function as written."""
    import psycopg

    session = make_session()
    query = ("SELECT substr('hello', 1, 2), lpad('a', 3), strpos('ab', 'b'), to_hex(255), "
             "date_trunc('day', '2024-01-01 10:00'::timestamp), var_pop(1), bit_and(1), substring('abc', 2), "
             "count(*) FILTER (WHERE true), upper('a'), coalesce(1, 2), length('x'), abs(-1)")
    got = session.run_batch(session.parse_sql(query)).column_names
    with psycopg.connect(oracle_dsn) as pg:
        want = [d.name for d in pg.execute(query).description]
    assert got == want


def test_expression_columns_are_named_as_postgresql_figures_them(oracle_dsn):
    """PostgreSQL's ``FigureColname``: a cast is named after its argument when that is a column or a
    function, else after its type; a CASE after its ELSE; an operator ``?column?``."""
    import psycopg

    session = make_session()
    query = ("SELECT 0::float8::text, 1.5::text, customer::text, CASE WHEN true THEN 1 ELSE 2 END, "
             "CASE WHEN true THEN 1 ELSE customer END, interval '1 day', true AND false, 'a' ~ 'a', 2 ^ 10, NOT true, "
             "trim(' a '), trim(leading ' ' from ' a'), extract(year from created_at), position('a' in 'ba') "
             "FROM orders")
    got = session.run_batch(session.parse_sql(query)).column_names
    with psycopg.connect(oracle_dsn, autocommit=True) as pg:
        pg.execute("CREATE TEMP TABLE orders (customer INT, created_at TIMESTAMP)")
        want = [d.name for d in pg.execute(query).description]
    assert got == want


def test_values_columns_are_column1_column2_as_in_postgresql():
    session = make_session()
    for query, names, rows in [("VALUES (1, 'a'), (2, 'b')", ["column1", "column2"], 2),
                               ("SELECT column2 FROM (VALUES (1, 2)) v", ["column2"], 1),
                               ("SELECT * FROM (VALUES (1, 2)) AS v(a, b)", ["a", "b"], 1),
                               ("VALUES (2), (1) ORDER BY column1 DESC LIMIT 1", ["column1"], 1)]:
        out = session.run_batch(session.parse_sql(query))
        assert (out.column_names, out.num_rows) == (names, rows), query


def test_current_date_and_its_kin_run_and_are_named_as_in_postgresql():
    """``SELECT current_date`` failed: named ``current_date``, DuckDB took the keyword for that alias."""
    session = make_session()
    out = session.run_batch(session.parse_sql("SELECT current_date, localtimestamp, current_timestamp, now(), "
                                              "current_date + 1 AS tomorrow"))
    assert out.column_names == ["current_date", "localtimestamp", "current_timestamp", "now", "tomorrow"]
    row = out.to_pylist()[0]
    assert row["tomorrow"] - row["current_date"] == datetime.timedelta(days=1)
