"""``extract`` and ``date_part`` of seconds, milliseconds and the epoch, with their fractions.

DuckDB's ``extract(second FROM ts)`` is the whole seconds (a BIGINT): ``10:00:59.5`` gave ``59``,
where PostgreSQL (14 and later) gives the numeric ``59.500000``, and ``date_part('second', ts)``
the double ``59.5``; milliseconds lost their microseconds, and the epoch came back a double (whose
53 bits cannot hold every microsecond of a timestamp). The rule here computes them from DuckDB's
exact microseconds as PostgreSQL defines them: seconds are the seconds field with its fraction
(``date_part('microseconds', x)``, which includes the whole seconds, divided by 10^6), milliseconds
the same divided by 10^3, the epoch ``epoch_us(x)`` divided by 10^6. ``extract`` gives numerics of
scale 6, 3 and 6 (decimal multiplication is exact), ``date_part`` doubles (``date_part`` is marked
by `frontend.dialect`). Every other field is left to DuckDB, as is the epoch of an interval with
months (DuckDB and PostgreSQL count a month's seconds differently).
"""

from __future__ import annotations

from sqlglot import exp

from frontend.dialect import DATE_PART

_SECONDS = {"second", "seconds", "sec", "secs"}
_MILLISECONDS = {"millisecond", "milliseconds", "msec", "msecs", "ms"}


def extract_fractions(query: exp.Expression, ctx: object = None) -> exp.Expression:
    """Every ``extract`` / ``date_part`` of a field above, as the module doc computes it."""
    for node in list(query.find_all(exp.Extract)):
        field = node.this.name.lower() if isinstance(node.this, exp.Var | exp.Literal | exp.Identifier) else ""
        source = node.expression
        if field in _SECONDS | _MILLISECONDS:
            micros: exp.Expression = exp.Anonymous(this="date_part",
                                                   expressions=[exp.Literal.string("microseconds"), source.copy()])
            scale = 6 if field in _SECONDS else 3
        elif field == "epoch" and not _is_interval(source):
            micros, scale = exp.Anonymous(this="epoch_us", expressions=[source.copy()]), 6
        else:
            continue
        if node.meta.get(DATE_PART):  # a double
            out: exp.Expression = exp.Div(this=exp.cast(micros, "DOUBLE"), expression=exp.Literal.number(10 ** scale))
        else:  # a numeric: an exact decimal product
            factor = exp.Literal.number("0." + "0" * (scale - 1) + "1")
            out = exp.Mul(this=exp.cast(micros, exp.DataType.build("DECIMAL(38, 0)")), expression=factor)
        node.replace(exp.Paren(this=out))
    return query


def _is_interval(node: exp.Expression) -> bool:
    return isinstance(node, exp.Interval) or (isinstance(node, exp.Cast) and node.to.is_type(exp.DataType.Type.INTERVAL))
