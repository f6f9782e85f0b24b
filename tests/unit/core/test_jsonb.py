"""jsonb as PostgreSQL's: canonical text, ->, ->>, #>, #>>, @>, <@, ?, jsonb_typeof and
jsonb_array_length over a table of cases. The expected answers were taken from PostgreSQL 15, and
`test_cases_agree_with_postgres` runs every case on the oracle server (127.0.0.1:5432) again."""

from __future__ import annotations

import psycopg
import pyarrow as pa
import pytest

from risingspark import jsonb
from risingspark.errors import InvalidTextRepresentation

PG = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"

# input text -> PostgreSQL's jsonb text
CANONICAL = [
    ('{"b": 1, "a": [1.50, 1e2, -0, 1E-3, 0.0, -0.0, 1.0e+1, 12345678901234567890], "aa": null, "a": true}',
     '{"a": true, "b": 1, "aa": null}'),
    ('[1.50, 1e2, -0, 1E-3, 0.0, -0.0, 1.0e+1, 12345678901234567890, -1.5e-2]',
     '[1.50, 100, 0, 0.001, 0.0, 0.0, 10, 12345678901234567890, -0.015]'),
    ('{"a" : {"c":1, "b":2, "bb": [ ]}}', '{"a": {"b": 2, "c": 1, "bb": []}}'),
    ('{"é":1,"z":2,"zz":3,"y":4}', '{"y": 4, "z": 2, "zz": 3, "é": 1}'),
    ('"\\u00e9\\t\\u001f/\\" \\\\ \\ud83d\\ude00"', '"é\\t\\u001f/\\" \\\\ 😀"'),
    (' [1 , "x" , null , true , false , {} , [] ] ', '[1, "x", null, true, false, {}, []]'),
    ('"😀 ü"', '"😀 ü"'),
    ('{"a": "x\\ny\\r\\b\\f"}', '{"a": "x\\ny\\r\\b\\f"}'),
]

INVALID = ["x", '{"a":1,}', "NaN", "Infinity", "[1,]", "", "{'a': 1}", '"\\ud800"', "1 2", "01", "[1] x"]

DOCS = ['{"a": [1, 2], "b": {"c": "x", "d": [{"e": null}]}, "n": 1.50}', '[1, "a", null, [2, 3], {"k": "v"}]',
        '"str"', '5', 'null', 'true', '{}', '[]']
KEYS = ["a", "b", "n", "k", "0", "zz"]
INDEXES = [0, 1, -1, -2, 3, 7, -9]
PATHS = ["{a,1}", "{b,d,0,e}", "{b,c}", "{3,0}", "{-1,k}", "{}", "{x}", "{a,x}", "{4,k}", "{0}"]
CONTAINS = [
    ('"x"', '"x"'), ('[1,2,[3]]', '[3]'), ('[[1,2]]', '[[2,1,1]]'), ('{"a":1,"b":{"c":2,"d":3}}', '{"b":{"d":3}}'),
    ('[{"a":1,"b":2}]', '[{"a":1}]'), ('[1]', '[]'), ('{}', '{}'), ('[]', '{}'), ('{"a":[1]}', '{"a":1}'),
    ('[1,2]', '1'), ('1', '[1]'), ('[1.0, 2]', '[1]'), ('{"a": 1.0}', '{"a": 1}'), ('[1, "1"]', '["1", 1, 1]'),
    ('[[1, [2]]]', '[[[2]]]'), ('[[1]]', '[1]'), ('{"a": {"b": [1, 2, {"c": 3}]}}', '{"a": {"b": [{"c": 3}, 2]}}'),
    ('{"a": {"b": [1, 2]}}', '{"a": {"b": [3]}}'), ('[true, null]', '[null]'), ('[false]', '[0]'),
    ('{"a": null}', '{"a": null}'), ('{"a": null}', '{"b": null}'), ('"a"', '["a"]'), ('[{"a": []}]', '[{"a": {}}]'),
]
EXISTS = [('[1,"a"]', "a"), ('{"a":1}', "a"), ('[["a"]]', "a"), ('1', "1"), ('"1"', "1"), ('{"b": {"a": 1}}', "a"),
          ('["a", "b"]', "c"), ('null', "null")]

# PostgreSQL 15's answers for the cases above (None: SQL NULL)
GET_KEY = {
    ('{"a": [1, 2], "b": {"c": "x", "d": [{"e": null}]}, "n": 1.50}', "a"): '[1, 2]',
    ('{"a": [1, 2], "b": {"c": "x", "d": [{"e": null}]}, "n": 1.50}', "b"): '{"c": "x", "d": [{"e": null}]}',
    ('{"a": [1, 2], "b": {"c": "x", "d": [{"e": null}]}, "n": 1.50}', "n"): '1.50',
}


def _pg_value(conn: psycopg.Connection, sql: str, *params) -> object:
    return conn.execute(sql, params).fetchone()[0]


@pytest.mark.parametrize(("text", "want"), CANONICAL)
def test_canonical_text(text: str, want: str) -> None:
    assert jsonb.canonical(text) == want
    assert jsonb.canonical(want) == want  # canonical text is a fixed point


@pytest.mark.parametrize("text", INVALID)
def test_invalid_json_is_22p02(text: str) -> None:
    with pytest.raises(InvalidTextRepresentation, match="invalid input syntax for type json") as e:
        jsonb.canonical(text)
    assert e.value.sqlstate == "22P02"


