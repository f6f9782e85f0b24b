"""String functions with PostgreSQL's edge cases, rendered as Spark SQL.

Where Spark's function of the same name disagrees with PostgreSQL the rendering corrects it:

* ``substring(s FROM start [FOR n])`` / ``substr``: PostgreSQL counts a start below 1 as positions
  before the string (``substring('abc' FROM 0 FOR 2)`` = ``'a'``), Spark counts a negative start
  from the end; a negative length is an error (NULL here). ``substring(s FROM pattern)`` of a text
  or a quoted literal is the pattern form (``substring('a2b', '2')`` is ``'2'``: `_pattern_form`),
  the first element of ``regexp_match``; with an escape character (three such arguments) 0A000;
* ``left(s, -n)`` / ``right(s, -n)``: all but the last / first n characters (Spark: ``''``);
* ``split_part(s, delimiter, 0)``: an error (NULL here), negative fields count from the end;
* ``concat(...)`` skips NULL arguments (``||`` does not); ``concat_ws(sep, ...)`` too, and is NULL for
  a NULL separator;
* ``regexp_match(s, pattern)``: the array of the first match's capture groups (the whole match
  without groups), NULL without a match. Spark's ``regexp_extract`` gives ``''`` for a group that
  did not take part in the match where PostgreSQL gives NULL, so a pattern whose groups may not take
  part (inside an alternative or an optional repetition) is 0A000; the pattern must be a constant,
  without flags. Patterns are Java regular expressions in Spark, which agree with PostgreSQL's on
  the common syntax (classes, anchors, quantifiers, groups);
* an array subscript ``a[i]`` is NULL outside ``1 .. cardinality(a)`` (a constant ``i``);
* ``initcap(s)``: PostgreSQL (in a UTF-8 database whose locale classifies Unicode, as C.UTF-8 or
  en_US.UTF-8) upper-cases each character that starts the string or follows one that is not
  alphanumeric and lower-cases every other, one character for one (``'ß'`` stays ``'ß'``);
  Spark's ``initcap`` starts words after spaces only, and its ``upper('ß')`` is ``'SS'``.

``strpos`` / ``position``, ``replace``, ``lpad`` / ``rpad``, ``repeat``, ``reverse``, ``md5``,
``ltrim`` / ``rtrim`` / ``btrim`` / ``trim``, ``starts_with`` and ``octet_length`` (UTF-8 bytes)
agree as they are.

Each function takes PostgreSQL's signatures (`frontend.binder.coercion.function_args`): text where
it takes text (``lower(5)`` does not exist: no implicit cast reaches text), integer where it takes
integer; ``concat`` takes any value. The ``||`` operator is text's when either operand is a string
(`bind_concat_operator`), an array's when either is an array.
"""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp
from sqlglot.dialects.risingwave import RisingWave

from frontend.binder import composite
from frontend.binder.coercion import (
    as_literal,
    coerce,
    function_args,
    is_unknown_literal,
    is_untyped,
    no_function,
    no_operator,
)
from frontend.dialect import PG_NAME
from frontend.expr import BinaryOp, BoundExpr, Literal, SparkCall, spark_string
from risingspark.errors import FeatureNotSupported
from risingspark.types import BOOL, INT4, VARCHAR, DataType, TypeName

TEXT_ARRAY = DataType.array_of(VARCHAR)

STRING_NODES = (exp.SplitPart, exp.StrPosition, exp.Replace, exp.Left, exp.Right, exp.Trim, exp.Pad, exp.Repeat,
                exp.Reverse, exp.MD5, exp.Substring, exp.Bracket, exp.Concat, exp.Initcap, exp.StartsWith)
STRING_FUNCTIONS = ("regexp_match", "strpos", "btrim", "ltrim", "rtrim", "substr", "octet_length")

