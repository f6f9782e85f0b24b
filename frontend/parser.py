"""Statement splitting and parsing.

Standard SQL is parsed by sqlglot's RisingWave dialect; RisingWave clauses it does not parse (a
table's APPEND ONLY and ON CONFLICT, changelog CTEs) are taken out first (`frontend.rw_clauses`).
The statements it does not know (SHOW JOBS,
FLUSH, WAIT, CANCEL JOBS, ALTER SYSTEM, SET and SHOW of session variables, EXPLAIN CREATE...) are
short keyword commands, recognized here from their leading words into small frozen dataclasses.
Splitting a query string into statements is a single regex scan that respects quotes, dollar
quotes and comments (sqlglot's tokenizer is far slower on multi-megabyte INSERTs).
"""

from __future__ import annotations

import re
from typing import cast

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from frontend.dialect import whole_intervals  # (and keeps to_char templates, date_part calls in the tree)
from frontend.function_parser import is_function_statement, parse_function_statement
from frontend.rw_clauses import rewrite_changelog_ctes, split_table_clauses
from frontend.session_vars import backfill_rate, check_backfill_rate
from frontend.statements import (  # noqa: F401 - re-exported: handlers import statements from here
    AlterParallelismStmt,
    AlterRateLimitStmt,
    AlterSystemStmt,
    CancelJobsStmt,
    CommentStmt,
    CopyStmt,
    CreateIndexStmt,
    DiscardAllStmt,
    ExplainStmt,
    FastInsert,
    FlushStmt,
    IgnoredStmt,
    KillStmt,
    RenameStmt,
    ResetStmt,
    SetStmt,
    ShowProcesslistStmt,
    ShowStmt,
    SqlStmt,
    Statement,
    TransactionStmt,
    WaitStmt,
)
from frontend.user_parser import is_user_statement, match_alter_owner, parse_user_statement
from risingspark.errors import FeatureNotSupported, SyntaxError_

DIALECT = "risingwave"

_SPLIT = re.compile(
    r"""
    (?P<squote>[eE]?'(?:[^'\\]|''|\\.)*')   # '...' (and E'...')
  | (?P<dquote>"(?:[^"]|"")*")              # "identifier"
  | (?P<dollar>\$(?P<tag>[A-Za-z_]*)\$.*?\$(?P=tag)\$)  # $$...$$ or $tag$...$tag$
  | (?P<line>--[^\n]*)
  | (?P<block>/\*.*?\*/)
  | (?P<semi>;)
    """,
    re.VERBOSE | re.DOTALL,
)


def split_statements(sql: str) -> list[str]:
    """Split on semicolons outside quotes and comments; blank statements are dropped, but a query
    with no statement at all yields ``[""]`` (Postgres answers it with EmptyQueryResponse)."""
    out, start = [], 0
    for m in _SPLIT.finditer(sql):
        if m.lastgroup == "semi":
            out.append(sql[start:m.start()])
            start = m.end()
    out.append(sql[start:])
    stmts = [_strip_leading_comments(s) for s in out]
    stmts = [s for s in stmts if s]
    return stmts or [""]


_LEADING_COMMENT = re.compile(r"\s*(?:--[^\n]*(?:\n|$)|/\*.*?\*/)", re.DOTALL)


def _strip_leading_comments(s: str) -> str:
    while True:
        m = _LEADING_COMMENT.match(s)
        if not m:
            return s.strip()
        s = s[m.end():]


_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\"(?:[^\"]|\"\")*\"|'(?:[^']|'')*'|-?\d+(?:\.\d+)?|[=,()]|\S")


def _words(text: str) -> list[str]:
    return _WORDS.findall(text)


def _unquote(w: str) -> str:
    if w.startswith("'") and w.endswith("'"):
        return w[1:-1].replace("''", "'")
    if w.startswith('"') and w.endswith('"'):
        return w[1:-1].replace('""', '"')
    return w


