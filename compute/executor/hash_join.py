"""StreamHashJoin: an incremental equi-join with retraction, as RisingWave's `HashJoinExecutor`.

State, one table per side, keyed by ``(join key, the side's stream key)`` and distributed by the
join key (all rows of a key live in one vnode)::

    | join key ... | side's stream key ... | other columns of the side |

For an epoch's input (both sides' changes, tagged ``_side``; every row of a join key lands in the
same task), the executor:

1. reduces each side's changes to before/after images per state key and writes them to the side's
   state (upserts and tombstones);
2. for every join key the epoch touched (NULL keys match nothing, but in a ``null_safe`` key
   column: ``IS NOT DISTINCT FROM``), joins the sides' old rows, and their new rows (old with the
   epoch's images applied), and diffs the two results per output stream key (left stream key,
   right stream key): keys whose row is unchanged emit nothing.

A cross join (no key) is the same algorithm over one group: both sides live in vnode 0 and every
row matches every row, so a change on one side reads the other side whole — cheap when that side is
a single row (a scalar subquery, an aggregate without GROUP BY), as RisingWave plans such joins.

A side's stored rows of a key are read only when the output can change for rows the epoch did not
touch (`keys_to_read`): when only the left side changed at a key, the left rows that did not change
join the unchanged right rows as before, so the left side's old rows are its changed rows'
before-images and only the right side is read — a fact table's changes read the small dimension
side, never the fact side's other rows. The exceptions need the unchanged rows: the other side of
an outer join pads them (a RIGHT or FULL join reads the left rows when the left side changed, since
the right rows' padding depends on whether any left row exists), and a semi or anti join's left rows
depend on the existence of right rows. Rows of keys the epoch did not touch are never read. The cost
of a touched key is the size of the join result of its changed rows (RisingWave reads the other
side's rows the same way, through its join cache).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.acero as acero
import pyarrow.compute as pc

from compute.executor.keyed import distinct_keys, filter_by_keys, join_keys
from compute.executor.materialize import BEFORE, Pairs, apply_pairs, diff_outputs, emit, pairs_from_changes
from risingspark import arrow_expr
from risingspark.arrow_expr import to_arrow
from risingspark.chunk import OP, VNODE
from risingspark.storage.desc import StateTableDesc

SIDE = "_side"
_CROSS = "__cross"
_RIGHT_SUFFIX = "__right"  # (helper key columns of both sides share names)
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
    null_safe: tuple[bool, ...] = ()  # per key column: NULL matches NULL (IS NOT DISTINCT FROM)
    condition: str = ""  # more of ON, tested while rows match (`risingspark.arrow_expr` JSON)

    def key_is_null_safe(self, i: int) -> bool:
        return i < len(self.null_safe) and self.null_safe[i]

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


def _side_keys(spec: JoinSpec, rows: pa.Table, side: int) -> pa.Table:
    """The distinct non-NULL join keys of one side's changes (``_vnode`` + the left key names)."""
    key = spec.left_key if side == 0 else spec.right_key
    t = rows.filter(pc.equal(rows.column(SIDE), side)).select([VNODE, *key]).rename_columns([VNODE, *spec.left_key])
    for i, k in enumerate(spec.left_key):
        if not spec.key_is_null_safe(i):
            t = t.filter(pc.is_valid(t.column(k)))
    return distinct_keys([t], [VNODE, *spec.left_key])


def touched_keys(spec: JoinSpec, rows: pa.Table) -> pa.Table:
    """The distinct non-NULL join keys of an epoch's input (``_vnode`` + the left key names)."""
    left, right = _side_keys(spec, rows, 0), _side_keys(spec, rows, 1)
    return distinct_keys([left, right.cast(left.schema)], [VNODE, *spec.left_key])


def keys_to_read(spec: JoinSpec, rows: pa.Table) -> tuple[pa.Table, pa.Table]:
    """The join keys (``_vnode`` + the left key names) whose stored rows each side must read (see the
    module doc): a side is read at the keys where the other side changed, and at the keys where it
    changed itself when the other side pads it (RIGHT/FULL for the left side; LEFT/FULL, SEMI and
    ANTI for the right side)."""
    left, right = _side_keys(spec, rows, 0), _side_keys(spec, rows, 1)
    right = right.cast(left.schema)
    names = [VNODE, *spec.left_key]
    read_left = [right, left] if spec.kind in ("RIGHT", "FULL") else [right]
    read_right = [left, right] if spec.kind in ("LEFT", "FULL", "SEMI", "ANTI") else [left]
    return distinct_keys(read_left, names), distinct_keys(read_right, names)


def join_epoch(spec: JoinSpec, rows: pa.Table, left_state: pa.Table, right_state: pa.Table, epoch: int,
               read: tuple[pa.Table, pa.Table] | None = None) -> JoinOutput:
    """One epoch of the join. `left_state`/`right_state`: the sides' rows (``_vnode`` + columns) at
    the previous epoch for (at least) the join keys of `read` (`keys_to_read` when None; others are
    ignored)."""
    side = rows.column(SIDE)
    dl = rows.filter(pc.equal(side, 0)).select([OP, VNODE, *spec.left.names])
    dr = rows.filter(pc.equal(side, 1)).select([OP, VNODE, *spec.right.names])
    pl = pairs_from_changes(spec.left, dl)
    pr = pairs_from_changes(spec.right, dr)
    left_sst = emit(spec.left, pl, epoch).sst_rows
    right_sst = emit(spec.right, pr, epoch).sst_rows

    read_left, read_right = read if read is not None else keys_to_read(spec, rows)
    l_old = _old_rows(spec.left, spec.left_key, spec.left_key, left_state, read_left, pl)
    r_old = _old_rows(spec.right, spec.right_key, spec.left_key, right_state, read_right, pr)
    l_new = apply_pairs(l_old, pl, spec.left)
    r_new = apply_pairs(r_old, pr, spec.right)
    old_out = _join(spec, l_old, r_old)
    new_out = _join(spec, l_new, r_new)
    return JoinOutput(left_sst, right_sst, diff_outputs(spec.output_names, spec.output_key, old_out, new_out))


