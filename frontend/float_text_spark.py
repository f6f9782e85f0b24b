"""The text of a double or a real as PostgreSQL writes it, in Spark SQL (materialized views).

Spark's cast of a double to a string is Java's ``Double.toString``: the shortest digits that read
back as the value (as PostgreSQL's ``float8out``), laid out otherwise: always a fractional part
(``2.0``), an exponent below 10^-3 and from 10^7 (``1.0E7``). PostgreSQL writes no ``.0`` on a
whole number and an exponent below 10^-4 and from 10^15 (10^6 for a real), with a sign and at
least two digits (``1e+15``, ``2.5e-07``). `float_text` takes Java's text apart with string
functions: the digits without leading or trailing zeros, and the decimal exponent of the first one,
then lays them out as PostgreSQL. ``NaN``, ``Infinity`` and ``-Infinity`` are the same in both;
zero keeps its sign (``-0``). (Java 17's ``Double.toString`` and ``Float.toString`` give more digits
than the shortest for a few values — the smallest subnormal double ``4.9E-324``, PostgreSQL
``5e-324``; some reals past 10^7, ``1e15::real`` as ``9.9999999E14``, PostgreSQL ``1e+15`` —: those
keep Java's digits.)

>>> float_text("x", 15).startswith("CASE WHEN CAST(x AS STRING) IN ('NaN', 'Infinity', '-Infinity')")
True
"""

from __future__ import annotations


def float_text(x: str, exponent_from: int) -> str:
    """Spark SQL of PostgreSQL's text of the double or real `x` (Spark SQL); `exponent_from` is the
    decimal exponent from which PostgreSQL writes one (15 for a double, 6 for a real)."""
    j = f"CAST({x} AS STRING)"
    unsigned = f"regexp_replace({j}, '^-', '')"
    whole = f"split(regexp_extract({unsigned}, '^([0-9.]+)', 1), '[.]')"
    digits = f"concat({whole}[0], {whole}[1])"
    significant = f"trim(LEADING '0' FROM {digits})"  # (the digits from the first that is not 0)
    stated = f"IF({unsigned} LIKE '%E%', CAST(regexp_extract({unsigned}, 'E(-?[0-9]+)$', 1) AS INT), 0)"
    exponent = f"({stated} + length({whole}[0]) - 1 - (length({digits}) - length({significant})))"
    d = f"trim(TRAILING '0' FROM {significant})"
    scientific = (f"concat(substr({d}, 1, 1), IF(length({d}) > 1, concat('.', substr({d}, 2)), ''), 'e', "
                  f"IF({exponent} < 0, '-', '+'), IF(abs({exponent}) < 10, '0', ''), CAST(abs({exponent}) AS STRING))")
    fixed = (f"IF({exponent} >= 0, IF(length({d}) <= {exponent} + 1, rpad({d}, {exponent} + 1, '0'), "
             f"concat(substr({d}, 1, {exponent} + 1), '.', substr({d}, {exponent} + 2))), "
             f"concat('0.', repeat('0', -{exponent} - 1), {d}))")
    sign = f"IF({j} LIKE '-%', '-', '')"
    return (f"CASE WHEN {j} IN ('NaN', 'Infinity', '-Infinity') THEN {j} "
            f"WHEN {d} = '' THEN concat({sign}, '0') "
            f"WHEN {exponent} < -4 OR {exponent} >= {exponent_from} THEN concat({sign}, {scientific}) "
            f"ELSE concat({sign}, {fixed}) END")
