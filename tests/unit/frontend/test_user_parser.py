"""Parsing of CREATE/ALTER/DROP USER, GRANT, REVOKE and ALTER ... OWNER TO (`frontend.user_parser`),
through the statement parser every statement goes through."""

from __future__ import annotations

import pytest

from frontend.parser import RenameStmt, parse_statement
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

SEL, INS, UPD, DEL = Action.SELECT, Action.INSERT, Action.UPDATE, Action.DELETE


@pytest.mark.parametrize("text, expected", [
    ("CREATE USER ann", CreateUserStmt("ann", UserChange(can_login=True))),
    ("create user \"Ann\" with superuser nocreatedb createuser password 'p''w'",
     CreateUserStmt("Ann", UserChange(is_super=True, can_create_db=False, can_create_user=True, can_login=True,
                                      set_password=True, password="p'w"))),
    ("CREATE USER ann NOLOGIN PASSWORD NULL", CreateUserStmt("ann", UserChange(can_login=False, set_password=True))),
    ("CREATE USER ann ENCRYPTED PASSWORD 'md5827ccb0eea8a706c4c34a16891f84e7b'",
     CreateUserStmt("ann", UserChange(can_login=True, set_password=True,
                                      password="md5827ccb0eea8a706c4c34a16891f84e7b"))),
    # as PostgreSQL, a role cannot log in unless it says LOGIN; CREATEROLE is CREATEUSER
    ("CREATE ROLE r", CreateUserStmt("r", UserChange(can_login=False))),
    ("CREATE ROLE r WITH LOGIN CREATEROLE", CreateUserStmt("r", UserChange(can_login=True, can_create_user=True))),
    ("ALTER USER ann WITH NOSUPERUSER LOGIN", AlterUserStmt("ann", UserChange(is_super=False, can_login=True))),
    ("ALTER ROLE ann PASSWORD 'x'", AlterUserStmt("ann", UserChange(set_password=True, password="x"))),
    ("ALTER USER ann RENAME TO \"Bob\"", AlterUserStmt("ann", UserChange(name="Bob"))),
    ("DROP USER ann", DropUserStmt(("ann",))),
    ("DROP ROLE IF EXISTS ann, bob", DropUserStmt(("ann", "bob"), True)),
    ("GRANT SELECT ON t TO ann", GrantStmt((SEL,), GrantObjects("TABLE", (("t",),)), ("ann",))),
    ("GRANT INSERT, update, DELETE ON TABLE public.t, \"T2\" TO ann, bob WITH GRANT OPTION",
     GrantStmt((INS, UPD, DEL), GrantObjects("TABLE", (("public", "t"), ("T2",))), ("ann", "bob"), True)),
    ("GRANT ALL PRIVILEGES ON MATERIALIZED VIEW m TO ann",
     GrantStmt(None, GrantObjects("MATERIALIZED VIEW", (("m",),)), ("ann",))),
    ("GRANT SELECT ON ALL TABLES IN SCHEMA public, s TO ann",
     GrantStmt((SEL,), GrantObjects("TABLE", (("public",), ("s",)), True), ("ann",))),
    ("GRANT ALL ON ALL MATERIALIZED VIEWS IN SCHEMA s TO ann",
     GrantStmt(None, GrantObjects("MATERIALIZED VIEW", (("s",),), True), ("ann",))),
    ("GRANT USAGE, CREATE ON SCHEMA s TO ann", GrantStmt((Action.USAGE, Action.CREATE), GrantObjects("SCHEMA", (("s",),)),
                                                         ("ann",))),
    ("GRANT CONNECT, CREATE ON DATABASE dev TO ann GRANTED BY root",
     GrantStmt((Action.CONNECT, Action.CREATE), GrantObjects("DATABASE", (("dev",),)), ("ann",), False, "root")),
    ("REVOKE SELECT ON t FROM ann", RevokeStmt((SEL,), GrantObjects("TABLE", (("t",),)), ("ann",))),
    ("REVOKE GRANT OPTION FOR ALL ON TABLE t FROM ann CASCADE",
     RevokeStmt(None, GrantObjects("TABLE", (("t",),)), ("ann",), True, True)),
    ("REVOKE CREATE ON SCHEMA s FROM ann RESTRICT", RevokeStmt((Action.CREATE,), GrantObjects("SCHEMA", (("s",),)),
                                                               ("ann",))),
    ("ALTER TABLE s.t OWNER TO ann", AlterOwnerStmt("TABLE", ("s", "t"), "ann")),
    ("ALTER MATERIALIZED VIEW m OWNER TO \"Ann\"", AlterOwnerStmt("MATERIALIZED VIEW", ("m",), "Ann")),
    ("ALTER SCHEMA s OWNER TO ann", AlterOwnerStmt("SCHEMA", ("s",), "ann")),
    ("ALTER TABLE t RENAME TO u", RenameStmt("TABLE", ("t",), "u")),  # not an owner change
])
def test_parses(text: str, expected: object) -> None:
    assert parse_statement(text) == expected


@pytest.mark.parametrize("text, error, message", [
    ("CREATE USER ann SUPERUSER NOSUPERUSER", SyntaxError_, "conflicting or redundant options"),
    ("CREATE USER ann PASSWORD 'a' PASSWORD 'b'", SyntaxError_, "conflicting or redundant options"),
    ("CREATE USER ann WITH BOGUS", SyntaxError_, 'syntax error at or near "BOGUS"'),
    ("CREATE USER", SyntaxError_, "syntax error at end of input"),
    ("ALTER USER ann", SyntaxError_, "syntax error at end of input"),
    ("CREATE USER ann VALID UNTIL 'infinity'", FeatureNotSupported, "user option VALID is not supported"),
    ("GRANT SELECT ON t", SyntaxError_, "syntax error at end of input"),
    ("GRANT SELECT ON t TO PUBLIC", FeatureNotSupported, "privileges cannot be granted to PUBLIC"),
    ("GRANT SELECT (a) ON t TO ann", FeatureNotSupported, "column privileges are not supported"),
    ("GRANT TRUNCATE ON t TO ann", FeatureNotSupported, "privilege TRUNCATE is not supported"),
    ("GRANT USAGE ON TABLE t TO ann", InvalidGrantOperation, "invalid privilege type USAGE for table"),
    ("GRANT INSERT ON MATERIALIZED VIEW m TO ann", InvalidGrantOperation,
     "invalid privilege type INSERT for materialized view"),
    ("GRANT SELECT ON SCHEMA s TO ann", InvalidGrantOperation, "invalid privilege type SELECT for schema"),
    ("GRANT SELECT ON SEQUENCE q TO ann", FeatureNotSupported, "GRANT ON SEQUENCE is not supported"),
    ("REVOKE SELECT ON t TO ann", SyntaxError_, 'syntax error at or near "TO"'),
])
def test_errors(text: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        parse_statement(text)
    assert message in str(info.value)
