"""A numeric quotient of operands the query's text gives, as PostgreSQL computes and prints it.

DuckDB divides decimals as doubles, and a batch result's numeric shows no trailing zeros
(`frontend.batch_types`): ``10 / 4.0`` was ``2.5``. PostgreSQL's quotient has the display scale of
``select_div_scale`` (``src/backend/utils/adt/numeric.c``): at least 16 significant digits,
``16 - 4 * qweight`` where ``qweight`` estimates the quotient's weight in base-10000 digits from the
operands' first such digits, but never less than either operand's display scale; the quotient is
rounded half away from zero at that scale (``10 / 4.0`` is ``2.5000000000000000``). Where both
operands are number literals, or casts of literals to ``numeric``, the quotient is computed here,
exactly, and replaced by its text cast to ``DECIMAL(p, scale)``, which prints it with PostgreSQL's
digits. A quotient of an integer and an integer is an integer (`frontend.catalog.rewrite.integer_quotients`);
division by zero, a quotient of more than 38 digits and any quotient of a column or a call are left
to DuckDB.

>>> import sqlglot
>>> numeric_quotients(sqlglot.parse_one("SELECT 10 / 4.0, 1 / 3::numeric, 7 / 2", read="risingwave"), None).sql("duckdb")
"SELECT CAST('2.5000000000000000' AS DECIMAL(17, 16)), CAST('0.33333333333333333333' AS DECIMAL(21, 20)), 7 / 2"
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from fractions import Fraction
from typing import TYPE_CHECKING

from sqlglot import exp

from risingspark.types import UNCONSTRAINED_NUMERIC_PRECISION, UNCONSTRAINED_NUMERIC_SCALE

if TYPE_CHECKING:
    from frontend.catalog.rewrite import RewriteContext

MIN_SIG_DIGITS = 16  # NUMERIC_MIN_SIG_DIGITS
MAX_DISPLAY_SCALE = 1000  # NUMERIC_MAX_DISPLAY_SCALE
_DEC_DIGITS = 4  # decimal digits in one base-10000 digit (NBASE)


def numeric_quotients(query: exp.Expression, ctx: RewriteContext | None) -> exp.Expression:
    """Quotients of literals with a numeric among them, as PostgreSQL's (see the module doc)."""
    for node in reversed(list(query.find_all(exp.Div))):  # (inner quotients first: they are operands)
        a, b = _operand(node.this), _operand(node.expression)
        if a is None or b is None or (a[1] and b[1]) or b[0] == 0:
            continue
        folded = _quotient(a[0], b[0])
        if folded is not None:
            node.replace(folded)
    return query


def div_scale(a: Decimal, b: Decimal) -> int:
    """PostgreSQL's display scale of ``a / b`` (``select_div_scale``).

    >>> div_scale(Decimal(10), Decimal("4.0")), div_scale(Decimal(1), Decimal(3)), div_scale(Decimal(1000000), Decimal(7))
    (16, 20, 12)
    """
    (w1, d1), (w2, d2) = _first_digit(a), _first_digit(b)
    qweight = w1 - w2 - (1 if d1 <= d2 else 0)
    scale = max(MIN_SIG_DIGITS - qweight * _DEC_DIGITS, _dscale(a), _dscale(b), 0)
    return min(scale, MAX_DISPLAY_SCALE)


def divide(a: Decimal, b: Decimal) -> Decimal:
    """PostgreSQL's ``a / b`` for numerics: exact, rounded half away from zero at `div_scale`.

    >>> divide(Decimal("-0.001"), Decimal(3)), divide(Decimal(2), Decimal(3))
    (Decimal('-0.00033333333333333333'), Decimal('0.66666666666666666667'))
    """
    scale = div_scale(a, b)
    exact = Fraction(a) / Fraction(b) * 10**scale
    units = (abs(exact.numerator) * 2 + exact.denominator) // (exact.denominator * 2)  # (half away from zero)
    return Decimal((1 if exact < 0 else 0, tuple(map(int, str(units))), -scale))


def _quotient(a: Decimal, b: Decimal) -> exp.Expression | None:
    q = divide(a, b)
    scale = -q.as_tuple().exponent  # type: ignore[operator]
    precision = max(len(q.as_tuple().digits), scale + 1)
    if precision > UNCONSTRAINED_NUMERIC_PRECISION or \
            (precision, scale) == (UNCONSTRAINED_NUMERIC_PRECISION, UNCONSTRAINED_NUMERIC_SCALE):
        return None  # (past DuckDB's decimals; or the type an unconstrained numeric is stored as, shown without zeros)
    return exp.cast(exp.Literal.string(f"{q:f}"), exp.DataType.build(f"DECIMAL({precision}, {scale})"))


def _operand(e: exp.Expression) -> tuple[Decimal, bool] | None:
    """The value of a number literal or of a literal cast to numeric, and whether PostgreSQL reads
    it as an integer; None for anything else."""
    negative = False
    while isinstance(e, exp.Paren | exp.Neg):
        negative ^= isinstance(e, exp.Neg)
        e = e.this
    if isinstance(e, exp.Literal) and not e.is_string:
        value, integer = _decimal(e.name), e.is_int and abs(int(e.name)) < 2**63
    elif isinstance(e, exp.Cast) and isinstance(e.to, exp.DataType) and e.to.this == exp.DataType.Type.DECIMAL:
        inner = _operand(e.this) if not (isinstance(e.this, exp.Literal) and e.this.is_string) else \
            (_decimal(e.this.name.strip()), False)
        if inner is None or inner[0] is None:
            return None
        value, integer = inner[0], False
        if e.to.expressions:  # numeric(p, s): rounded to s (a value past p is left to DuckDB's error)
            sizes = [int(x.name) for x in e.to.expressions]
            scale = sizes[1] if len(sizes) > 1 else 0
            value = value.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
            if len(value.as_tuple().digits) > max(sizes[0], scale + 1):
                return None
    else:
        return None
    if value is None or not value.is_finite():
        return None
    return (-value if negative else value), integer


def _decimal(text: str) -> Decimal | None:
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    if not value.is_finite():
        return None
    return value if int(value.as_tuple().exponent) <= 0 else value.quantize(Decimal(1))  # (1e3: 1000, scale 0)


def _dscale(d: Decimal) -> int:
    return max(0, -d.as_tuple().exponent)  # type: ignore[operator]


def _first_digit(d: Decimal) -> tuple[int, int]:
    """The weight of a value's first nonzero base-10000 digit and that digit; (0, 0) for zero."""
    if d == 0:
        return 0, 0
    weight = abs(d).adjusted() // _DEC_DIGITS
    return weight, int(abs(d).scaleb(-weight * _DEC_DIGITS))
