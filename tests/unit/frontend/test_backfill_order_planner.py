"""The backfill order planner: FIXED (names bound through the catalog, cycles, relations the query
does not scan, chains), AUTO on join trees (as RisingWave's fold: the build sides before the probing
leftmost scan; a cycle means no order), and what a backfilling job waits for."""

from __future__ import annotations

import asyncio
import itertools

import pytest
from catalog_session import OTHER, make_session, relation

from frontend.handlers.ddl import _plan
from frontend.parser import parse_statement
from risingspark.backfill_order import (
    auto_order,
    finished_relations,
    has_cycle,
    waiting_for,
)
from risingspark.catalog import RelationKind
from risingspark.errors import InvalidParameterValue, RisingSparkError, SyntaxError_, UndefinedTable
from risingspark.stream_plan import StreamHashJoin, StreamProject, StreamTableScan, StreamUnion
from risingspark.types import INT4, VARCHAR, Field

SALES = relation(2001, "car_sales", RelationKind.TABLE, (Field("id", INT4), Field("car_id", INT4),
                                                          Field("region_id", INT4)), (0,))
INFO = relation(2002, "car_info", RelationKind.TABLE, (Field("car_id", INT4), Field("model", VARCHAR)), (0,))
REGIONS = relation(2003, "car_regions", RelationKind.TABLE, (Field("region_id", INT4), Field("name", VARCHAR)),
                   (0,))
OTHER_REGIONS = relation(2004, "car_regions", RelationKind.TABLE, (Field("region_id", INT4),), (0,),
                         schema_id=OTHER)
UNUSED = relation(2005, "unused", RelationKind.TABLE, (Field("x", INT4),), (0,))

JOIN3 = ("SELECT s.id, i.model, r.name FROM car_sales s JOIN car_info i ON s.car_id = i.car_id "
         "JOIN car_regions r ON s.region_id = r.region_id")


def session():
    return make_session([SALES, INFO, REGIONS, OTHER_REGIONS, UNUSED])


def order_of(option: str, query: str = JOIN3):
    """The order a CREATE with ``WITH (backfill_order = option)`` would persist."""
    from frontend.backfill_order import plan_backfill_order
    from frontend.handlers.ddl import BACKFILL_ORDER_OPTION, job_options

    s = session()
    ast = parse_statement(f"CREATE MATERIALIZED VIEW m WITH (backfill_order = {option}) AS {query}").ast
    _, planned = _plan(s, ast, "", 0, itertools.count(1))
    return plan_backfill_order(s, job_options(ast).get(BACKFILL_ORDER_OPTION), planned.plan)


def explain(sql: str) -> tuple[list[str], list[str]]:
    s = session()

    async def run():
        return await s.execute(sql, [], [])

    result = asyncio.run(run())
    return [r[0] for r in result.rows], list(result.notices)


# ---- FIXED --------------------------------------------------------------------------------------
def test_fixed_binds_names_and_chains():
    assert order_of("FIXED(car_regions -> car_sales, car_info -> car_sales)").order == ((2002, 2001), (2003, 2001))
    assert order_of("FIXED(car_regions -> car_info -> car_sales)").order == ((2002, 2001), (2003, 2002))
    assert order_of('FIXED(public.car_regions -> "car_sales")').order == ((2003, 2001),)
    assert order_of("NONE").order == ()


def test_fixed_with_a_cycle_fails():
    for option in ("FIXED(car_info -> car_sales, car_sales -> car_info)", "FIXED(car_info -> car_info)",
                   "FIXED(car_info -> car_sales -> car_regions -> car_info)"):
        with pytest.raises(InvalidParameterValue, match="Backfill order strategy has a cycle"):
            order_of(option)


def test_fixed_names_only_relations_the_query_scans():
    with pytest.raises(UndefinedTable, match='relation "nowhere" does not exist'):
        order_of("FIXED(nowhere -> car_sales)")
    with pytest.raises(InvalidParameterValue, match='"unused", which the query does not scan'):
        order_of("FIXED(unused -> car_sales)")
    # the same name in another schema is another relation
    with pytest.raises(InvalidParameterValue, match='"other.car_regions", which the query does not scan'):
        order_of("FIXED(other.car_regions -> car_sales)")