# initcap over the string's characters (code points: Java's `.`), each paired with the one before it
# ('' before the first): lower-cased after an alphanumeric character (Unicode's Alphabetic property
# or a decimal digit, as glibc's iswalnum), else upper-cased; a character whose upper (lower) case
# is several characters keeps its own (takes the first), as PostgreSQL's towupper (towlower).
_ALNUM = spark_string(r"[\p{IsAlphabetic}\p{Nd}]").replace("{", "{{").replace("}", "}}")
_INITCAP = ("array_join(zip_with(regexp_extract_all({0}, '(?s).', 0), concat(array(''), regexp_extract_all({0}, "
            f"'(?s).', 0)), (c, p) -> IF(p RLIKE {_ALNUM}, substring(lower(c), 1, 1), "
            "IF(char_length(upper(c)) = 1, upper(c), c))), '')")


def _output_text(e: BoundExpr) -> BoundExpr:
    """A value as PostgreSQL's output function writes it (concat's arguments): a boolean is ``t``
    or ``f`` there, where its cast to text is ``true`` or ``false``."""
    if e.type.name is TypeName.BOOLEAN:
        return SparkCall("text", (e,), VARCHAR, "CASE WHEN {0} THEN 't' WHEN NOT {0} THEN 'f' END")
    return coerce(e, VARCHAR)


def bind_concat_operator(a: BoundExpr, b: BoundExpr) -> BoundExpr:
    """``a || b`` as PostgreSQL resolves its operators of that name: an array on either side
    concatenates arrays (`composite.concat_arrays`); two jsonb values are jsonb's concatenation
    (`composite.concat_jsonb`); else the operands are text when either is a string or untyped (``text ||
    anynonarray`` and ``anynonarray || text``: ``'a' || 1`` is ``a1``, the other's cast to text),
    and two values of other types have no operator (42883: ``k || k``)."""
    if a.type.element is not None or b.type.element is not None:
        return composite.concat_arrays(a, b)
    if TypeName.JSONB in (a.type.name, b.type.name) and all(e.type.name is TypeName.JSONB or is_untyped(e)
                                                             for e in (a, b)):
        return composite.concat_jsonb(a, b)
    if not any(e.type.name is TypeName.VARCHAR or is_untyped(e) for e in (a, b)):
        raise no_operator(a, "||", b)
    return BinaryOp("||", coerce(a, VARCHAR), coerce(b, VARCHAR), VARCHAR)