INSERT_VALUES = re.compile(
    r"""^\s*INSERT\s+INTO\s+(?P<table>(?:"(?:[^"]|"")*"|[A-Za-z_][\w$]*)(?:\s*\.\s*(?:"(?:[^"]|"")*"|[A-Za-z_][\w$]*)){0,2})
        \s*(?:\((?P<cols>[^()]*)\))?\s*(?P<values>VALUES\s*\(.*)$""",
    re.IGNORECASE | re.DOTALL | re.VERBOSE,
)


def parse_statement(text: str) -> Statement:
    """Parse one statement (no trailing semicolon)."""
    words = _words(text)
    head = [w.upper() for w in words[:4]]
    first = head[0] if head else ""
    if first == "SHOW" and len(head) == 2 and head[1] == "PROCESSLIST":
        return ShowProcesslistStmt()
    if first == "SHOW":
        like = None
        if len(words) >= 4 and words[-2].upper() == "LIKE" and words[-1].startswith("'"):
            like, words = _unquote(words[-1]), words[:-2]
        return ShowStmt(tuple(_unquote(w).lower() for w in words[1:]), like)
    if first == "KILL":
        m = re.fullmatch(r"\s*KILL\s+'?(?:\d+:)?(\d+)'?\s*", text, re.IGNORECASE)
        if not m:
            raise SyntaxError_("KILL expects a process id, e.g. KILL 3")
        return KillStmt(int(m.group(1)))
    if first == "COMMENT" and len(head) > 1 and head[1] == "ON":
        return _parse_comment(text)
    if first == "COPY":
        return parse_copy(text)
    if first == "SET" and len(head) > 1 and head[1] in ("SESSION", "LOCAL") and len(head) > 2 \
            and head[2] == "CHARACTERISTICS":
        return IgnoredStmt("SET")
    if first == "SET":
        return _parse_set(words[1:])
    if first == "RESET":
        return ResetStmt(_unquote(words[1]).lower() if len(words) > 1 else "all")
    if first == "FLUSH" and len(words) == 1:
        return FlushStmt()
    if first == "WAIT":
        if len(words) == 1:
            return WaitStmt()
        m = re.fullmatch(rf"\s*WAIT\s+(?P<kind>MATERIALIZED\s+VIEW|TABLE|INDEX|SINK)\s+(?P<name>{_QUALIFIED})\s*",
                         text, re.IGNORECASE)
        if m:
            parts = _name_parts(m.group("name"))
            return WaitStmt(parts[-1], parts[-2] if len(parts) > 1 else None, " ".join(m.group("kind").upper().split()))
        raise SyntaxError_(f"syntax error at or near \"{words[1]}\"")
    if first == "CANCEL" and len(head) > 1 and head[1] in ("JOB", "JOBS"):
        ids = [w for w in words[2:] if w != ","]
        if not ids or not all(w.isdigit() for w in ids):
            raise SyntaxError_("CANCEL JOBS expects job ids, e.g. CANCEL JOBS 1001, 1002")
        return CancelJobsStmt(tuple(int(w) for w in ids))
    if first == "EXPLAIN":
        inner = re.sub(r"^\s*EXPLAIN\s+(\([^)]*\)\s*)?", "", text, flags=re.IGNORECASE)
        return ExplainStmt(inner)
    if is_user_statement(head):
        return parse_user_statement(text)
    if is_function_statement(head):
        return parse_function_statement(text)
    if first == "ALTER" and (owner := match_alter_owner(text)) is not None:
        return owner
    if first == "ALTER" and (m := _RENAME.fullmatch(text)):
        return RenameStmt(" ".join(m.group("kind").upper().split()), _name_parts(m.group("name")),
                          _name_parts(m.group("new"))[-1], bool(m.group("exists")))
    if first == "CREATE" and re.match(r"\s*CREATE\s+(UNIQUE\s+)?INDEX\b", text, re.IGNORECASE):
        return parse_create_index(text)
    if first == "ALTER" and len(head) > 3 and head[1] == "MATERIALIZED" and head[2] == "VIEW":
        m = re.fullmatch(r"\s*ALTER\s+MATERIALIZED\s+VIEW\s+(\S+)\s+SET\s+BACKFILL_RATE_LIMIT\s*(?:=|TO)\s*"
                         r"(\S+)\s*", text, re.IGNORECASE)
        if m:
            value = m.group(2).strip("'").lower()
            rate = None if value == "default" else backfill_rate(check_backfill_rate(value))
            return AlterRateLimitStmt(_ident(m.group(1)), rate)
        m = re.fullmatch(r"\s*ALTER\s+MATERIALIZED\s+VIEW\s+(\S+)\s+SET\s+PARALLELISM\s*(?:=|TO)\s*"
                         r"(\d+|ADAPTIVE|DEFAULT)\s*", text, re.IGNORECASE)
        if m:
            value = m.group(2).upper()
            return AlterParallelismStmt(_ident(m.group(1)), 0 if value in ("ADAPTIVE", "DEFAULT") else int(value))
    if first == "ALTER" and len(head) > 2 and head[1] == "SYSTEM" and head[2] == "SET":
        st = _parse_set(words[3:])
        return AlterSystemStmt(st.name, st.value)
    if first in ("BEGIN", "COMMIT", "END", "ROLLBACK", "ABORT", "SAVEPOINT", "RELEASE") or \
            (first == "START" and len(head) > 1 and head[1] == "TRANSACTION"):
        tag = {"END": "COMMIT", "ABORT": "ROLLBACK", "START": "BEGIN"}.get(first, first)
        if tag == "ROLLBACK" and len(head) > 1 and head[1] == "TO":
            return TransactionStmt(tag, in_transaction=True)
        return TransactionStmt(tag)
    if first == "DISCARD":
        rest = re.sub(r"--[^\n]*|/\*.*?\*/", " ", text, flags=re.DOTALL).split()[1:]  # (comments go)
        what = rest[0].upper().rstrip(";") if len(rest) == 1 else ""
        if what == "ALL":
            return DiscardAllStmt()
        if what in ("PLANS", "SEQUENCES", "TEMP", "TEMPORARY"):  # nothing of the kind is kept per session
            return IgnoredStmt("DISCARD " + ("TEMP" if what == "TEMPORARY" else what))
        raise SyntaxError_(f'syntax error at or near "{rest[0] if rest else "DISCARD"}"')
    if first == "INSERT":
        m = INSERT_VALUES.match(text)
        if m and not re.search(r"\bRETURNING\b|\bON\s+CONFLICT\b", text[-200:], re.IGNORECASE):
            table = sqlglot.parse_one(m.group("table"), read=DIALECT, into=exp.Table)
            cols = None
            if m.group("cols") is not None:
                cols = tuple(_ident(c.strip()) for c in m.group("cols").split(","))
            return FastInsert(table, cols, m.group("values"), text)
    sql, clauses = split_table_clauses(text) if first == "CREATE" else (text, None)
    sql, changelog = rewrite_changelog_ctes(sql)
    if changelog and not _CREATE_MV.match(sql):
        raise FeatureNotSupported("WITH ... AS CHANGELOG FROM is only supported in CREATE MATERIALIZED VIEW")
    try:
        ast = sqlglot.parse_one(whole_intervals(sql), read=DIALECT)
    except ParseError as e:
        raise _syntax_error(e, sql) from None
    if isinstance(ast, exp.Command) or not isinstance(ast, _STATEMENTS):
        first_word = words[0] if words else ""
        raise SyntaxError_(f'syntax error at or near "{first_word}"', position=1 if first_word else None)
    return SqlStmt(cast(exp.Expression, ast), text, clauses)


