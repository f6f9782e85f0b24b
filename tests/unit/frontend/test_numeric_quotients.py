"""Quotients of numeric literals in batch queries (`frontend.catalog.numeric_quotients`) against
PostgreSQL (the oracle): the text a client reads, with PostgreSQL's display scale."""

from __future__ import annotations

import psycopg
from catalog_session import make_session

from frontend.pgwire.codec import text_value
from frontend.session import columns_of

QUOTIENTS = ["10 / 4.0", "0.001 / 3", "1000000 / 7.0", "1 / 3::numeric", "1.0 / 3", "-1 / 3.0", "2 / -3.0",
             "(-0.001) / 3", "1e3 / 7", "1.5e-3 / 7", "'2.5'::numeric / 2", "1.005::numeric(12,2) / 3",
             "123456789012.5 / 3", "100000000 / 3.0", "0.0 / 5", "10.0 / 4 / 3", "99999 / 0.5", "2.20 / 1",
             "123456789.123456789012 / 7"]


def _texts(rows: dict) -> list[str | None]:
    return list(rows.values())


def test_texts_are_postgresqls(oracle_dsn: str) -> None:
    session = make_session()
    query = "SELECT " + ", ".join(f"{q} AS c{i}" for i, q in enumerate(QUOTIENTS))
    table = session.run_batch(session.parse_sql(query), typed=True)
    got = [None if v is None else text_value(v, c.type_oid, c.type_mod).decode()
           for v, c in zip(table.to_pylist()[0].values(), columns_of(table), strict=True)]
    with psycopg.connect(oracle_dsn, autocommit=True) as pg:
        want = pg.execute("SELECT " + ", ".join(f"({q})::text" for q in QUOTIENTS)).fetchone()
        oids = [d.type_code for d in pg.execute(query).description]
    assert list(zip(QUOTIENTS, got, strict=True)) == list(zip(QUOTIENTS, want, strict=True))
    assert {c.type_oid for c in columns_of(table)} == set(oids) == {1700}
