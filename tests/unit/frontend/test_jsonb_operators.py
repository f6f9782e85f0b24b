"""jsonb's ``||``, ``-``, ``#-``, ``?|``, ``?&`` and ``jsonb_exists`` in batch queries
(`frontend.catalog.jsonb_edit`) against PostgreSQL (the oracle): its values, texts and errors; the
quoted literals beside a jsonb in coalesce, CASE and VALUES read as jsonb; and 0A000 for what the
batch engine would answer otherwise than PostgreSQL (functions of type json, comparisons of jsonb
by their text)."""

from __future__ import annotations

import psycopg
import pyarrow as pa
import pytest
from catalog_session import make_session, relation
from psycopg.types.string import TextLoader

from risingspark.catalog import RelationKind
from risingspark.errors import FeatureNotSupported, RisingSparkError
from risingspark.types import INT4, JSONB, Field

VALUES = [
    # || (jsonb_concat): objects merge (the right one wins), else arrays join (a scalar or an object is one)
    "'{}'::jsonb || '{}'::jsonb", """'{"a":1}'::jsonb || '{"b":2}'::jsonb""", "'[1]'::jsonb || '[2]'::jsonb",
    "'1'::jsonb || '[2]'::jsonb", "'[1]'::jsonb || '2'::jsonb", "'1'::jsonb || '2'::jsonb",
    """'{"a":1}'::jsonb || '{"a":2, "c":[3]}'::jsonb""", """'{"a":1}'::jsonb || '[2]'::jsonb""",
    """'[2]'::jsonb || '{"a":1}'::jsonb""", """'{"a":1}'::jsonb || '"s"'""", """'{"b":1}' || '{"a":1.50}'::jsonb""",
    "'[]'::jsonb || '[]'", "'{}'::jsonb || '[]'", "'[1]'::jsonb || NULL", "NULL || '[1]'::jsonb",
    "NULL::jsonb || '[1]'::jsonb", """'{"a":1}'::jsonb || '{"b":2}' || '[3]'::jsonb""",
    """('{"a":[1]}'::jsonb -> 'a') || '[2]'""", """('{"a":1}'::jsonb || '{"b":2}') ->> 'b'""",
    """'{"a":1}'::jsonb || 'x'::text""", """'x'::varchar || '{"a":1}'::jsonb""",
    """ARRAY['{"b":1,"a":1}'::jsonb] || '{"c":1}'::jsonb""",
    # - of a key, an index, keys
    """'{"a":1,"b":2}'::jsonb - 'a'""", """'{"a":1}'::jsonb - 'z'""", """'["a","b","a",1]'::jsonb - 'a'""",
    "'[1,2,3]'::jsonb - 1", "'[1,2,3]'::jsonb - -1", "'[1,2,3]'::jsonb - 5", "'[1,2,3]'::jsonb - -4",
    "'[1,2]'::jsonb - 1::smallint", """'{"a":1,"b":2,"c":3}'::jsonb - '{a,c}'::text[]""",
    """'{"a":1,"b":2}'::jsonb - ARRAY['b', NULL]""", """'["a","b"]'::jsonb - ARRAY['b']""", """'{"a":1}'::jsonb - NULL""",
    """'{"a":1}'::jsonb - '{a}'""",
    # #- (jsonb_delete_path), #> of an array path
    """'{"a":{"b":1,"c":2}}'::jsonb #- '{a,b}'""", "'[1,[2,3]]'::jsonb #- '{1,-1}'", "'[1,2]'::jsonb #- '{\" 1\"}'",
    """'{"a":[1,2]}'::jsonb #- '{a,-5}'""", """'{"a":1}'::jsonb #- '{b,NULL}'""", """'{"a":1}'::jsonb #- '{}'""",
    """'{"a":1}'::jsonb #- ARRAY['a']""", """'{"a":1}'::jsonb #- NULL""", """'{"a":{"b":2}}'::jsonb #> ARRAY['a','b']""",
    """'{"a":{"b":2}}'::jsonb #>> '{a,b}'::text[]""", """'[1,2]'::jsonb #> '{"1 "}'""",
    "'[1,2,3,4,5,6,7,8,9,10,11]'::jsonb #> '{1_0}'",
    # ?| and ?&, jsonb_exists (the function of ?)
    """'{"a":1,"b":2}'::jsonb ?| ARRAY['a','c']""", """'{"a":1,"b":2}'::jsonb ?& ARRAY['a','c']""",
    """'["a",1]'::jsonb ?| '{a,NULL}'""", """'["a",1]'::jsonb ?& '{}'""", "'5'::jsonb ?| '{a}'", """'"a"'::jsonb ?& '{a}'""",
    """'{"a":1}'::jsonb ?| NULL""", """jsonb_exists('["a"]', 'a')""", """jsonb_exists('{"a":1}'::jsonb, 'b')""",
    # = and <> (jsonb equality: numbers as numbers, keys in any order)
    """'{"a":1,"b":2}'::jsonb = '{"b":2, "a":1}'::jsonb""", "'1.0'::jsonb = '1'::jsonb", "'1'::jsonb = '[1]'::jsonb",
    "'[1,2]'::jsonb <> '[2,1]'::jsonb", "'true'::jsonb = '1'::jsonb", """'{"a":1}'::jsonb = NULL""",
    """'{"a":[1,{"b":null}]}'::jsonb -> 'a' = '[1.0,{"b":null}]'""", """'{}'::jsonb || '{"a":1}' = '{"a":1}'::jsonb""",
    # a quoted literal beside a jsonb is one (its canonical text)
    """coalesce(NULL::jsonb, '{"b":1, "a":2}')""", """coalesce('{"b":1,  "a":2}', '{}'::jsonb)""",
    """CASE WHEN false THEN '{}'::jsonb ELSE '{"y": 1,  "x":2}' END""",
    """(SELECT j FROM (VALUES ('{"b":1,"a":2}'), ('[1]'::jsonb)) v(j) LIMIT 1)""",
]