_CREATE_MV = re.compile(r"\s*CREATE\s+MATERIALIZED\s+VIEW\b", re.IGNORECASE)


_STATEMENTS = (exp.Query, exp.Values, exp.Insert, exp.Update, exp.Delete, exp.Create, exp.Drop, exp.Set,
               exp.Transaction, exp.Commit, exp.Rollback, exp.Alter)


_NAME = r'(?:"(?:[^"]|"")*"|[A-Za-z_][\w$]*)'
_QUALIFIED = rf"{_NAME}(?:\s*\.\s*{_NAME}){{0,3}}"


def _name_parts(text: str) -> tuple[str, ...]:
    return tuple(_ident(p) for p in re.findall(_NAME, text))


_RENAME = re.compile(rf"\s*ALTER\s+(?P<kind>TABLE|VIEW|MATERIALIZED\s+VIEW|INDEX)\s+(?P<exists>IF\s+EXISTS\s+)?"
                     rf"(?P<name>{_QUALIFIED})\s+RENAME\s+TO\s+(?P<new>{_QUALIFIED})\s*", re.IGNORECASE)
_NAME_LIST = rf"\(\s*{_NAME}(?:\s+(?:ASC|DESC))?(?:\s*,\s*{_NAME}(?:\s+(?:ASC|DESC))?)*\s*\)"
_CREATE_INDEX = re.compile(
    rf"\s*CREATE\s+(?P<unique>UNIQUE\s+)?INDEX\s+(?P<exists>IF\s+NOT\s+EXISTS\s+)?(?P<name>{_NAME})\s+ON\s+"
    rf"(?P<rel>{_QUALIFIED})\s*(?:USING\s+\w+\s*)?(?P<cols>{_NAME_LIST})\s*(?:INCLUDE\s*(?P<include>{_NAME_LIST})\s*)?"
    rf"(?:DISTRIBUTED\s+BY\s*(?P<dist>{_NAME_LIST})\s*)?", re.IGNORECASE)