def bind_string(node: exp.Expression, rec) -> BoundExpr:
    def call(name: str, nodes: list[Any], *signatures: str) -> tuple[BoundExpr, ...]:
        """The arguments (`nodes`, None where one is not written) of PostgreSQL's function `name` (as
        PostgreSQL names it in an error, unless written otherwise), bound to one of its signatures."""
        written = str(node.meta.get(PG_NAME) or name).lower()
        return function_args(written, [rec(n) for n in nodes if n is not None], *signatures)

    if isinstance(node, exp.Anonymous) and str(node.this).lower() == "octet_length":
        args = call("octet_length", node.expressions, "t")
        return SparkCall("octet_length", args, INT4, "octet_length({0})")
    if isinstance(node, exp.Anonymous):
        name = str(node.this).lower()
        return _anonymous(name, call(name, node.expressions, *_ANONYMOUS.get(name, ())))
    if isinstance(node, exp.SplitPart):
        args = call("split_part", [node.this, node.args["delimiter"], node.args["part_index"]], "tti")
        return SparkCall("split_part", args, VARCHAR, "IF({2} = 0, NULL, split_part({0}, {1}, {2}))")
    if isinstance(node, exp.StrPosition):
        if node.args.get("position") is not None or node.args.get("occurrence") is not None:
            raise FeatureNotSupported("position with a start or occurrence is not supported")
        args = call("pg_catalog.position", [node.this, node.args["substr"]], "tt")
        return SparkCall("strpos", args, INT4, "locate({1}, {0})")
    if isinstance(node, exp.Replace):
        args = call("replace", [node.this, node.expression, node.args["replacement"]], "ttt")
        return SparkCall("replace", args, VARCHAR, "replace({0}, {1}, {2})")
    if isinstance(node, exp.Left):
        return SparkCall("left", call("left", [node.this, node.expression], "ti"), VARCHAR, _strict(
            2, "IF({1} >= 0, substring({0}, 1, {1}), substring({0}, 1, greatest(char_length({0}) + {1}, 0)))"))
    if isinstance(node, exp.Right):
        return SparkCall("right", call("right", [node.this, node.expression], "ti"), VARCHAR, _strict(
            2, "IF({1} >= 0, IF({1} = 0, '', substring({0}, greatest(char_length({0}) - {1} + 1, 1))), "
               "substring({0}, 1 - {1}))"))
    if isinstance(node, exp.Trim):
        return _trim(node, call)
    if isinstance(node, exp.Pad):
        name = "lpad" if node.args.get("is_left") else "rpad"
        args = call(name, [node.this, node.expression, node.args.get("fill_pattern")], "ti", "tit")
        fill = args[2] if len(args) == 3 else Literal(" ", VARCHAR)
        return SparkCall(name, (*args[:2], fill), VARCHAR, name + "({0}, {1}, {2})")
    if isinstance(node, exp.Repeat):
        return SparkCall("repeat", call("repeat", [node.this, node.args["times"]], "ti"), VARCHAR, "repeat({0}, {1})")
    if isinstance(node, exp.Reverse):
        return SparkCall("reverse", call("reverse", [node.this], "t"), VARCHAR, "reverse({0})")
    if isinstance(node, exp.MD5):
        return SparkCall("md5", call("md5", [node.this], "t"), VARCHAR, "md5({0})")
    if isinstance(node, exp.Substring):
        if node.args.get("start") is None:
            raise FeatureNotSupported("substring without a start position is not supported")
        written = str(node.meta.get(PG_NAME) or "substring").lower()
        bound = [rec(n) for n in (node.this, node.args["start"], node.args.get("length")) if n is not None]
        if written == "substring" and _pattern_form(bound[1:]):
            if len(bound) == 3:
                raise FeatureNotSupported("substring with a SQL regular expression and an escape character is not "
                                          "supported in a materialized view")
            return _pattern_substring(*function_args(written, bound, "tt"))
        return _substring(function_args(written, bound, "ti", "tii"))
    if isinstance(node, exp.Initcap):
        return _initcap(node, call)
    if isinstance(node, exp.StartsWith):
        # (sqlglot reads `startswith` as starts_with too: no signature takes that name)
        written = str(node.meta.get(PG_NAME) or "starts_with").lower()
        args = call(written, [node.this, node.expression], *(("tt",) if written == "starts_with" else ()))
        return SparkCall("starts_with", args, BOOL, "startswith({0}, {1})")
    if isinstance(node, exp.ConcatWs):  # (a Concat to sqlglot): the separator is text, NULL makes NULL
        given = [rec(a) for a in node.expressions]
        if len(given) < 2 or not (is_untyped(given[0]) or given[0].type.name is TypeName.VARCHAR):
            raise no_function("concat_ws", given)
        parts = (coerce(given[0], VARCHAR), *(_output_text(v) for v in given[1:]))
        return SparkCall("concat_ws", parts, VARCHAR, _concat_ws("", len(parts)))
    if isinstance(node, exp.Concat):  # each argument's text, a boolean's t or f (its output function's)
        parts = tuple(_output_text(rec(a)) for a in node.expressions)
        return SparkCall("concat", parts, VARCHAR, _concat_ws("'', ", len(parts)))
    assert isinstance(node, exp.Bracket)
    return _subscript(node, rec)


def _initcap(node: exp.Initcap, call) -> BoundExpr:
    # (sqlglot's parser gives every initcap its dialect's default delimiters as a second argument)
    delimiters = node.expression
    default = isinstance(delimiters, exp.Literal) and delimiters.name == RisingWave.INITCAP_DEFAULT_DELIMITER_CHARS
    return SparkCall("initcap", call("initcap", [node.this, None if default else delimiters], "t"), VARCHAR, _INITCAP)


# the signatures of `STRING_FUNCTIONS` where a parser leaves them anonymous (sqlglot's RisingWave and
# PostgreSQL dialects parse strpos, btrim, ltrim, rtrim and substr to their own nodes)
_ANONYMOUS = {"regexp_match": ("tt", "ttt"), "strpos": ("tt",), "btrim": ("t", "tt"), "ltrim": ("t", "tt"),
              "rtrim": ("t", "tt"), "substr": ("ti", "tii")}


