"""Parsing of the user and privilege statements: CREATE/ALTER/DROP USER (and ROLE), GRANT, REVOKE and
ALTER ... OWNER TO, in PostgreSQL's grammar as RisingWave accepts it.

sqlglot knows only a sliver of these, so they are read here by a small recursive-descent parser
over the words of the statement (`frontend.parser` recognizes them by their leading words).

>>> parse_user_statement("CREATE USER ann WITH NOSUPERUSER CREATEDB PASSWORD 'pw'")
CreateUserStmt(name='ann', options=UserChange(is_super=False, can_create_db=True, can_create_user=None, \
can_login=True, set_password=True, password='pw', name=None))
>>> parse_user_statement('GRANT SELECT, INSERT ON TABLE s.t, "U" TO ann WITH GRANT OPTION').objects
GrantObjects(kind='TABLE', names=(('s', 't'), ('U',)), all_in_schema=False)
"""

from __future__ import annotations

import re
from dataclasses import replace

from frontend.statements import (
    AlterOwnerStmt,
    AlterUserStmt,
    CreateUserStmt,
    DropUserStmt,
    GrantObjects,
    GrantStmt,
    RevokeStmt,
)
from risingspark.errors import FeatureNotSupported, InvalidGrantOperation, SyntaxError_
from risingspark.users import Action, UserChange

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*|\"(?:[^\"]|\"\")*\"|'(?:[^']|'')*'|\d+|\S")

# ``[NO]OPTION`` attributes: the UserChange field each sets.
_ATTRIBUTES = {"SUPERUSER": "is_super", "CREATEDB": "can_create_db", "CREATEUSER": "can_create_user",
               "CREATEROLE": "can_create_user", "LOGIN": "can_login"}
_UNSUPPORTED_ATTRIBUTES = ("INHERIT", "NOINHERIT", "REPLICATION", "NOREPLICATION", "BYPASSRLS", "NOBYPASSRLS",
                           "CONNECTION", "VALID", "IN", "ROLE", "ADMIN", "USER", "SYSID")
_ACTIONS = {a.value: a for a in Action}
_OBJECT_KINDS = {"TABLE": "TABLE", "MATERIALIZED": "MATERIALIZED VIEW", "VIEW": "VIEW", "SCHEMA": "SCHEMA",
                 "DATABASE": "DATABASE"}
_OWNER_KINDS = ("TABLE", "MATERIALIZED VIEW", "VIEW", "SCHEMA", "DATABASE")


class _Words:
    """A cursor over a statement's words."""

    def __init__(self, text: str) -> None:
        self.words = _WORD.findall(text)
        self.i = 0

    def peek(self, ahead: int = 0) -> str:
        i = self.i + ahead
        return self.words[i].upper() if i < len(self.words) else ""

    def take(self) -> str:
        if self.i >= len(self.words):
            raise SyntaxError_("syntax error at end of input")
        self.i += 1
        return self.words[self.i - 1]

    def accept(self, *words: str) -> bool:
        """Consume `words` if they come next."""
        if all(self.peek(k) == w for k, w in enumerate(words)):
            self.i += len(words)
            return True
        return False

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            raise self.error()

    def error(self) -> SyntaxError_:
        if self.i >= len(self.words):
            return SyntaxError_("syntax error at end of input")
        return SyntaxError_(f'syntax error at or near "{self.words[self.i]}"')

    def done(self) -> None:
        if self.i < len(self.words):
            raise self.error()

    def ident(self) -> str:
        word = self.take()
        if word.startswith('"'):
            return word[1:-1].replace('""', '"')
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*", word):
            self.i -= 1
            raise self.error()
        return word.lower()

    def qualified(self) -> tuple[str, ...]:
        parts = [self.ident()]
        while self.accept("."):
            parts.append(self.ident())
        if len(parts) > 3:
            raise SyntaxError_(f"improper qualified name (too many dotted names): {'.'.join(parts)}")
        return tuple(parts)

    def names(self, item=None) -> tuple:
        """A comma-separated list of `item` (identifiers by default)."""
        read = item or self.ident
        out = [read()]
        while self.accept(","):
            out.append(read())
        return tuple(out)

    def string(self) -> str:
        word = self.take()
        if not (word.startswith("'") and word.endswith("'") and len(word) >= 2):
            self.i -= 1
            raise self.error()
        return word[1:-1].replace("''", "'")


