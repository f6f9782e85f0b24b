"""PostgreSQL's ``format()`` for DuckDB.

DuckDB's ``format`` takes ``{}`` placeholders, so PostgreSQL's ``format('%s-%s', a, b)`` came back as
the template itself. The rule here reads a constant template as PostgreSQL's ``text_format`` does
and writes the call as a DuckDB ``concat`` of its pieces:

* ``%s``: the argument as text, NULL as the empty string; ``%I``: as an identifier (quoted unless
  it is lower-case letters, digits and underscores not starting with a digit, and no keyword
  PostgreSQL reserves in any way; NULL is 22004);
  ``%L``: as a literal (quoted, quotes doubled, and in the ``E'...'`` form with backslashes doubled
  when it has one; NULL as ``NULL``); ``%%``: a percent sign;
* ``%n$...``: the n-th argument; a specifier without a position takes the argument after the last
  one used; ``%-10s`` / ``%10s``: padded to the width on the right / left, never cut.

A template that is not a constant string, a ``*`` width, or an unknown type is 0A000 or 22023 as
PostgreSQL words them; too few arguments are 22023. An argument's text is its type's output form, as
PostgreSQL's ``%s`` takes it (`pg_text`): a boolean ``t``/``f``, a double or a real as ``float8out``
writes it (`frontend.catalog.float_text`: ``2``, ``NaN``, ``1e+15``; DuckDB's cast: ``true``,
``2.0``, ``nan``, ``1000000000000000.0``); ``concat()``'s arguments get the same (``concat(1, true)``
is ``1t``). An array keeps DuckDB's ``[1, 2]`` (PostgreSQL ``{1,2}``).
"""

from __future__ import annotations

import re

from sqlglot import exp

from frontend.catalog.composite import failure_call
from frontend.catalog.float_text import UDFS, float_text_of
from risingspark.errors import FeatureNotSupported, InvalidParameterValue, NullValueNotAllowed

# PostgreSQL's keywords that are not unreserved (``pg_get_keywords()``, ``catcode <> 'U'``): quoted by %I
KEYWORDS = frozenset(["all", "analyse", "analyze", "and", "any", "array", "as", "asc", "asymmetric", "authorization", "between", "bigint", "binary", "bit", "boolean", "both", "case", "cast", "char", "character", "check", "coalesce", "collate", "collation", "column", "concurrently", "constraint", "create", "cross", "current_catalog", "current_date", "current_role", "current_schema", "current_time", "current_timestamp", "current_user", "dec", "decimal", "default", "deferrable", "desc", "distinct", "do", "else", "end", "except", "exists", "extract", "false", "fetch", "float", "for", "foreign", "freeze", "from", "full", "grant", "greatest", "group", "grouping", "having", "ilike", "in", "initially", "inner", "inout", "int", "integer", "intersect", "interval", "into", "is", "isnull", "join", "lateral", "leading", "least", "left", "like", "limit", "localtime", "localtimestamp", "national", "natural", "nchar", "none", "normalize", "not", "notnull", "null", "nullif", "numeric", "offset", "on", "only", "or", "order", "out", "outer", "overlaps", "overlay", "placing", "position", "precision", "primary", "real", "references", "returning", "right", "row", "select", "session_user", "setof", "similar", "smallint", "some", "substring", "symmetric", "table", "tablesample", "then", "time", "timestamp", "to", "trailing", "treat", "trim", "true", "union", "unique", "user", "using", "values", "varchar", "variadic", "verbose", "when", "where", "window", "with", "xmlattributes", "xmlconcat", "xmlelement", "xmlexists", "xmlforest", "xmlnamespaces", "xmlparse", "xmlpi", "xmlroot", "xmlserialize", "xmltable"])
_SPEC = re.compile(r"%(?:(?P<pos>\d+)\$)?(?P<flags>-?)(?P<width>\*|\d*)(?P<type>.?)", re.DOTALL)


def pg_format(query: exp.Expression, ctx: object = None) -> exp.Expression:
    """Every ``format(template, ...)`` call as the module doc writes it, and ``concat()``'s arguments
    in their output form."""
    for node in list(query.find_all(exp.Format)):
        node.replace(format_call(node.this, list(node.expressions)))
    for concat in list(query.find_all(exp.Concat)):
        concat.set("expressions", [a if isinstance(a, exp.Literal) and a.is_string else pg_text(a)
                                   for a in concat.expressions])
    return query


def pg_text(arg: exp.Expression) -> exp.Expression:
    """`arg` as text in its type's output form (see the module doc), NULL as NULL."""
    text = exp.cast(arg.copy(), "VARCHAR")
    boolean = exp.Case(ifs=[exp.If(this=exp.EQ(this=text.copy(), expression=exp.Literal.string("true")),
                                   true=exp.Literal.string("t")),
                            exp.If(this=exp.EQ(this=text.copy(), expression=exp.Literal.string("false")),
                                   true=exp.Literal.string("f"))])
    kind = exp.Anonymous(this="typeof", expressions=[arg.copy()])
    return exp.Case(ifs=[exp.If(this=exp.EQ(this=kind, expression=exp.Literal.string("BOOLEAN")), true=boolean),
                         *[exp.If(this=exp.EQ(this=kind.copy(), expression=exp.Literal.string(t)),
                                  true=float_text_of(arg, t)) for t in UDFS]],
                    default=text)


