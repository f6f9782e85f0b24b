"""Constant intervals of fixed length (seconds to weeks), as TUMBLE/HOP sizes and temporal filter
offsets need them: months and years have no fixed length, so they are not accepted here.

>>> from sqlglot import parse_one
>>> fixed_interval_micros(parse_one("INTERVAL '1 hour 30 minutes'", read="postgres"), "x", "y")
5400000000
>>> interval_display(-5_400_000_000)
'-01:30:00'
"""

from __future__ import annotations

from sqlglot import exp

from risingspark.errors import FeatureNotSupported, InvalidParameterValue

MICROS = {"microsecond": 1, "millisecond": 1000, "second": 1_000_000, "minute": 60_000_000,
          "hour": 3_600_000_000, "day": 86_400_000_000, "week": 7 * 86_400_000_000}
_UNIT_ALIASES = {"s": "second", "sec": "second", "ms": "millisecond", "us": "microsecond", "min": "minute",
                 "h": "hour", "hr": "hour", "d": "day"}


def is_interval_literal(node: exp.Expression) -> bool:
    """``INTERVAL '...'``, or ``'...'::interval`` (what `frontend.dialect.whole_intervals` makes of
    an interval string with a clock part or ``ago``)."""
    if isinstance(node, exp.Interval):
        return isinstance(node.this, exp.Literal)
    return (isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string
            and node.to.is_type(exp.DataType.Type.INTERVAL))


def fixed_interval_micros(node: exp.Expression, what: str, why: str) -> int:
    """The length of ``INTERVAL '...'`` (or ``'...'::interval``) in microseconds (signed). `what`
    names the construct in errors; `why` says why a variable-length unit is refused."""
    if not is_interval_literal(node):
        raise FeatureNotSupported(f"{what} needs a constant interval, e.g. INTERVAL '5 minutes'")
    text = str(node.this.this).strip().lower()
    if node.args.get("unit") is not None:
        text = f"{text} {node.args['unit'].name.lower()}"
    total = 0
    parts = text.replace(",", " ").split()
    if len(parts) % 2 or any(":" in p for p in parts) or parts[-1:] == ["ago"] or text.startswith("@"):
        return _parsed_micros(text, what, why)  # a clock part, ``ago``, ``@``: PostgreSQL's whole syntax
    for amount, unit in zip(parts[::2], parts[1::2], strict=True):
        unit = unit.rstrip("s") if unit not in ("s", "ms", "us") else unit
        unit = _UNIT_ALIASES.get(unit, unit)
        if unit not in MICROS:
            raise FeatureNotSupported(f'interval unit "{unit}" in {what} is not supported: {why}')
        try:
            total += int(float(amount) * MICROS[unit])
        except ValueError:
            raise InvalidParameterValue(f'invalid interval for {what}: "{text}"') from None
    return total


def _parsed_micros(text: str, what: str, why: str) -> int:
    from risingspark import interval

    iv = interval.parse(text)
    if iv.months:
        raise FeatureNotSupported(f'interval "{text}" in {what} is not supported: {why}')
    return iv.days * MICROS["day"] + iv.usecs


def interval_display(micros: int) -> str:
    """An interval as Postgres prints it (``1 day 02:00:00``, ``-00:00:03``, ``00:00:00.5``)."""
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    days, rest = divmod(micros, 86_400_000_000)
    seconds, frac = divmod(rest, 1_000_000)
    text = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    if frac:
        text += f".{frac:06d}".rstrip("0")
    if not days:
        return sign + text
    day_text = f"{sign}{days} day{'s' if days != 1 else ''}"
    return f"{day_text} {sign}{text}" if rest else day_text
