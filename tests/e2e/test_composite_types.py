"""Struct and jsonb columns in materialized views and batch queries, compared with PostgreSQL.

One table with a nested struct column, a jsonb column and a text column of JSON texts gets random
rows (NULL structs and structs of NULL fields, unicode and quoting-hungry strings, nested jsonb
objects and arrays, duplicate keys, numbers with scales and exponents). Views are created in the
background while more rows change, then rounds of random inserts, updates and deletes follow; after
each FLUSH every view equals PostgreSQL's answer to its query.

PostgreSQL has no ``STRUCT<...>``: its table declares composite types (``CREATE TYPE ... AS``) with
the same fields, and every statement is run on both servers as written (``ROW(...)`` fills a
composite column as it fills a struct column), so the two tables hold the same rows. Struct and
record values are compared as the record text each server prints, jsonb values as their text.
"""

from __future__ import annotations

import json
import os
import random

import psycopg
import pytest
from psycopg.types.string import TextLoader

from conftest import PlaygroundProcess, unique_name
from support.oracle import rows_of

pytestmark = pytest.mark.e2e

SEED = int(os.environ.get("RISINGSPARK_COMPOSITE_SEED", "20261126"))
RECORD_OID, JSONB_OID = 2249, 3802

VIEWS = {
    "fields": "SELECT id, (s).a AS a, (s).b AS b, (s).c AS c, ((s).c).x AS x, ((s).c).y AS y, s, "
              "s IS NULL AS sn, s IS NOT NULL AS snn, (s).c IS NULL AS cn FROM {t}",
    "rows": "SELECT id, ROW(id, (s).b) AS r, ROW((s).a, k, j ->> 'name') AS r2, "
            "ROW(1, (s).c) AS r3 FROM {t}",
    "jsonb_ops": "SELECT id, j -> 'name' AS n, j ->> 'name' AS nt, j -> 'tags' -> 0 AS t0, j -> 'tags' ->> -1 AS tl, "
                 "j #> '{nested,deep}' AS d, j #>> '{nested,list,1}' AS d2, jsonb_typeof(j) AS ty, "
                 "jsonb_typeof(j -> 'n') AS nty, j ? 'name' AS hn, j @> '{\"kind\": \"a\"}' AS ka, "
                 "(j ->> 'n')::numeric AS num, (j ->> 'i')::int + 1 AS i, j -> 'nested' AS nested, "
                 "CASE WHEN jsonb_typeof(j -> 'tags') = 'array' THEN jsonb_array_length(j -> 'tags') END AS len, j "
                 "FROM {t}",
    "jsonb_filter": "SELECT id, j, s FROM {t} WHERE j @> '{\"tags\": [\"x\"]}' OR j ? 'flag' OR (s).a > 50 "
                    "OR j -> 'nested' @> '{\"list\": [2]}' OR '[1, 2]' <@ (j -> 'tags')",
    "jsonb_edits": "SELECT id, j || '{\"z\": [1]}' AS cat, '[0]' || j AS cat2, j || j AS self, j ?| '{name,flag}' AS anyk, "
                   "j ?& '{name,kind}' AS allk, CASE WHEN jsonb_typeof(j) IN ('object', 'array') THEN j - 'name' END AS dk, "
                   "CASE WHEN jsonb_typeof(j) = 'array' THEN j - -1 END AS di, "
                   "CASE WHEN jsonb_typeof(j) = 'object' THEN j #- '{nested,deep}' END AS dp, "
                   "j -> 'n' = '100' AS n100, j -> 'tags' <> '[\"x\", 1]' AS tx FROM {t}",
    "text_to_jsonb": "SELECT id, k::jsonb AS kj, (k::jsonb) -> 'a' AS ka FROM {t}",
    "jsonb_groups": "SELECT jsonb_typeof(j) AS ty, count(j) AS c, count(*) AS n, sum((j ->> 'i')::int) AS si "
                    "FROM {t} GROUP BY jsonb_typeof(j)",
}