def _column_list(text: str) -> list[tuple[str, bool]]:
    """``(a, b DESC)`` -> ``[("a", False), ("b", True)]``."""
    return [(_ident(m.group(1)), (m.group(2) or "").upper() == "DESC")
            for m in re.finditer(rf"({_NAME})(?:\s+(ASC|DESC))?", text[1:-1], re.IGNORECASE)
            if m.group(1).upper() not in ("ASC", "DESC")]


def parse_create_index(text: str) -> CreateIndexStmt:
    """The statement's index, columns and options.

    >>> parse_create_index('create index if not exists "i" on s.t (a, b desc) include (c)').columns
    (('a', False), ('b', True))
    """
    m = _CREATE_INDEX.fullmatch(text)
    if not m:
        raise SyntaxError_("CREATE INDEX expects CREATE INDEX name ON relation (column, ...) [INCLUDE (column, "
                           "...)] [DISTRIBUTED BY (column, ...)]")
    if m.group("unique"):
        raise FeatureNotSupported("CREATE UNIQUE INDEX is not supported")
    include = tuple(c for c, _ in _column_list(m.group("include"))) if m.group("include") else None
    dist = tuple(c for c, _ in _column_list(m.group("dist"))) if m.group("dist") else None
    return CreateIndexStmt(_ident(m.group("name")), _name_parts(m.group("rel")), tuple(_column_list(m.group("cols"))),
                           include, dist, bool(m.group("exists")), text)


def _parse_comment(text: str) -> CommentStmt:
    m = re.fullmatch(rf"\s*COMMENT\s+ON\s+(TABLE|MATERIALIZED\s+VIEW|VIEW|INDEX|COLUMN)\s+({_QUALIFIED})\s+IS\s+"
                     r"(NULL|[eE]?'(?:[^']|'')*')\s*", text, re.IGNORECASE | re.DOTALL)
    if not m:
        raise SyntaxError_("COMMENT ON supports TABLE, MATERIALIZED VIEW, VIEW and COLUMN: "
                           "COMMENT ON TABLE t IS 'text'")
    kind = " ".join(m.group(1).upper().split())
    value = m.group(3)
    comment = None if value.upper() == "NULL" else _unquote(value[1:] if value[0] in "eE" else value)
    return CommentStmt(kind, _name_parts(m.group(2)), comment)


_COPY = re.compile(rf"\s*COPY\s+(?P<table>{_QUALIFIED})\s*(?:\((?P<cols>[^()]*)\))?\s*FROM\s+STDIN\b\s*"
                   r"(?P<options>.*)", re.IGNORECASE | re.DOTALL)


