"""A DML batch's rows as Python tuples: what a single-row INSERT queues (`frontend.row_insert`)
without making an Arrow table of its own.

Building a one-row Arrow table costs more than the rest of such a statement: an array per column,
the table, the ``_op`` and ``_seq`` columns added, an Arrow IPC stream for the DML log. A `Rows` batch
holds the row as a tuple ``(op, seq, *columns)`` and the schema its Arrow table has; the group commit
writes a run of such batches as one Arrow table (`concat`), built once for every statement of the
group.

In the DML log (`frontend.dml_log`) a `Rows` batch is the record payload ``b"RSR1"``, the schema's
length (u32) and its Arrow IPC message, then the rows by `marshal` (ints, strings, None: the values a
`Rows` holds). An Arrow IPC stream, the other payload, begins with ``0xFFFFFFFF``, so `decode` tells
the two apart; a log written before this format reads as before.

>>> schema = pa.schema([("_op", pa.int8()), ("_seq", pa.int64()), ("k", pa.int64()), ("v", pa.string())])
>>> rows = Rows(schema, [(1, 7, 5, "a")])
>>> decode(encode(rows)).to_pylist()
[{'_op': 1, '_seq': 7, 'k': 5, 'v': 'a'}]
>>> concat([rows, pa.table({"_op": pa.array([1], pa.int8()), "_seq": [8], "k": [6], "v": ["b"]})]).column("k").to_pylist()
[5, 6]
"""

from __future__ import annotations

import marshal
import struct
from dataclasses import dataclass

import pyarrow as pa

MAGIC = b"RSR1"
MARSHAL_VERSION = 4  # (pinned: what a later Python writes, this one reads)
_SCHEMA_LEN = struct.Struct("<I")


@dataclass(frozen=True)
class Rows:
    """Rows as tuples of Python values, in the order of `schema`'s fields; `header`: the schema as
    `encode` writes it (`header`; made once by whoever makes many batches of one schema: hashing an
    Arrow schema to look it up costs tens of microseconds)."""

    schema: pa.Schema
    rows: list[tuple]
    header: bytes = b""

    @property
    def num_rows(self) -> int:
        return len(self.rows)

    def to_table(self) -> pa.Table:
        return _table(self.schema, self.rows)


def _table(schema: pa.Schema, rows: list[tuple]) -> pa.Table:
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema)
    return pa.Table.from_arrays([pa.array(c, f.type) for c, f in zip(columns, schema, strict=True)], schema=schema)


def concat(parts: list[pa.Table | Rows]) -> pa.Table:
    """One table of `parts` (of one schema), each run of `Rows` built at once."""
    tables: list[pa.Table] = []
    run: list[tuple] = []
    for part in parts:
        if isinstance(part, Rows):
            run.extend(part.rows)
            schema = part.schema
            continue
        if run:
            tables.append(_table(schema, run))
            run = []
        tables.append(part)
    if run:
        tables.append(_table(schema, run))
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


def header(schema: pa.Schema) -> bytes:
    """What `encode` writes before the rows: the magic, the schema's length and its IPC message."""
    data = schema.serialize().to_pybytes()
    return MAGIC + _SCHEMA_LEN.pack(len(data)) + data


def encode(rows: Rows) -> bytes:
    return (rows.header or header(rows.schema)) + marshal.dumps(rows.rows, MARSHAL_VERSION)


def decode(payload: bytes) -> pa.Table:
    """The rows of a DML log record's payload: `encode`'s, or an Arrow IPC stream."""
    if payload[:len(MAGIC)] != MAGIC:
        return pa.ipc.open_stream(payload).read_all()
    at = len(MAGIC)
    (n,) = _SCHEMA_LEN.unpack_from(payload, at)
    at += _SCHEMA_LEN.size
    schema = pa.ipc.read_schema(pa.py_buffer(payload[at:at + n]))
    return _table(schema, marshal.loads(payload[at + n:]))
