"""What sqlglot's PostgreSQL parser forgets and PostgreSQL's semantics need, kept in node metadata.

sqlglot parses ``to_char(ts, 'HH24:MI')`` into a ``TimeToStr`` whose template is already translated
to strftime (``%H:%M``), which cannot be mapped back (``HH`` and ``HH12`` both become ``%I``;
PostgreSQL copies unknown letters, strftime has none), and ``date_part('hour', ts)`` into the same
``Extract`` node as ``extract(hour FROM ts)``, although PostgreSQL gives the first a double
precision and the second a numeric. `install` wraps the two builders of the parser's function
tables (shared by the ``postgres`` and ``risingwave`` dialects) so the node records what was
written: ``meta["pg_format"]`` (the original template) and ``meta["date_part"]``. The tree is
otherwise unchanged, so every other use (batch queries rewritten for DuckDB) sees what it saw.

A function call's name as written is kept too (``meta["pg_name"]``: sqlglot's own switch for it,
``ORIGINAL_NAME_META_KEY``, set on the RisingWave dialect): PostgreSQL names an unaliased call's column
after it, and sqlglot maps ``substr``, ``lpad``, ``strpos``, ``date_trunc``... to nodes whose own
names are ``substring``, ``pad``, ``position``, ``timestamp_trunc`` (`frontend.catalog.rewrite.output_name`).

sqlglot also canonicalizes ``INTERVAL '<n> <unit>'`` to ``INTERVAL '<n>' <UNIT>``, and when the
string holds more than that one quantity it keeps the first and drops the rest: ``INTERVAL '1 day
02:00:00'`` became one day, ``INTERVAL '2 hours ago'`` plus two hours. Its parser is compiled, so the
method cannot be wrapped: `whole_intervals` rewrites such a literal in the statement's text, before
parsing, into what PostgreSQL makes of it, the cast ``CAST('1 day 02:00:00' AS INTERVAL)``.

>>> import sqlglot
>>> sqlglot.parse_one("to_char(ts, 'HH:mm')", read="risingwave").meta["pg_format"]
'HH:mm'
>>> sqlglot.parse_one("date_part('hour', ts)", read="risingwave").meta["date_part"]
True
>>> whole_intervals("SELECT now() - INTERVAL '1 day 02:00', interval '3 days', INTERVAL '1' DAY")
"SELECT now() - CAST('1 day 02:00' AS INTERVAL), interval '3 days', INTERVAL '1' DAY"
"""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.dialects.postgres import Postgres
from sqlglot.dialects.risingwave import RisingWave
from sqlglot.errors import TokenError
from sqlglot.tokens import TokenType

PG_FORMAT = "pg_format"
DATE_PART = "date_part"
PG_NAME = "pg_name"


def install() -> None:
    """Wrap the builders once (idempotent)."""
    functions: dict[str, Any] = Postgres.Parser.FUNCTIONS
    parsers: dict[str, Any] = Postgres.Parser.FUNCTION_PARSERS
    to_char = functions["TO_CHAR"]
    date_part = parsers["DATE_PART"]
    if getattr(to_char, "_keeps_pg_format", False):
        return

    def build_to_char(args: list, dialect: Any = None) -> exp.Expression:
        node = to_char(args, dialect=dialect) if dialect is not None else to_char(args)
        if len(args) > 1 and isinstance(args[1], exp.Literal) and args[1].is_string:
            node.meta[PG_FORMAT] = args[1].name
        return node

    def parse_date_part(parser: Any) -> exp.Expression:
        node = date_part(parser)
        node.meta[DATE_PART] = True
        return node

    RisingWave.ORIGINAL_NAME_META_KEY = PG_NAME
    build_to_char._keeps_pg_format = True  # type: ignore[attr-defined]
    functions["TO_CHAR"] = build_to_char
    parsers["DATE_PART"] = parse_date_part


install()


_UNITS = {"YEAR", "YEARS", "MONTH", "MONTHS", "WEEK", "WEEKS", "DAY", "DAYS", "HOUR", "HOURS", "MINUTE", "MINUTES",
          "SECOND", "SECONDS"}
_INTERVAL_STRING = re.compile(r"\binterval\s*'", re.IGNORECASE)


def whole_intervals(sql: str, dialect: str = "risingwave") -> str:
    """`sql` with every ``INTERVAL '...'`` literal that sqlglot would shorten written as a cast of its
    whole string (see the module doc): one with no unit after the string whose string is not a
    single ``<number> <unit>``."""
    if not _INTERVAL_STRING.search(sql):
        return sql
    try:
        tokens = Dialect.get_or_raise(dialect).tokenize(sql)
    except TokenError:
        return sql  # (the parser reports it)
    out, pos = [], 0
    for i, tok in enumerate(tokens[:-1]):
        string = tokens[i + 1]
        if tok.token_type != TokenType.INTERVAL or string.token_type != TokenType.STRING:
            continue
        following = tokens[i + 2] if i + 2 < len(tokens) else None
        if following is not None and following.text.upper() in _UNITS:
            continue  # INTERVAL '1' DAY, INTERVAL '1:30' HOUR TO MINUTE (not an alias: INTERVAL '1 day 02:00' x)
        if string.text.strip()[:1] in ("P", "p"):
            continue  # ISO 8601 ('P1DT2H'): sqlglot keeps it whole
        parts = exp.INTERVAL_STRING_RE.findall(string.text)
        if len(parts) == 1 and " ".join(string.text.split()).lower() == f"{parts[0][0]} {parts[0][1]}".lower():
            continue  # what sqlglot keeps whole
        quoted = "'" + string.text.replace("'", "''") + "'"
        out += [sql[pos:tok.start], f"CAST({quoted} AS INTERVAL)"]
        pos = string.end + 1
    return "".join(out) + sql[pos:] if out else sql