def parse_copy(text: str) -> CopyStmt:
    """Parse ``COPY ... FROM STDIN`` with the options of Postgres 9+ (``WITH (FORMAT csv, ...)``) or
    the older keyword form (``WITH CSV HEADER DELIMITER ','``)."""
    m = _COPY.fullmatch(text)
    if not m:
        if re.search(r"\bTO\s+STDOUT\b", text, re.IGNORECASE):
            raise FeatureNotSupported("COPY ... TO STDOUT is not supported; use SELECT")
        raise SyntaxError_("COPY supports COPY table [(columns)] FROM STDIN [WITH (FORMAT text | csv, ...)]")
    cols = tuple(_ident(c.strip()) for c in m.group("cols").split(",")) if m.group("cols") else None
    opts: dict[str, str] = {}
    words = _words(m.group("options"))
    i = 0
    while i < len(words):
        w = words[i].upper()
        if w in ("WITH", "(", ")", ",", "AS"):
            i += 1
            continue
        nxt = words[i + 1] if i + 1 < len(words) else ""
        if nxt.upper() == "AS":
            i += 1
            nxt = words[i + 1] if i + 1 < len(words) else ""
        if w in ("BINARY", "CSV", "TEXT"):
            opts["format"] = w.lower()
        elif w == "HEADER":
            if nxt.upper() in ("TRUE", "FALSE", "ON", "OFF", "1", "0", "MATCH"):
                opts["header"] = nxt.lower()
                i += 1
            else:
                opts["header"] = "true"
        elif w in ("FORMAT", "DELIMITER", "NULL", "QUOTE", "ESCAPE", "ENCODING"):
            opts[w.lower()] = _unquote(nxt)
            i += 1
        elif w not in ("FREEZE", "OIDS"):
            raise SyntaxError_(f'option "{words[i]}" of COPY is not recognized')
        i += 1
    fmt = opts.get("format", "text").lower()
    if fmt not in ("text", "csv", "binary"):
        raise SyntaxError_(f'COPY format "{fmt}" not recognized')
    csv = fmt == "csv"
    quote = opts.get("quote", '"')
    return CopyStmt(_name_parts(m.group("table")), cols, fmt, opts.get("delimiter", "," if csv else "\t"),
                    opts.get("null", "" if csv else "\\N"), opts.get("header", "false") in ("true", "on", "1", "match"),
                    quote, opts.get("escape", quote))


def _ident(s: str) -> str:
    if s.startswith('"'):
        return s[1:-1].replace('""', '"')
    return s.lower()


def _parse_set(words: list[str]) -> SetStmt:
    local = bool(words) and words[0].upper() == "LOCAL"
    if words and words[0].upper() in ("SESSION", "LOCAL"):
        words = words[1:]
    if len(words) >= 2 and words[0].upper() == "TIME" and words[1].upper() == "ZONE":
        value = " ".join(_unquote(w) for w in words[2:])
        return SetStmt("timezone", None if value.upper() in ("DEFAULT", "LOCAL") else value, local)
    if not words:
        raise SyntaxError_("syntax error at end of input")
    name = _unquote(words[0]).lower()
    rest = words[1:]
    if rest and (rest[0] == "=" or rest[0].upper() == "TO"):
        rest = rest[1:]
    if not rest:
        raise SyntaxError_("syntax error at end of input")
    if len(rest) == 1 and rest[0].upper() == "DEFAULT":
        return SetStmt(name, None, local)
    return SetStmt(name, ", ".join(_unquote(w) for w in rest if w != ","), local)


def _syntax_error(e: ParseError, text: str) -> SyntaxError_:
    err = e.errors[0] if e.errors else {}
    desc = err.get("description") or str(e)
    near = err.get("highlight") or ""
    position = None
    line, col = err.get("line"), err.get("col")
    if line and col:
        lines = text.split("\n")
        position = sum(len(x) + 1 for x in lines[: line - 1]) + max(1, col - len(near) + 1)
    msg = f'syntax error at or near "{near}"' if near else "syntax error"
    return SyntaxError_(msg, detail=desc.split("\n")[0], position=position)
