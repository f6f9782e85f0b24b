"""CREATE TABLE, CREATE MATERIALIZED VIEW, DROP and EXPLAIN CREATE MATERIALIZED VIEW."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import TYPE_CHECKING

from sqlglot import exp

from frontend.backfill_order import OPTION as BACKFILL_ORDER_OPTION
from frontend.backfill_order import explain_lines as explain_order
from frontend.backfill_order import plan_backfill_order
from frontend.binder import QueryBinder, ident, reads_changelog
from frontend.handlers import views
from frontend.pgwire.api import ColumnDesc, StatementResult
from frontend.planner.stream import plan_mv, state_tables_needed
from frontend.rw_clauses import TableClauses
from risingspark.backfill_order import BACKFILL_ORDER
from risingspark.catalog import (
    DEFAULT_RESOURCE_GROUP,
    SERVERLESS_BACKFILL,
    VIEW_DEPENDENCIES,
    BackfillType,
    CreateType,
    JobStatus,
    RelationCatalog,
    RelationKind,
)
from risingspark.chunk import ROW_ID
from risingspark.errors import (
    DependentObjectsStillExist,
    DuplicateColumn,
    DuplicateTable,
    FeatureNotSupported,
    InvalidParameterValue,
    QueryCanceled,
    UndefinedColumn,
    UndefinedTable,
    WrongObjectType,
)
from risingspark.storage.desc import StateTableDesc
from risingspark.stream_plan import StreamDml, StreamExchange, StreamMaterialize, explain, node_to_json, scans
from risingspark.table_kind import APPEND_ONLY, ON_CONFLICT, ConflictBehavior, conflict_behavior
from risingspark.types import INT8, VARCHAR, DataType, Field, TypeName

if TYPE_CHECKING:
    from frontend.session import Session


def _is_materialized(ast: exp.Create) -> bool:
    props = ast.args.get("properties")
    return bool(props and any(isinstance(p, exp.MaterializedProperty) for p in props.expressions))


def create(session: Session, ast: exp.Create, text: str, clauses: TableClauses | None = None) -> StatementResult:
    kind = (ast.args.get("kind") or "").upper()
    if kind == "TABLE" and ast.expression is not None:
        if clauses is not None:
            raise FeatureNotSupported("APPEND ONLY and ON CONFLICT are not supported in CREATE TABLE AS yet")
        return views.create_table_as(session, ast, text)
    if kind == "TABLE":
        return create_table(session, ast, text, clauses or TableClauses())
    if kind == "VIEW" and _is_materialized(ast):
        return create_mv(session, ast, text)
    if kind == "VIEW":
        return views.create_view(session, ast, text)
    raise FeatureNotSupported(f"CREATE {kind} is not supported yet")


def exists_result(session: Session, table: exp.Table, if_not_exists: bool, tag: str) -> StatementResult | None:
    """None when no relation of the name exists in the target schema; else the result of ``IF NOT
    EXISTS`` (a notice), or 42P07."""
    rel = session.frontend.meta.catalog_snapshot().relation(schema_id(session, table), ident(table.this))
    if rel is not None:
        if if_not_exists:
            return StatementResult(tag, notices=[f'relation "{rel.name}" already exists, skipping'])
        raise DuplicateTable(f'relation "{rel.name}" already exists')
    return None


def schema_id(session: Session, table: exp.Table) -> int:
    reader = session.catalog_reader()
    catalog = ident(table.args.get("catalog")) or None
    if catalog and catalog != reader.database.name:
        raise FeatureNotSupported(f"cross-database references are not implemented: {table.sql(dialect='postgres')}")
    schema = ident(table.args.get("db")) or None
    return reader.schema_id(schema) if schema else reader.current_schema_id()


def create_table(session: Session, ast: exp.Create, text: str, clauses: TableClauses) -> StatementResult:
    schema_ast = ast.this
    if not isinstance(schema_ast, exp.Schema):
        raise FeatureNotSupported("CREATE TABLE AS is not supported yet")
    table = schema_ast.this
    if (done := exists_result(session, table, bool(ast.args.get("exists")), "CREATE_TABLE")) is not None:
        return done
    if ast.args.get("properties") and any(not isinstance(p, exp.TemporaryProperty)
                                          for p in ast.args["properties"].expressions):
        raise FeatureNotSupported("table options (WITH ...) are not supported yet")
    fields: list[Field] = []
    pk_names: list[str] = []
    not_null: list[str] = []
    for item in schema_ast.expressions:
        if isinstance(item, exp.ColumnDef):
            name = ident(item.this)
            if any(f.name == name for f in fields):
                raise DuplicateColumn(f'column "{name}" specified more than once')
            if item.args.get("kind") is None:
                raise FeatureNotSupported(f'column "{name}" needs a type')
            dtype = DataType.parse(item.args["kind"].sql(dialect="postgres"))
            _check_column_type(name, dtype)
            for c in item.args.get("constraints") or []:
                k = c.args.get("kind")
                if isinstance(k, exp.PrimaryKeyColumnConstraint):
                    pk_names.append(name)
                elif isinstance(k, exp.NotNullColumnConstraint):
                    if not k.args.get("allow_null"):
                        not_null.append(name)
                else:
                    raise FeatureNotSupported(f"column constraint {c.sql(dialect='postgres')} is not supported yet")
            fields.append(Field(name, dtype))
        elif isinstance(item, exp.PrimaryKey):
            if pk_names:
                raise FeatureNotSupported("multiple primary keys for a table are not allowed")
            pk_names = [ident(e.this if isinstance(e, exp.Ordered) else e) for e in item.expressions]
        else:
            raise FeatureNotSupported(f"table element {item.sql(dialect='postgres')} is not supported yet")
    if not fields:
        raise FeatureNotSupported("a table needs at least one column")
    names = [f.name for f in fields]
    for n in pk_names:
        if n not in names:
            raise UndefinedColumn(f'column "{n}" named in key does not exist')
        kind = fields[names.index(n)].type.name
        if kind in (TypeName.STRUCT, TypeName.JSONB):
            # keys are stored memcomparable and compared as PostgreSQL compares them; neither has
            # an encoding here (jsonb's equality is not its text's: 1.0 = 1)
            raise FeatureNotSupported(f'column "{n}" of type {kind.value} in a primary key is not supported')
    if clauses.version_column is not None:
        raise FeatureNotSupported("ON CONFLICT ... WITH VERSION COLUMN is not supported yet")
    conflict = conflict_behavior(append_only=clauses.append_only, has_pk=bool(pk_names),
                                 on_conflict=clauses.on_conflict)
    new_table(session, table, fields, pk_names, not_null, text, conflict, clauses.append_only)
    return StatementResult("CREATE_TABLE")


def _check_column_type(name: str, dtype: DataType) -> None:
    """Types a table column may have: a struct's fields too (nested structs, jsonb)."""
    if dtype.element is not None:
        raise FeatureNotSupported(f'column "{name}": array columns in tables are not supported yet '
                                  f"(arrays come from array_agg)")
    if dtype.name is TypeName.INTERVAL:
        raise FeatureNotSupported(f'column "{name}": interval columns in tables are not supported yet '
                                  f"(a materialized view can compute and store intervals)")
    for _, t in dtype.fields:
        _check_column_type(name, t)


