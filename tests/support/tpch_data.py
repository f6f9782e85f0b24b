"""A small seeded TPC-H data set (about 350 orders and 1,400 lineitems) whose values reach every
query's filters with RisingWave's parameters, and a seeded stream of inserts, updates and deletes
over it.

Value domains follow the TPC-H specification (types, containers, segments, priorities, ship modes
...); the choices are biased so that each query has rows: order dates cluster in the quarters the
queries ask for (1993 Q1, 1994 Q1, 1995 Mar / Aug-Sep, 1997 Q3), suppliers and customers live in
the nations they name (ARGENTINA, KENYA, IRAQ, IRAN, ROMANIA, the AFRICA, ASIA and MIDDLE EAST
regions), and some parts are made to the specifications of q2, q8, q17 and q19.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field
from decimal import Decimal

import psycopg

from support.workloads import sql_literal

REGIONS = ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"]
NATIONS = [("ALGERIA", 0), ("ARGENTINA", 1), ("BRAZIL", 1), ("CANADA", 1), ("EGYPT", 4), ("ETHIOPIA", 0),
           ("FRANCE", 3), ("GERMANY", 3), ("INDIA", 2), ("INDONESIA", 2), ("IRAN", 4), ("IRAQ", 4), ("JAPAN", 2),
           ("JORDAN", 4), ("KENYA", 0), ("MOROCCO", 0), ("MOZAMBIQUE", 0), ("PERU", 1), ("CHINA", 2),
           ("ROMANIA", 3), ("SAUDI ARABIA", 4), ("VIETNAM", 2), ("RUSSIA", 3), ("UNITED KINGDOM", 3),
           ("UNITED STATES", 1)]
# ARGENTINA, KENYA, IRAQ, IRAN, ROMANIA, ALGERIA, IRAQ, MOROCCO, SAUDI ARABIA, ARGENTINA, INDIA, EGYPT, IRAQ
SUPPLIER_NATIONS = [1, 14, 11, 10, 19, 0, 11, 15, 20, 1, 8, 4, 11]
# IRAN, ROMANIA, IRAQ, SAUDI ARABIA, INDIA, CHINA, JAPAN, KENYA, VIETNAM, MOROCCO, UNITED STATES, EGYPT
CUSTOMER_NATIONS = [10, 19, 11, 20, 8, 18, 12, 14, 21, 15, 24, 4]
COLORS = ["almond", "antique", "aquamarine", "azure", "beige", "bisque", "blue", "blush", "burlywood", "chartreuse",
          "chiffon", "coral", "cornsilk", "cream", "cyan", "dark", "drab", "firebrick", "forest", "frosted",
          "gainsboro", "ghost", "honeydew", "khaki", "lace", "lavender", "lemon", "linen", "magenta", "maroon",
          "metallic", "midnight", "mint", "navy", "orchid", "peach", "plum", "powder", "puff", "purple", "rose",
          "salmon", "seashell", "sienna", "sky", "smoke", "spring", "tan", "thistle", "tomato", "yellow"]
TYPE1 = ["STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"]
TYPE2 = ["ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"]
TYPE3 = ["TIN", "NICKEL", "BRASS", "STEEL", "COPPER"]
CONTAINER1 = ["SM", "LG", "MED", "JUMBO", "WRAP"]
CONTAINER2 = ["CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"]
SEGMENTS = ["AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD"]
PRIORITIES = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"]
INSTRUCTIONS = ["DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"]
MODES = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"]
SIZES = [1, 4, 7, 15, 19, 41, 42, 44, 3, 9, 12, 23, 30, 48]
# (first, last) order dates: the quarters the queries ask for, and the whole range
HOT_DATES = [("1994-01-01", "1994-03-31"), ("1997-07-01", "1997-09-30"), ("1995-08-05", "1995-09-20"),
             ("1992-11-15", "1993-02-28"), ("1995-01-01", "1995-03-28"), ("1994-04-01", "1994-11-30")]
ALL_DATES = ("1992-01-01", "1998-08-02")
CUTOFF = dt.date(1995, 6, 17)  # lines shipped later are still open ('O')
N_SUPPLIERS, N_PARTS, N_CUSTOMERS, N_ORDERS = 20, 60, 60, 350


def _day(rng: random.Random, span: tuple[str, str]) -> dt.date:
    lo, hi = (dt.date.fromisoformat(d) for d in span)
    return lo + dt.timedelta(days=rng.randrange((hi - lo).days + 1))


def _money(rng: random.Random, lo: int, hi: int) -> Decimal:
    return Decimal(rng.randrange(lo * 100, hi * 100)) / 100


def _phone(rng: random.Random, nation: int) -> str:
    return f"{10 + nation}-{rng.randrange(100, 1000)}-{rng.randrange(100, 1000)}-{rng.randrange(1000, 10000)}"


@dataclass
class Tpch:
    """The rows of the 8 tables (tuples in the DDL's column order)."""

    tables: dict[str, list[tuple]] = field(default_factory=dict)
    suppliers_of: dict[int, list[int]] = field(default_factory=dict)  # part -> its 4 suppliers
    retail: dict[int, Decimal] = field(default_factory=dict)  # part -> p_retailprice


def _part(rng: random.Random, p: int) -> tuple:
    words = rng.sample(COLORS, 5)
    if p % 6 == 0:
        words[0] = "forest"  # q20
    if p % 4 == 1 and "yellow" not in words:
        words[rng.randrange(5)] = "yellow"  # q9
    brand = f"Brand#{rng.randrange(1, 6)}{rng.randrange(1, 6)}"
    ptype = f"{rng.choice(TYPE1)} {rng.choice(TYPE2)} {rng.choice(TYPE3)}"
    size, container = rng.choice(SIZES), f"{rng.choice(CONTAINER1)} {rng.choice(CONTAINER2)}"
    special = {1: ("Brand#52", None, 3, "SM BOX"), 2: ("Brand#24", None, 7, "MED BAG"),  # q19
               3: ("Brand#32", None, 12, "LG CASE"), 4: ("Brand#13", None, None, "JUMBO PKG"),  # q17
               5: ("Brand#13", None, None, "JUMBO PKG"), 8: (None, "ECONOMY BRUSHED TIN", 4, None),  # q2
               9: (None, "PROMO PLATED TIN", 4, None), 10: (None, "STANDARD POLISHED TIN", 4, None)}
    if p in special:
        b, t, s, c = special[p]
        brand, ptype, size, container = b or brand, t or ptype, s or size, c or container
    if p % 7 == 0:
        ptype = "PROMO ANODIZED STEEL"  # q8
    retail = Decimal(90000 + (p // 10) + (p % 1000) * 100) / 100
    return (p, " ".join(words), f"Manufacturer#{brand[6]}", brand, ptype, size, container, retail,
            f"part {p} {rng.choice(COLORS)}")


def generate(rng: random.Random) -> Tpch:
    d = Tpch()
    t = d.tables
    t["region"] = [(i, name, f"region {name.lower()}") for i, name in enumerate(REGIONS)]
    t["nation"] = [(i, name, r, f"nation {name.lower()}") for i, (name, r) in enumerate(NATIONS)]
    t["supplier"] = []
    for s in range(1, N_SUPPLIERS + 1):
        nation = SUPPLIER_NATIONS[s % len(SUPPLIER_NATIONS)]
        comment = "slyly Customer requests Complaints" if s % 7 == 3 else f"supplier {rng.choice(COLORS)}"
        t["supplier"].append((s, f"Supplier#{s:09d}", f"addr s{s}", nation, _phone(rng, nation),
                              _money(rng, -999, 9999), comment))
    t["part"] = [_part(rng, p) for p in range(1, N_PARTS + 1)]
    d.retail = {r[0]: r[7] for r in t["part"]}
    t["partsupp"] = []
    for p in range(1, N_PARTS + 1):
        d.suppliers_of[p] = rng.sample(range(1, N_SUPPLIERS + 1), 4)
        for s in d.suppliers_of[p]:
            t["partsupp"].append((p, s, rng.randrange(1, 10000), _money(rng, 1, 1000), f"ps {p}-{s}"))
    t["customer"] = []
    for c in range(1, N_CUSTOMERS + 1):
        nation = rng.choice(CUSTOMER_NATIONS)
        t["customer"].append((c, f"Customer#{c:09d}", f"addr c{c}", nation, _phone(rng, nation),
                              _money(rng, -999, 9999), rng.choice(SEGMENTS), f"customer {rng.choice(COLORS)}"))
    t["orders"], t["lineitem"] = [], []
    for o in range(1, N_ORDERS + 1):
        order, lines = new_order(rng, d, o)
        t["orders"].append(order)
        t["lineitem"].extend(lines)
    return d


def order_comment(rng: random.Random) -> str:
    return rng.choice(["furiously :1 pending :2 deposits", "carefully regular :1 asymptotes :2", "quickly final",
                       "ironic packages :2 boost :1", "blithely even accounts"])


def new_order(rng: random.Random, d: Tpch, o: int) -> tuple[tuple, list[tuple]]:
    """An order (of a customer whose key is not a multiple of 3: those have none) and its lines."""
    cust = rng.choice([c for c in range(1, N_CUSTOMERS + 1) if c % 3])
    date = _day(rng, rng.choice(HOT_DATES) if rng.random() < 0.6 else ALL_DATES)
    lines = [new_line(rng, d, o, n, date) for n in range(1, rng.randrange(1, 8) + 1)]
    total = sum((ln[5] * (1 + ln[7]) * (1 - ln[6]) for ln in lines), Decimal(0)).quantize(Decimal("0.01"))
    status = "F" if all(ln[9] == "F" for ln in lines) else "O" if all(ln[9] == "O" for ln in lines) else "P"
    return (o, cust, status, total, date, rng.choice(PRIORITIES), f"Clerk#{rng.randrange(1, 100):09d}", 0,
            order_comment(rng)), lines


def new_line(rng: random.Random, d: Tpch, o: int, n: int, orderdate: dt.date) -> tuple:
    part = rng.randrange(1, 6) if rng.random() < 0.1 else rng.randrange(1, N_PARTS + 1)  # q17, q19
    qty = rng.randrange(1, 51)
    ship = orderdate + dt.timedelta(days=rng.randrange(1, 122))
    commit = orderdate + dt.timedelta(days=rng.randrange(30, 91))
    receipt = ship + dt.timedelta(days=rng.randrange(1, 31))
    flag = rng.choice("RA") if receipt <= CUTOFF else "N"
    return (o, part, rng.choice(d.suppliers_of[part]), n, Decimal(qty), qty * d.retail[part],
            Decimal(rng.randrange(11)) / 100, Decimal(rng.randrange(9)) / 100, flag,
            "O" if ship > CUTOFF else "F", ship, commit, receipt,
            INSTRUCTIONS[0] if rng.random() < 0.3 else rng.choice(INSTRUCTIONS),  # q19
            rng.choice(["AIR", "AIR REG"]) if rng.random() < 0.3 else rng.choice(MODES),
            f"line {o}-{n}")


class TpchWriter:
    """A seeded stream of inserts, updates and deletes over the generated data set."""

    def __init__(self, rng: random.Random, data: Tpch) -> None:
        self.rng, self.d = rng, data
        self.next_order = N_ORDERS + 1
        self.next_customer = N_CUSTOMERS + 1
        self.lines: dict[int, int] = {}  # order -> its highest line number
        for ln in data.tables["lineitem"]:
            self.lines[ln[0]] = max(self.lines.get(ln[0], 0), ln[3])

    def statements(self, n: int) -> list[str]:
        rng, d = self.rng, self.d
        out: list[str] = []
        while len(out) < n:
            x = rng.random()
            o = rng.randrange(1, self.next_order)
            if x < 0.12:  # a new order with its lines
                order, lines = new_order(rng, d, self.next_order)
                self.lines[self.next_order] = len(lines)
                self.next_order += 1
                out.append("INSERT INTO orders VALUES (" + ", ".join(sql_literal(v) for v in order) + ")")
                out.append("INSERT INTO lineitem VALUES " + ", ".join(
                    "(" + ", ".join(sql_literal(v) for v in ln) + ")" for ln in lines))
            elif x < 0.22:  # one more line of an existing order
                self.lines[o] = self.lines.get(o, 0) + 1
                date = _day(rng, rng.choice(HOT_DATES))
                out.append("INSERT INTO lineitem VALUES (" + ", ".join(
                    sql_literal(v) for v in new_line(rng, d, o, self.lines[o], date)) + ")")
            elif x < 0.34:  # another part, quantity and discount
                part, q = rng.randrange(1, N_PARTS + 1), rng.randrange(1, 51)
                out.append(f"UPDATE lineitem SET l_partkey = {part}, l_suppkey = {rng.choice(d.suppliers_of[part])}, "
                           f"l_quantity = {q}, l_extendedprice = {q * d.retail[part]}, "
                           f"l_discount = {Decimal(rng.randrange(11)) / 100} WHERE l_orderkey = {o} "
                           f"AND l_linenumber = {rng.randrange(1, 5)}")
            elif x < 0.42:  # other dates
                ln = new_line(rng, d, o, 0, _day(rng, rng.choice(HOT_DATES)))
                out.append(f"UPDATE lineitem SET l_shipdate = {sql_literal(ln[10])}, l_commitdate = "
                           f"{sql_literal(ln[11])}, l_receiptdate = {sql_literal(ln[12])}, l_returnflag = '{ln[8]}', "
                           f"l_linestatus = '{ln[9]}' WHERE l_orderkey = {o} AND l_linenumber = {rng.randrange(1, 5)}")
            elif x < 0.50:
                out.append(f"DELETE FROM lineitem WHERE l_orderkey = {o} AND l_linenumber = {rng.randrange(1, 8)}")
            elif x < 0.58:
                out.append(f"UPDATE orders SET o_orderdate = {sql_literal(_day(rng, rng.choice(HOT_DATES)))}, "
                           f"o_orderpriority = '{rng.choice(PRIORITIES)}', o_comment = '{order_comment(rng)}', "
                           f"o_orderstatus = '{rng.choice('FFOP')}' WHERE o_orderkey = {o}")
            elif x < 0.62:
                out.append(f"DELETE FROM orders WHERE o_orderkey = {o}")
            elif x < 0.70:
                c = rng.randrange(1, self.next_customer)
                out.append(f"UPDATE customer SET c_acctbal = {_money(rng, -999, 9999)}, "
                           f"c_mktsegment = '{rng.choice(SEGMENTS)}' WHERE c_custkey = {c}")
            elif x < 0.74:
                c, nation = self.next_customer, rng.choice(CUSTOMER_NATIONS)
                self.next_customer += 1
                out.append(f"INSERT INTO customer VALUES ({c}, 'Customer#{c:09d}', 'addr c{c}', {nation}, "
                           f"'{_phone(rng, nation)}', {_money(rng, -999, 9999)}, '{rng.choice(SEGMENTS)}', 'new')")
            elif x < 0.77:
                out.append(f"DELETE FROM customer WHERE c_custkey = {rng.randrange(1, self.next_customer)}")
            elif x < 0.85:
                p = rng.randrange(1, N_PARTS + 1)
                out.append(f"UPDATE partsupp SET ps_supplycost = {_money(rng, 1, 1000)}, ps_availqty = "
                           f"{rng.randrange(1, 10000)} WHERE ps_partkey = {p} AND ps_suppkey = {d.suppliers_of[p][0]}")
            elif x < 0.88:
                p = rng.randrange(1, N_PARTS + 1)
                out.append(f"DELETE FROM partsupp WHERE ps_partkey = {p} AND ps_suppkey = {d.suppliers_of[p][-1]}")
            elif x < 0.94:
                p = rng.randrange(1, N_PARTS + 1)
                ptype = rng.choice(["PROMO ANODIZED STEEL", "SMALL PLATED TIN", "LARGE BRUSHED COPPER"])
                out.append(f"UPDATE part SET p_type = '{ptype}', p_size = {rng.choice(SIZES)} WHERE p_partkey = {p}")
            else:
                s = rng.randrange(1, N_SUPPLIERS + 1)
                out.append(f"UPDATE supplier SET s_acctbal = {_money(rng, -999, 9999)}, s_nationkey = "
                           f"{rng.choice(SUPPLIER_NATIONS)} WHERE s_suppkey = {s}")
        return out

    def step(self, conn: psycopg.Connection, n: int) -> None:
        for stmt in self.statements(n):
            conn.execute(stmt)
