"""INSERT, UPDATE and DELETE.

The frontend computes the rows each statement changes — literal rows, or a batch query at the
committed epoch for INSERT ... SELECT, UPDATE and DELETE — and writes them as a DML batch file
(``_op``, ``_seq``, every column) to the object store, then registers it with meta. Once registered
the rows are durable; the table's job applies them at the next barrier, resolving primary-key
conflicts by the table's ON CONFLICT behaviour (`compute.executor.pk_conflict`). A small statement's
rows go to the group commit in memory, which writes one file for a group of statements; with
``SET synchronous_commit = off`` the statement returns once they are queued (`frontend.dml_commit`).

As in RisingWave, a statement reads the committed state: a session's own earlier writes are visible
to it after the next checkpoint, at once after FLUSH, and always with ``SET rw_implicit_flush = true``
(every write then waits for its checkpoint).
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from frontend.binder import ident
from frontend.dml_commit import MEMORY_ROWS
from frontend.parser import FastInsert
from frontend.pgwire.api import StatementResult
from frontend.values import canonical_jsonb, cast_column, dml_duckdb_type, read_values, struct_text_error
from meta.compaction.write_stall import MAX_WAIT_S
from risingspark.catalog import RelationCatalog, RelationKind
from risingspark.chunk import OP, SEQ, Op
from risingspark.errors import (
    DuplicateColumn,
    FeatureNotSupported,
    NotNullViolation,
    SyntaxError_,
    UndefinedColumn,
    WrongObjectType,
)
from risingspark.sequence import IdGenerator
from risingspark.types import TypeName
from risingspark.users import Action

if TYPE_CHECKING:
    from frontend.session import Session

BATCH_ROWS = 262_144  # rows per DML batch file
ROW_IDS = IdGenerator()
SEQUENCE = IdGenerator()


_VERBS = {"insert into": Action.INSERT, "copy into": Action.INSERT, "update": Action.UPDATE,
          "delete from": Action.DELETE}


def _target(session: Session, table: exp.Table, verb: str) -> RelationCatalog:
    """The table a DML statement writes, which the session's user may write (`frontend.privileges`)."""
    rel = session.catalog_reader().resolve_user(table)
    if rel.kind is not RelationKind.TABLE:
        raise WrongObjectType(f'cannot {verb} {rel.kind.display} "{rel.name}"')
    session.privileges().check_relation(rel, _VERBS[verb])
    return rel


def _check_reads(session: Session, ast: exp.Expression, target: exp.Expression | None) -> None:
    """SELECT on every relation a DML statement reads besides its target (INSERT's query, the
    subqueries of SET and WHERE)."""
    session.privileges().check_query(ast, session.catalog_reader(), skip=target)


def _columns(rel: RelationCatalog, names: tuple[str, ...] | None) -> list[int]:
    if names is None:
        return [i for i, f in enumerate(rel.fields) if not f.hidden]
    out = []
    by_name = {f.name: i for i, f in enumerate(rel.fields)}
    for n in names:
        if n not in by_name or rel.fields[by_name[n]].hidden:
            raise UndefinedColumn(f'column "{n}" of relation "{rel.name}" does not exist')
        if by_name[n] in out:
            raise DuplicateColumn(f'column "{n}" specified more than once')
        out.append(by_name[n])
    return out


# ---- INSERT ---------------------------------------------------------------------------------------

def insert_fast(session: Session, stmt: FastInsert) -> StatementResult:
    rows = literal_rows(session, stmt)
    if rows is not None:
        rel, table = rows
        write_batches(session, rel, table, np.full(table.num_rows, int(Op.INSERT), np.int8))
        return StatementResult(f"INSERT 0 {table.num_rows}")
    # Expressions in the list, or a value that does not convert: take the general path for exact errors.
    ast = session.parse_sql(stmt.text)
    assert isinstance(ast, exp.Insert)
    return insert(session, ast)


