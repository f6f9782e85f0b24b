"""CREATE FUNCTION and DROP FUNCTION.

The frontend resolves the schema and the function (along the search path), checks the session's
privileges (CREATE on the schema; dropping is its owner's or a superuser's, which meta checks) and
compiles a JavaScript body once, so a syntax error fails the CREATE (42601) rather than every row
later; meta records the change under its rules (`meta.functions`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from frontend.pgwire.api import StatementResult
from frontend.statements import CreateFunctionStmt, DropFunctionStmt, FunctionRef
from risingspark.errors import UndefinedFunction
from risingspark.functions import FunctionCatalog
from risingspark.js_udf import compiled

if TYPE_CHECKING:
    from frontend.session import Session


def create_function(session: Session, stmt: CreateFunctionStmt) -> StatementResult:
    reader = session.catalog_reader()
    schema_id = reader.schema_id(stmt.schema) if stmt.schema else reader.current_schema_id()
    session.privileges().check_create_in(schema_id)
    if stmt.if_not_exists and reader.snapshot.function(schema_id, stmt.name) is not None:
        return StatementResult("CREATE_FUNCTION", notices=[f'function "{stmt.name}" already exists, skipping'])
    compiled(stmt.name, stmt.arg_names, stmt.body, stmt.arg_types, stmt.return_type)
    fn = FunctionCatalog(0, reader.database.id, schema_id, stmt.name, stmt.arg_names, stmt.arg_types,
                         stmt.return_type, stmt.language, stmt.body, session.user_id)
    session.frontend.meta.functions.create_function(fn)
    return StatementResult("CREATE_FUNCTION")


def drop_function(session: Session, stmt: DropFunctionStmt) -> StatementResult:
    """Each named function must exist (with the argument types, when given), unless IF EXISTS."""
    reader = session.catalog_reader()
    notices: list[str] = []
    targets: list[FunctionCatalog] = []
    for ref in stmt.functions:
        fn = reader.function(ref.name, ref.schema)
        if fn is not None and ref.arg_types is not None and fn.arg_types != ref.arg_types:
            fn = None
        if fn is None:
            if stmt.if_exists:
                notices.append(f"function {ref.display}{'' if ref.arg_types is not None else '()'} does not exist, "
                               f"skipping")
                continue
            raise _undefined(ref)
        targets.append(fn)
    for fn in targets:
        session.frontend.meta.functions.drop_function(session.user_id, fn.id)
    return StatementResult("DROP_FUNCTION", notices=notices)


def _undefined(ref: FunctionRef) -> UndefinedFunction:
    """PostgreSQL's messages: with an argument list the signature, without one the name."""
    if ref.arg_types is None:
        return UndefinedFunction(f'could not find a function named "{ref.name}"')
    return UndefinedFunction(f"function {ref.display} does not exist")
