"""Query modes (`frontend.distributed`): which mode a query runs in, and its compilation for Spark
(relations renamed to the views the compute node registers, PostgreSQL's integer division and NULL
ordering kept, what Spark is not given refused). The e2e test `tests/e2e/test_query_modes.py` runs the
compiled queries on Spark against PostgreSQL."""

from __future__ import annotations

import pyarrow as pa
import pytest
import sqlglot
from catalog_session import EVENTS, ORDERS, SUMMARY, creating, make_session

from frontend.distributed import (
    DISTRIBUTED_MIN_BYTES,
    choose_distributed,
    compile_for_spark,
    input_bytes,
    is_heavy,
)
from frontend.handlers.query import explain_query, run_query
from frontend.parser import DIALECT
from risingspark.batch_query import NotDistributable
from risingspark.errors import FeatureNotSupported, InvalidParameterValue
from risingspark.storage.desc import HummockVersion, SstableInfo, SubLevel, TableLevels


def parse(sql: str):
    return sqlglot.parse_one(sql, read=DIALECT)


def sst(table_id: int, size: int) -> SstableInfo:
    return SstableInfo(f"t{table_id}-{size}.parquet", table_id, 0, 1, 0, 255, 1, 1, 10, 0, size)


VERSION = HummockVersion(3, 42, {
    ORDERS.id: TableLevels(ORDERS.id, (SubLevel(1, (sst(ORDERS.id, 300 << 20),)),)),
    SUMMARY.id: TableLevels(SUMMARY.id, (SubLevel(1, (sst(SUMMARY.id, 1 << 20),)),)),
})


def test_modes():
    join = parse("SELECT o.id FROM orders o JOIN summary s ON o.customer = s.customer")
    point = parse("SELECT note FROM orders WHERE id = 1")
    assert is_heavy(join) and is_heavy(parse("SELECT count(*) FROM orders")) and not is_heavy(point)
    assert not choose_distributed("local", join, 1 << 40, True)
    assert choose_distributed("distributed", point, 0, True)
    assert choose_distributed("auto", join, DISTRIBUTED_MIN_BYTES, True)
    assert not choose_distributed("auto", join, DISTRIBUTED_MIN_BYTES - 1, True)
    assert not choose_distributed("auto", point, 1 << 40, True)  # a point query stays local
    assert not choose_distributed("auto", join, 1 << 40, False)  # no compute node: local
    with pytest.raises(FeatureNotSupported, match="needs a compute node"):
        choose_distributed("distributed", join, 0, False)


def test_compiled_for_spark():
    reader = make_session().catalog_reader()
    q = compile_for_spark(parse(
        "SELECT s.customer, count(*), sum(o.id) / count(*) AS per, o.customer / 2.0 AS half "
        "FROM orders o JOIN summary s ON o.customer = s.customer WHERE o.note IS NOT NULL AND (o.id > 3 OR "
        "EXISTS (SELECT 1 FROM summary x WHERE x.n = o.id)) "
        "GROUP BY s.customer, o.customer ORDER BY 1"), reader, VERSION)
    assert [(r.view, r.desc.table_id, r.epoch, r.columns) for r in q.relations] == [
        ("__rel_0", ORDERS.id, 42, ("id", "customer", "amount", "note", "created_at")),
        ("__rel_1", SUMMARY.id, 42, ("customer", "n")),
    ]
    assert q.relations[0].ssts == tuple(VERSION.ssts(ORDERS.id))
    assert q.input_bytes == (300 << 20) + (1 << 20)
    assert input_bytes(parse("SELECT count(*) FROM orders a JOIN orders b ON a.id = b.id"), reader, VERSION) == 300 << 20
    assert "FROM `__rel_0` AS `o` JOIN `__rel_1` AS `s`" in q.sql
    # integers divide as integers (in PostgreSQL's type), bigints sum as numerics
    assert "CAST(SUM(CAST(`o`.`id` AS DECIMAL(38, 0))) DIV COUNT(*) AS BIGINT) AS `per`" in q.sql
    assert "`o`.`customer` / 2.0 AS `half`" in q.sql
    assert "COUNT(*) AS `count`" in q.sql  # PostgreSQL's output name
    assert q.sql.endswith("NULLS LAST")  # PostgreSQL puts NULLs last


def test_a_cte_and_a_self_join_read_each_relation_once():
    reader = make_session().catalog_reader()
    q = compile_for_spark(parse("WITH c AS (SELECT customer FROM orders) SELECT a.id FROM orders a "
                                "JOIN orders b ON a.id = b.id JOIN c ON c.customer = a.customer"), reader, VERSION)
    assert [r.view for r in q.relations] == ["__rel_0"]


@pytest.mark.parametrize(("sql", "reason"), [
    ("SELECT count(*) FROM pg_class", "system tables"),
    ("SELECT * FROM generate_series(1, 3)", "table functions"),
    ("SELECT current_user, count(*) FROM orders", "current_user"),
    ("SELECT substring(note, 0, 2) FROM orders", "substring"),
    ("SELECT round(amount, 1) FROM orders", "round"),
    ("SELECT row_number() OVER (ORDER BY id) FROM orders", "window"),
    ("SELECT version()", "version"),
])
def test_what_is_not_distributable(sql, reason):
    with pytest.raises(NotDistributable, match=reason):
        compile_for_spark(parse(sql), make_session().catalog_reader(), VERSION)


