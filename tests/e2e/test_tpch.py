"""TPC-H as a streaming workload: the 8 tables (RisingWave's DDL), a small seeded data set whose
values reach every query's filters, and the 22 queries as materialized views in RisingWave's form,
created in the background while inserts, updates and deletes go on, then compared with PostgreSQL
running the same SELECT at two committed epochs.

Each query has an expectation: SUPPORTED (the MV equals PostgreSQL) or UNSUPPORTED (CREATE fails
cleanly with SQLSTATE 0A000 and a message naming the feature, and nothing is created).
``RISINGSPARK_TPCH_SEED`` replays the workload with other data and writes.
"""

from __future__ import annotations

import os
import random

import psycopg
import pytest

from conftest import PlaygroundProcess
from support.oracle import copy_table
from support.tpch_data import TpchWriter, generate
from support.workloads import (
    SUPPORTED,
    Expectation,
    backfills_at_once,
    check_views,
    create_views,
    empty_answers,
    insert_rows,
)

pytestmark = pytest.mark.e2e

SEED = int(os.environ.get("RISINGSPARK_TPCH_SEED", "20261126"))

TABLES = {
    "supplier": "s_suppkey INTEGER, s_name VARCHAR, s_address VARCHAR, s_nationkey INTEGER, s_phone VARCHAR, "
                "s_acctbal NUMERIC, s_comment VARCHAR, PRIMARY KEY (s_suppkey)",
    "part": "p_partkey INTEGER, p_name VARCHAR, p_mfgr VARCHAR, p_brand VARCHAR, p_type VARCHAR, p_size INTEGER, "
            "p_container VARCHAR, p_retailprice NUMERIC, p_comment VARCHAR, PRIMARY KEY (p_partkey)",
    "partsupp": "ps_partkey INTEGER, ps_suppkey INTEGER, ps_availqty INTEGER, ps_supplycost NUMERIC, "
                "ps_comment VARCHAR, PRIMARY KEY (ps_partkey, ps_suppkey)",
    "customer": "c_custkey INTEGER, c_name VARCHAR, c_address VARCHAR, c_nationkey INTEGER, c_phone VARCHAR, "
                "c_acctbal NUMERIC, c_mktsegment VARCHAR, c_comment VARCHAR, PRIMARY KEY (c_custkey)",
    "orders": "o_orderkey BIGINT, o_custkey INTEGER, o_orderstatus VARCHAR, o_totalprice NUMERIC, o_orderdate DATE, "
              "o_orderpriority VARCHAR, o_clerk VARCHAR, o_shippriority INTEGER, o_comment VARCHAR, "
              "PRIMARY KEY (o_orderkey)",
    "lineitem": "l_orderkey BIGINT, l_partkey INTEGER, l_suppkey INTEGER, l_linenumber INTEGER, l_quantity NUMERIC, "
                "l_extendedprice NUMERIC, l_discount NUMERIC, l_tax NUMERIC, l_returnflag VARCHAR, "
                "l_linestatus VARCHAR, l_shipdate DATE, l_commitdate DATE, l_receiptdate DATE, "
                "l_shipinstruct VARCHAR, l_shipmode VARCHAR, l_comment VARCHAR, PRIMARY KEY (l_orderkey, l_linenumber)",
    "nation": "n_nationkey INTEGER, n_name VARCHAR, n_regionkey INTEGER, n_comment VARCHAR, PRIMARY KEY (n_nationkey)",
    "region": "r_regionkey INTEGER, r_name VARCHAR, r_comment VARCHAR, PRIMARY KEY (r_regionkey)",
}

