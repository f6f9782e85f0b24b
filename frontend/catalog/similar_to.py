"""``SIMILAR TO`` as PostgreSQL matches it, for DuckDB.

DuckDB reads a ``SIMILAR TO`` pattern as a regular expression, so ``'abc' SIMILAR TO 'a%'`` was
false (``%`` is no wildcard there). PostgreSQL translates the SQL pattern into a regular expression
and matches the whole string against it (``similar_escape`` in its ``regexp.c``): ``%`` is ``.*``,
``_`` is ``.``, ``.``, ``^``, ``$`` and a backslash are literal characters, ``(`` opens a
non-capturing group, ``|``, ``*``, ``+``, ``?``, ``{m,n}`` and bracket expressions keep their regex
meaning, and the escape character (a backslash unless ``ESCAPE`` names another; none when it is
empty) makes the next character literal. The rule here does that translation for a constant
pattern and matches with ``regexp_matches(value, '^(?:...)$', 's')`` (``s``: ``.`` matches a
newline too, as in PostgreSQL). A pattern or escape that is not a constant string is 0A000, as is
the escape-double-quote of ``substring(... SIMILAR ...)``.

>>> similar_to_regex("a%b_c.(x|y)+")
'^(?:a.*b.c\\\\.(?:x|y)+)$'
>>> similar_to_regex("100#%", "#")
'^(?:100\\\\%)$'
"""

from __future__ import annotations

from sqlglot import exp

from risingspark.errors import FeatureNotSupported, InvalidEscapeSequence


def similar_to_regex(pattern: str, escape: str | None = "\\") -> str:
    """PostgreSQL's regular expression for a SIMILAR TO pattern (see the module doc)."""
    if escape is not None and len(escape) > 1:
        raise InvalidEscapeSequence("invalid escape string", hint="Escape string must be empty or one character.")
    out = ["^(?:"]
    after_escape = in_class = False
    for c in pattern:
        if after_escape:
            if c == '"' and not in_class:
                raise FeatureNotSupported('the escape-double-quote separator of SIMILAR patterns is not supported')
            # a class escape (\\d, \\s, \\w and their negations) stays one, as in PostgreSQL; any other
            # letter or digit is itself (RE2 reads \\b as a word boundary, PostgreSQL as a backspace)
            out.append("\\" + c if not c.isalnum() or c in "dswDSW" else c)
            after_escape = False
        elif escape and c == escape:
            after_escape = True
        elif in_class:
            out.append("\\\\" if c == "\\" else c)
            in_class = c != "]"
        elif c == "[":
            out.append(c)
            in_class = True
        elif c == "%":
            out.append(".*")
        elif c == "_":
            out.append(".")
        elif c == "(":
            out.append("(?:")
        elif c in "\\.^$":
            out.append("\\" + c)
        else:
            out.append(c)
    if after_escape:
        raise InvalidEscapeSequence("invalid escape sequence at the end of a SIMILAR TO pattern")
    out.append(")$")
    return "".join(out)


def similar_to(query: exp.Expression, ctx: object = None) -> exp.Expression:
    """Every ``x [NOT] SIMILAR TO 'pattern' [ESCAPE 'e']`` as a regular expression match."""
    for node in list(query.find_all(exp.SimilarTo)):
        escape_node = node.parent if isinstance(node.parent, exp.Escape) and node.parent.this is node else None
        pattern = node.expression
        escape: str | None = "\\"
        if escape_node is not None:
            e = escape_node.expression
            if not (isinstance(e, exp.Literal) and e.is_string):
                raise FeatureNotSupported("SIMILAR TO with an ESCAPE that is not a constant string is not supported")
            escape = e.name or None
        if isinstance(pattern, exp.Null):
            regex: exp.Expression = exp.Null()
        elif isinstance(pattern, exp.Literal) and pattern.is_string:
            regex = exp.Literal.string(similar_to_regex(pattern.name, escape))
        else:
            raise FeatureNotSupported("SIMILAR TO with a pattern that is not a constant string is not supported")
        match = exp.Anonymous(this="regexp_matches", expressions=[node.this.copy(), regex, exp.Literal.string("s")])
        (escape_node or node).replace(match)
    return query