STRINGS = ["plain", "a b", "", "x,y", 'q"u', "p(a)", "b\\s", " ", "ü é", "😀", "tab\there", "NULL", "{}", "[1]"]


def _sql_str(s: str | None) -> str:
    return "NULL" if s is None else "'" + s.replace("'", "''") + "'"


class Rows:
    """A seeded stream of rows and writes; each id is written at most once between two FLUSHes
    (an UPDATE reads the committed state, as RisingWave's)."""

    def __init__(self, rng: random.Random, table: str) -> None:
        self.rng, self.t = rng, table
        self.next_id = 0
        self.live: set[int] = set()
        self.touched: set[int] = set()

    def text(self) -> str | None:
        return None if self.rng.random() < 0.15 else self.rng.choice(STRINGS)

    def struct(self) -> str:
        r = self.rng.random()
        if r < 0.12:
            return "NULL"
        if r < 0.2:
            return "ROW(NULL, NULL, NULL)"
        a = "NULL" if self.rng.random() < 0.15 else str(self.rng.randrange(0, 80))
        c = self.rng.random()
        if c < 0.2:
            inner = "NULL"
        elif c < 0.3:
            inner = "ROW(NULL, NULL)"
        else:
            x = "NULL" if self.rng.random() < 0.2 else self.rng.choice(["1.5", "-0.25", "3", "1e20", "0.1"])
            inner = f"ROW({x}, {_sql_str(self.text())})"
        return f"ROW({a}, {_sql_str(self.text())}, {inner})"

    def value(self, depth: int = 0) -> object:
        rng = self.rng
        r = rng.random()
        if depth < 2 and r < 0.2:
            return {rng.choice(["a", "b", "zz", "é", "k"]): self.value(depth + 1) for _ in range(rng.randrange(3))}
        if depth < 2 and r < 0.35:
            return [self.value(depth + 1) for _ in range(rng.randrange(4))]
        return rng.choice([None, True, False, 1, 2, -3, "x", "y", "", "a b", "ü", 1.5, 0])

    def doc(self) -> str | None:
        """A JSON text, written unlike jsonb prints it (spacing, key order, duplicate keys, number
        forms), or NULL."""
        rng = self.rng
        r = rng.random()
        if r < 0.1:
            return None
        if r < 0.2:
            return rng.choice(['[1, 2, "x"]', '"str"', "5", "null", "true", "[]", "{}", '[[1, 2], {"a": 1}]'])
        parts = []
        if rng.random() < 0.8:
            parts.append(f'"name": {json.dumps(rng.choice(["n1", "n2", "ü", "a,b", None]), ensure_ascii=False)}')
        if rng.random() < 0.7:
            tags = [rng.choice(["x", "y", 1, 2, None, [1]]) for _ in range(rng.randrange(4))]
            parts.append(f'"tags": {json.dumps(tags)}')
        if rng.random() < 0.5:
            parts.append(f'"kind": {json.dumps(rng.choice(["a", "b"]))}')
        if rng.random() < 0.5:
            parts.append(f'"n": {rng.choice(["1.50", "1e2", "-0", "2", "0.001", "1.0E+1", "123456789012"])}')
        if rng.random() < 0.5:
            parts.append(f'"i": {rng.randrange(-50, 50)}')
        if rng.random() < 0.2:
            parts.append('"flag": true')
        if rng.random() < 0.4:
            nested = {"deep": self.value(), "list": [rng.randrange(4) for _ in range(rng.randrange(4))]}
            parts.append(f'"nested": {json.dumps(nested, ensure_ascii=False)}')
        if rng.random() < 0.15 and parts and parts[0].startswith(('"name"', '"kind"')):
            parts.append(parts[0].split(":")[0] + ': "dup"')  # the last of duplicate keys wins
        rng.shuffle(parts)
        sep = rng.choice([", ", ",", " ,  "])
        return "{" + sep.join(parts) + "}"

    def row(self) -> str:
        self.next_id += 1
        self.live.add(self.next_id)
        self.touched.add(self.next_id)
        return f"({self.next_id}, {self.struct()}, {_sql_str(self.doc())}, {_sql_str(self.doc())})"

    def step(self, conns: list[psycopg.Connection], n: int) -> None:
        rng = self.rng
        for _ in range(n):
            free = sorted(self.live - self.touched)
            x = rng.random()
            if x < 0.4 or not free:
                stmt = f"INSERT INTO {self.t} VALUES {self.row()}"
            else:
                target = rng.choice(free)
                self.touched.add(target)
                if x < 0.6:
                    stmt = f"UPDATE {self.t} SET s = {self.struct()} WHERE id = {target}"
                elif x < 0.8:
                    stmt = f"UPDATE {self.t} SET j = {_sql_str(self.doc())}, k = {_sql_str(self.doc())} WHERE id = {target}"
                else:
                    stmt = f"DELETE FROM {self.t} WHERE id = {target}"
                    self.live.discard(target)
            for c in conns:
                c.execute(stmt)

    def flushed(self) -> None:
        self.touched.clear()