def new_table(session: Session, table: exp.Table, fields: list[Field], pk_names: list[str], not_null: list[str],
              text: str, conflict: ConflictBehavior = ConflictBehavior.OVERWRITE,
              append_only: bool = False) -> RelationCatalog:
    """Create a table of these columns (with a hidden row id when it has no primary key), of the
    kind `risingspark.table_kind` describes."""
    fields = list(fields)
    names = [f.name for f in fields]
    row_id_index = None
    if pk_names:
        pk = tuple(names.index(n) for n in pk_names)
    else:
        fields.append(Field(ROW_ID, INT8, hidden=True))
        row_id_index = len(fields) - 1
        pk = (row_id_index,)
    target_schema = schema_id(session, table)
    session.privileges().check_create_in(target_schema)
    rel_id = session.frontend.meta.allocate_ids(1)
    ftuple = tuple(fields)
    desc = StateTableDesc(rel_id, ftuple, pk, pk)
    dml = StreamDml(fields=ftuple, stream_key=pk, table_id=rel_id)
    plan = StreamMaterialize(fields=ftuple, stream_key=pk, input=StreamExchange(
        fields=ftuple, stream_key=pk, input=dml, dist_key=pk), table=desc, conflict=conflict, append_only=append_only)
    rel = RelationCatalog(
        id=rel_id, database_id=session.catalog_reader().database.id, schema_id=target_schema,
        name=ident(table.this), kind=RelationKind.TABLE, fields=ftuple, pk=pk, dist_key=pk, definition=text,
        status=JobStatus.CREATED, plan=node_to_json(plan), state_tables=(desc,), row_id_index=row_id_index,
        parallelism=session.vars.job_parallelism("table"),
        extra={"not_null": not_null, ON_CONFLICT: conflict.value, **({APPEND_ONLY: True} if append_only else {})},
        owner=session.user_id)
    return session.frontend.meta.create_relation(rel)


