"""The text of a double precision or a real as PostgreSQL 12+ writes it (``float8out``,
``float4out``): the shortest digits that read back as the value, without an exponent for decimal
exponents in ``[-4, 15)`` (``[-4, 6)`` for a real), with one otherwise (``1e+15``, ``2.5e-07``);
``NaN``, ``Infinity``, ``-Infinity``, and a signed zero (``-0``). The wire's text encoding of both
types (`frontend.pgwire.codec`) and a materialized view's casts of them to text (the Spark Arrow
UDFs of `compute.float_text_udf`) use it.

>>> [format_float8(v) for v in (2.0, 1e15, 2.5e-7, 0.1, -0.0, 1e16 + 2)]
['2', '1e+15', '2.5e-07', '0.1', '-0', '1.0000000000000002e+16']
>>> format_float4(1.5e6), format_float4(0.1)
('1.5e+06', '0.1')
"""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np

# the Spark SQL names of the UDFs that write them in materialized views (`compute.float_text_udf`)
FLOAT8_TEXT_UDF, FLOAT4_TEXT_UDF = "rs_float8_text", "rs_float4_text"


def _shortest_text(digits: str, exp10: int, negative: bool, fixed_below: int) -> str:
    """Lay out shortest round-trip digits as Postgres' Ryu output does.

    Args:
        digits: significant digits without trailing zeros, e.g. ``"15"``.
        exp10: the decimal exponent of the first digit.
        negative: prepend a minus sign.
        fixed_below: exponents in ``[-4, fixed_below)`` print without an exponent (15 for float8,
            6 for float4).
    """
    if -4 <= exp10 < fixed_below:
        if exp10 >= 0:
            whole, frac = digits[:exp10 + 1].ljust(exp10 + 1, "0"), digits[exp10 + 1:]
            text = f"{whole}.{frac}" if frac else whole
        else:
            text = "0." + "0" * (-exp10 - 1) + digits
    else:
        mantissa = f"{digits[0]}.{digits[1:]}" if len(digits) > 1 else digits
        text = f"{mantissa}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"
    return "-" + text if negative else text


def _special_float(x: float) -> str | None:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    return None


def _format_shortest(shortest: str, fixed_below: int) -> str:
    sign, digits, exp = Decimal(shortest).as_tuple()
    text = "".join(map(str, digits)).rstrip("0")
    exp10 = int(exp) + len(digits) - 1
    return _shortest_text(text, exp10, bool(sign), fixed_below)


def format_float8(x: float) -> str:
    """A float8 as Postgres 12+ prints it: shortest round-trip digits, ``1e+16``, ``Infinity``."""
    return _special_float(x) or _format_shortest(repr(float(x)), 15)


def format_float4(x: float) -> str:
    """A float4 as Postgres 12+ prints it (shortest digits of the 32-bit value)."""
    f = np.float32(x)
    return _special_float(float(f)) or _format_shortest(np.format_float_scientific(f, unique=True), 6)
