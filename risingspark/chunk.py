"""Stream chunks: an Arrow table plus an ``_op`` column, as RisingWave's `StreamChunk`.

Ops are those of RisingWave: Insert, Delete, UpdateDelete (U-) and UpdateInsert (U+). An update is a
U- row directly followed by its U+ row.
"""

from __future__ import annotations

import enum

import pyarrow as pa
import pyarrow.compute as pc

OP = "_op"
VNODE = "_vnode"
EPOCH = "_epoch"
TOMBSTONE = "_tombstone"
KEY = "_key"  # an SST row's memcomparable (_vnode, pk...) (risingspark.storage.memcmp)
SEQ = "_seq"
ROW_ID = "_row_id"


class Op(enum.IntEnum):
    INSERT = 1
    DELETE = 2
    UPDATE_DELETE = 3
    UPDATE_INSERT = 4


def op_field() -> pa.Field:
    return pa.field(OP, pa.int8(), nullable=False)


def signs(ops: pa.Array | pa.ChunkedArray) -> pa.Array:
    """+1 for Insert/U+, -1 for Delete/U- (the weight of each row in an aggregate)."""
    is_insert = pc.or_(pc.equal(ops, int(Op.INSERT)), pc.equal(ops, int(Op.UPDATE_INSERT)))
    return pc.if_else(is_insert, pa.scalar(1, pa.int64()), pa.scalar(-1, pa.int64()))


def is_insert_op(ops: pa.Array | pa.ChunkedArray) -> pa.Array:
    return pc.or_(pc.equal(ops, int(Op.INSERT)), pc.equal(ops, int(Op.UPDATE_INSERT)))


def with_op(table: pa.Table, op: Op) -> pa.Table:
    """Prepend an ``_op`` column holding `op` on every row."""
    ops = pa.array([int(op)] * table.num_rows, pa.int8()) if table.num_rows else pa.array([], pa.int8())
    return table.add_column(0, op_field(), ops)