def is_user_statement(head: list[str]) -> bool:
    """Whether a statement's first (upper-cased) words make it one of this module's."""
    first = head[0] if head else ""
    second = head[1] if len(head) > 1 else ""
    if first in ("GRANT", "REVOKE"):
        return True
    return first in ("CREATE", "ALTER", "DROP") and second in ("USER", "ROLE")


def parse_user_statement(text: str):
    """Parse one user or privilege statement (see `is_user_statement`)."""
    w = _Words(text)
    if w.accept("GRANT"):
        return _grant(w)
    if w.accept("REVOKE"):
        return _revoke(w)
    if w.accept("CREATE"):
        role = w.peek() == "ROLE"
        w.take()
        name = w.ident()
        options = _options(w, UserChange(can_login=not role))  # a role cannot log in unless LOGIN, as in PostgreSQL
        w.done()
        return CreateUserStmt(name, options)
    if w.accept("DROP"):
        w.take()  # USER or ROLE
        if_exists = w.accept("IF", "EXISTS")
        names = w.names()
        w.done()
        return DropUserStmt(names, if_exists)
    w.expect("ALTER")
    w.take()  # USER or ROLE
    name = w.ident()
    if w.accept("RENAME", "TO"):
        new = w.ident()
        w.done()
        return AlterUserStmt(name, UserChange(name=new))
    options = _options(w, UserChange())
    if options == UserChange():
        raise w.error()
    w.done()
    return AlterUserStmt(name, options)


def _options(w: _Words, options: UserChange) -> UserChange:
    """``[WITH] option ...`` of CREATE/ALTER USER; each at most once."""
    w.accept("WITH")
    seen: set[str] = set()
    while w.peek():
        word = w.peek()
        negated = word.startswith("NO") and word[2:] in _ATTRIBUTES
        key = word[2:] if negated else word
        if key in _ATTRIBUTES:
            w.take()
            field = _ATTRIBUTES[key]
            _once(seen, field)
            options = _with_attribute(options, field, not negated)
        elif word in ("PASSWORD", "ENCRYPTED"):
            w.accept("ENCRYPTED")
            w.expect("PASSWORD")
            _once(seen, "password")
            password = None if w.accept("NULL") else w.string()
            options = replace(options, set_password=True, password=password)
        elif word in _UNSUPPORTED_ATTRIBUTES:
            raise FeatureNotSupported(f"user option {word} is not supported")
        else:
            raise w.error()
    return options


def _with_attribute(options: UserChange, field: str, value: bool) -> UserChange:
    if field == "is_super":
        return replace(options, is_super=value)
    if field == "can_create_db":
        return replace(options, can_create_db=value)
    if field == "can_create_user":
        return replace(options, can_create_user=value)
    return replace(options, can_login=value)


def _once(seen: set[str], field: str) -> None:
    if field in seen:
        raise SyntaxError_("conflicting or redundant options")
    seen.add(field)


def _privileges(w: _Words) -> tuple[Action, ...] | None:
    """``ALL [PRIVILEGES]`` (None) or a list of actions."""
    if w.accept("ALL"):
        w.accept("PRIVILEGES")
        return None
    out = []
    while True:
        word = w.take().upper()
        if word == "TEMPORARY" or word == "TEMP":
            raise FeatureNotSupported("privilege TEMPORARY is not supported: there are no temporary tables")
        if word in ("TRUNCATE", "REFERENCES", "TRIGGER", "EXECUTE", "MAINTAIN"):
            raise FeatureNotSupported(f"privilege {word} is not supported")
        if word not in _ACTIONS:
            w.i -= 1
            raise w.error()
        if w.peek() == "(":
            raise FeatureNotSupported("column privileges are not supported")
        out.append(_ACTIONS[word])
        if not w.accept(","):
            return tuple(dict.fromkeys(out))


