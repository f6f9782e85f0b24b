"""Error positions: where in a statement the name an error is about appears, so clients show it
as Postgres does (psql's ``LINE 1: select * from missing`` with a caret).

>>> from risingspark.errors import UndefinedTable, UndefinedColumn
>>> locate_error("select * from 'missing' , missing", UndefinedTable('relation "missing" does not exist'))
27
>>> locate_error("SELECT Foo FROM t", UndefinedColumn('column "foo" does not exist'))
8
"""

from __future__ import annotations

import re

from risingspark.errors import RisingSparkError, UndefinedColumn, UndefinedFunction, UndefinedTable

_QUOTED = re.compile(r"'(?:[^']|'')*'|--[^\n]*|/\*.*?\*/", re.DOTALL)
_PATTERNS: tuple[tuple[type[RisingSparkError], re.Pattern[str], str], ...] = (
    (UndefinedTable, re.compile(r'^relation "([^"]+)" does not exist'), ""),
    (UndefinedColumn, re.compile(r'^column "([^"]+)" does not exist'), ""),
    (UndefinedFunction, re.compile(r"^function ([\w.]+)\("), r"\s*\("),
)


def locate_error(text: str, error: RisingSparkError) -> int | None:
    """The 1-based character position of the object an error names, or None."""
    for cls, pattern, after in _PATTERNS:
        if not isinstance(error, cls):
            continue
        m = pattern.search(error.message)
        if m is None:
            return None
        masked = _QUOTED.sub(lambda q: " " * len(q.group(0)), text)
        parts = [re.escape(p) for p in m.group(1).split(".")]
        name = r"\s*\.\s*".join(rf'"?{p}"?' for p in parts)
        found = re.search(rf"(?<![\w$.\"]){name}(?![\w$\"]){after}", masked, re.IGNORECASE)
        return found.start() + 1 if found else None
    return None
