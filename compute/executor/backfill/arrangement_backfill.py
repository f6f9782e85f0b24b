"""Arrangement backfill, as RisingWave's `ArrangementBackfillExecutor`.

Persisted state, one row per upstream vnode (kept in the meta store, committed with each epoch)::

    | vnode | pk ... (position) | backfill_finished | row_count |

Each epoch round, every actor (a contiguous range of upstream vnodes):

1. reads the next chunk of the upstream snapshot after each of its unfinished vnodes' positions,
   at the previous (committed) epoch — keys in ``(old position, new position]``;
2. takes the upstream's changes of this epoch for its vnodes and, per row, by its vnode's state:

   * vnode finished in an earlier epoch, or key <= old position: forward the change as it is
     (downstream already holds the key's snapshot value);
   * key in ``(old position, new position]`` (or any key after the old position when the vnode
     finishes in this epoch): downstream has never seen the key; the change is folded into the
     snapshot chunk, so the key is emitted once, as an Insert of its value at this epoch, or not at
     all if the epoch deleted it;
   * key after the new position: dropped; a later snapshot read, at a later epoch, includes it.

RisingWave forwards upstream rows with ``pk <= current_pos`` after the epoch's snapshot reads; the
folding in the middle case is the same rule written so that a key is never both inserted from the
snapshot and updated by a change in one epoch (the change-stream invariant of `stream_plan`).
A vnode never read before (position None) has nothing at or before its position.

Memory per round is bounded by the snapshot chunk plus one epoch of upstream changes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from compute.executor.keyed import first_per_key, join_keys
from risingspark.barrier import VnodeProgress
from risingspark.chunk import OP, VNODE, Op, is_insert_op, op_field
from risingspark.storage.desc import StateTableDesc
from risingspark.storage.mvcc import compare_to_positions, positions_table
from risingspark.storage.reader import ScanResult


@dataclass(frozen=True)
class BackfillStep:
    """The output of one actor's epoch: rows for the downstream operators (`_op` + upstream
    columns) and the new state of the vnodes it touched."""

    rows: pa.Table
    progress: tuple[VnodeProgress, ...]
    snapshot_rows: int
    forwarded_rows: int


def snapshot_positions(progress: list[VnodeProgress]) -> dict[int, tuple | None]:
    """The vnodes to read this epoch (every unfinished one) and their positions."""
    return {p.vnode: p.position for p in progress if not p.finished}


def step(desc: StateTableDesc, progress: list[VnodeProgress], scan: ScanResult,
         changes: pa.Table) -> BackfillStep:
    """Merge one snapshot chunk (`scan`) with the epoch's upstream `changes` (`_op`, `_vnode`,
    upstream columns; any vnodes) for the vnodes in `progress`."""
    names = desc.names
    state = {p.vnode: p for p in progress}
    owned = pa.array(sorted(state), pa.int16())
    changes = changes.filter(pc.is_in(changes.column(VNODE), owned)) if changes.num_rows else changes

    finished_before = {v for v, p in state.items() if p.finished}
    new_progress: list[VnodeProgress] = []
    new_pos: dict[int, tuple | None] = {}
    finishing: set[int] = set()
    for v, p in state.items():
        if p.finished:
            continue
        pos = scan.positions.get(v, p.position)
        done = v in scan.finished
        if done:
            finishing.add(v)
        new_pos[v] = pos
        new_progress.append(VnodeProgress(v, pos, done, p.row_count + scan.rows_per_vnode.get(v, 0)))

    # Classify every change by its vnode's old and new positions.
    if changes.num_rows:
        vn = changes.column(VNODE).to_numpy()
        old_positions = positions_table(desc, {v: p.position for v, p in state.items() if not p.finished})
        has_old, gt_old, _ = compare_to_positions(changes, desc, old_positions)
        at_or_before_old = has_old & ~gt_old
        new_positions = positions_table(desc, {v: p for v, p in new_pos.items() if v not in finishing})
        has_new, gt_new, _ = compare_to_positions(changes, desc, new_positions)
        is_finished_before = np.isin(vn, list(finished_before))
        is_finishing = np.isin(vn, list(finishing))
        forward = is_finished_before | at_or_before_old
        # after the old position and at or before the new one, or anywhere after it if finishing
        fold = ~forward & (is_finishing | (has_new & ~gt_new))
        forwarded = changes.filter(pa.array(forward))
        folded = changes.filter(pa.array(fold))
    else:
        forwarded = changes
        folded = changes

    snapshot = scan.rows.select([VNODE, *names])
    if folded.num_rows:
        keys = [VNODE, *desc.pk_names]
        after = first_per_key(folded.filter(is_insert_op(folded.column(OP))).select([VNODE, *names]), keys)
        touched = first_per_key(folded.select(keys), keys)
        snapshot = _anti_join(snapshot, touched, keys)
        snapshot = pa.concat_tables([snapshot, after.cast(snapshot.schema)])
    inserts = snapshot.select(names)
    inserts = inserts.add_column(0, op_field(), pa.array([int(Op.INSERT)] * inserts.num_rows, pa.int8()))
    out = pa.concat_tables([inserts, forwarded.select([OP, *names]).cast(inserts.schema)])
    return BackfillStep(out, tuple(new_progress), scan.rows.num_rows, forwarded.num_rows)


def _anti_join(left: pa.Table, right: pa.Table, keys: list[str]) -> pa.Table:
    if left.num_rows == 0 or right.num_rows == 0:
        return left
    lt, lk = join_keys(left, keys)
    rt, _ = join_keys(right, keys)
    out = lt.join(rt.select(lk), keys=lk, join_type="left anti")
    return out.select(left.column_names)
