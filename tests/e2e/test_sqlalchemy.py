"""SQLAlchemy 2 over psycopg 3 and psycopg2 against the playground: connect, version(), reflection
(`inspect`), Core queries and inserts, transactions that auto-commit."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

import pytest
import sqlalchemy as sa

from conftest import PlaygroundProcess, unique_name

pytestmark = pytest.mark.e2e


@pytest.fixture(params=["psycopg", "psycopg2"])
def engine(request: pytest.FixtureRequest, playground: PlaygroundProcess) -> Iterator[sa.Engine]:
    eng = sa.create_engine(f"postgresql+{request.param}://root@127.0.0.1:{playground.port}/dev")
    yield eng
    eng.dispose()


@pytest.fixture
def schema(engine: sa.Engine) -> str:
    name = unique_name("sa")
    with engine.connect() as c:
        c.execute(sa.text(f"create schema {name}"))
        c.execute(sa.text(f"create table {name}.customers (id int primary key, name varchar not null, "
                          "score double precision)"))
        c.execute(sa.text(f"create table {name}.orders (id bigint primary key, customer_id int, "
                          "amount numeric(10, 2), placed date)"))
        c.execute(sa.text(f"insert into {name}.customers values (1, 'ann', 1.5), (2, 'bob', null)"))
        c.execute(sa.text(f"insert into {name}.orders values (10, 1, 5.25, '2024-01-02'), (11, 1, 4.75, null), "
                          "(12, 2, 1.00, '2024-02-03')"))
        c.execute(sa.text("flush"))
        c.execute(sa.text(f"create view {name}.big_orders as select * from {name}.orders where amount > 2"))
        c.execute(sa.text(f"create materialized view {name}.totals as select customer_id, sum(amount) as total "
                          f"from {name}.orders group by customer_id"))
        c.execute(sa.text(f"create index totals_by_total on {name}.totals (total)"))
        c.commit()
    return name


def test_connect_and_version(engine: sa.Engine) -> None:
    with engine.connect() as c:
        version = c.execute(sa.text("select version()")).scalar()
        assert isinstance(version, str) and version.startswith("PostgreSQL 13.14.0")
        assert c.dialect.server_version_info[:2] == (13, 14)
        assert c.execute(sa.text("select :a + :b"), {"a": 1, "b": 2}).scalar() == 3


def test_reflection(engine: sa.Engine, schema: str) -> None:
    insp = sa.inspect(engine)
    assert schema in insp.get_schema_names()
    assert insp.get_table_names(schema=schema) == ["customers", "orders"]
    assert insp.get_view_names(schema=schema) == ["big_orders"]
    assert insp.get_materialized_view_names(schema=schema) == ["totals"]
    assert insp.has_table("orders", schema=schema) and not insp.has_table("nope", schema=schema)
    cols = insp.get_columns("orders", schema=schema)
    assert [(c["name"], str(c["type"]), c["nullable"]) for c in cols] == [
        ("id", "BIGINT", False), ("customer_id", "INTEGER", True), ("amount", "NUMERIC(10, 2)", True),
        ("placed", "DATE", True)]
    assert [(c["name"], c["nullable"]) for c in insp.get_columns("customers", schema=schema)] == \
        [("id", False), ("name", False), ("score", True)]
    assert [c["name"] for c in insp.get_columns("big_orders", schema=schema)] == \
        ["id", "customer_id", "amount", "placed"]
    assert insp.get_pk_constraint("orders", schema=schema)["constrained_columns"] == ["id"]
    assert insp.get_foreign_keys("orders", schema=schema) == []
    assert [(i["name"], i["column_names"]) for i in insp.get_indexes("totals", schema=schema)] == \
        [("totals_by_total", ["total"])]
    assert insp.get_view_definition("big_orders", schema=schema).strip().startswith("select * from")


def test_core_queries(engine: sa.Engine, schema: str) -> None:
    md = sa.MetaData(schema=schema)
    customers = sa.Table("customers", md, autoload_with=engine)
    orders = sa.Table("orders", md, autoload_with=engine)
    with engine.connect() as c:
        q = (sa.select(customers.c.name, sa.func.count(orders.c.id).label("n"), sa.func.sum(orders.c.amount))
             .join(orders, orders.c.customer_id == customers.c.id)
             .where(orders.c.amount > sa.bindparam("min_amount"))
             .group_by(customers.c.name).order_by(customers.c.name))
        assert c.execute(q, {"min_amount": 0}).all() == [("ann", 2, Decimal("10.00")), ("bob", 1, Decimal("1.00"))]
        assert c.execute(sa.select(orders.c.id).where(orders.c.placed.is_(None))).scalars().all() == [11]
        c.execute(customers.insert(), [{"id": 3, "name": "cy", "score": 2.0}, {"id": 4, "name": "di", "score": None}])
        c.execute(sa.text("flush"))
        c.commit()
        assert c.execute(sa.select(sa.func.count()).select_from(customers)).scalar() == 4
        c.execute(customers.update().where(customers.c.id == 4).values(score=9.5))
        c.execute(customers.delete().where(customers.c.id == 3))
        c.execute(sa.text("flush"))
        c.commit()
        assert c.execute(sa.select(customers.c.id, customers.c.score).order_by(customers.c.id)).all() == \
            [(1, 1.5), (2, None), (4, 9.5)]


def test_errors_do_not_leave_a_failed_transaction(engine: sa.Engine, schema: str) -> None:
    with engine.connect() as c:
        with pytest.raises(sa.exc.ProgrammingError):
            c.execute(sa.text(f"select * from {schema}.missing"))
        c.rollback()
        assert c.execute(sa.text("select 1")).scalar() == 1
    with pytest.raises(sa.exc.ProgrammingError), engine.begin() as c:
        c.execute(sa.text(f"insert into {schema}.customers values (7, 'x', 0)"))
        c.execute(sa.text("select nope"))
    # statements auto-commit: the insert before the error stays
    with engine.connect() as c:
        c.execute(sa.text("flush"))
        assert c.execute(sa.text(f"select name from {schema}.customers where id = 7")).scalar() == "x"