def test_a_creating_mv_is_not_read():
    session = make_session([ORDERS, EVENTS, creating(SUMMARY)])
    with pytest.raises(NotDistributable, match="summary"):
        compile_for_spark(parse("SELECT * FROM summary"), session.catalog_reader(), VERSION)


def test_the_session_variable():
    session = make_session()
    assert session.vars.get("query_mode") == "auto"
    session.vars.set("query_mode", "Distributed")
    assert session.vars.get("query_mode") == "distributed"
    with pytest.raises(InvalidParameterValue, match="query_mode") as e:
        session.vars.set("query_mode", "remote")
    assert e.value.hint == "Available values: auto, local, distributed."


class FailingRunner:
    """A compute node whose Spark cannot run the query (the error as it arrives over RPC)."""

    def __init__(self) -> None:
        self.calls = 0

    def run(self, sql, relations, cancel=None, cancellable=False, time_zone=None):
        self.calls += 1
        raise FeatureNotSupported("distributed query mode cannot run this query: [UNRESOLVED_ROUTINE]")

    def explain(self, sql, relations):
        return ""


class CountRunner(FailingRunner):
    def __init__(self) -> None:
        super().__init__()
        self.cancellable: list[bool] = []

    def run(self, sql, relations, cancel=None, cancellable=False, time_zone=None):
        self.calls += 1
        self.cancellable.append(cancellable)
        return pa.table({"count": pa.array([5], pa.int32())})  # Spark's type, not local mode's


def test_auto_mode_runs_locally_what_the_compute_node_cannot(monkeypatch):
    monkeypatch.setattr("frontend.distributed.DISTRIBUTED_MIN_BYTES", 0)
    session = make_session()
    runner = FailingRunner()
    session.frontend.distributed = runner
    query = parse("SELECT customer, count(*) FROM orders GROUP BY customer")
    assert run_query(session, query).num_rows == 0  # locally, over the empty table
    assert runner.calls == 1
    session.vars.set("query_mode", "distributed")
    with pytest.raises(FeatureNotSupported, match="UNRESOLVED_ROUTINE"):
        run_query(session, query)


def test_distributed_rows_come_in_local_mode_types():
    session = make_session()
    session.frontend.distributed = CountRunner()
    session.vars.set("query_mode", "distributed")
    rows = run_query(session, parse("SELECT count(*) FROM orders"))
    assert rows.schema == session.result_schema(parse("SELECT count(*) FROM orders")).schema
    assert rows.schema.field("count").type == pa.int64() and rows.to_pylist() == [{"count": 5}]


def test_auto_mode_asks_for_a_query_spark_can_cancel(monkeypatch):
    """Auto mode can run a query locally instead, so it asks the compute node to refuse a plan whose
    tasks a cancel would not stop (a nested-loop join); distributed mode runs whatever Spark plans."""
    monkeypatch.setattr("frontend.distributed.DISTRIBUTED_MIN_BYTES", 0)
    session = make_session()
    runner = CountRunner()
    session.frontend.distributed = runner
    query = parse("SELECT count(*) FROM orders a, orders b WHERE a.id < b.id")
    run_query(session, query)
    session.vars.set("query_mode", "distributed")
    run_query(session, query)
    assert runner.cancellable == [True, False]


class NestedLoopRunner(CountRunner):
    def explain(self, sql, relations):
        return "== Physical Plan ==\nBroadcastNestedLoopJoin BuildRight, Inner, (id#1 < id#2)"


def test_explain_says_where_auto_mode_runs_a_nested_loop_join(monkeypatch):
    monkeypatch.setattr("frontend.distributed.DISTRIBUTED_MIN_BYTES", 0)
    session = make_session()
    session.frontend.distributed = NestedLoopRunner()
    query = parse("SELECT count(*) FROM orders a, orders b WHERE a.id < b.id")
    lines = [r[0] for r in explain_query(session, query).rows]
    assert lines[0].startswith("Local mode: DuckDB") and "BroadcastNestedLoopJoin" in lines[0]
    session.vars.set("query_mode", "distributed")  # (run as asked: Spark plans it)
    assert [r[0] for r in explain_query(session, query).rows][0].startswith("Distributed mode: Spark")


class SwappedRunner(CountRunner):
    """Spark's columns in another order than local mode's (as ``SELECT *`` over a USING join)."""

    def run(self, sql, relations, cancel=None, cancellable=False, time_zone=None):
        return pa.table({"customer": pa.array([7], pa.int32()), "id": pa.array([10_000_000_000], pa.int64())})


def test_spark_columns_in_another_order_are_taken_by_name():
    session = make_session()
    session.frontend.distributed = SwappedRunner()
    session.vars.set("query_mode", "distributed")
    rows = run_query(session, parse("SELECT id, customer FROM orders"))
    assert rows.to_pylist() == [{"id": 10_000_000_000, "customer": 7}]  # (by position: id cast to int32)