def _objects(w: _Words) -> GrantObjects:
    w.expect("ON")
    if w.accept("ALL"):
        if w.accept("TABLES"):
            kind = "TABLE"
        elif w.accept("MATERIALIZED", "VIEWS"):
            kind = "MATERIALIZED VIEW"
        elif w.accept("VIEWS"):
            kind = "VIEW"
        else:
            word = w.peek()
            if word in ("SEQUENCES", "FUNCTIONS", "PROCEDURES", "ROUTINES", "SOURCES", "SINKS"):
                raise FeatureNotSupported(f"GRANT ON ALL {word} is not supported")
            raise w.error()
        w.expect("IN", "SCHEMA")
        return GrantObjects(kind, tuple((s,) for s in w.names()), all_in_schema=True)
    word = w.peek()
    if word in _OBJECT_KINDS:
        w.take()
        if word == "MATERIALIZED":
            w.expect("VIEW")
        kind = _OBJECT_KINDS[word]
    elif word in ("SEQUENCE", "FUNCTION", "PROCEDURE", "ROUTINE", "FOREIGN", "LANGUAGE", "LARGE", "TABLESPACE",
                  "TYPE", "DOMAIN", "SOURCE", "SINK", "CONNECTION", "SECRET", "SUBSCRIPTION"):
        raise FeatureNotSupported(f"GRANT ON {word} is not supported")
    else:
        kind = "TABLE"  # PostgreSQL's default object type
    if kind in ("SCHEMA", "DATABASE"):
        return GrantObjects(kind, tuple((n,) for n in w.names()))
    return GrantObjects(kind, w.names(w.qualified))


def _grantees(w: _Words) -> tuple[str, ...]:
    def grantee() -> str:
        if w.peek() == "PUBLIC":
            raise FeatureNotSupported("privileges cannot be granted to PUBLIC: grant them to each user")
        w.accept("GROUP")
        return w.ident()

    return w.names(grantee)


def _check_actions(actions: tuple[Action, ...] | None, objects: GrantObjects) -> None:
    """PostgreSQL's 0LP01 for a privilege the object does not have (``invalid privilege type USAGE
    for table``); a materialized view or view has SELECT only, as in RisingWave."""
    if actions is None:
        return
    allowed = {"TABLE": {Action.SELECT, Action.INSERT, Action.UPDATE, Action.DELETE},
               "MATERIALIZED VIEW": {Action.SELECT}, "VIEW": {Action.SELECT},
               "SCHEMA": {Action.USAGE, Action.CREATE}, "DATABASE": {Action.CREATE, Action.CONNECT}}[objects.kind]
    for a in actions:
        if a not in allowed:
            kind = objects.kind.lower()
            raise InvalidGrantOperation(f"invalid privilege type {a.value} for {kind}")


def _grant(w: _Words) -> GrantStmt:
    actions = _privileges(w)
    objects = _objects(w)
    _check_actions(actions, objects)
    w.expect("TO")
    grantees = _grantees(w)
    with_grant_option = w.accept("WITH", "GRANT", "OPTION")
    granted_by = w.ident() if w.accept("GRANTED", "BY") else None
    w.done()
    return GrantStmt(actions, objects, grantees, with_grant_option, granted_by)


def _revoke(w: _Words) -> RevokeStmt:
    grant_option_only = w.accept("GRANT", "OPTION", "FOR")
    actions = _privileges(w)
    objects = _objects(w)
    _check_actions(actions, objects)
    w.expect("FROM")
    grantees = _grantees(w)
    granted_by = w.ident() if w.accept("GRANTED", "BY") else None
    cascade = w.accept("CASCADE")
    if not cascade:
        w.accept("RESTRICT")
    w.done()
    return RevokeStmt(actions, objects, grantees, grant_option_only, cascade, granted_by)


_ALTER_OWNER = re.compile(r"\s*ALTER\s+(?P<kind>TABLE|MATERIALIZED\s+VIEW|VIEW|SCHEMA|DATABASE)\s+(?P<rest>.*)"
                          r"\bOWNER\s+TO\s+(?P<owner>\S+)\s*", re.IGNORECASE | re.DOTALL)


def match_alter_owner(text: str) -> AlterOwnerStmt | None:
    """``ALTER {TABLE | MATERIALIZED VIEW | VIEW | SCHEMA | DATABASE} name OWNER TO user``, or None
    for any other ALTER."""
    m = _ALTER_OWNER.fullmatch(text)
    if m is None:
        return None
    kind = " ".join(m.group("kind").upper().split())
    w = _Words(m.group("rest"))
    name = w.qualified() if kind not in ("SCHEMA", "DATABASE") else (w.ident(),)
    w.done()
    owner = _Words(m.group("owner"))
    if owner.peek() in ("CURRENT_USER", "SESSION_USER", "CURRENT_ROLE"):
        raise FeatureNotSupported(f"OWNER TO {owner.peek()} is not supported: name the user")
    new_owner = owner.ident()
    owner.done()
    return AlterOwnerStmt(kind, name, new_owner)