def choose_backfill(session: Session, bound, serverless: bool = False) -> BackfillType:
    """As RisingWave: snapshot backfill when enabled, else arrangement backfill when enabled, else
    no-shuffle backfill (its actors follow the upstream's vnode ranges with one position each). A
    job reading a change log (``CHANGELOG FROM``) never uses snapshot backfill, whose catch-up folds
    epochs into net changes. A
    serverless backfill is always a snapshot backfill: the backfiller reads the upstream's snapshot
    and change log from the object store and never runs the upstream's rounds."""
    if reads_changelog(bound):
        # A change log holds every change of every epoch: snapshot backfill's catch-up folds several
        # upstream epochs into their net change, so the job backfills epoch by epoch.
        if serverless:
            raise FeatureNotSupported("serverless backfill of a materialized view over CHANGELOG FROM is not "
                                      "supported: it needs a snapshot backfill",
                                      hint="SET enable_serverless_backfill = false")
        if session.vars.flag("streaming_use_arrangement_backfill"):
            return BackfillType.ARRANGEMENT_BACKFILL
        return BackfillType.NO_SHUFFLE_BACKFILL
    if serverless:
        if len(bound.relations) != 1:
            raise FeatureNotSupported("serverless backfill of a materialized view over several relations is not "
                                      "supported yet: it needs a snapshot backfill, which reads one upstream",
                                      hint="SET enable_serverless_backfill = false")
        return BackfillType.SNAPSHOT_BACKFILL
    if session.vars.flag("streaming_use_snapshot_backfill") and len(bound.relations) == 1:
        # (a job over several relations backfills each scan by arrangement backfill for now)
        return BackfillType.SNAPSHOT_BACKFILL
    if session.vars.flag("streaming_use_arrangement_backfill"):
        return BackfillType.ARRANGEMENT_BACKFILL
    return BackfillType.NO_SHUFFLE_BACKFILL


SERVERLESS_OPTION = "cloud.serverless_backfill_enabled"


def wants_serverless_backfill(session: Session, options: dict[str, exp.Expression]) -> bool:
    """Whether a CREATE asks for serverless backfill: its ``WITH (cloud.serverless_backfill_enabled
    = ...)`` option, which wins over the session's ``enable_serverless_backfill``. As RisingWave, it
    cannot be combined with an explicit resource group, nor used in a database of another group."""
    option = options.get(SERVERLESS_OPTION)
    if option is None:
        serverless = session.vars.flag("enable_serverless_backfill")
    elif isinstance(option, exp.Boolean):
        serverless = bool(option.this)
    elif isinstance(option, exp.Literal | exp.Var) and str(option.this).lower() in ("true", "false", "on", "off"):
        serverless = str(option.this).lower() in ("true", "on")
    else:
        raise InvalidParameterValue(f"{SERVERLESS_OPTION} must be true or false, not {option.sql(dialect='postgres')}")
    if not serverless:
        return False
    if "resource_group" in options:
        raise FeatureNotSupported("serverless backfill cannot be combined with an explicit resource group",
                                  hint=f"Remove resource_group, or set {SERVERLESS_OPTION} = false")
    database = session.catalog_reader().database
    if database.resource_group != DEFAULT_RESOURCE_GROUP:
        raise FeatureNotSupported(f'serverless backfill is not available in database "{database.name}" of resource '
                                  f'group "{database.resource_group}": only in databases of the default group')
    return True


