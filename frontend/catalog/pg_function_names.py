"""The names of PostgreSQL's built-in functions (`pg_functions.txt`, beside this module): a call of
one that a batch query's engine or a materialized view lacks is a feature not supported (0A000), a
call of any other name a function that does not exist (42883)."""

from __future__ import annotations

import functools
from pathlib import Path


@functools.cache
def postgresql_functions() -> frozenset[str]:
    """The names of PostgreSQL's built-in functions, lower case."""
    text = (Path(__file__).parent / "pg_functions.txt").read_text()
    return frozenset(line for line in text.splitlines() if line and not line.startswith("#"))