def _as_text(conn: psycopg.Connection, *oids: int) -> None:
    for oid in oids:
        conn.adapters.register_loader(oid, TextLoader)


def _compare(conn: psycopg.Connection, pg: psycopg.Connection, name: str, query: str, rs_query: str) -> int:
    got, want = rows_of(conn, rs_query), rows_of(pg, query)
    if got != want:
        missing = [r for r in want if r not in set(got)][:4]
        extra = [r for r in got if r not in set(want)][:4]
        raise AssertionError(f"{name}: {len(got)} rows vs PostgreSQL's {len(want)}; missing {missing}, "
                             f"unexpected {extra}")
    return len(got)


def test_structs_and_jsonb_match_postgres(playground: PlaygroundProcess, oracle_dsn: str) -> None:
    rng = random.Random(SEED)
    t = unique_name("cmp")
    rows = Rows(rng, t)
    with playground.connect() as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        conn.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, s STRUCT<a INT, b VARCHAR, c STRUCT<x DOUBLE PRECISION, "
                     f"y VARCHAR>>, j JSONB, k VARCHAR)")
        pg.execute(f"CREATE TYPE {t}_c AS (x double precision, y varchar)")
        pg.execute(f"CREATE TYPE {t}_s AS (a int, b varchar, c {t}_c)")
        pg.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, s {t}_s, j JSONB, k VARCHAR)")
        composite_oids = [r[0] for r in pg.execute("SELECT oid FROM pg_type WHERE typname IN (%s, %s)",
                                                   (f"{t}_c", f"{t}_s")).fetchall()]
        _as_text(conn, RECORD_OID, JSONB_OID)
        _as_text(pg, RECORD_OID, JSONB_OID, *composite_oids)
        first = f"INSERT INTO {t} VALUES " + ", ".join(rows.row() for _ in range(120))
        conn.execute(first)
        pg.execute(first)
        conn.execute("FLUSH")
        rows.flushed()
        conn.execute("SET background_ddl = true")
        for name, q in VIEWS.items():
            conn.execute(f"CREATE MATERIALIZED VIEW {t}_{name} AS {q.replace('{t}', t)}")
            rows.step([conn, pg], 6)  # changes while the views backfill
        conn.execute("WAIT")
        conn.execute("SET background_ddl = false")
        types = dict(conn.execute("SELECT column_name, data_type FROM information_schema.columns "
                                  "WHERE table_name = %s", (f"{t}_jsonb_ops",)).fetchall())
        assert types["n"] == "jsonb" and types["nt"] == "character varying"
        for round_ in range(3):
            if round_:
                rows.step([conn, pg], 40)
            conn.execute("FLUSH")
            rows.flushed()
            failures = []
            for name, q in VIEWS.items():
                try:
                    n = _compare(conn, pg, name, q.replace("{t}", t), f'SELECT * FROM "{t}_{name}"')
                    assert n > 0, f"{name}: no rows, the view tests nothing"
                except AssertionError as e:
                    failures.append(str(e))
            # the same queries as batch SELECTs (DuckDB)
            for name in ("fields", "rows", "jsonb_ops", "jsonb_filter", "jsonb_edits"):
                try:
                    q = VIEWS[name].replace("{t}", t)
                    _compare(conn, pg, f"batch {name}", q, q)
                except AssertionError as e:
                    failures.append(str(e))
            assert not failures, f"round {round_}:\n" + "\n".join(failures)
        got = conn.execute("SELECT ROW(1, 'a b', '', NULL, 'x,y')").fetchone()
        assert got == ('(1,"a b","",,"x,y")',)


