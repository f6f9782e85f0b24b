"""CREATE VIEW and CREATE TABLE AS: relations defined by a query.

A view is a stored query (as in RisingWave: no data and no streaming job). Its query is kept with
every relation it names qualified by schema (``extra["query"]``), so it means the same thing whatever
the search path of the session that reads it; batch queries run it in place of the view, and a
materialized view over a view binds it as a subquery. CREATE TABLE AS creates a table (with a
hidden row id) of the query's columns and inserts the query's rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import sqlglot
from sqlglot import exp

from frontend.batch_types import bound_sql_types
from frontend.binder import CatalogReader, ident
from frontend.parser import DIALECT
from frontend.pgwire.api import StatementResult
from risingspark.catalog import JobStatus, RelationCatalog, RelationKind
from risingspark.errors import DuplicateColumn, FeatureNotSupported, SyntaxError_
from risingspark.types import DataType, Field

if TYPE_CHECKING:
    from frontend.session import Session

QUERY = "query"  # key of a view's schema-qualified query in `RelationCatalog.extra`


def qualify_relations(query: exp.Expression, reader: CatalogReader) -> tuple[exp.Expression, tuple[int, ...]]:
    """The query with every relation it names qualified by its schema, and the ids of the user
    relations it reads (CTE names and table functions stay as they are)."""
    query = query.copy()
    ctes = {ident(c.args["alias"].this) for c in query.find_all(exp.CTE) if c.args.get("alias")}
    deps: list[int] = []
    for table in query.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            continue
        if not table.args.get("db") and ident(table.this) in ctes:
            continue
        ref = reader.resolve(table)
        table.set("catalog", None)
        table.set("db", exp.to_identifier(ref.schema, quoted=True))
        table.set("this", exp.to_identifier(ref.name, quoted=True))
        if ref.relation is not None:
            if ref.relation.kind is RelationKind.INDEX:
                raise FeatureNotSupported(f'cannot select from index "{ref.name}"')
            deps.append(ref.relation.id)
    return query, tuple(dict.fromkeys(deps))


def views_in(session: Session, query: exp.Expression) -> list[int]:
    """The ids of the views a query names (a job over a view depends on it, as in RisingWave)."""
    snap = session.frontend.meta.catalog_snapshot()
    _, deps = qualify_relations(query, session.catalog_reader())
    return [d for d in deps if snap.relations[d].kind is RelationKind.VIEW]


def rename_in_query(sql: str, schema: str, old: str, new: str) -> str:
    """A stored (schema-qualified) view query with relation ``schema.old`` renamed to ``new``."""
    query = sqlglot.parse_one(sql, read=DIALECT)
    for table in query.find_all(exp.Table):
        if ident(table.args.get("db")) == schema and ident(table.this) == old:
            table.set("this", exp.to_identifier(new, quoted=True))
    return query.sql(dialect="postgres")


def _query_fields(session: Session, query: exp.Expression, names: list[str] | None) -> list[Field]:
    from frontend.session import columns_of

    probe = exp.select("*").from_(exp.Subquery(this=query.copy(), alias=exp.TableAlias(
        this=exp.to_identifier("__q")))).limit(0)
    table = session.run_batch(probe)
    cols = columns_of(table)
    out_names = [c.name for c in cols]
    if names is not None:
        if len(names) > len(out_names):
            raise SyntaxError_("CREATE VIEW specifies more column names than columns")
        out_names = names + out_names[len(names):]
    types = [DataType.from_arrow(f.type) for f in table.schema]
    # the types a materialized view of the query would have (Postgres': sum(int) is bigint); beyond
    # what materialized views support, the batch engine's
    bound = bound_sql_types(session.catalog_reader(), query)
    if bound is not None and [f.name for f in bound] == [c.name for c in cols]:
        types = [f.type for f in bound]
    fields: list[Field] = []
    for name, t in zip(out_names, types, strict=True):
        if any(x.name == name for x in fields):
            raise DuplicateColumn(f'column "{name}" specified more than once')
        fields.append(Field(name, t))
    return fields


def create_view(session: Session, ast: exp.Create, text: str) -> StatementResult:
    """``CREATE VIEW [IF NOT EXISTS] name [(columns)] AS query``."""
    from frontend.handlers.ddl import exists_result, schema_id

    target = ast.this
    names = None
    if isinstance(target, exp.Schema):
        names = [ident(c) for c in target.expressions]
        target = target.this
    if ast.args.get("replace"):
        raise FeatureNotSupported("CREATE OR REPLACE VIEW is not supported yet")
    if (done := exists_result(session, target, bool(ast.args.get("exists")), "CREATE_VIEW")) is not None:
        return done
    query = ast.expression
    if not isinstance(query, exp.Query):
        raise SyntaxError_("CREATE VIEW needs AS <query>")
    reader = session.catalog_reader()
    target_schema = schema_id(session, target)
    # As PostgreSQL: CREATE on the schema; the relations the view reads are checked as its owner's when
    # it is read (`frontend.privileges`).
    session.privileges().check_create_in(target_schema)
    qualified, deps = qualify_relations(cast(exp.Expression, query), reader)
    fields = _query_fields(session, qualified, names)
    meta = session.frontend.meta
    rel = RelationCatalog(
        id=meta.allocate_ids(1), database_id=reader.database.id, schema_id=target_schema,
        name=ident(target.this), kind=RelationKind.VIEW, fields=tuple(fields), pk=(), dist_key=(),
        definition=text, status=JobStatus.CREATED, dependencies=deps,
        extra={QUERY: qualified.sql(dialect="postgres")}, owner=session.user_id)
    meta.create_relation(rel)
    return StatementResult("CREATE_VIEW")


def create_table_as(session: Session, ast: exp.Create, text: str) -> StatementResult:
    """``CREATE TABLE [IF NOT EXISTS] name [(columns)] AS query``: a table with a hidden row id, of
    the query's columns, holding its rows (visible once the insert's checkpoint commits, as any
    insert in RisingWave)."""
    from frontend.handlers import dml
    from frontend.handlers.ddl import exists_result, new_table, schema_id

    target = ast.this
    names = None
    if isinstance(target, exp.Schema):
        names = [ident(c) for c in target.expressions]
        target = target.this
    if (done := exists_result(session, target, bool(ast.args.get("exists")), "CREATE_TABLE")) is not None:
        return done
    query = ast.expression
    assert isinstance(query, exp.Query)
    privileges = session.privileges()
    privileges.check_create_in(schema_id(session, target))
    privileges.check_query(cast(exp.Expression, query), session.catalog_reader())
    fields = _query_fields(session, cast(exp.Expression, query), names)
    for f in fields:
        if f.type.element is not None:
            raise FeatureNotSupported(f'column "{f.name}": array columns in tables are not supported yet '
                                      f"(arrays come from array_agg)")
    new_table(session, target, fields, [], [], text)
    inserted = session.after_dml(dml.insert(session, exp.insert(query.copy(), target.copy())))
    return StatementResult(f"SELECT {inserted.tag.rsplit(' ', 1)[-1]}")