def literal_rows(session: Session, stmt: FastInsert) -> tuple[RelationCatalog, pa.Table] | None:
    """The table a plain-literal INSERT writes and its rows (every column, the row id made), or None
    when the list holds anything but literals or a value does not convert (the general path then
    runs, for PostgreSQL's exact error). Raises for a missing table or privilege, a NULL key."""
    rel = _target(session, stmt.table, "insert into")
    targets = _columns(rel, stmt.columns)
    texts = read_values(stmt.values_text, len(targets))
    if texts is None:
        return None
    arrays = [cast_column(v, rel.fields[i].type) for v, i in zip(texts, targets, strict=True)]
    if any(a is None for a in arrays):
        return None
    return rel, _insert_table(rel, dict(zip(targets, arrays, strict=True)), len(texts[0]))


def insert(session: Session, ast: exp.Insert) -> StatementResult:
    target = ast.this
    names: tuple[str, ...] | None = None
    if isinstance(target, exp.Schema):
        names = tuple(ident(c) for c in target.expressions)
        target = target.this
    if ast.args.get("returning"):
        raise FeatureNotSupported("INSERT ... RETURNING is not supported")
    if ast.args.get("conflict"):
        raise FeatureNotSupported("INSERT ... ON CONFLICT is not supported; a primary-key conflict overwrites the row")
    rel = _target(session, target, "insert into")
    targets = _columns(rel, names)
    source = ast.expression
    _check_reads(session, source, None)
    width = _source_width(source)
    if width is not None and width > len(targets):
        raise SyntaxError_("INSERT has more expressions than target columns")
    if width is not None and width < len(targets) and names is not None:
        raise SyntaxError_("INSERT has more target columns than expressions")
    cols = [f"c{k}" for k in range(width if width is not None else len(targets))]
    alias = exp.TableAlias(this=exp.to_identifier("__src"), columns=[exp.to_identifier(c) for c in cols])
    if isinstance(source, exp.Values):
        wrapped: exp.Expression = _typed_values(source, [rel.fields[i].type for i in targets])
        wrapped.set("alias", alias)
    else:
        wrapped = exp.Subquery(this=source.copy(), alias=alias)
    select = exp.select(*[
        exp.Cast(this=exp.column(c, table="__src"), to=exp.DataType.build(dml_duckdb_type(rel.fields[i].type),
                                                                           dialect="duckdb")).as_(c)
        for c, i in zip(cols, targets, strict=False)]).from_(wrapped)
    rows = session.run_batch(select)
    arrays = {i: rows.column(k).combine_chunks() for k, i in enumerate(targets[:rows.num_columns])}
    return _write_inserts(session, rel, arrays, rows.num_rows)


def _typed_values(values: exp.Values, types: list) -> exp.Values:
    """VALUES with each quoted literal cast to its target column's type, as PostgreSQL types an
    unknown literal of INSERT ... VALUES: a column may mix ``'NaN'`` and ``1.5`` (DuckDB would
    otherwise look for a type common to VARCHAR and DECIMAL)."""
    out = values.copy()
    for row in out.expressions:
        items = row.expressions if isinstance(row, exp.Tuple) else [row]
        for k, item in enumerate(items):
            if k < len(types) and isinstance(item, exp.Literal) and item.is_string:
                if types[k].name is TypeName.STRUCT:
                    raise struct_text_error(types[k])
                item.replace(exp.Cast(this=item.copy(), to=exp.DataType.build(dml_duckdb_type(types[k]),
                                                                              dialect="duckdb")))
    return out


def _source_width(source: exp.Expression) -> int | None:
    if isinstance(source, exp.Values):
        widths = {len(t.expressions) if isinstance(t, exp.Tuple) else 1 for t in source.expressions}
        if len(widths) > 1:
            raise SyntaxError_("VALUES lists must all be the same length")
        return widths.pop() if widths else 0
    if isinstance(source, exp.Select) and not any(isinstance(e, exp.Star) or (isinstance(e, exp.Column)
                                                  and isinstance(e.this, exp.Star)) for e in source.expressions):
        return len(source.expressions)
    return None