def format_call(template: exp.Expression, args: list[exp.Expression]) -> exp.Expression:
    if isinstance(template, exp.Null):
        return exp.Null()
    if not (isinstance(template, exp.Literal) and template.is_string):
        raise FeatureNotSupported("format() with a template that is not a constant string is not supported")
    text = template.name
    pieces: list[exp.Expression] = []
    pos, next_arg = 0, 0
    while True:
        at = text.find("%", pos)
        if at < 0:
            break
        if at > pos:
            pieces.append(exp.Literal.string(text[pos:at]))
        m = _SPEC.match(text, at)
        assert m is not None
        kind = m["type"]
        if kind == "%" and not (m["pos"] or m["flags"] or m["width"]):
            pieces.append(exp.Literal.string("%"))
            pos = m.end()
            continue
        if not kind:
            raise InvalidParameterValue("unterminated format() type specifier",
                                        hint='For a single "%" use "%%".')
        if kind not in "sIL":
            raise InvalidParameterValue(f'unrecognized format() type specifier "{kind}"',
                                        hint='For a single "%" use "%%".')
        if m["width"] == "*":
            raise FeatureNotSupported("format() with a * width is not supported")
        index = int(m["pos"]) - 1 if m["pos"] else next_arg
        if m["pos"] and index < 0:
            raise InvalidParameterValue("format specifies argument 0, but arguments are numbered from 1")
        if index >= len(args):
            raise InvalidParameterValue("too few arguments for format()")
        next_arg = index + 1
        piece = _formatted(args[index].copy(), kind)
        if m["width"]:
            piece = _padded(piece, int(m["width"]), left_aligned=m["flags"] == "-")
        pieces.append(piece)
        pos = m.end()
    if pos < len(text):
        pieces.append(exp.Literal.string(text[pos:]))
    return exp.Anonymous(this="concat", expressions=pieces or [exp.Literal.string("")])


def _formatted(arg: exp.Expression, kind: str) -> exp.Expression:
    text = pg_text(arg)
    if kind == "s":
        return exp.Coalesce(this=text, expressions=[exp.Literal.string("")])
    if kind == "L":
        def quote(value: exp.Expression, prefix: str) -> exp.Expression:
            doubled = exp.Anonymous(this="replace", expressions=[value, exp.Literal.string("'"), exp.Literal.string("''")])
            return exp.DPipe(this=exp.DPipe(this=exp.Literal.string(prefix + "'"), expression=doubled),
                             expression=exp.Literal.string("'"))

        backslashes = exp.Anonymous(this="replace", expressions=[text.copy(), exp.Literal.string("\\"),
                                                                 exp.Literal.string("\\\\")])
        has_backslash = exp.Anonymous(this="contains", expressions=[text.copy(), exp.Literal.string("\\")])
        return exp.Case(ifs=[exp.If(this=exp.Is(this=arg.copy(), expression=exp.Null()), true=exp.Literal.string("NULL")),
                             exp.If(this=has_backslash, true=quote(backslashes, "E"))], default=quote(text.copy(), ""))
    quoted = exp.DPipe(this=exp.DPipe(this=exp.Literal.string('"'), expression=exp.Anonymous(
        this="replace", expressions=[text.copy(), exp.Literal.string('"'), exp.Literal.string('""')])),
        expression=exp.Literal.string('"'))
    plain = exp.and_(
        exp.Anonymous(this="regexp_full_match", expressions=[text.copy(), exp.Literal.string("[a-z_][a-z0-9_]*")]),
        exp.Not(this=exp.In(this=text.copy(), expressions=[exp.Literal.string(k) for k in sorted(KEYWORDS)])))
    null = failure_call(NullValueNotAllowed("null values cannot be formatted as an SQL identifier"))
    return exp.Case(ifs=[exp.If(this=exp.Is(this=arg.copy(), expression=exp.Null()), true=exp.cast(null, "VARCHAR")),
                         exp.If(this=plain, true=text.copy())], default=quoted)


def _padded(piece: exp.Expression, width: int, *, left_aligned: bool) -> exp.Expression:
    pad = exp.Anonymous(this="rpad" if left_aligned else "lpad",
                        expressions=[piece.copy(), exp.Literal.number(width), exp.Literal.string(" ")])
    short = exp.LT(this=exp.Length(this=piece.copy()), expression=exp.Literal.number(width))
    return exp.Case(ifs=[exp.If(this=short, true=pad)], default=piece)