# The 22 queries as RisingWave's streaming tests write them (its parameters: 'FURNITURE', 'MIDDLE
# EAST', 'ROMANIA'/'IRAN', 'ARGENTINA', 'KENYA', 'IRAQ', ...). The oracle runs the same text.
# q2, q3, q10, q18 and q21 keep their ORDER BY ... LIMIT, which does not always order the rows at
# the limit (two orders of q18 may share o_totalprice and o_orderdate): either system may keep any
# of the tied rows, so these views are compared by `assert_same_top_n`, which accepts exactly that.
# The other ORDER BYs order nothing in a view; their rows are compared as a multiset.
QUERIES = {
    "q1": """select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty, sum(l_extendedprice) as sum_base_price,
  sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
  sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge, round(avg(l_quantity), 4) as avg_qty,
  round(avg(l_extendedprice), 4) as avg_price, round(avg(l_discount), 4) as avg_disc, count(*) as count_order
from lineitem
where l_shipdate <= date '1998-12-01' - interval '71' day
group by l_returnflag, l_linestatus
order by l_returnflag, l_linestatus""",
    "q2": """select s_acctbal, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone, s_comment
from part, supplier, partsupp, nation, region
where p_partkey = ps_partkey and s_suppkey = ps_suppkey and p_size = 4 and p_type like '%TIN'
  and s_nationkey = n_nationkey and n_regionkey = r_regionkey and r_name = 'AFRICA'
  and ps_supplycost = (
    select min(ps_supplycost) from partsupp, supplier, nation, region
    where p_partkey = ps_partkey and s_suppkey = ps_suppkey and s_nationkey = n_nationkey
      and n_regionkey = r_regionkey and r_name = 'AFRICA')
order by s_acctbal desc, n_name, s_name, p_partkey
limit 100""",
    "q3": """select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue, o_orderdate, o_shippriority
from customer, orders, lineitem
where c_mktsegment = 'FURNITURE' and c_custkey = o_custkey and l_orderkey = o_orderkey
  and o_orderdate < date '1995-03-29' and l_shipdate > date '1995-03-29'
group by l_orderkey, o_orderdate, o_shippriority
order by revenue desc, o_orderdate
LIMIT 10""",
    "q4": """select o_orderpriority, count(*) as order_count
from orders
where o_orderdate >= date '1997-07-01' and o_orderdate < date '1997-07-01' + interval '3' month
  and exists (select * from lineitem where l_orderkey = o_orderkey and l_commitdate < l_receiptdate)
group by o_orderpriority
order by o_orderpriority""",
    "q5": """select n_name, sum(l_extendedprice * (1 - l_discount)) as revenue
from customer, orders, lineitem, supplier, nation, region
where c_custkey = o_custkey and l_orderkey = o_orderkey and l_suppkey = s_suppkey and c_nationkey = s_nationkey
  and s_nationkey = n_nationkey and n_regionkey = r_regionkey and r_name = 'MIDDLE EAST'
  and o_orderdate >= date '1994-01-01' and o_orderdate < date '1994-01-01' + interval '1' year
group by n_name
order by revenue desc""",
    "q6": """select sum(l_extendedprice * l_discount) as revenue
from lineitem
where l_shipdate >= date '1994-01-01' and l_shipdate < date '1994-01-01' + interval '1' year
  and l_discount between 0.08 - 0.01 and 0.08 + 0.01 and l_quantity < 24""",
    "q7": """select supp_nation, cust_nation, l_year, sum(volume) as revenue
from (
  select n1.n_name as supp_nation, n2.n_name as cust_nation, extract(year from l_shipdate) as l_year,
    l_extendedprice * (1 - l_discount) as volume
  from supplier, lineitem, orders, customer, nation n1, nation n2
  where s_suppkey = l_suppkey and o_orderkey = l_orderkey and c_custkey = o_custkey
    and s_nationkey = n1.n_nationkey and c_nationkey = n2.n_nationkey
    and ((n1.n_name = 'ROMANIA' and n2.n_name = 'IRAN') or (n1.n_name = 'IRAN' and n2.n_name = 'ROMANIA'))
    and l_shipdate between date '1983-01-01' and date '2000-12-31'
) as shipping
group by supp_nation, cust_nation, l_year
order by supp_nation, cust_nation, l_year""",
    "q8": """select o_year, round(sum(case when nation = 'IRAN' then volume else 0 end) / sum(volume), 6) as mkt_share
from (
  select extract(year from o_orderdate) as o_year, l_extendedprice * (1 - l_discount) as volume,
    n2.n_name as nation
  from part, supplier, lineitem, orders, customer, nation n1, nation n2, region
  where p_partkey = l_partkey and s_suppkey = l_suppkey and l_orderkey = o_orderkey and o_custkey = c_custkey
    and c_nationkey = n1.n_nationkey and n1.n_regionkey = r_regionkey and r_name = 'ASIA'
    and s_nationkey = n2.n_nationkey and o_orderdate between date '1995-01-01' and date '1996-12-31'
    and p_type = 'PROMO ANODIZED STEEL'
) as all_nations
group by o_year
order by o_year""",
    "q9": """select nation, o_year, round(sum(amount), 2) as sum_profit
from (
  select n_name as nation, extract(year from o_orderdate) as o_year,
    l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity as amount
  from part, supplier, lineitem, partsupp, orders, nation
  where s_suppkey = l_suppkey and ps_suppkey = l_suppkey and ps_partkey = l_partkey and p_partkey = l_partkey
    and o_orderkey = l_orderkey and s_nationkey = n_nationkey and p_name like '%yellow%'
) as profit
group by nation, o_year
order by nation, o_year desc""",
    "q10": """select c_custkey, c_name, sum(l_extendedprice * (1.00 - l_discount)) as revenue, c_acctbal, n_name,
  c_address, c_phone, c_comment
from customer, orders, lineitem, nation
where c_custkey = o_custkey and l_orderkey = o_orderkey and o_orderdate >= date '1994-01-01'
  and o_orderdate < date '1994-01-01' + interval '3' month and l_returnflag = 'R' and c_nationkey = n_nationkey
group by c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment
order by revenue desc
limit 20""",
    "q11": """select ps_partkey, round(sum(ps_supplycost * ps_availqty), 1) as value
from partsupp, supplier, nation
where ps_suppkey = s_suppkey and s_nationkey = n_nationkey and n_name = 'ARGENTINA'
group by ps_partkey
having sum(ps_supplycost * ps_availqty) > (
  select sum(ps_supplycost * ps_availqty) * 0.0001000000
  from partsupp, supplier, nation
  where ps_suppkey = s_suppkey and s_nationkey = n_nationkey and n_name = 'ARGENTINA')
order by value desc""",
    "q12": """select l_shipmode,
  sum(case when o_orderpriority = '1-URGENT' or o_orderpriority = '2-HIGH' then 1 else 0 end) as high_line_count,
  sum(case when o_orderpriority <> '1-URGENT' and o_orderpriority <> '2-HIGH' then 1 else 0 end)
    as low_line_count
from orders, lineitem
where o_orderkey = l_orderkey and l_shipmode in ('FOB', 'SHIP') and l_commitdate < l_receiptdate
  and l_shipdate < l_commitdate and l_receiptdate >= date '1994-01-01'
  and l_receiptdate < date '1994-01-01' + interval '1' year
group by l_shipmode
order by l_shipmode""",
    "q13": """select c_count, count(*) as custdist
from (
  select c_custkey, count(o_orderkey) as c_count
  from customer left outer join orders on c_custkey = o_custkey and o_comment not like '%:1%:2%'
  group by c_custkey
) as c_orders (c_custkey, c_count)
group by c_count
order by custdist desc, c_count desc""",
    "q14": """select 100.00 * sum(case when p_type like 'PROMO%' then l_extendedprice * (1 - l_discount) else 0 end)
  / sum(l_extendedprice * (1 - l_discount)) as promo_revenue
from lineitem, part
where l_partkey = p_partkey and l_shipdate >= date '1995-09-01'
  and l_shipdate < date '1995-09-01' + interval '1' month""",
    "q15": """with revenue0 (supplier_no, total_revenue) as (
  select l_suppkey, sum(l_extendedprice * (1 - l_discount))
  from lineitem
  where l_shipdate >= date '1993-01-01' and l_shipdate < date '1993-01-01' + interval '3' month
  group by l_suppkey
)
select s_suppkey, s_name, s_address, s_phone, total_revenue
from supplier, revenue0
where s_suppkey = supplier_no and total_revenue = (select max(total_revenue) from revenue0)
order by s_suppkey""",
    "q16": """select p_brand, p_type, p_size, count(distinct ps_suppkey) as supplier_cnt
from partsupp, part
where p_partkey = ps_partkey and p_brand <> 'Brand#11' and p_type not like 'SMALL%'
  and p_size in (1, 4, 7, 15, 19, 41, 42, 44)
  and ps_suppkey not in (select s_suppkey from supplier where s_comment like '%Customer%Complaints%')
group by p_brand, p_type, p_size
order by supplier_cnt desc, p_brand, p_type, p_size""",
    "q17": """select ROUND(sum(l_extendedprice) / 7.0, 16) as avg_yearly
from lineitem, part
where p_partkey = l_partkey and p_brand = 'Brand#13' and p_container = 'JUMBO PKG'
  and l_quantity < (select 0.2 * avg(l_quantity) from lineitem where l_partkey = p_partkey)""",
    "q18": """select c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity) quantity
from customer, orders, lineitem
where o_orderkey in (select l_orderkey from lineitem group by l_orderkey having sum(l_quantity) > 1)
  and c_custkey = o_custkey and o_orderkey = l_orderkey
group by c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice
order by o_totalprice desc, o_orderdate
LIMIT 100""",
    "q19": """select sum(l_extendedprice* (1 - l_discount)) as revenue
from lineitem, part
where (p_partkey = l_partkey and p_brand = 'Brand#52' and p_container in ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG')
    and l_quantity >= 1 and l_quantity <= 11 and p_size between 1 and 5 and l_shipmode in ('AIR', 'AIR REG')
    and l_shipinstruct = 'DELIVER IN PERSON')
  or (p_partkey = l_partkey and p_brand = 'Brand#24' and p_container in ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK')
    and l_quantity >= 30 and l_quantity <= 40 and p_size between 1 and 10 and l_shipmode in ('AIR', 'AIR REG')
    and l_shipinstruct = 'DELIVER IN PERSON')
  or (p_partkey = l_partkey and p_brand = 'Brand#32' and p_container in ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG')
    and l_quantity >= 10 and l_quantity <= 20 and p_size between 1 and 15 and l_shipmode in ('AIR', 'AIR REG')
    and l_shipinstruct = 'DELIVER IN PERSON')""",
    "q20": """select s_name, s_address
from supplier, nation
where s_suppkey in (
    select ps_suppkey from partsupp
    where ps_partkey in (select p_partkey from part where p_name like 'forest%')
      and ps_availqty > (
        select 0.5 * sum(l_quantity) from lineitem
        where l_partkey = ps_partkey and l_suppkey = ps_suppkey and l_shipdate >= date '1994-01-01'
          and l_shipdate < date '1994-01-01' + interval '1' year))
  and s_nationkey = n_nationkey and n_name = 'KENYA'
order by s_name""",
    "q21": """select s_name, count(*) as numwait
from supplier, lineitem l1, orders, nation
where s_suppkey = l1.l_suppkey and o_orderkey = l1.l_orderkey and o_orderstatus = 'F'
  and l1.l_receiptdate > l1.l_commitdate
  and exists (select * from lineitem l2 where l2.l_orderkey = l1.l_orderkey and l2.l_suppkey <> l1.l_suppkey)
  and not exists (
    select * from lineitem l3
    where l3.l_orderkey = l1.l_orderkey and l3.l_suppkey <> l1.l_suppkey and l3.l_receiptdate > l3.l_commitdate)
  and s_nationkey = n_nationkey and n_name = 'IRAQ'
group by s_name
order by numwait desc, s_name
LIMIT 100""",
    "q22": """select cntrycode, count(*) as numcust, sum(c_acctbal) as totacctbal
from (
  select substring(c_phone from 1 for 2) as cntrycode, c_acctbal
  from customer
  where substring(c_phone from 1 for 2) in ('30', '24', '31', '38', '25', '34', '37')
    and c_acctbal > (
      select avg(c_acctbal) from customer
      where c_acctbal > 0.00 and substring(c_phone from 1 for 2) in ('30', '24', '31', '38', '25', '34', '37'))
    and not exists (select * from orders where o_custkey = c_custkey)
) as custsale
group by cntrycode
order by cntrycode""",
}