def _write_inserts(session: Session, rel: RelationCatalog, arrays: dict[int, pa.Array], n: int) -> StatementResult:
    write_batches(session, rel, _insert_table(rel, arrays, n), np.full(n, int(Op.INSERT), np.int8))
    return StatementResult(f"INSERT 0 {n}")


def _insert_table(rel: RelationCatalog, arrays: dict[int, pa.Array], n: int) -> pa.Table:
    """The rows an INSERT writes: `arrays` by column index, the others NULL, the row id made; 23502
    for a NULL where the table allows none."""
    columns = []
    for i, f in enumerate(rel.fields):
        if i == rel.row_id_index:
            columns.append(pa.array(ROW_IDS.next_block(n), pa.int64()))
        elif i in arrays:
            columns.append(canonical_jsonb(arrays[i], f.type))
        else:
            columns.append(pa.nulls(n, f.type.to_arrow()))
    table = pa.Table.from_arrays(columns, schema=pa.schema([(f.name, f.type.to_arrow()) for f in rel.fields]))
    for i in rel.pk:
        if table.column(i).null_count:
            raise NotNullViolation(f'null value in column "{rel.fields[i].name}" of relation "{rel.name}" '
                                   f"violates not-null constraint")
    for i, f in enumerate(rel.fields):
        if f.name in rel.extra.get("not_null", []) and table.column(i).null_count:
            raise NotNullViolation(f'null value in column "{f.name}" of relation "{rel.name}" violates '
                                   f"not-null constraint")
    return table


def write_batches(session: Session, rel: RelationCatalog, rows: pa.Table, ops: np.ndarray) -> None:
    """Make rows durable as DML batches of at most `BATCH_ROWS` rows each (queued, with
    ``synchronous_commit = off``, when they are few: `frontend.dml_commit`)."""
    n = rows.num_rows
    if n == 0:
        return
    full = with_change_columns(rows, ops)
    dml = session.frontend.dml
    if n <= MEMORY_ROWS:  # the group's commit writes the file (`frontend.dml_commit`)
        receipt = dml.submit_rows(rel.id, full, durable=session.vars.get("synchronous_commit") != "off",
                                  cancel=session.cancel_event)
        stalled = receipt.stalled if receipt is not None else dml.stalled(rel.id)
    else:
        for start in range(0, n, BATCH_ROWS):
            part = full.slice(start, BATCH_ROWS)
            path = f"dml/{rel.id}/{uuid.uuid4().hex}.parquet"
            session.frontend.store.write_parquet(path, part)
            stalled = dml.submit(rel.id, path, part.num_rows).stalled
    if stalled:
        wait_while_stalled(session, rel.id)


def with_change_columns(rows: pa.Table, ops: np.ndarray) -> pa.Table:
    """A DML batch's rows: `rows` after its ``_op`` (`ops`) and ``_seq`` (new sequence numbers) columns."""
    seqs = SEQUENCE.next_block(rows.num_rows)
    return rows.add_column(0, pa.field(SEQ, pa.int64()), pa.array(seqs)) \
               .add_column(0, pa.field(OP, pa.int8()), pa.array(ops, pa.int8()))


STALL_POLL_S = 0.2


def wait_while_stalled(session: Session, table_id: int) -> None:
    """Acknowledge a write into a stalled table only once the stall is released, or after
    `MAX_WAIT_S` (`meta.compaction.write_stall`): the rows are durable already, the writer slows down
    to what compaction absorbs. The frontend waits, not meta, whose request threads serve heartbeats
    and compactors; a cancel (or the session's end) stops the wait."""
    meta = session.frontend.meta
    deadline = time.monotonic() + MAX_WAIT_S
    while meta.is_write_stalled(table_id) and time.monotonic() < deadline:
        if session.cancel_event.wait(STALL_POLL_S):
            return


