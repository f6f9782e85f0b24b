"""What sqlglot's PostgreSQL parser forgets and PostgreSQL's semantics need, kept in node metadata.

sqlglot parses ``to_char(ts, 'HH24:MI')`` into a ``TimeToStr`` whose template is already translated
to strftime (``%H:%M``), which cannot be mapped back (``HH`` and ``HH12`` both become ``%I``;
PostgreSQL copies unknown letters, strftime has none), and ``date_part('hour', ts)`` into the same
``Extract`` node as ``extract(hour FROM ts)``, although PostgreSQL gives the first a double
precision and the second a numeric. `install` wraps the two builders of the parser's function
tables (shared by the ``postgres`` and ``risingwave`` dialects) so the node records what was
written: ``meta["pg_format"]`` (the original template) and ``meta["date_part"]``. The tree is
otherwise unchanged, so every other use (batch queries rewritten for DuckDB) sees what it saw.

>>> import sqlglot
>>> sqlglot.parse_one("to_char(ts, 'HH:mm')", read="risingwave").meta["pg_format"]
'HH:mm'
>>> sqlglot.parse_one("date_part('hour', ts)", read="risingwave").meta["date_part"]
True
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp
from sqlglot.dialects.postgres import Postgres

PG_FORMAT = "pg_format"
DATE_PART = "date_part"


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

    build_to_char._keeps_pg_format = True  # type: ignore[attr-defined]
    functions["TO_CHAR"] = build_to_char
    parsers["DATE_PART"] = parse_date_part


install()