# What RisingSpark does with each query today (see the module docstring): every one is supported.
EXPECTATIONS: dict[str, Expectation] = {name: SUPPORTED for name in QUERIES}


def test_tpch_matches_postgres(playground: PlaygroundProcess, oracle_dsn: str) -> None:
    rng = random.Random(SEED)
    data = generate(rng)
    writer = TpchWriter(rng, data)
    with playground.connect() as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        for table, columns in TABLES.items():
            conn.execute(f"DROP TABLE IF EXISTS {table} CASCADE")
            conn.execute(f"CREATE TABLE {table} ({columns})")
            insert_rows(conn, table, data.tables[table])
        conn.execute("FLUSH")
        with backfills_at_once(conn):
            views, failures = create_views(conn, QUERIES, EXPECTATIONS, "tpch", lambda: writer.step(conn, 4))
        for epoch in range(2):
            writer.step(conn, 30)
            conn.execute("FLUSH")
            for table in TABLES:
                copy_table(conn, pg, table)
            if epoch == 0:  # the data set is meant to reach every query's filters
                failures += [f"{name}: PostgreSQL's answer is empty (the generated data misses the query)"
                             for name in empty_answers(pg, QUERIES)]
            failures += [f"epoch {epoch}: {f}" for f in check_views(conn, pg, views, QUERIES)]
        for table in TABLES:
            conn.execute(f"DROP TABLE {table} CASCADE")
    assert not failures, "\n".join(failures)