# ---- UPDATE / DELETE ----------------------------------------------------------------------------

def _changeable(rel: RelationCatalog) -> RelationCatalog:
    """A table UPDATE and DELETE may change: not an append-only one (RisingWave's binder refuses
    them, with this message)."""
    if rel.append_only:
        raise FeatureNotSupported("append-only table does not support update or delete",
                                  hint=f'"{rel.name}" was created APPEND ONLY: it only accepts INSERT')
    return rel


def update(session: Session, ast: exp.Update) -> StatementResult:
    if ast.args.get("from") or ast.args.get("from_") or ast.args.get("returning"):
        raise FeatureNotSupported("UPDATE ... FROM / RETURNING is not supported")
    rel = _changeable(_target(session, ast.this, "update"))
    _check_reads(session, ast, ast.this)
    by_name = {f.name: i for i, f in enumerate(rel.fields)}
    sets: dict[int, exp.Expression] = {}
    for eq in ast.expressions:
        name = ident(eq.this.this if isinstance(eq.this, exp.Column) else eq.this)
        if name not in by_name or rel.fields[by_name[name]].hidden:
            raise UndefinedColumn(f'column "{name}" of relation "{rel.name}" does not exist')
        sets[by_name[name]] = eq.expression
    old_cols = [exp.column(f.name, quoted=True).as_(f"o{i}") for i, f in enumerate(rel.fields)]
    new_cols = [exp.Cast(this=e, to=exp.DataType.build(dml_duckdb_type(rel.fields[i].type), dialect="duckdb"))
                .as_(f"n{i}") for i, e in sets.items()]
    select = exp.select(*old_cols, *new_cols).from_(ast.this.copy())
    if ast.args.get("where"):
        select = select.where(ast.args["where"].this)
    rows = session.run_batch(select, full_relations=True)
    n = rows.num_rows
    old = pa.Table.from_arrays([rows.column(f"o{i}") for i in range(len(rel.fields))], names=[f.name for f in rel.fields])
    new_arrays = [pc.cast(canonical_jsonb(rows.column(f"n{i}"), rel.fields[i].type), rel.fields[i].type.to_arrow())
                  if i in sets else old.column(i) for i in range(len(rel.fields))]
    new = pa.Table.from_arrays(new_arrays, names=old.column_names).cast(old.schema)
    for i in rel.pk:
        if i in sets and new.column(i).null_count:
            raise NotNullViolation(f'null value in column "{rel.fields[i].name}" of relation "{rel.name}" '
                                   f"violates not-null constraint")
    # U- then U+ for each row: interleave so the update's insert follows its delete.
    order = np.empty(2 * n, np.int64)
    order[0::2] = np.arange(n)
    order[1::2] = np.arange(n) + n
    both = pa.concat_tables([old, new]).take(pa.array(order))
    ops = np.empty(2 * n, np.int8)
    ops[0::2] = int(Op.UPDATE_DELETE)
    ops[1::2] = int(Op.UPDATE_INSERT)
    write_batches(session, rel, both, ops)
    return StatementResult(f"UPDATE {n}")


def delete(session: Session, ast: exp.Delete) -> StatementResult:
    if ast.args.get("using") or ast.args.get("returning"):
        raise FeatureNotSupported("DELETE ... USING / RETURNING is not supported")
    rel = _changeable(_target(session, ast.this, "delete from"))
    _check_reads(session, ast, ast.this)
    select = exp.select(*[exp.column(f.name, quoted=True) for f in rel.fields]).from_(ast.this.copy())
    if ast.args.get("where"):
        select = select.where(ast.args["where"].this)
    rows = session.run_batch(select, full_relations=True)
    rows = rows.cast(pa.schema([(f.name, f.type.to_arrow()) for f in rel.fields]))
    write_batches(session, rel, rows, np.full(rows.num_rows, int(Op.DELETE), np.int8))
    return StatementResult(f"DELETE {rows.num_rows}")
