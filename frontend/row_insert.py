"""A single-row INSERT made as a tuple of Python values, its target resolved once per plan.

``INSERT INTO t VALUES ($1, $2)``, prepared or not, is the statement an application repeats most. On
the general fast path (`frontend.handlers.dml.literal_rows`) each execution substitutes the
parameters into the text, reads the text back, resolves the table and checks the privilege, casts
each column with Arrow and builds a table, then adds the ``_op`` and ``_seq`` columns and writes an
Arrow IPC stream into the DML log. For one row the Arrow objects cost more than everything else.

A `RowInsertPlan` is made once for a statement's `PlanKey` (text, parameter types, database, user,
search path) at a catalog version, and kept in the plan cache (`frontend.plan_cache`): any DDL, and
GRANT or REVOKE, move the version, and the plan is made again (with the privilege checked again).
Only a statement with parameters keeps its plan: a text of literals alone (a driver that binds on
the client) is new at each execution, and its plans would push the repeated statements' out.
The algorithm:

1. **Plan** (`plan_row_insert`): the statement is ``INSERT INTO t [(cols)] VALUES (item, ...)`` with
   one row, each item a ``$n`` parameter or a plain literal (`frontend.values.read_row`), and every
   column it writes is an integer or a text column. For each of the table's columns the plan holds
   where its value comes from: the row id, a parameter, a literal's value (converted once), or NULL.
   Anything else, or a literal that does not convert exactly, gives no plan (`None`), and the Arrow
   path runs, with its errors.
2. **Row** (`RowInsertPlan.row`): each parameter converted exactly as the Arrow path would store it —
   an integer within its column type's range (also from text), a string for a text column — or the
   row is refused (`None`): a value of another kind (a bool, a float, a numeric), a parameter type the
   Arrow path reads as a cast, a NULL for a key or NOT NULL column, text parameters longer than
   `MAX_TEXT_CHARS` in all (the event loop would copy and write them). A refused row takes the Arrow path,
   which stores it or raises PostgreSQL's error: this path never decides an error itself.
3. The tuple ``(op, seq, *columns)`` goes to the group commit as `frontend.dml_rows.Rows`, which
   writes one Arrow table for a whole group of statements.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from frontend import dml_rows
from frontend.dml_rows import Rows
from frontend.handlers import dml
from frontend.handlers.dml import _columns, _target
from frontend.values import INT_BITS, int_value, read_row
from risingspark.chunk import OP, SEQ, Op
from risingspark.types import TypeName

if TYPE_CHECKING:
    from frontend.session import Session
    from frontend.statements import FastInsert

# The parameter types whose values the Arrow path reads as plain literals (`frontend.session.sql_literal`:
# others become casts, which only the general path runs): for an int value, for a str value, for None.
_INT_OIDS = frozenset({0, 20, 21, 23})
_TEXT_OIDS = frozenset({0, 25, 1043})
_NULL_OIDS = frozenset({0, 25})  # a NULL of these types is a plain NULL
_REFUSED = object()
MAX_TEXT_CHARS = 4096  # longer text values (all a row's) go to the Arrow path, on a thread (`loop_insert.MAX_TEXT`)

_ROW_ID = -1  # `_Column.param`: the row id
_CONSTANT = -2  # `_Column.param`: `_Column.value` (a literal's, or NULL)


@dataclass(frozen=True)
class _Column:
    param: int  # 0-based parameter index, or `_ROW_ID`, `_CONSTANT`
    value: object = None  # a `_CONSTANT`'s
    bits: int = 0  # an integer column's width (`frontend.values.INT_BITS`); 0: a text column
    required: bool = False  # a key or NOT NULL column: a NULL goes to the Arrow path (its error)


@dataclass(frozen=True)
class RowInsertPlan:
    """A single-row INSERT's plan (see the module doc)."""

    catalog_version: int
    table_id: int
    schema: pa.Schema  # of the DML batch: ``_op``, ``_seq``, then every column of the table
    columns: tuple[_Column, ...]
    header: bytes  # `schema` as the DML log writes it (`frontend.dml_rows.header`)

    def rows(self, params: Sequence[object], param_oids: Sequence[int]) -> Rows | None:
        """The DML batch of this execution, or None (`row`)."""
        row = self.row(params, param_oids)
        return None if row is None else Rows(self.schema, [row], self.header)

    def row(self, params: Sequence[object], param_oids: Sequence[int]) -> tuple | None:
        """The DML batch row ``(op, seq, *columns)`` for these parameters; None where the Arrow path
        must decide (see the module doc, step 2)."""
        values: list[object] = [int(Op.INSERT), 0]
        row_id_at, text_chars = -1, 0
        for c in self.columns:
            if c.param >= 0:
                if c.param >= len(params):
                    return None
                value = _convert(params[c.param], param_oids[c.param] if c.param < len(param_oids) else 0, c.bits)
                if value is _REFUSED or (value is None and c.required):
                    return None
                if type(value) is str:
                    text_chars += len(value)
                    if text_chars > MAX_TEXT_CHARS:
                        return None
            elif c.param == _ROW_ID:
                row_id_at, value = len(values), None
            else:
                value = c.value
            values.append(value)
        if row_id_at >= 0:
            values[row_id_at] = dml.ROW_IDS.next_id()
        values[1] = dml.SEQUENCE.next_id()
        return tuple(values)


