"""StreamMaterialize: writes a job's change stream into its table, as RisingWave's
`MaterializeExecutor`.

Per key, an epoch's input reduces to at most one before-image and one after-image (see
`risingspark.stream_plan`). The executor writes the after-image (an upsert at the epoch) or a
tombstone, and emits the table's change log: Insert, Delete, or an UpdateDelete/UpdateInsert pair;
a key whose after-image equals its before-image changes nothing.

For a table that checks primary-key conflicts (`risingspark.table_kind`), the before-image is what
the table holds at the previous epoch, looked up in storage, and the after-image follows from the
key's DML ops of the epoch (by ``_seq``): with Overwrite, the last op (`pairs_from_dml`), so an
insert of an existing key becomes an update and a delete of a missing key does nothing; the other
behaviours are in `pk_conflict`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from compute.executor.keyed import (
    distinct_keys,
    filter_by_keys,
    first_per_key,
    last_per_key,
    left_join,
    rows_equal,
)
from risingspark.chunk import EPOCH, OP, SEQ, TOMBSTONE, VNODE, Op, is_insert_op, op_field
from risingspark.storage.desc import StateTableDesc

BEFORE = "__b"
AFTER = "__a"


@dataclass(frozen=True)
class Pairs:
    """Per key of an epoch: the key columns, then ``<col>__b`` / ``<col>__a`` images and the
    ``__present__b`` / ``__present__a`` flags."""

    table: pa.Table


@dataclass(frozen=True)
class MaterializeOutput:
    sst_rows: pa.Table  # in SST layout, unsorted: upserts and tombstones at the epoch
    changes: pa.Table  # _op, _vnode, value columns
    row_delta: int  # inserted minus deleted keys


def key_columns(desc: StateTableDesc) -> list[str]:
    return [VNODE, *desc.pk_names]


def pairs_from_changes(desc: StateTableDesc, rows: pa.Table) -> Pairs:
    """Before/after images per key from a change stream (`_op`, `_vnode`, value columns)."""
    keys = key_columns(desc)
    cols = [VNODE, *desc.names]
    inserts = rows.filter(is_insert_op(rows.column(OP))).select(cols)
    deletes = rows.filter(pc.invert(is_insert_op(rows.column(OP)))).select(cols)
    all_keys = distinct_keys([inserts, deletes], keys)
    t = left_join(all_keys, first_per_key(deletes, keys), keys, right_suffix=BEFORE)
    t = left_join(t, first_per_key(inserts, keys), keys, right_suffix=AFTER)
    return Pairs(t)


def pairs_from_dml(desc: StateTableDesc, rows: pa.Table, old: pa.Table) -> Pairs:
    """Before/after images per key from DML (`_op`, `_seq`, `_vnode`, value columns) and the rows
    the table holds for those keys (`old`: `_vnode` and value columns)."""
    keys = key_columns(desc)
    cols = [VNODE, *desc.names]
    last = last_per_key(rows, keys, SEQ)
    after = last.filter(is_insert_op(last.column(OP))).select(cols)
    t = left_join(last.select(keys), old.select(cols), keys, right_suffix=BEFORE)
    t = left_join(t, after, keys, right_suffix=AFTER)
    return Pairs(t)


@dataclass(frozen=True)
class _Classified:
    """Per key of a set of pairs: its images and what changed."""

    before: pa.Table
    after: pa.Table
    vnode: pa.ChunkedArray
    has_a: pa.Array
    same: pa.Array
    ins: pa.Array
    dele: pa.Array
    upd: pa.Array


def _classify(names: list[str], pairs: Pairs) -> _Classified:
    t = pairs.table
    has_b = t.column(f"__present{BEFORE}")
    has_a = t.column(f"__present{AFTER}")
    before = pa.table({n: t.column(f"{n}{BEFORE}") for n in names})
    after = pa.table({n: t.column(f"{n}{AFTER}") for n in names})
    both = pc.and_(has_b, has_a)
    same = pc.and_(both, rows_equal(before, after, names))
    return _Classified(before, after, t.column(VNODE), has_a, same, pc.and_(has_a, pc.invert(has_b)),
                       pc.and_(has_b, pc.invert(has_a)), pc.and_(both, pc.invert(same)))


def _changes(c: _Classified) -> pa.Table:
    def chunk(values: pa.Table, mask: pa.Array, op: Op) -> pa.Table:
        part = values.filter(mask)
        ops = pa.array([int(op)] * part.num_rows, pa.int8())
        return part.add_column(0, pa.field(VNODE, pa.int16(), nullable=False), c.vnode.filter(mask)) \
                   .add_column(0, op_field(), ops)

    # an update is a U- row directly followed by its U+ row (`risingspark.chunk`)
    updates = pa.concat_tables([chunk(c.before, c.upd, Op.UPDATE_DELETE), chunk(c.after, c.upd, Op.UPDATE_INSERT)])
    n_upd = updates.num_rows // 2
    updates = updates.take(pa.array(np.arange(2 * n_upd).reshape(2, n_upd).T.ravel()))
    return pa.concat_tables([chunk(c.after, c.ins, Op.INSERT), chunk(c.before, c.dele, Op.DELETE), updates])


def changes_of(names: list[str], pairs: Pairs) -> pa.Table:
    """The change stream (``_op``, ``_vnode``, `names`) of before/after pairs, for an operator whose
    output feeds other operators rather than a table."""
    return _changes(_classify(names, pairs))


def emit(desc: StateTableDesc, pairs: Pairs, epoch: int) -> MaterializeOutput:
    """The SST rows and change log of a set of before/after pairs."""
    names = desc.names
    c = _classify(names, pairs)
    changes = _changes(c)
    write = pc.and_(c.has_a, pc.invert(c.same))
    upserts = c.after.filter(write)
    t = pairs.table
    tombstones = pa.table({n: (t.column(n) if n in desc.pk_names else pa.nulls(t.num_rows, c.before.column(n).type))
                           for n in names}).filter(c.dele)
    sst_rows = pa.concat_tables([
        _sst_part(upserts, c.vnode.filter(write), epoch, False),
        _sst_part(tombstones, c.vnode.filter(c.dele), epoch, True),
    ])
    return MaterializeOutput(sst_rows, changes, pc.sum(c.ins).as_py() - pc.sum(c.dele).as_py()
                             if t.num_rows else 0)


def _sst_part(values: pa.Table, vnodes: pa.Array | pa.ChunkedArray, epoch: int, tombstone: bool) -> pa.Table:
    n = values.num_rows
    out = values.add_column(0, pa.field(VNODE, pa.int16(), nullable=False), vnodes)
    out = out.append_column(pa.field(EPOCH, pa.int64(), nullable=False), pa.array([epoch] * n, pa.int64()))
    return out.append_column(pa.field(TOMBSTONE, pa.bool_(), nullable=False), pa.array([tombstone] * n, pa.bool_()))


def apply_pairs(old: pa.Table, pairs: Pairs, desc: StateTableDesc) -> pa.Table:
    """`old` rows (``_vnode`` + `desc`'s columns) with an epoch's images applied: the changed keys'
    rows removed, their after-images added."""
    keys = key_columns(desc)
    t = pairs.table
    if t.num_rows == 0:
        return old
    kept = filter_by_keys(old, t.select(keys), keys, keep=False)
    after = t.filter(t.column(f"__present{AFTER}"))
    images = pa.table({VNODE: after.column(VNODE), **{n: after.column(f"{n}{AFTER}") for n in desc.names}})
    return pa.concat_tables([kept, images.cast(old.schema)])


def diff_outputs(names: list[str], key: tuple[str, ...] | list[str], old: pa.Table, new: pa.Table) -> pa.Table:
    """The change stream (``_op``, ``_vnode`` 0, `names`) from the `old` to the `new` output rows
    of an operator, per output stream `key`: rows whose values did not change emit nothing."""
    keys = [VNODE, *key]
    old = old.add_column(0, VNODE, pa.array([0] * old.num_rows, pa.int16()))
    new = new.add_column(0, VNODE, pa.array([0] * new.num_rows, pa.int16()))
    t = left_join(distinct_keys([old, new], keys), old, keys, right_suffix=BEFORE)
    t = left_join(t, new, keys, right_suffix=AFTER)
    return changes_of(names, Pairs(t))


def with_before_images(rows: pa.Table, pairs: Pairs, desc: StateTableDesc) -> pa.Table:
    """State `rows` read for an epoch (``_vnode`` + `desc`'s columns) completed with the before-images
    of the keys the epoch changed (which the change stream carries), each key once, as they were
    before the epoch."""
    t = pairs.table
    if t.num_rows == 0:
        return rows
    keys = [VNODE, *desc.pk_names]
    rows = filter_by_keys(rows, t.select(keys), keys, keep=False)
    had = t.filter(t.column(f"__present{BEFORE}"))
    images = pa.table({VNODE: had.column(VNODE), **{n: had.column(f"{n}{BEFORE}") for n in desc.names}})
    return pa.concat_tables([rows, images.cast(rows.schema)])
