"""Parsing of CREATE FUNCTION and DROP FUNCTION, in RisingWave's grammar for embedded functions:

    CREATE FUNCTION [IF NOT EXISTS] [schema.]name ( [argname] argtype [, ...] )
        RETURNS type LANGUAGE javascript AS { $$body$$ | 'body' }
    DROP FUNCTION [IF EXISTS] [schema.]name [ ( [argname] argtype [, ...] ) ] [, ...] [RESTRICT]

sqlglot reads a function body as an opaque command, so these are read here over the statement's
tokens (`frontend.parser` recognizes them by their leading words). Only JavaScript is run: another
language (python, rust, wasm, java, sql) fails with 0A000 naming it, as do ``OR REPLACE``,
``RETURNS TABLE`` / ``SETOF``, ``RETURNS NULL ON NULL INPUT`` / ``STRICT`` (a JavaScript function is
called on NULL input, as RisingWave's), ``USING LINK`` and ``DROP ... CASCADE``. Types other than
JavaScript's (`risingspark.js_udf.check_types`) fail with 0A000 naming the type.

>>> s = parse_function_statement("CREATE FUNCTION f(s varchar, int) RETURNS int LANGUAGE javascript AS $$ return 1; $$")
>>> s.name, s.arg_names, [t.display() for t in s.arg_types], s.body
('f', ('s', '$2'), ['character varying', 'integer'], ' return 1; ')
>>> parse_function_statement("DROP FUNCTION IF EXISTS f(varchar, int)").functions[0].display
'f(character varying, integer)'
"""

from __future__ import annotations

import re

from frontend.statements import CreateFunctionStmt, DropFunctionStmt, FunctionRef, FunctionStatement
from risingspark.errors import FeatureNotSupported, InvalidParameterValue, SyntaxError_, UndefinedObject
from risingspark.js_udf import check_types
from risingspark.types import DataType

_TOKEN = re.compile(
    r"""\$(?P<tag>[A-Za-z_]*)\$(?P<dollar>.*?)\$(?P=tag)\$    # $$...$$ or $tag$...$tag$
      | '(?P<string>(?:[^']|'')*)'                           # '...'
      | "(?P<quoted>(?:[^"]|"")*)"                          # "identifier"
      | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
      | (?P<number>\d+)
      | (?P<punct>[(),.\[\]])
      | (?P<other>\S)""",
    re.VERBOSE | re.DOTALL,
)
LANGUAGES = ("javascript",)
_OTHER_LANGUAGES = ("python", "rust", "wasm", "java", "sql", "plpgsql", "c", "internal")
_CLAUSES = ("LANGUAGE", "AS", "RETURNS", "IMMUTABLE", "STABLE", "VOLATILE", "STRICT", "CALLED", "USING", "WITH",
            "RETURN", "RUNTIME", "ALWAYS", "SECURITY", "PARALLEL", "COST", "ROWS", "LEAKPROOF", "NOT")


class _Token:
    __slots__ = ("kind", "text", "value")

    def __init__(self, kind: str, text: str, value: str) -> None:
        self.kind = kind  # word, quoted, string, dollar, number, punct, other
        self.text = text  # as written
        self.value = value  # a word upper-cased; a string's or identifier's content

    @property
    def ident(self) -> str:
        """An identifier as PostgreSQL reads it (unquoted names fold to lower case)."""
        return self.value if self.kind == "quoted" else self.text.lower()


class _Tokens:
    def __init__(self, text: str) -> None:
        self.tokens: list[_Token] = []
        for m in _TOKEN.finditer(text):
            kind = m.lastgroup or "other"
            if kind == "tag":
                kind = "dollar"
            if kind == "dollar":
                value = m.group("dollar")
            elif kind == "string":
                value = m.group("string").replace("''", "'")
            elif kind == "quoted":
                value = m.group("quoted").replace('""', '"')
            else:
                value = m.group(0).upper()
            self.tokens.append(_Token(kind, m.group(0), value))
        self.i = 0

    def peek(self, ahead: int = 0) -> str:
        i = self.i + ahead
        t = self.tokens[i] if i < len(self.tokens) else None
        return t.value if t is not None and t.kind in ("word", "punct", "other") else ""

    def at_end(self) -> bool:
        return self.i >= len(self.tokens)

    def take(self) -> _Token:
        if self.at_end():
            raise SyntaxError_("syntax error at end of input")
        self.i += 1
        return self.tokens[self.i - 1]

    def accept(self, *words: str) -> bool:
        if all(self.peek(k) == w for k, w in enumerate(words)):
            self.i += len(words)
            return True
        return False

    def expect(self, word: str) -> None:
        if not self.accept(word):
            near = self.tokens[self.i].text if not self.at_end() else None
            raise SyntaxError_(f'syntax error at or near "{near}"' if near else "syntax error at end of input")

    def name(self) -> tuple[str, str | None]:
        """``[schema.]name``."""
        first = self._ident()
        if self.accept("."):
            return self._ident(), first
        return first, None

    def _ident(self) -> str:
        t = self.take()
        if t.kind not in ("word", "quoted"):
            raise SyntaxError_(f'syntax error at or near "{t.text}"')
        return t.ident

    def text_until(self, stop) -> str:
        """The text of the tokens up to one `stop` accepts at parenthesis depth 0."""
        parts, depth = [], 0
        while not self.at_end():
            t = self.tokens[self.i]
            if depth == 0 and stop(t):
                break
            depth += {"(": 1, ")": -1}.get(t.text, 0)
            parts.append(t.text)
            self.i += 1
        return " ".join(parts)


