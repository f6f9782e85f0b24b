"""Planner golden tests: a CREATE MATERIALIZED VIEW in `cases/<name>.sql`, its stream plan as
RisingWave prints it in `cases/<name>.plan`. Set UPDATE_GOLDEN=1 to rewrite the .plan files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import sqlglot

from frontend.binder import CatalogReader, QueryBinder, bind_stream_select
from frontend.dialect import whole_intervals
from frontend.planner.stream import plan_mv, state_tables_needed
from frontend.rw_clauses import rewrite_changelog_ctes
from meta.catalog import CatalogSnapshot
from risingspark.catalog import (
    BackfillType,
    DatabaseCatalog,
    JobStatus,
    RelationCatalog,
    RelationKind,
    SchemaCatalog,
)
from risingspark.errors import RisingSparkError
from risingspark.functions import FunctionCatalog
from risingspark.storage.desc import StateTableDesc
from risingspark.stream_plan import explain, node_from_json, node_to_json
from risingspark.table_kind import APPEND_ONLY
from risingspark.types import DataType, Field

CASES = Path(__file__).parent / "cases"


def _table(id_: int, name: str, cols: list[tuple[str, str]], pk: tuple[int, ...], hidden_row_id: bool = False,
           append_only: bool = False):
    fields = tuple(Field(n, DataType.parse(t)) for n, t in cols)
    if hidden_row_id:
        fields += (Field("_row_id", DataType.parse("bigint"), hidden=True),)
        pk = (len(fields) - 1,)
    return RelationCatalog(id_, 1, 2, name, RelationKind.TABLE, fields, pk, pk, f"CREATE TABLE {name}",
                           JobStatus.CREATED, state_tables=(StateTableDesc(id_, fields, pk, pk),),
                           extra={APPEND_ONLY: True} if append_only else {})


def catalog() -> CatalogReader:
    orders = _table(10, "orders", [("id", "bigint"), ("customer_id", "int"), ("amount", "numeric(12,2)"),
                                   ("status", "varchar"), ("created_at", "timestamp")], (0,))
    events = _table(11, "events", [("kind", "varchar"), ("v", "int")], (), hidden_row_id=True)
    clicks = _table(12, "clicks", [("page", "varchar"), ("user_id", "int"), ("ts", "timestamp"), ("ms", "float8")],
                    (), hidden_row_id=True, append_only=True)
    visits = _table(13, "visits", [("user_id", "int"), ("country", "varchar")], (0,), append_only=True)
    count_char = FunctionCatalog(20, 1, 2, "count_char", ("s", "c"), (DataType.parse("varchar"),) * 2,
                                 DataType.parse("int"), "javascript", "return 0;", 1)
    snap = CatalogSnapshot(1, {1: DatabaseCatalog(1, "dev")}, {2: SchemaCatalog(2, 1, "public")},
                           {10: orders, 11: events, 12: clicks, 13: visits}, functions={20: count_char})
    return CatalogReader(snap, "dev", ["public"])


def plan_text(sql: str) -> str:
    ast = sqlglot.parse_one(whole_intervals(rewrite_changelog_ctes(sql)[0]), read="risingwave")  # (as parse_statement)
    try:
        binder = QueryBinder(catalog())
        bound = binder.query(ast.expression)
        ids = list(range(101, 101 + state_tables_needed(bound)))
        planned = plan_mv(bound, 100, ids, BackfillType.ARRANGEMENT_BACKFILL, tuple(binder.functions.values()))
    except RisingSparkError as e:
        return f"ERROR {e.sqlstate}: {e.message}\n"
    # the plan survives its JSON form unchanged (meta stores it, compute reads it)
    assert node_from_json(node_to_json(planned.plan)) == planned.plan
    cols = ", ".join(f"{f.name} {f.type}{' hidden' if f.hidden else ''}" for f in planned.fields)
    return "\n".join([*explain(planned.plan), f"-- columns: {cols}", f"-- pk: {list(planned.pk)}"]) + "\n"


@pytest.mark.parametrize("case", sorted(p.stem for p in CASES.glob("*.sql")))
def test_plan(case: str) -> None:
    got = plan_text((CASES / f"{case}.sql").read_text())
    expected = CASES / f"{case}.plan"
    if os.environ.get("UPDATE_GOLDEN") or not expected.exists():
        expected.write_text(got)
    assert got == expected.read_text()


def test_materialized_input_states_have_their_own_tables():
    """min/max/DISTINCT/string_agg calls each get a state table keyed by (group key, value[, order
    columns]) and distributed by the group key — min and max one row per input row, keyed by the
    input's stream key too, with no count; count/sum/bool_or keep partials in the agg's table."""
    sql = ("CREATE MATERIALIZED VIEW m AS SELECT customer_id, min(amount), count(DISTINCT status), "
           "string_agg(status, ',' ORDER BY created_at DESC), sum(amount), bool_or(status = 'paid') "
           "FROM orders GROUP BY customer_id")
    bound = bind_stream_select(catalog(), sqlglot.parse_one(sql, read="risingwave").expression)
    assert state_tables_needed(bound) == 4
    planned = plan_mv(bound, 100, [101, 102, 103, 104], BackfillType.ARRANGEMENT_BACKFILL)
    mv, agg, *inputs = planned.state_tables
    assert [d.table_id for d in (mv, agg, *inputs)] == [100, 101, 102, 103, 104]
    assert [f.name for f in agg.fields] == ["_g0", "_row_count", "_a3_count", "_a3_sum", "_a4_count", "_a4_true"]
    layouts = [([f.name for f in d.fields], d.pk, d.dist_key) for d in inputs]
    assert layouts == [(["_g0", "_arg0", "_sk0"], (0, 1, 2), (0,)),
                       (["_g0", "_arg1", "_count"], (0, 1), (0,)),
                       (["_g0", "_arg2", "_ord2_0", "_count"], (0, 1, 2), (0,))]
    # validating a query plans it with placeholder ids
    assert len(plan_mv(bound, 0, None, BackfillType.ARRANGEMENT_BACKFILL).state_tables) == 5
