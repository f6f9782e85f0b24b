"""CREATE INDEX: as in RisingWave, an index is a materialized view of its table (or materialized
view) whose state table is keyed by ``(index columns, the upstream's key)`` and distributed by the
index columns (or ``DISTRIBUTED BY``), so its rows sit sorted by the index columns within each vnode.
It backfills like any materialized view and has no name of its own in queries; batch point queries
on the upstream read it (`frontend.handlers.index_lookup`).

Columns: the index columns, then the ``INCLUDE`` columns (every column of the upstream when
omitted, as in RisingWave), then the upstream's key columns not already there (hidden). Sort
direction (``DESC``) is accepted and not kept: state tables sort ascending.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from frontend.binder import bind_stream_select
from frontend.parser import CreateIndexStmt
from frontend.pgwire.api import StatementResult
from frontend.planner.stream import plan_mv, state_tables_needed
from risingspark.catalog import SERVERLESS_BACKFILL, CreateType, JobStatus, RelationCatalog, RelationKind
from risingspark.errors import DuplicateTable, UndefinedColumn, WrongObjectType
from risingspark.storage.desc import StateTableDesc
from risingspark.stream_plan import StreamExchange, StreamMaterialize, node_to_json

if TYPE_CHECKING:
    from frontend.session import Session

INDEX_COLUMNS = "index_columns"  # `extra` key: names of the index columns, in order
INCLUDED = "include"  # `extra` key: names of the visible columns (index columns, then included ones)


def table_of(parts: tuple[str, ...]) -> exp.Table:
    """An `exp.Table` of ``[database.][schema.]name`` parts."""
    names = [exp.to_identifier(p, quoted=True) for p in parts]
    return exp.Table(this=names[-1], db=names[-2] if len(names) > 1 else None,
                     catalog=names[-3] if len(names) > 2 else None)


def create_index(session: Session, stmt: CreateIndexStmt) -> StatementResult:
    reader = session.catalog_reader()
    ref = reader.resolve(table_of(stmt.relation))
    base = ref.relation
    if base is None:
        raise WrongObjectType(f'cannot create an index on system table "{ref.schema}.{ref.name}"')
    if base.kind not in (RelationKind.TABLE, RelationKind.MATERIALIZED_VIEW):
        raise WrongObjectType(f'"{base.name}" is not a table or materialized view')
    session.privileges().check_owner(base.id)  # as PostgreSQL: the index belongs to the table's owner
    meta = session.frontend.meta
    existing = meta.catalog_snapshot().relation(base.schema_id, stmt.name)
    if existing is not None:
        if stmt.if_not_exists:
            return StatementResult("CREATE_INDEX", notices=[f'relation "{stmt.name}" already exists, skipping'])
        raise DuplicateTable(f'relation "{stmt.name}" already exists')
    visible = [f.name for f in base.fields if not f.hidden]
    keys = [c for c, _ in stmt.columns]
    for c in [*keys, *(stmt.include or ()), *(stmt.distributed_by or ())]:
        if c not in visible:
            raise UndefinedColumn(f'column "{c}" does not exist')
    if stmt.distributed_by is not None and list(stmt.distributed_by) != keys[:len(stmt.distributed_by)]:
        raise WrongObjectType("the DISTRIBUTED BY columns must be a prefix of the index columns")
    columns = list(dict.fromkeys([*keys, *(stmt.include if stmt.include is not None else visible)]))
    query = exp.select(*[exp.column(c, quoted=True) for c in columns]).from_(
        exp.Table(this=exp.to_identifier(base.name, quoted=True), db=exp.to_identifier(ref.schema, quoted=True)))
    bound = bind_stream_select(reader, query)
    first = meta.allocate_ids(1 + state_tables_needed(bound))
    from frontend.handlers.ddl import choose_backfill, new_serverless_state, wants_serverless_backfill

    serverless = wants_serverless_backfill(session, {})  # enable_serverless_backfill, as RisingWave
    backfill = choose_backfill(session, bound, serverless)
    planned = plan_mv(bound, first, range(first + 1, first + 1 + state_tables_needed(bound)), backfill)
    names = [f.name for f in planned.fields]
    key_idx = [names.index(c) for c in keys]
    pk = tuple(dict.fromkeys([*key_idx, *planned.pk]))
    dist = tuple(key_idx[:len(stmt.distributed_by)] if stmt.distributed_by else key_idx)
    node = planned.plan.input
    if isinstance(node, StreamExchange):
        node = node.input
    assert node is not None
    table = StateTableDesc(first, planned.fields, pk, dist)
    plan = StreamMaterialize(fields=planned.fields, stream_key=pk, table=table,
                             input=StreamExchange(fields=node.fields, stream_key=node.stream_key, input=node,
                                                  dist_key=dist))
    background = session.vars.flag("background_ddl")
    rel = RelationCatalog(
        id=first, database_id=reader.database.id, schema_id=base.schema_id, name=stmt.name,
        kind=RelationKind.INDEX, fields=planned.fields, pk=pk, dist_key=dist, definition=stmt.text,
        status=JobStatus.CREATING, create_type=CreateType.BACKGROUND if background else CreateType.FOREGROUND,
        backfill_type=backfill, plan=node_to_json(plan), state_tables=(table, *planned.state_tables[1:]),
        dependencies=(base.id,), parallelism=session.vars.job_parallelism("index"),
        extra={INDEX_COLUMNS: keys, INCLUDED: columns, **session.vars.backfill_rate_extra(),
               **({SERVERLESS_BACKFILL: new_serverless_state()} if serverless else {})},
        owner=base.owner)
    meta.create_relation(rel)
    if not background:
        from frontend.handlers.ddl import wait_foreground

        wait_foreground(session, rel)
    return StatementResult("CREATE_INDEX")



def indexes_of(session: Session, rel: RelationCatalog) -> list[RelationCatalog]:
    snap = session.frontend.meta.catalog_snapshot()
    return [r for r in snap.dependents(rel.id) if r.kind is RelationKind.INDEX]
