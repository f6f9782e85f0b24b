"""CREATE FUNCTION and DROP FUNCTION parsing (`frontend.function_parser`): RisingWave's grammar for
JavaScript functions, and the SQLSTATEs of what is not supported."""

from __future__ import annotations

import pytest

from frontend.parser import parse_statement
from frontend.statements import CreateFunctionStmt, DropFunctionStmt, FunctionRef
from risingspark.errors import FeatureNotSupported, SyntaxError_, UndefinedObject
from risingspark.types import FLOAT8, INT4, INT8, VARCHAR

Q14_FUNCTION = """CREATE FUNCTION count_char(s varchar, c varchar) RETURNS int LANGUAGE javascript AS $$
    var count = 0;
    for (var cc of s) {
        if (cc === c) {
            count++;
        }
    }
    return count;
$$"""


def test_nexmark_q14_function() -> None:
    s = parse_statement(Q14_FUNCTION)
    assert isinstance(s, CreateFunctionStmt)
    assert (s.name, s.schema, s.arg_names, s.arg_types, s.return_type, s.language) == \
        ("count_char", None, ("s", "c"), (VARCHAR, VARCHAR), INT4, "javascript")
    assert s.body.strip().startswith("var count = 0;") and s.body.strip().endswith("return count;")


def test_forms() -> None:
    s = parse_statement("create function IF NOT EXISTS myschema.\"F\"(bigint, x double precision) "
                        "LANGUAGE JavaScript RETURNS character varying IMMUTABLE AS 'return ''a'' + $1 + x;'")
    assert isinstance(s, CreateFunctionStmt)
    assert (s.name, s.schema, s.if_not_exists) == ("F", "myschema", True)
    assert s.arg_names == ("$1", "x") and s.arg_types == (INT8, FLOAT8) and s.return_type == VARCHAR
    assert s.body == "return 'a' + $1 + x;"
    tagged = parse_statement("CREATE FUNCTION f(a int) RETURNS int AS $body$ return a; $body$ LANGUAGE javascript")
    assert isinstance(tagged, CreateFunctionStmt) and tagged.body == " return a; "


def test_drop() -> None:
    s = parse_statement("DROP FUNCTION IF EXISTS count_char(varchar, varchar), s.g, h()")
    assert s == DropFunctionStmt((FunctionRef("count_char", None, (VARCHAR, VARCHAR)), FunctionRef("g", "s", None),
                                  FunctionRef("h", None, ())), True)
    assert parse_statement("DROP FUNCTION f(a int) RESTRICT") == DropFunctionStmt((FunctionRef("f", None, (INT4,)),))


@pytest.mark.parametrize(("sql", "error", "match"), [
    ("CREATE FUNCTION f(a int) RETURNS int LANGUAGE python AS $$\ndef f(a): return a\n$$", FeatureNotSupported,
     "language python"),
    ("CREATE FUNCTION f(a int) RETURNS int LANGUAGE rust AS $$ fn f() {} $$", FeatureNotSupported, "language rust"),
    ("CREATE FUNCTION f(a int) RETURNS int LANGUAGE sql AS 'select a'", FeatureNotSupported, "language sql"),
    ("CREATE FUNCTION f(a int) RETURNS int LANGUAGE wasm USING LINK 'x'", FeatureNotSupported, "language wasm"),
    ("CREATE FUNCTION f(a jsonb) RETURNS int LANGUAGE javascript AS 'return 1;'", FeatureNotSupported, "jsonb"),
    ("CREATE FUNCTION f(a int) RETURNS numeric LANGUAGE javascript AS 'return 1;'", FeatureNotSupported, "numeric"),
    ("CREATE FUNCTION f(a int) RETURNS TABLE (x int) LANGUAGE javascript AS 'return 1;'", FeatureNotSupported,
     "table functions"),
    ("CREATE OR REPLACE FUNCTION f(a int) RETURNS int LANGUAGE javascript AS 'return 1;'", FeatureNotSupported,
     "OR REPLACE"),
    ("CREATE FUNCTION f() RETURNS int LANGUAGE javascript AS 'return 1;'", FeatureNotSupported, "without arguments"),
    ("CREATE FUNCTION f(a int) RETURNS int AS 'return 1;'", SyntaxError_, "no language"),
    ("CREATE FUNCTION f(a int) LANGUAGE javascript AS 'return 1;'", SyntaxError_, "result type"),
    ("CREATE FUNCTION f(a int) RETURNS int LANGUAGE javascript", SyntaxError_, "AS must be specified"),
    ("CREATE FUNCTION f(a nosuch) RETURNS int LANGUAGE javascript AS 'x'", UndefinedObject, 'type "nosuch"'),
    ("DROP FUNCTION f CASCADE", FeatureNotSupported, "CASCADE"),
])
def test_errors(sql: str, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        parse_statement(sql)