@pytest.mark.parametrize("option", ["FIXED()", "FIXED(car_info)", "SOMETIMES", "FIXED(car_info -> 3)",
                                    "'auto'"])
def test_malformed_options_fail(option):
    with pytest.raises(SyntaxError_, match="backfill_order must be NONE, AUTO or FIXED"):
        order_of(option)


# ---- AUTO ---------------------------------------------------------------------------------------
def test_auto_puts_the_dimension_sides_first():
    assert order_of("AUTO").order == ((2002, 2001), (2003, 2001))
    # the fact table on the right of the first join: the left side is probed by it
    q = "SELECT s.id FROM car_info i JOIN car_sales s ON s.car_id = i.car_id"
    assert order_of("AUTO", q).order == ((2001, 2002),)
    assert order_of("AUTO", "SELECT * FROM car_sales").order == ()


def test_auto_with_a_cycle_orders_nothing_and_says_so():
    planned = order_of("AUTO", "SELECT a.id FROM car_sales a JOIN car_sales b ON a.car_id = b.id")
    assert planned.order == ()
    assert planned.notices == ["Backfill order strategy has a cycle"]


def _scan(rel_id: int) -> StreamTableScan:
    return StreamTableScan(fields=(), stream_key=(), upstream_id=rel_id)


def _join(left, right) -> StreamHashJoin:
    return StreamHashJoin(fields=(), stream_key=(), left=StreamProject(fields=(), stream_key=(), input=left),
                          right=right)


def test_auto_fold_of_bushy_trees_and_unions():
    # JOIN(JOIN(D, E), C): {C, E} -> D, as RisingWave's example
    assert auto_order(_join(_join(_scan(4), _scan(5)), _scan(3))) == ((3, 4), (5, 4))
    # JOIN(A, JOIN(B, C)): a join's terminal scans are its left side's: B -> A, C -> B
    assert auto_order(_join(_scan(1), _join(_scan(2), _scan(3)))) == ((2, 1), (3, 2))
    # JOIN(JOIN(UNION(F, JOIN(H, I)), E), C): {C, E} -> {F, H}, I -> H
    union = StreamUnion(fields=(), stream_key=(), branches=(_scan(6), _join(_scan(8), _scan(9))))
    assert auto_order(_join(_join(union, _scan(5)), _scan(3))) == ((3, 6), (3, 8), (5, 6), (5, 8), (9, 8))
    assert auto_order(_join(_scan(1), _scan(1))) is None


def test_has_cycle():
    assert not has_cycle(())
    assert not has_cycle(((1, 2), (2, 3), (1, 3)))
    assert has_cycle(((1, 1),))
    assert has_cycle(((1, 2), (2, 3), (3, 1)))


def test_a_scan_waits_until_every_scan_of_its_predecessors_finished():
    order = ((2, 1), (3, 1))
    # scans: 0 of relation 1, 1 of relation 2, 2 and 3 of relation 3 (a self-join of 3)
    running = {0: (1, False), 1: (2, True), 2: (3, True), 3: (3, False)}
    assert waiting_for(order, 1, finished_relations(running)) == [3]
    assert waiting_for(order, 2, finished_relations(running)) == []
    assert waiting_for(order, 1, finished_relations({**running, 3: (3, True)})) == []


# ---- EXPLAIN --------------------------------------------------------------------------------------
def test_explain_shows_the_order():
    lines, _ = explain(f"EXPLAIN CREATE MATERIALIZED VIEW m WITH (backfill_order = FIXED(car_info -> car_sales)) "
                       f"AS {JOIN3}")
    assert lines[-1] == "Backfill order: car_info -> car_sales"
    lines, _ = explain(f"EXPLAIN CREATE MATERIALIZED VIEW m AS {JOIN3}")
    assert lines[-1] == "Backfill order: none (every upstream at once)"
    lines, notices = explain("EXPLAIN CREATE MATERIALIZED VIEW m WITH (backfill_order = AUTO) AS "
                             "SELECT a.id FROM car_sales a JOIN car_sales b ON a.car_id = b.id")
    assert notices == ["Backfill order strategy has a cycle"]
    with pytest.raises(RisingSparkError, match="has a cycle"):
        explain(f"EXPLAIN CREATE MATERIALIZED VIEW m WITH (backfill_order = FIXED(car_info -> car_info)) AS {JOIN3}")
