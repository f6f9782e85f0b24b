"""The UDFs of a double's and a real's text in materialized views (`compute.float_text_udf`):
PostgreSQL's text for values whose Java text differs in layout or digits, NULL kept. (Where two
shortest texts exist PostgreSQL's Ryu may pick another: `'1e23'::float8::text` is
`9.999999999999999e+22` there, `1e+23` here and on the wire.)"""

from __future__ import annotations

import psycopg
import pyarrow as pa

from compute.float_text_udf import float4_text, float8_text

DOUBLES = ["2", "-2", "0", "-0", "0.1", "123.45", "0.0001", "0.00001", "12345678", "123456789012345", "1e15", "1.5e300",
           "2.5e-7", "-1.0493793984672758e18", "4.9e-324", "NaN", "Infinity", "-Infinity", "0.3333333333333333"]
REALS = ["2", "-0", "0.1", "123456", "1234567", "1e15", "-1.0061466e10", "6.8415755e25", "1.4e-45", "1.17549435e-38",
         "0.00001", "NaN", "-Infinity"]


def test_the_text_is_postgresqls(oracle_dsn: str) -> None:
    with psycopg.connect(oracle_dsn) as pg:
        for texts, kind, udf in ((DOUBLES, "float8", float8_text), (REALS, "real", float4_text)):
            want = [pg.execute(f"SELECT '{t}'::{kind}::text").fetchone()[0] for t in texts]
            values = [pg.execute(f"SELECT '{t}'::{kind}").fetchone()[0] for t in texts]
            got = udf(pa.array([*values, None], pa.float64() if kind == "float8" else pa.float32())).to_pylist()
            assert got == [*want, None], kind