def is_function_statement(head: list[str]) -> bool:
    """Whether a statement's first words (upper-cased) start CREATE or DROP FUNCTION."""
    return (len(head) > 1 and head[0] in ("CREATE", "DROP") and head[1] == "FUNCTION") or \
        (len(head) > 3 and head[:4] == ["CREATE", "OR", "REPLACE", "FUNCTION"])


def parse_function_statement(text: str) -> FunctionStatement:
    toks = _Tokens(text)
    if toks.accept("DROP", "FUNCTION"):
        return _drop(toks)
    toks.expect("CREATE")
    if toks.accept("OR", "REPLACE"):
        raise FeatureNotSupported("CREATE OR REPLACE FUNCTION is not supported yet; DROP FUNCTION first")
    toks.expect("FUNCTION")
    return _create(toks)


def parse_type(text: str) -> DataType:
    """A type name; 42704 (PostgreSQL's) for one that does not exist."""
    try:
        return DataType.parse(text.replace("[ ]", "[]"))
    except InvalidParameterValue:
        raise UndefinedObject(f'type "{text}" does not exist') from None


def _args(toks: _Tokens) -> tuple[tuple[str, ...], tuple[DataType, ...]]:
    """``( [IN] [name] type [, ...] )``; unnamed arguments are ``$1``, ``$2``..."""
    toks.expect("(")
    names: list[str] = []
    types: list[DataType] = []
    while not toks.accept(")"):
        if types:
            toks.expect(",")
        if toks.peek() in ("OUT", "INOUT", "VARIADIC"):
            raise FeatureNotSupported(f"{toks.peek()} arguments are not supported")
        toks.accept("IN")
        start = toks.i
        text = toks.text_until(lambda t: t.text in (",", ")"))
        if not text:
            raise SyntaxError_("syntax error in the argument list")
        if re.search(r"\bDEFAULT\b|=", text, re.IGNORECASE):
            raise FeatureNotSupported("argument defaults are not supported")
        first = toks.tokens[start]
        try:
            t, name = parse_type(text), ""
        except (UndefinedObject, FeatureNotSupported):
            if first.kind not in ("word", "quoted") or toks.i == start + 1:
                raise
            name = first.ident
            t = parse_type(" ".join(tok.text for tok in toks.tokens[start + 1:toks.i]))
        names.append(name or f"${len(types) + 1}")
        types.append(t)
    return tuple(names), tuple(types)


def _create(toks: _Tokens) -> CreateFunctionStmt:
    if_not_exists = toks.accept("IF", "NOT", "EXISTS")
    name, schema = toks.name()
    arg_names, arg_types = _args(toks)
    if not arg_types:
        raise FeatureNotSupported("functions without arguments are not supported yet")
    return_type: DataType | None = None
    language: str | None = None
    body: str | None = None
    while not toks.at_end():
        if toks.accept("RETURNS"):
            if toks.peek() in ("TABLE", "SETOF"):
                raise FeatureNotSupported("table functions (RETURNS TABLE, RETURNS SETOF) are not supported yet")
            if toks.accept("NULL", "ON", "NULL", "INPUT"):
                raise FeatureNotSupported("RETURNS NULL ON NULL INPUT is not supported: a JavaScript function is "
                                          "called on NULL input, as RisingWave's")
            return_type = parse_type(toks.text_until(lambda t: t.kind == "word" and t.value in _CLAUSES))
        elif toks.accept("LANGUAGE"):
            t = toks.take()
            language = t.value.lower() if t.kind in ("string", "quoted") else t.text.lower()
            _check_language(language)
        elif toks.accept("AS"):
            t = toks.take()
            if t.kind not in ("string", "dollar"):
                raise SyntaxError_(f'syntax error at or near "{t.text}": AS expects the function body as a string')
            if toks.accept(","):
                raise FeatureNotSupported("AS 'file', 'symbol' is not supported")
            body = t.value
        elif toks.accept("CALLED", "ON", "NULL", "INPUT") or toks.accept("IMMUTABLE") or toks.accept("STABLE") \
                or toks.accept("VOLATILE"):
            continue
        elif toks.peek() in ("STRICT", "USING", "RETURN", "WITH", "RUNTIME", "ALWAYS"):
            raise FeatureNotSupported(f"{toks.peek()} in CREATE FUNCTION is not supported yet")
        else:
            t = toks.take()
            raise SyntaxError_(f'syntax error at or near "{t.text}"')
    if language is None:
        raise SyntaxError_("no language specified")
    if return_type is None:
        raise SyntaxError_("function result type must be specified")
    if body is None:
        raise SyntaxError_("AS must be specified")
    check_types(arg_types, return_type)
    return CreateFunctionStmt(name, schema, arg_names, arg_types, return_type, language, body, if_not_exists)


def _check_language(language: str) -> None:
    if language not in LANGUAGES:
        known = "" if language in _OTHER_LANGUAGES else " (unknown)"
        raise FeatureNotSupported(f"language {language}{known} is not supported: functions can be written in "
                                  f"javascript")


def _drop(toks: _Tokens) -> DropFunctionStmt:
    if_exists = toks.accept("IF", "EXISTS")
    refs: list[FunctionRef] = []
    while True:
        name, schema = toks.name()
        types = _args(toks)[1] if toks.peek() == "(" else None
        refs.append(FunctionRef(name, schema, types))
        if not toks.accept(","):
            break
    if toks.accept("CASCADE"):
        raise FeatureNotSupported("DROP FUNCTION ... CASCADE is not supported yet: drop the dependent objects first")
    toks.accept("RESTRICT")
    if not toks.at_end():
        raise SyntaxError_(f'syntax error at or near "{toks.take().text}"')
    return DropFunctionStmt(tuple(refs), if_exists)