def _anonymous(name: str, args: tuple[BoundExpr, ...]) -> BoundExpr:
    if name == "regexp_match":
        return _regexp_match(args)
    if name == "strpos":
        return SparkCall("strpos", args, INT4, "locate({1}, {0})")
    if name in ("btrim", "ltrim", "rtrim"):
        where = {"btrim": "BOTH", "ltrim": "LEADING", "rtrim": "TRAILING"}[name]
        chars = args[1] if len(args) == 2 else Literal(" ", VARCHAR)
        return SparkCall(name, (args[0], chars), VARCHAR, f"trim({where} {{1}} FROM {{0}})")
    if name == "substr":
        return _substring(args)
    raise no_function(name, args)


def _trim(node: exp.Trim, call) -> BoundExpr:
    position = str(node.args.get("position") or "BOTH").upper()
    if position not in ("BOTH", "LEADING", "TRAILING"):
        raise FeatureNotSupported(f"trim({position} ...) is not supported")
    name = {"BOTH": "btrim", "LEADING": "ltrim", "TRAILING": "rtrim"}[position]
    # (PostgreSQL names the function that trim(...) calls; btrim(...) and the others as written)
    args = call(f"pg_catalog.{name}", [node.this, node.expression], "t", "tt")
    chars = args[1] if len(args) == 2 else Literal(" ", VARCHAR)
    return SparkCall(name, (args[0], chars), VARCHAR, f"trim({position} {{1}} FROM {{0}})")


def _concat_ws(first: str, n: int) -> str:
    """Spark's ``concat_ws`` of `first` (SQL text) and `n` operands; it skips NULL operands."""
    return "concat_ws(" + first + ", ".join(f"{{{i}}}" for i in range(n)) + ")"


def _pattern_form(args: list[BoundExpr]) -> bool:
    """Whether ``substring(s, a [, b])`` of the bound `args` (a, b) is PostgreSQL's pattern form
    (``substring(text, text)``, a POSIX regular expression; ``substring(text, text, text)``, a SQL
    one with an escape character) rather than positions: where an argument is text, or where every
    one is an untyped literal (PostgreSQL resolves an unknown argument to the string category when a
    candidate takes one there: ``substring(s, '2')`` matches the pattern ``2``)."""
    return any(a.type.name is TypeName.VARCHAR and not is_untyped(a) for a in args) \
        or all(is_unknown_literal(a) for a in args)


def _pattern_substring(s: BoundExpr, pattern: BoundExpr) -> BoundExpr:
    """``substring(s FROM pattern)``: the part of `s` the POSIX regular expression matches first, or
    what its first capture group matched; NULL without a match. That is the first element of
    ``regexp_match(s, pattern)``, with its restrictions (a constant pattern, groups that take part in
    every match), the one group extracted."""
    literal, groups = _constant_pattern(pattern, "substring of a pattern")
    return SparkCall("substring", (s, literal), VARCHAR, f"IF({{0}} RLIKE {{1}}, regexp_extract({{0}}, {{1}}, "
                                                         f"{1 if groups else 0}), NULL)")


def _substring(args: tuple[BoundExpr, ...]) -> BoundExpr:
    """``substring(s, start [, length])`` of arguments bound to text and integers."""
    s, start = args[:2]
    if len(args) == 2:
        return SparkCall("substring", (s, start), VARCHAR, _strict(2, "substring({0}, greatest({1}, 1))"))
    length = args[2]
    # the characters at positions start .. start + length - 1 that exist (counted in bigint)
    end = "(CAST({1} AS BIGINT) + {2})"
    return SparkCall("substring", (s, start, length), VARCHAR, _strict(
        3, f"IF({{2}} < 0, NULL, IF({end} <= greatest({{1}}, 1), '', substring({{0}}, greatest({{1}}, 1), "
           f"CAST(least({end} - greatest({{1}}, 1), 2147483647) AS INT))))"))


