"""StreamHashJoin: an incremental equi-join with retraction, as RisingWave's `HashJoinExecutor`.

State, one table per side, keyed by ``(join key, the side's stream key)`` and distributed by the
join key (all rows of a key live in one vnode)::

    | join key ... | side's stream key ... | other columns of the side |

For an epoch's input (both sides' changes, tagged ``_side``; every row of a join key lands in the
same task), the executor:

1. reduces each side's changes to before/after images per state key and writes them to the side's
   state (upserts and tombstones);
2. for every join key the epoch touched (NULL keys match nothing), joins the sides' old rows, and
   their new rows (old with the epoch's images applied), and diffs the two results per output
   stream key (left stream key, right stream key): keys whose row is unchanged emit nothing.

Rows of keys the epoch did not touch are never read. The cost of a touched key is the size of its
join result; outer joins pad the missing side with NULLs, also as keys appear and disappear.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from compute.executor.keyed import distinct_keys
from compute.executor.materialize import BEFORE, Pairs, apply_pairs, diff_outputs, emit, pairs_from_changes
from risingspark.chunk import OP, VNODE
from risingspark.storage.desc import StateTableDesc

SIDE = "_side"
_JOIN_TYPES = {"INNER": "inner", "LEFT": "left outer", "RIGHT": "right outer", "FULL": "full outer",
               "SEMI": "left semi", "ANTI": "left anti"}


@dataclass(frozen=True)
class JoinSpec:
    kind: str  # INNER, LEFT, RIGHT, FULL, SEMI, ANTI
    left: StateTableDesc  # fields: the left input's columns
    right: StateTableDesc
    left_key: tuple[str, ...]
    right_key: tuple[str, ...]
    output_key: tuple[str, ...]  # the output's stream key columns

    @property
    def output_names(self) -> list[str]:
        if self.kind in ("SEMI", "ANTI"):
            return list(self.left.names)
        return [*self.left.names, *self.right.names]


@dataclass(frozen=True)
class JoinOutput:
    left_state_rows: pa.Table  # SST rows for each side's state
    right_state_rows: pa.Table
    changes: pa.Table  # _op, _vnode (0: the next exchange assigns it), output columns


def touched_keys(spec: JoinSpec, rows: pa.Table) -> pa.Table:
    """The distinct non-NULL join keys of an epoch's input (``_vnode`` + the left key names)."""
    left = rows.filter(pc.equal(rows.column(SIDE), 0)).select([VNODE, *spec.left_key])
    right = rows.filter(pc.equal(rows.column(SIDE), 1)).select([VNODE, *spec.right_key]) \
        .rename_columns([VNODE, *spec.left_key])
    both = pa.concat_tables([left, right.cast(left.schema)])
    for k in spec.left_key:
        both = both.filter(pc.is_valid(both.column(k)))
    return distinct_keys([both], [VNODE, *spec.left_key])


def join_epoch(spec: JoinSpec, rows: pa.Table, left_state: pa.Table, right_state: pa.Table, epoch: int) -> JoinOutput:
    """One epoch of the join. `left_state`/`right_state`: the sides' rows (``_vnode`` + columns) at
    the previous epoch for (at least) the join keys `touched_keys` gives; others are ignored."""
    side = rows.column(SIDE)
    dl = rows.filter(pc.equal(side, 0)).select([OP, VNODE, *spec.left.names])
    dr = rows.filter(pc.equal(side, 1)).select([OP, VNODE, *spec.right.names])
    pl = pairs_from_changes(spec.left, dl)
    pr = pairs_from_changes(spec.right, dr)
    left_sst = emit(spec.left, pl, epoch).sst_rows
    right_sst = emit(spec.right, pr, epoch).sst_rows

    keys = touched_keys(spec, rows)
    l_old = _of_keys(left_state.select([VNODE, *spec.left.names]), keys, list(spec.left_key), list(spec.left_key))
    r_old = _of_keys(right_state.select([VNODE, *spec.right.names]), keys, list(spec.right_key),
                     list(spec.left_key))
    # Rows with a NULL join key are never stored under a touched key; they join nothing, but an
    # outer join still pads them: take their images from the epoch's changes.
    # (state rows come with a non-nullable _vnode: the schemas unify)
    l_old = pa.concat_tables([l_old, _null_key_images(pl, spec.left, spec.left_key, BEFORE)], promote_options="default")
    r_old = pa.concat_tables([r_old, _null_key_images(pr, spec.right, spec.right_key, BEFORE)],
                             promote_options="default")
    l_new = apply_pairs(l_old, pl, spec.left)
    r_new = apply_pairs(r_old, pr, spec.right)
    old_out = _join(spec, l_old, r_old)
    new_out = _join(spec, l_new, r_new)
    return JoinOutput(left_sst, right_sst, diff_outputs(spec.output_names, spec.output_key, old_out, new_out))


def _of_keys(state: pa.Table, keys: pa.Table, state_key: list[str], key_names: list[str]) -> pa.Table:
    """The rows of `state` whose join key is one of `keys` (NULL-free)."""
    if state.num_rows == 0 or keys.num_rows == 0:
        return state.slice(0, 0)
    wanted = keys.rename_columns([VNODE, *state_key]).cast(
        pa.schema([state.schema.field(n) for n in [VNODE, *state_key]]))
    return state.join(wanted, keys=[VNODE, *state_key], join_type="left semi").select(state.column_names)


def _null_key_images(pairs: Pairs, desc: StateTableDesc, key: tuple[str, ...], which: str) -> pa.Table:
    t = pairs.table
    present = t.column(f"__present{which}")
    null_key = pc.is_null(t.column(f"{key[0]}{which}"))
    for k in key[1:]:
        null_key = pc.or_(null_key, pc.is_null(t.column(f"{k}{which}")))
    t = t.filter(pc.and_(present, null_key))
    return pa.table({VNODE: t.column(VNODE), **{n: t.column(f"{n}{which}") for n in desc.names}})


def _join(spec: JoinSpec, left: pa.Table, right: pa.Table) -> pa.Table:
    names = spec.output_names
    if left.num_rows == 0 and right.num_rows == 0:
        types = [*left.schema.types[1:], *right.schema.types[1:]]
        return pa.table({n: pa.array([], t) for n, t in zip(names, types[:len(names)], strict=True)})
    out = left.drop_columns([VNODE]).join(right.drop_columns([VNODE]), keys=list(spec.left_key),
                                          right_keys=list(spec.right_key), join_type=_JOIN_TYPES[spec.kind],
                                          coalesce_keys=False, use_threads=False)
    return out.select(names)