def plan_row_insert(session: Session, stmt: FastInsert, catalog_version: int) -> RowInsertPlan | None:
    """The plan of `stmt` (its ``$n`` placeholders in place), or None when it cannot have one. Raises
    for a missing table or privilege (`frontend.handlers.dml._target`)."""
    items = read_row(stmt.values_text)
    if items is None:
        return None
    rel = _target(session, stmt.table, "insert into")
    targets = _columns(rel, stmt.columns)
    if len(items) != len(targets):
        return None
    given = dict(zip(targets, items, strict=True))
    not_null = set(rel.extra.get("not_null") or [])
    columns = []
    for i, f in enumerate(rel.fields):
        if i == rel.row_id_index:
            columns.append(_Column(_ROW_ID))
            continue
        required = i in rel.pk or f.name in not_null
        if i not in given:
            if required:
                return None
            columns.append(_Column(_CONSTANT))
            continue
        bits = INT_BITS.get(f.type.name, 0)
        if not bits and f.type.name is not TypeName.VARCHAR:
            return None
        kind, text = given[i]
        if kind == "param":
            columns.append(_Column(int(text) - 1, bits=bits, required=required))  # type: ignore[arg-type]
            continue
        value = _literal(kind, text, bits)
        if value is _REFUSED or (value is None and required):
            return None
        columns.append(_Column(_CONSTANT, value))
    schema = pa.schema([(OP, pa.int8()), (SEQ, pa.int64()), *((f.name, f.type.to_arrow()) for f in rel.fields)])
    return RowInsertPlan(catalog_version, rel.id, schema, tuple(columns), dml_rows.header(schema))


def _literal(kind: str, text: str | None, bits: int) -> object:
    """A literal's value in its column, as the Arrow path stores it (`frontend.values.cast_column`)."""
    if text is None:
        return None
    if not bits:
        return text  # (a number or TRUE/FALSE into a text column: its text, as the Arrow path)
    return _integer(text, bits) if kind in ("num", "str") else _REFUSED


def _convert(value: object, oid: int, bits: int) -> object:
    """A parameter's value in its column (see the module doc, step 2)."""
    if value is None:
        return None if oid in _NULL_OIDS else _REFUSED  # (a typed NULL is a cast: its type may not fit)
    if isinstance(value, str):
        if oid not in _TEXT_OIDS:
            return _REFUSED
        return _integer(value, bits) if bits else value
    if bits and isinstance(value, int) and not isinstance(value, bool) and oid in _INT_OIDS:
        return value if -(1 << (bits - 1)) <= value < (1 << (bits - 1)) else _REFUSED
    return _REFUSED


def _integer(text: str, bits: int) -> object:
    n = int_value(text, bits)
    return _REFUSED if n is None else n
