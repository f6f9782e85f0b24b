"""RisingWave clauses sqlglot does not parse, recognized in the statement text and removed before
sqlglot parses the rest (sqlglot's parsers are compiled and cannot be subclassed):

* a table's kind after its column list, as RisingWave's grammar puts it::

      CREATE TABLE t (...) [APPEND ONLY] [ON CONFLICT {OVERWRITE | DO UPDATE FULL | IGNORE |
                                                      DO NOTHING | DO UPDATE IF NOT NULL}
                                          [WITH VERSION COLUMN (column)]]

* a changelog CTE, ``WITH c AS CHANGELOG FROM relation``: rewritten to ``c AS (SELECT * FROM
  __rw_changelog(relation))``, a table function only the stream binder knows, so any other
  statement that meets it fails instead of reading the relation itself.

The scan masks quoted strings, identifiers and comments first, so keywords inside them never match.

>>> split_table_clauses("CREATE TABLE t (a INT PRIMARY KEY) APPEND ONLY ON CONFLICT DO NOTHING")
('CREATE TABLE t (a INT PRIMARY KEY)', TableClauses(append_only=True, on_conflict='IGNORE', version_column=None))
>>> rewrite_changelog_ctes("WITH c AS changelog FROM s.t SELECT * FROM c")
('WITH c AS (SELECT * FROM __rw_changelog(s.t)) SELECT * FROM c', True)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from risingspark.errors import SyntaxError_

CHANGELOG_FUNCTION = "__rw_changelog"

_STRINGS = r"""[eE]?'(?:[^'\\]|''|\\.)*'|--[^\n]*|/\*.*?\*/|\$(\w*)\$.*?\$\1\$"""
_MASK = re.compile(_STRINGS + r'|"(?:[^"]|"")*"', re.DOTALL)
_MASK_STRINGS = re.compile(_STRINGS, re.DOTALL)
_NAME = r'(?:"(?:[^"]|"")*"|[A-Za-z_][\w$]*)'
_QUALIFIED = rf"{_NAME}(?:\s*\.\s*{_NAME}){{0,2}}"

# ON CONFLICT actions, RisingWave's spellings and the behaviour each names
_ACTIONS = (("OVERWRITE", "OVERWRITE"), ("DO UPDATE FULL", "OVERWRITE"), ("IGNORE", "IGNORE"),
            ("DO NOTHING", "IGNORE"), ("DO UPDATE IF NOT NULL", "DO UPDATE IF NOT NULL"))


@dataclass(frozen=True)
class TableClauses:
    """A CREATE TABLE's kind: ``on_conflict`` is OVERWRITE, IGNORE, ``DO UPDATE IF NOT NULL`` or
    None (not given); ``version_column`` the ``WITH VERSION COLUMN`` columns, if given."""

    append_only: bool = False
    on_conflict: str | None = None
    version_column: tuple[str, ...] | None = None


def _masked(text: str, identifiers: bool = True) -> str:
    """`text` with strings, comments and (`identifiers`) quoted identifiers blanked (same length)."""
    return (_MASK if identifiers else _MASK_STRINGS).sub(lambda m: " " * len(m.group(0)), text)


def _closing_paren(masked: str, start: int) -> int | None:
    depth = 0
    for i in range(start, len(masked)):
        if masked[i] == "(":
            depth += 1
        elif masked[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return None


_CREATE_TABLE = re.compile(rf"\s*CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?{_QUALIFIED}\s*\(", re.IGNORECASE)
_APPEND_ONLY = re.compile(r"\s*APPEND\s+ONLY\b", re.IGNORECASE)
_ON_CONFLICT = re.compile(r"\s*ON\s+CONFLICT\b", re.IGNORECASE)
_VERSION_COLUMN = re.compile(rf"\s*WITH\s+VERSION\s+COLUMN\s*\(\s*({_NAME}(?:\s*,\s*{_NAME})*)\s*\)", re.IGNORECASE)


def split_table_clauses(text: str) -> tuple[str, TableClauses | None]:
    """A CREATE TABLE without its kind clauses, and the clauses (None when it has none, or when
    the text is no ``CREATE TABLE name (...)``)."""
    m = _CREATE_TABLE.match(text)
    if m is None:
        return text, None
    masked = _masked(text)
    close = _closing_paren(masked, m.end() - 1)
    if close is None:
        return text, None
    pos = close + 1
    append_only = False
    on_conflict: str | None = None
    version: tuple[str, ...] | None = None
    if a := _APPEND_ONLY.match(masked, pos):
        append_only, pos = True, a.end()
    if c := _ON_CONFLICT.match(masked, pos):
        pos = c.end()
        rest = " ".join(masked[pos:].split()).upper()
        for spelling, behaviour in _ACTIONS:
            if rest == spelling or rest.startswith(spelling + " "):
                on_conflict = behaviour
                words = spelling.split()
                found = re.match(r"\s*" + r"\s+".join(words) + r"\b", masked[pos:], re.IGNORECASE)
                assert found is not None
                pos += found.end()
                break
        else:
            near = rest.split(" ")[0] if rest else "end of input"
            raise SyntaxError_(f'syntax error at or near "{near}"',
                               detail="expected OVERWRITE, DO UPDATE FULL, IGNORE, DO NOTHING or DO UPDATE IF NOT "
                                      "NULL after ON CONFLICT")
        if v := _VERSION_COLUMN.match(text, pos):
            version = tuple(p.strip() for p in v.group(1).split(","))
            pos = v.end()
    if not append_only and on_conflict is None:
        return text, None
    return text[:close + 1] + text[pos:], TableClauses(append_only, on_conflict, version)


_WITH = re.compile(r"\bWITH\b(\s+RECURSIVE\b)?", re.IGNORECASE)
_CTE_HEAD = re.compile(rf"\s*{_NAME}\s*(?:\([^()]*\)\s*)?AS\s+(?:NOT\s+)?(?:MATERIALIZED\s+)?", re.IGNORECASE)
_CHANGELOG_BODY = re.compile(rf"CHANGELOG\s+FROM\s+({_QUALIFIED})", re.IGNORECASE)


def rewrite_changelog_ctes(text: str) -> tuple[str, bool]:
    """The text with every ``AS CHANGELOG FROM name`` CTE body rewritten (see the module
    docstring), and whether there was one. Only the items of a WITH list are looked at: a CTE
    list is walked item by item (``name [(columns)] AS body``, bodies in parentheses skipped)."""
    masked = _masked(text, identifiers=False)
    edits: list[tuple[int, int, str]] = []
    for w in _WITH.finditer(masked):
        pos = w.end()
        while (head := _CTE_HEAD.match(masked, pos)) is not None:
            pos = head.end()
            if masked.startswith("(", pos):
                close = _closing_paren(masked, pos)
                if close is None:
                    break
                pos = close + 1
            elif (body := _CHANGELOG_BODY.match(masked, pos)) is not None:
                edits.append((body.start(), body.end(),
                              f"(SELECT * FROM {CHANGELOG_FUNCTION}({text[body.start(1):body.end(1)]}))"))
                pos = body.end()
            else:
                break
            comma = re.match(r"\s*,", masked[pos:])
            if comma is None:
                break
            pos += comma.end()
    if not edits:
        return text, False
    out, last = [], 0
    for start, end, replacement in edits:
        out += [text[last:start], replacement]
        last = end
    out.append(text[last:])
    return "".join(out), True