@pytest.mark.parametrize(("stmt", "error", "words"), [
    ("CREATE MATERIALIZED VIEW {t}_bad AS SELECT s, count(*) AS c FROM {t} GROUP BY s",
     psycopg.errors.FeatureNotSupported, "as a key"),
    ("CREATE MATERIALIZED VIEW {t}_bad AS SELECT DISTINCT j FROM {t}", psycopg.errors.FeatureNotSupported, "as a key"),
    ("CREATE MATERIALIZED VIEW {t}_bad AS SELECT id FROM {t} WHERE j < '{{}}'", psycopg.errors.FeatureNotSupported,
     "jsonb values"),
    ("CREATE MATERIALIZED VIEW {t}_bad AS SELECT id FROM {t} WHERE s = ROW(1, 'x', NULL)",
     psycopg.errors.FeatureNotSupported, "struct values"),
    ("CREATE MATERIALIZED VIEW {t}_bad AS SELECT s::varchar AS v FROM {t}", psycopg.errors.FeatureNotSupported,
     "struct"),
    ("CREATE MATERIALIZED VIEW {t}_bad AS SELECT j || (s).b AS v FROM {t}", psycopg.errors.FeatureNotSupported, "jsonb"),
    ("CREATE MATERIALIZED VIEW {t}_bad AS SELECT a.s FROM {t} a JOIN {t} b ON a.id = b.id",
     psycopg.errors.FeatureNotSupported, "through a join"),
    ("SELECT * FROM {t} ORDER BY j", psycopg.errors.FeatureNotSupported, "ordering of jsonb"),
    ("SELECT * FROM {t} WHERE s = ROW(1, 'x', NULL)", psycopg.errors.FeatureNotSupported, "struct"),
    ("INSERT INTO {t} (id, s) VALUES (1, '(1,x,)')", psycopg.errors.FeatureNotSupported, "text input of struct"),
    ("CREATE TABLE {t}_bad (id INT PRIMARY KEY, j JSON)", psycopg.errors.FeatureNotSupported, "json"),
    ("CREATE TABLE {t}_bad (s STRUCT<a INT> PRIMARY KEY)", psycopg.errors.FeatureNotSupported, "primary key"),
    ("INSERT INTO {t} (id, j) VALUES (1, '{{\"a\": 1,}}')", psycopg.errors.InvalidTextRepresentation,
     "invalid input syntax for type json"),
    ("INSERT INTO {t} (id, j) VALUES (1, 'nope'), (2, '[]')", psycopg.errors.InvalidTextRepresentation,
     "invalid input syntax for type json"),
    ("SELECT '[1'::jsonb", psycopg.errors.InvalidTextRepresentation, "invalid input syntax for type json"),
    ("SELECT jsonb_array_length('{{}}')", psycopg.errors.InvalidParameterValue, "non-array"),
])
def test_unsupported_and_invalid(playground: PlaygroundProcess, stmt: str, error: type, words: str) -> None:
    t = unique_name("cmu")
    with playground.connect() as conn:
        conn.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, s STRUCT<a INT, b VARCHAR, c INT>, j JSONB)")
        with pytest.raises(error, match=words):
            conn.execute(stmt.format(t=t))
        conn.execute(f"DROP TABLE {t} CASCADE")