def job_options(ast: exp.Create) -> dict[str, exp.Expression]:
    """The ``WITH (...)`` options of a CREATE MATERIALIZED VIEW, by lowercase name."""
    props = ast.args.get("properties")
    options: dict[str, exp.Expression] = {}
    for p in props.expressions if props else []:
        if isinstance(p, exp.MaterializedProperty | exp.TemporaryProperty):
            continue
        name = p.this.sql(dialect="postgres").lower() if isinstance(p, exp.Property) else None
        value = p.args.get("value") if isinstance(p, exp.Property) else None
        if name not in (SERVERLESS_OPTION, "resource_group", BACKFILL_ORDER_OPTION) or value is None:
            raise FeatureNotSupported(f"materialized view option {p.sql(dialect='postgres')} is not supported yet")
        options[name] = value
    return options


def job_serverless_backfill(session: Session, ast: exp.Create) -> bool:
    """Whether the job asks for serverless backfill; any other resource group than the default one
    cannot run jobs yet."""
    options = job_options(ast)
    serverless = wants_serverless_backfill(session, options)
    group = options.get("resource_group")
    if group is not None and str(group.this) != DEFAULT_RESOURCE_GROUP:
        raise FeatureNotSupported(f"resource group {group.sql(dialect='postgres')} cannot run jobs yet: every job "
                                  f"runs in resource group {DEFAULT_RESOURCE_GROUP}")
    return serverless


def _plan(session: Session, ast: exp.Create, text: str, mv_id: int, extra_ids: Iterable[int]):
    query = ast.expression
    if query is None:
        raise FeatureNotSupported("CREATE MATERIALIZED VIEW needs AS <query>")
    serverless = job_serverless_backfill(session, ast)
    binder = QueryBinder(session.catalog_reader())
    bound = binder.query(query)
    functions = tuple(binder.functions[i] for i in sorted(binder.functions))
    return bound, plan_mv(bound, mv_id, extra_ids, choose_backfill(session, bound, serverless), functions)


def create_mv(session: Session, ast: exp.Create, text: str) -> StatementResult:
    table = ast.this
    if (done := exists_result(session, table, bool(ast.args.get("exists")), "CREATE_MATERIALIZED_VIEW")) is not None:
        return done
    meta = session.frontend.meta
    privileges = session.privileges()
    privileges.check_create_in(schema_id(session, table))
    if ast.expression is not None:
        privileges.check_query(ast.expression, session.catalog_reader())
    # Bind and plan before taking ids, so an invalid query allocates nothing.
    bound, draft = _plan(session, ast, text, 0, itertools.repeat(0))
    order = plan_backfill_order(session, job_options(ast).get(BACKFILL_ORDER_OPTION), draft.plan)
    first = meta.allocate_ids(1 + state_tables_needed(bound))
    bound, planned = _plan(session, ast, text, first, range(first + 1, first + 1 + state_tables_needed(bound)))
    background = session.vars.flag("background_ddl")
    serverless = job_serverless_backfill(session, ast)
    rel = RelationCatalog(
        id=first, database_id=session.catalog_reader().database.id, schema_id=schema_id(session, table),
        name=ident(table.this), kind=RelationKind.MATERIALIZED_VIEW, fields=planned.fields, pk=planned.pk,
        dist_key=planned.pk, definition=text, status=JobStatus.CREATING,
        create_type=CreateType.BACKGROUND if background else CreateType.FOREGROUND,
        backfill_type=choose_backfill(session, bound, serverless), plan=node_to_json(planned.plan),
        state_tables=planned.state_tables, dependencies=tuple(dict.fromkeys(r.id for r in bound.relations)),
        parallelism=session.vars.job_parallelism("materialized_view"),
        extra={**session.vars.backfill_rate_extra(),
               **({APPEND_ONLY: True} if planned.plan.append_only else {}),
               **({SERVERLESS_BACKFILL: new_serverless_state()} if serverless else {}),
               **({BACKFILL_ORDER: [list(edge) for edge in order.order]} if order.order else {}),
               **({VIEW_DEPENDENCIES: views_named} if (views_named := views.views_in(session, ast.expression)) else {})},
        owner=session.user_id)
    meta.create_relation(rel)
    if not background:
        wait_foreground(session, rel)
    return StatementResult("CREATE_MATERIALIZED_VIEW", notices=order.notices)


def new_serverless_state() -> dict:
    """The serverless backfill state of a new job (`meta.serverless` keeps it up to date)."""
    return {"attempt": 0, "migrated": False}


def wait_foreground(session: Session, rel: RelationCatalog) -> None:
    """Wait until a foreground job's backfill is done; as RisingWave, interrupting it cancels the job."""
    meta = session.frontend.meta
    try:
        meta.wait_created(rel.id, session.cancel_event)
    except QueryCanceled:
        if rel.id in meta.catalog_snapshot().relations:
            meta.drop_relation(rel.id, cascade=True)
        raise


