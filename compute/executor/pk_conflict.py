"""A table's primary-key conflict handling over an epoch's DML, as RisingWave's `MaterializeCache`
(`risingspark.table_kind` names the behaviours).

Per key, RisingWave applies the epoch's ops in order to the stored row: a delete (or U-) removes
it; an insert (or U+) of an absent key adds the row, and of a present key replaces it (Overwrite),
is dropped (IgnoreConflict) or overwrites only its non-NULL columns (DoUpdateIfNotNull). The
kernels here compute the same result per key without a loop over the ops, from the key's last
delete (by ``_seq``):

* the *base* row is the stored row if the epoch deleted nothing of the key, else none;
* the *live* inserts are those after the last delete;
* IgnoreConflict: the base row if there is one, else the first live insert;
* DoUpdateIfNotNull: each column's last non-NULL value among the live inserts, else the base
  row's value (NULL without a base row); the key exists if it has a base row or a live insert;
* Overwrite: the last op, if an insert (`materialize.pairs_from_dml`).

The result is the key's before-image (the stored row) and after-image, ready for `materialize.emit`.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from compute.executor.keyed import PRESENT, distinct_keys, last_per_key, left_join
from compute.executor.materialize import AFTER, BEFORE, Pairs, key_columns, pairs_from_dml
from risingspark.chunk import OP, SEQ, VNODE, is_insert_op
from risingspark.storage.desc import StateTableDesc
from risingspark.table_kind import ConflictBehavior

_DELETED = "__d"  # suffix of the key's last delete
_FIRST = "__f"  # suffix of the key's first live insert
_LAST = "__l"  # suffix of a column's last non-NULL live value
_NEG_SEQ = "__neg_seq"


def resolve_dml(desc: StateTableDesc, rows: pa.Table, old: pa.Table, behavior: ConflictBehavior) -> Pairs:
    """Before/after images per key of an epoch's DML (`_op`, `_seq`, `_vnode`, value columns),
    given the rows the table holds for those keys (`old`: `_vnode` and value columns)."""
    if behavior in (ConflictBehavior.OVERWRITE, ConflictBehavior.NO_CHECK):
        return pairs_from_dml(desc, rows, old)
    keys = key_columns(desc)
    names = desc.names
    cols = [VNODE, *names]
    inserts = rows.filter(is_insert_op(rows.column(OP)))
    deletes = rows.filter(pc.invert(is_insert_op(rows.column(OP))))
    last_delete = last_per_key(deletes.select([*keys, SEQ]), keys, SEQ)
    # the inserts after their key's last delete
    ins = left_join(inserts.select([*cols, SEQ]), last_delete, keys, right_suffix=_DELETED)
    after_delete = pc.or_(pc.invert(ins.column(f"{PRESENT}{_DELETED}")),
                          pc.fill_null(pc.greater(ins.column(SEQ), ins.column(f"{SEQ}{_DELETED}")), False))
    live = ins.filter(after_delete).select([*cols, SEQ])

    t = left_join(distinct_keys([rows], keys), old.select(cols), keys, right_suffix=BEFORE)
    t = left_join(t, last_delete, keys, right_suffix=_DELETED)
    negated = live.append_column(_NEG_SEQ, pc.negate(live.column(SEQ)))
    t = left_join(t, last_per_key(negated, keys, _NEG_SEQ).select(cols), keys, right_suffix=_FIRST)
    values = [n for n in names if n not in desc.pk_names]
    if behavior is ConflictBehavior.DO_UPDATE_IF_NOT_NULL:
        for i, n in enumerate(values):
            valued = live.filter(pc.is_valid(live.column(n)))
            t = left_join(t, last_per_key(valued, keys, SEQ).select([*keys, n]), keys, right_suffix=f"{_LAST}{i}")
    # (every join is done: the columns below line up)
    base = pc.and_(t.column(f"{PRESENT}{BEFORE}"), pc.invert(t.column(f"{PRESENT}{_DELETED}")))
    after: dict[str, pa.Array | pa.ChunkedArray] = {n: t.column(n) for n in desc.pk_names}
    for i, n in enumerate(values):
        stored = t.column(f"{n}{BEFORE}")
        if behavior is ConflictBehavior.IGNORE:
            after[n] = pc.if_else(base, stored, t.column(f"{n}{_FIRST}"))
        else:
            kept = pc.if_else(base, stored, pa.nulls(t.num_rows, stored.type))
            after[n] = pc.if_else(t.column(f"{PRESENT}{_LAST}{i}"), t.column(f"{n}{_LAST}{i}"), kept)
    out = {k: t.column(k) for k in keys}
    out.update({f"{n}{BEFORE}": t.column(f"{n}{BEFORE}") for n in names})
    out[f"{PRESENT}{BEFORE}"] = t.column(f"{PRESENT}{BEFORE}")
    out.update({f"{n}{AFTER}": after[n] for n in names})
    out[f"{PRESENT}{AFTER}"] = pc.or_(base, t.column(f"{PRESENT}{_FIRST}"))
    return Pairs(pa.table(out))