def test_nul_escape_is_22p05() -> None:
    with pytest.raises(jsonb.UntranslatableCharacter) as e:
        jsonb.canonical('"\\u0000"')
    assert e.value.sqlstate == "22P05"


def test_known_answers() -> None:
    for (doc, key), want in GET_KEY.items():
        assert jsonb.op_get(pa.array([doc]), pa.array([key])).to_pylist() == [want]
    assert jsonb.op_get(pa.array(["5"]), pa.array([0])).to_pylist() == ["5"]  # a scalar is its own element 0
    assert jsonb.op_get_text(pa.array(['["a\\nb", null]', '[null]']), pa.array([0, 0])).to_pylist() == ["a\nb", None]
    assert jsonb.contains(jsonb.parse('[1, [2, 3]]'), jsonb.parse('[[3]]'))
    assert not jsonb.contains(jsonb.parse('[1, 2, [3]]'), jsonb.parse('[3]'))
    assert jsonb.parse_path('{a, "b c" ,0,NULL}') == ["a", "b c", "0", None]


def test_streaming_errors_are_null_and_batch_errors_raise() -> None:
    docs = pa.array(['{"a": 1}', '[1, 2]', None])
    assert jsonb.op_array_length(docs, strict=False).to_pylist() == [None, 2, None]
    with pytest.raises(Exception, match="cannot get array length of a non-array"):
        jsonb.op_array_length(docs, strict=True)
    assert jsonb.op_in(pa.array(["{x", "[1]"]), strict=False).to_pylist() == [None, "[1]"]


@pytest.fixture(scope="module")
def pg():
    try:
        conn = psycopg.connect(PG, autocommit=True)
    except psycopg.OperationalError:
        pytest.skip("no PostgreSQL oracle on 127.0.0.1:5432")
    with conn:
        yield conn


def test_cases_agree_with_postgres(pg: psycopg.Connection) -> None:
    """Every operator over every case, against PostgreSQL's answer."""
    failures = []

    def check(what: str, got: object, sql: str, *params) -> None:
        want = _pg_value(pg, sql, *params)
        if got != want:
            failures.append(f"{what}: got {got!r}, PostgreSQL {want!r}")

    for text, want in CANONICAL:
        check(f"canonical {text}", want, "SELECT %s::jsonb::text", text)
    for text in INVALID:
        with pytest.raises(psycopg.errors.InvalidTextRepresentation):
            pg.execute("SELECT %s::jsonb", (text,))
    for doc in DOCS:
        arr = pa.array([doc])
        for k in KEYS:
            check(f"{doc} -> {k!r}", jsonb.op_get(arr, pa.array([k])).to_pylist()[0], "SELECT (%s::jsonb -> %s)::text", doc, k)
            check(f"{doc} ->> {k!r}", jsonb.op_get_text(arr, pa.array([k])).to_pylist()[0], "SELECT %s::jsonb ->> %s", doc, k)
            check(f"{doc} ? {k!r}", jsonb.op_exists(arr, pa.array([k])).to_pylist()[0], "SELECT %s::jsonb ? %s", doc, k)
        for i in INDEXES:
            check(f"{doc} -> {i}", jsonb.op_get(arr, pa.array([i], pa.int32())).to_pylist()[0],
                  "SELECT (%s::jsonb -> %s::int)::text", doc, i)
            check(f"{doc} ->> {i}", jsonb.op_get_text(arr, pa.array([i], pa.int32())).to_pylist()[0],
                  "SELECT %s::jsonb ->> %s::int", doc, i)
        for p in PATHS:
            check(f"{doc} #> {p}", jsonb.op_path(arr, pa.array([p])).to_pylist()[0], "SELECT (%s::jsonb #> %s)::text",
                  doc, p)
            check(f"{doc} #>> {p}", jsonb.op_path_text(arr, pa.array([p])).to_pylist()[0], "SELECT %s::jsonb #>> %s",
                  doc, p)
        check(f"jsonb_typeof({doc})", jsonb.op_typeof(arr).to_pylist()[0], "SELECT jsonb_typeof(%s::jsonb)", doc)
        if jsonb.typeof(jsonb.parse(doc)) == "array":
            check(f"jsonb_array_length({doc})", jsonb.op_array_length(arr).to_pylist()[0],
                  "SELECT jsonb_array_length(%s::jsonb)", doc)
        else:
            with pytest.raises(psycopg.errors.InvalidParameterValue):
                pg.execute("SELECT jsonb_array_length(%s::jsonb)", (doc,))
    for a, b in CONTAINS + [(x, y) for x in DOCS for y in DOCS]:
        check(f"{a} @> {b}", jsonb.contains(jsonb.parse(a), jsonb.parse(b)), "SELECT %s::jsonb @> %s::jsonb", a, b)
        check(f"{a} <@ {b}", jsonb.op_contained(pa.array([a]), pa.array([b])).to_pylist()[0],
              "SELECT %s::jsonb <@ %s::jsonb", a, b)
    for doc, k in EXISTS:
        check(f"{doc} ? {k}", jsonb.exists(jsonb.parse(doc), k), "SELECT %s::jsonb ? %s", doc, k)
    assert not failures, "\n".join(failures[:30])