def explain_create(session: Session, ast: exp.Create, text: str) -> StatementResult:
    if not (ast.args.get("kind", "").upper() == "VIEW" and _is_materialized(ast)):
        raise FeatureNotSupported("EXPLAIN supports CREATE MATERIALIZED VIEW only, for now")
    if ast.expression is not None:
        session.privileges().check_query(ast.expression, session.catalog_reader())
    _, planned = _plan(session, ast, text, 0, itertools.count(1))
    order = plan_backfill_order(session, job_options(ast).get(BACKFILL_ORDER_OPTION), planned.plan)
    names = {s.upstream_id: s.upstream_name for s in scans(planned.plan)}
    lines = explain(planned.plan) + explain_order(order.order, names)
    return StatementResult("EXPLAIN", [ColumnDesc("QUERY PLAN", VARCHAR.oid)], [(line,) for line in lines],
                           notices=order.notices)


_DROP = {"TABLE": (RelationKind.TABLE, "DROP_TABLE"), "VIEW": (RelationKind.VIEW, "DROP_VIEW"),
         "MATERIALIZED VIEW": (RelationKind.MATERIALIZED_VIEW, "DROP_MATERIALIZED_VIEW"),
         "INDEX": (RelationKind.INDEX, "DROP_INDEX")}


def drop(session: Session, ast: exp.Drop) -> StatementResult:
    """``DROP {TABLE | VIEW | MATERIALIZED VIEW | INDEX} [IF EXISTS] name [, ...] [CASCADE]``. A
    relation's indexes go with it; other dependents need CASCADE (2BP01 otherwise)."""
    kind = (ast.args.get("kind") or "").upper()
    if kind == "SCHEMA":
        from frontend.handlers.commands import drop_schema

        return drop_schema(session, ast)
    if kind == "DATABASE":
        from frontend.handlers.commands import drop_database

        return drop_database(session, ast)
    if kind == "VIEW" and ast.args.get("materialized"):
        kind = "MATERIALIZED VIEW"
    if kind not in _DROP:
        raise FeatureNotSupported(f"DROP {kind} is not supported yet")
    want, tag = _DROP[kind]
    reader = session.catalog_reader()
    notices: list[str] = []
    targets: list[RelationCatalog] = []
    tables = ast.args.get("tables") or [ast.this]
    for t in tables:
        schema = ident(t.args.get("db")) or None
        ref = None if schema and session.frontend.meta.catalog_snapshot().schema(reader.database.id, schema) \
            is None and ast.args.get("exists") else reader.lookup(ident(t.this), schema)
        if ref is None or ref.relation is None:
            if ast.args.get("exists"):
                notices.append(f'{want.display} "{ident(t.this)}" does not exist, skipping')
                continue
            raise UndefinedTable(f'{want.display} "{ident(t.this)}" does not exist')
        rel = ref.relation
        if rel.kind is not want:
            hint = f"Use DROP {rel.kind.display.upper()} to remove a {rel.kind.display}."
            raise WrongObjectType(f'"{rel.name}" is not a {want.display}', hint=hint)
        targets.append(rel)
    privileges = session.privileges()
    for rel in targets:
        privileges.check_drop(rel)
    meta = session.frontend.meta
    for rel in targets:
        if rel.id in meta.catalog_snapshot().relations:
            drop_with_indexes(session, rel, cascade=bool(ast.args.get("cascade")))
    return StatementResult(tag, notices=notices)


def drop_with_indexes(session: Session, rel: RelationCatalog, *, cascade: bool) -> None:
    """Drop a relation with its indexes (one meta transaction); other dependents need `cascade`."""
    meta = session.frontend.meta
    others = [d for d in meta.catalog_snapshot().dependents(rel.id) if d.kind is not RelationKind.INDEX]
    if others and not cascade:
        dep = others[0]
        raise DependentObjectsStillExist(
            f"cannot drop {rel.kind.display} {rel.name} because other objects depend on it",
            detail=f"{dep.kind.display} {dep.name} depends on {rel.kind.display} {rel.name}",
            hint="Use DROP ... CASCADE to drop the dependent objects too.")
    meta.drop_relation(rel.id, cascade=True)