def _strict(n: int, template: str) -> str:
    """NULL when any of the `n` arguments is (Spark's greatest and least skip NULLs)."""
    nulls = " OR ".join(f"{{{i}}} IS NULL" for i in range(n))
    return f"CASE WHEN {nulls} THEN NULL ELSE {template} END"


def _regexp_match(args: tuple[BoundExpr, ...]) -> BoundExpr:
    if len(args) != 2:
        raise FeatureNotSupported("regexp_match with flags is not supported in a materialized view yet")
    pattern, groups = _constant_pattern(args[1], "regexp_match")
    items = ", ".join(f"regexp_extract({{0}}, {{1}}, {g})" for g in (range(1, groups + 1) if groups else [0]))
    return SparkCall("regexp_match", (args[0], pattern), TEXT_ARRAY, f"IF({{0}} RLIKE {{1}}, array({items}), NULL)")


def _constant_pattern(pattern: BoundExpr, name: str) -> tuple[Literal, int]:
    """A regular expression argument of `name` as its literal (one written ``'a(b)'::text`` too) and
    its number of capture groups (`mandatory_groups`); 0A000 for one that is not a constant."""
    literal = as_literal(pattern)
    if not isinstance(literal, Literal) or not isinstance(literal.value, str):
        raise FeatureNotSupported(f"{name} in a materialized view needs a constant pattern")
    return literal, mandatory_groups(literal.value, f"{name} in a materialized view")


def mandatory_groups(pattern: str, what: str) -> int:
    """The number of capture groups of `pattern`, each of which takes part in every match; 0A000
    otherwise (`what` names the use in the error: Spark's and DuckDB's extraction of a group give
    ``''`` where PostgreSQL gives NULL for a group that did not take part)."""
    import re._parser as sre_parse  # the structure of the pattern; the syntax shared with Java's

    try:
        parsed = sre_parse.parse(pattern)
    except re.error as e:
        raise FeatureNotSupported(f"regular expression {pattern!r} is not supported in {what}: {e}") from None
    optional: set[int] = set()

    def walk(items: Any, under_optional: bool) -> None:
        for op, arg in items:
            name = str(op)
            if name == "SUBPATTERN":
                group, _, _, sub = arg
                if group is not None and under_optional:
                    optional.add(group)
                walk(sub, under_optional)
            elif name == "BRANCH":
                for branch in arg[1]:
                    walk(branch, True)
            elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                low, _, sub = arg
                walk(sub, under_optional or low == 0)
            elif name in ("ASSERT", "ASSERT_NOT"):
                walk(arg[1], True)
            elif name == "GROUPREF_EXISTS":
                raise FeatureNotSupported("conditional regular expressions are not supported")

    walk(parsed, False)
    if optional:
        raise FeatureNotSupported(f"{what} with a capture group that may not take part in a match (group "
                                  f"{min(optional)} of {pattern!r}) is not supported yet")
    return parsed.state.groups - 1


def _subscript(node: exp.Bracket, rec) -> BoundExpr:
    array = rec(node.this)
    if array.type.element is None:
        raise FeatureNotSupported(f"cannot subscript type {array.type.display()} because it does not support "
                                  f"subscripting")
    if len(node.expressions) != 1:
        raise FeatureNotSupported("array slices and several subscripts are not supported")
    index = node.expressions[0]
    # sqlglot stores an integer constant subscript zero-based (PostgreSQL's arr[2] as 1)
    value = _int_constant(index)
    if value is None:
        raise FeatureNotSupported("array subscripts in a materialized view must be integer constants")
    written = value + 1
    return SparkCall("subscript", (array,), array.type.element,
                     f"IF({written} BETWEEN 1 AND size({{0}}), element_at({{0}}, {written}), NULL)")


def _int_constant(node: Any) -> int | None:
    if isinstance(node, exp.Neg):
        inner = _int_constant(node.this)
        return None if inner is None else -inner
    if isinstance(node, exp.Paren):
        return _int_constant(node.this)
    if isinstance(node, exp.Literal) and not node.is_string and re.fullmatch(r"\d+", node.this or ""):
        return int(node.this)
    return None


def is_string_node(node: exp.Expression) -> bool:
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower() in STRING_FUNCTIONS
    return isinstance(node, STRING_NODES)