def _pg(dsn: str) -> psycopg.Connection:
    """A connection to the oracle that reads jsonb as its text."""
    pg = psycopg.connect(dsn, autocommit=True)
    pg.adapters.register_loader("jsonb", TextLoader)
    return pg


def test_values_are_postgresqls(oracle_dsn: str) -> None:
    session = make_session()
    query = "SELECT " + ", ".join(f"{v} AS c{i}" for i, v in enumerate(VALUES))
    table = session.run_batch(session.parse_sql(query), typed=True)
    with _pg(oracle_dsn) as pg:
        cur = pg.execute(query)
        want, oids = cur.fetchone(), [d.type_code for d in cur.description]
    got = list(table.to_pylist()[0].values())
    assert list(zip(VALUES, got, strict=True)) == list(zip(VALUES, want, strict=True))
    jsonb_oid = 3802
    assert [(v, t == pa.json_()) for v, t in zip(VALUES, table.schema.types, strict=True)] == \
        [(v, oid == jsonb_oid) for v, oid in zip(VALUES, oids, strict=True)]


ERRORS = ["'[1]'::jsonb || 'x'", "'x' || '[1]'::jsonb", "'[1]'::jsonb || 1", "1.5 || '[1]'::jsonb",
          "'[1]'::jsonb || ARRAY[1]", """'{"a":1}'::jsonb - 0""", """'"x"'::jsonb - 'x'""", "'5'::jsonb - '{}'::text[]",
          "'[1,2]'::jsonb - 1::bigint", "'[1,2]'::jsonb - 2147483648", "'[1,2]'::jsonb - 1.0",
          """'{"a":1}'::jsonb - ARRAY[1]""", "'5'::jsonb #- '{a}'", "'[1,2]'::jsonb #- '{x}'", "'[1,2]'::jsonb #- '{1.0}'",
          """'{"a":{}}'::jsonb #- '{a,NULL}'""", """'{"a":1}'::jsonb ?| 'x'""", """'"\\u0000"'::jsonb""",
          """max('{"a":1}'::jsonb)""", """'{"a":1}'::jsonb = 'x'"""]


@pytest.mark.parametrize("expression", ERRORS)
def test_errors_are_postgresqls(oracle_dsn: str, expression: str) -> None:
    with _pg(oracle_dsn) as pg, pytest.raises(psycopg.Error) as want:
        pg.execute(f"SELECT {expression}")
    session = make_session()
    with pytest.raises(RisingSparkError) as got:
        session.run_batch(session.parse_sql(f"SELECT {expression}"))
    assert (got.value.sqlstate, got.value.message) == (want.value.sqlstate, want.value.diag.message_primary)


# what DuckDB answered otherwise than PostgreSQL: its JSON functions print other texts (to_json(1.50) was
# 1.5, json_array_length('{}') was 0), and jsonb compared, ordered and deduplicated by its text (1.0 and 1
# are equal jsonb; 10 is more than 9). (json_build_object is kept, with its own spacing: SQLAlchemy's
# reflection sends it.)
REFUSED = ["to_json(1.50)", "array_to_json(ARRAY[1.50])", "json_array_length('[1]')",
           """json_extract_path('{"a":{"b":1}}', 'a')""", "json_object('{a,b}', '{1,2}')",
           "jsonb_object_agg(k, v) FROM (VALUES ('a', 1)) t(k, v)", "json_agg(x) FROM (VALUES (1)) v(x)",
           "greatest('10'::jsonb, '9'::jsonb)", "nullif('1'::jsonb, '1.0'::jsonb)",
           "count(DISTINCT j) FROM docs", "j FROM docs UNION SELECT '1.0'::jsonb",
           "count(*) FROM (SELECT '1'::jsonb UNION SELECT '1.0'::jsonb) s", "'10'::jsonb UNION ALL SELECT '9'::jsonb ORDER BY 1",
           "j AS x FROM docs ORDER BY x", "'[1]'::jsonb < '[2]'::jsonb", """j || '{"z":0}' FROM (VALUES ('{"a":1}'::jsonb)) v(j)""",
           """x || '{"z":0}' FROM (SELECT j AS x FROM docs UNION ALL SELECT '{}'::jsonb) s"""]
DOCS = relation(1020, "docs", RelationKind.TABLE, (Field("id", INT4), Field("j", JSONB)), (0,),
                definition="CREATE TABLE docs (id INT PRIMARY KEY, j JSONB)")


@pytest.mark.parametrize("expression", REFUSED)
def test_what_the_engine_answers_otherwise_is_refused(oracle_dsn: str, expression: str) -> None:
    with _pg(oracle_dsn) as pg:
        pg.execute("CREATE TEMP TABLE docs (id INT PRIMARY KEY, j JSONB)")
        pg.execute(f"SELECT {expression}")  # (PostgreSQL answers)
    session = make_session([DOCS])
    with pytest.raises(FeatureNotSupported):
        session.run_batch(session.parse_sql(f"SELECT {expression}"))