def _old_rows(desc: StateTableDesc, key: tuple[str, ...], key_names: tuple[str, ...], state: pa.Table,
              read: pa.Table, pairs: Pairs) -> pa.Table:
    """A side's rows before the epoch, as far as the join needs them: its stored rows at the keys it
    read, and elsewhere the before-images of its changed rows (NULL keys included: they join nothing,
    but an outer join still pads them)."""
    stored = _of_keys(state.select([VNODE, *desc.names]), read, list(key), list(key_names))
    images = _images(pairs, desc, BEFORE)
    if images.num_rows and read.num_rows:
        wanted = read.rename_columns([VNODE, *key]).cast(pa.schema([images.schema.field(n) for n in [VNODE, *key]]))
        images = filter_by_keys(images, wanted, [VNODE, *key], keep=False)
    # (state rows come with a non-nullable _vnode: the schemas unify)
    return pa.concat_tables([stored, images], promote_options="default")


def _of_keys(state: pa.Table, keys: pa.Table, state_key: list[str], key_names: list[str]) -> pa.Table:
    """The rows of `state` whose join key is one of `keys` (NULL equal to NULL: `keys` holds a NULL
    only in a null-safe key column)."""
    if state.num_rows == 0 or keys.num_rows == 0:
        return state.slice(0, 0)
    wanted = keys.rename_columns([VNODE, *state_key]).cast(
        pa.schema([state.schema.field(n) for n in [VNODE, *state_key]]))
    return filter_by_keys(state, wanted, [VNODE, *state_key], keep=True)


def _images(pairs: Pairs, desc: StateTableDesc, which: str) -> pa.Table:
    """The `which` (before or after) images of the keys of `pairs` that have one."""
    t = pairs.table
    t = t.filter(t.column(f"__present{which}"))
    return pa.table({VNODE: t.column(VNODE), **{n: t.column(f"{n}{which}") for n in desc.names}})


def _join(spec: JoinSpec, left: pa.Table, right: pa.Table) -> pa.Table:
    names = spec.output_names
    if left.num_rows == 0 and right.num_rows == 0:
        types = [*left.schema.types[1:], *right.schema.types[1:]]
        return pa.table({n: pa.array([], t) for n, t in zip(names, types[:len(names)], strict=True)})
    left, right = left.drop_columns([VNODE]), right.drop_columns([VNODE])
    if not spec.left_key:  # a cross join: one constant key
        left = left.append_column(_CROSS, pa.array([0] * left.num_rows, pa.int8()))
        right = right.append_column(_CROSS, pa.array([0] * right.num_rows, pa.int8()))
        lkey, rkey = [_CROSS], [_CROSS]
    else:
        lkey, rkey = [], []
        for i, (lk, rk) in enumerate(zip(spec.left_key, spec.right_key, strict=True)):
            if spec.key_is_null_safe(i):  # join on (is NULL, the value or a zero) instead
                left, lnames = join_keys(left, [lk])
                right, rnames = join_keys(right, [rk])
                lkey += lnames
                rkey += rnames
            else:
                lkey.append(lk)
                rkey.append(rk)
    if spec.condition:
        out = _join_with_condition(spec, left, right, lkey, rkey)
    else:
        out = left.join(right, keys=lkey, right_keys=rkey, join_type=_JOIN_TYPES[spec.kind], coalesce_keys=False,
                        use_threads=False, right_suffix=_RIGHT_SUFFIX)
    return out.select(names)


def _join_with_condition(spec: JoinSpec, left: pa.Table, right: pa.Table, lkey: list[str],
                         rkey: list[str]) -> pa.Table:
    """Arrow's hash join with the rest of ON as its residual filter: a pair of rows matches when the
    keys are equal and the condition is true (outer joins pad, semi / anti joins count, only such
    pairs), as SQL's ON."""
    if set(left.column_names) & set(right.column_names):  # (helper key columns of a cross join)
        right = right.rename_columns([f"{c}{_RIGHT_SUFFIX}" if c in left.column_names else c
                                      for c in right.column_names])
        rkey = [f"{k}{_RIGHT_SUFFIX}" if k in left.column_names else k for k in rkey]
    options = acero.HashJoinNodeOptions(_JOIN_TYPES[spec.kind], left_keys=lkey, right_keys=rkey,
                                        filter_expression=to_arrow(arrow_expr.loads(spec.condition)))
    plan = acero.Declaration("hashjoin", options, inputs=[
        acero.Declaration("table_source", acero.TableSourceNodeOptions(left)),
        acero.Declaration("table_source", acero.TableSourceNodeOptions(right))])
    return plan.to_table(use_threads=False)
