"""The join kernel against a model: random changes to both sides over many epochs; the output's
changes, applied downstream, always equal the join recomputed from scratch (inner, left, right and
full outer, semi and anti joins; NULL keys never match, but in a NULL-safe key (IS NOT DISTINCT
FROM); join keys that change; rows that repeat a key; cross joins, without a key; conditions
besides the keys, tested while rows match)."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from compute.executor.hash_join import SIDE, JoinSpec, join_epoch, keys_to_read
from risingspark import arrow_expr
from risingspark.chunk import Op
from risingspark.storage.desc import StateTableDesc
from risingspark.types import INT4, INT8, VARCHAR, Field

LEFT = StateTableDesc(10, (Field("l.id", INT8), Field("l.k", INT4), Field("l.v", VARCHAR)), (1, 0), (1,))
RIGHT = StateTableDesc(11, (Field("r.id", INT8), Field("r.k", INT4), Field("r.w", INT4)), (1, 0), (1,))


MODES = ["equi", "null_safe", "cross", "condition"]
# the rest of ON in mode "condition": l.id <> r.id AND r.w > 3
CONDITION = {"call": "and_kleene", "args": [
    {"call": "not_equal", "args": [{"col": "l.id"}, {"col": "r.id"}]},
    {"call": "greater", "args": [{"col": "r.w"}, {"lit": 3, "type": INT4.to_json()}]}]}


def spec(kind: str, mode: str = "equi") -> JoinSpec:
    keys = ((), ()) if mode == "cross" else (("l.k",), ("r.k",))
    return JoinSpec(kind, LEFT if mode != "cross" else CROSS_LEFT, RIGHT if mode != "cross" else CROSS_RIGHT, *keys,
                    ("l.id",) if kind in ("SEMI", "ANTI") else ("l.id", "r.id"), (True,) if mode == "null_safe" else (),
                    arrow_expr.dumps(CONDITION) if mode == "condition" else "")


# a cross join's sides: keyed by their stream key alone, all rows in one vnode
CROSS_LEFT = StateTableDesc(10, LEFT.fields, (0,), ())
CROSS_RIGHT = StateTableDesc(11, RIGHT.fields, (0,), ())


def matches(mode: str, lk, rk, lrow: tuple = (), rrow: tuple = ()) -> bool:
    if mode == "cross":
        return True
    if mode == "condition":
        return lk is not None and lk == rk and lrow[0] != rrow[0] and rrow[2] > 3
    if mode == "null_safe":
        return lk == rk
    return lk is not None and lk == rk


def model_join(kind: str, left: dict, right: dict, mode: str = "equi") -> dict:
    """Output stream key -> row, by nested loops over {id: (id, k, v)} sides."""
    out = {}
    matched_r = set()
    for lid, (_, lk, lv) in left.items():
        hits = [r for r in right.values() if matches(mode, lk, r[1], (lid, lk, lv), r)]
        if kind in ("SEMI", "ANTI"):
            if bool(hits) == (kind == "SEMI"):
                out[(lid, None)] = (lid, lk, lv, None, None, None)
            continue
        for rid, rk, rw in hits:
            out[(lid, rid)] = (lid, lk, lv, rid, rk, rw)
            matched_r.add(rid)
        if not hits and kind in ("LEFT", "FULL"):
            out[(lid, None)] = (lid, lk, lv, None, None, None)
    if kind in ("RIGHT", "FULL"):
        for rid, (_, rk, rw) in right.items():
            if rid not in matched_r:
                out[(None, rid)] = (None, None, None, rid, rk, rw)
    return out


def vnode(k, mode: str = "equi") -> int:
    return 0 if k is None or mode == "cross" else k % 4


def side_rows(side: int, changes: list[tuple[Op, tuple]], width: int, mode: str = "equi") -> list[dict]:
    out = []
    for op, row in changes:
        values = list(row) + [None] * 3 if side == 0 else [None] * 3 + list(row)
        out.append({SIDE: side, "_op": int(op), "_vnode": vnode(row[1], mode), "l.id": values[0], "l.k": values[1],
                    "l.v": values[2], "r.id": values[3], "r.k": values[4], "r.w": values[5]})
    return out


def state_table(desc: StateTableDesc, rows: dict, mode: str = "equi") -> pa.Table:
    # as the state reader returns them: _vnode is not nullable
    t = pa.table({"_vnode": pa.array([vnode(r[1], mode) for r in rows.values()], pa.int16()),
                  **{f.name: pa.array([r[i] for r in rows.values()], f.type.to_arrow())
                     for i, f in enumerate(desc.fields)}})
    return t.cast(pa.schema([t.schema.field(0).with_nullable(False), *list(t.schema)[1:]]))


SCHEMA = pa.schema([(SIDE, pa.int8()), ("_op", pa.int8()), ("_vnode", pa.int16()), ("l.id", pa.int64()),
                    ("l.k", pa.int32()), ("l.v", pa.string()), ("r.id", pa.int64()), ("r.k", pa.int32()),
                    ("r.w", pa.int32())])


def epoch_changes(rng: random.Random, state: dict, make) -> list[tuple[Op, tuple]]:
    changes = []
    for rid in rng.sample(range(12), 5):
        before = state.get(rid)
        after = make(rid) if rng.random() < 0.7 else None
        if before is not None and after is not None:
            changes += [(Op.UPDATE_DELETE, before), (Op.UPDATE_INSERT, after)]
        elif before is not None:
            changes.append((Op.DELETE, before))
        elif after is not None:
            changes.append((Op.INSERT, after))
        if after is None:
            state.pop(rid, None)
        else:
            state[rid] = after
    return changes


# every kind with every mode: the equi-join over more seeds, the other modes over a few
CASES = [(mode, seed) for mode in MODES for seed in range(10 if mode == "equi" else 3)]


@pytest.mark.parametrize("mode,seed", CASES)
@pytest.mark.parametrize("kind", ["INNER", "LEFT", "RIGHT", "FULL", "SEMI", "ANTI"])
def test_join_follows_the_model(kind: str, seed: int, mode: str) -> None:
    rng = random.Random(seed)
    keys = [None, 1, 2, 3, 5]
    left: dict = {}
    right: dict = {}
    downstream: dict = {}
    s = spec(kind, mode)
    for epoch in range(1, 30):
        old_left, old_right = dict(left), dict(right)
        cl = epoch_changes(rng, left, lambda i: (i, rng.choice(keys), rng.choice("xyz")))
        cr = epoch_changes(rng, right, lambda i: (i, rng.choice(keys), rng.randrange(9))) if rng.random() < 0.8 else []
        rows = pa.Table.from_pylist(side_rows(0, cl, 3, mode) + side_rows(1, cr, 3, mode), schema=SCHEMA)
        # the state holds only the keys the join asks for: it must not need any other stored row
        read_left, read_right = keys_to_read(s, rows)
        if mode == "cross":  # one group: a side is read whole or not at all
            lk = {r[1] for r in old_left.values()} if read_left.num_rows else set()
            rk = {r[1] for r in old_right.values()} if read_right.num_rows else set()
        else:
            lk, rk = set(read_left.column("l.k").to_pylist()), set(read_right.column("l.k").to_pylist())
            if mode in ("equi", "condition"):
                assert None not in lk | rk
        out = join_epoch(s, rows, state_table(s.left, {i: r for i, r in old_left.items() if r[1] in lk}, mode),
                         state_table(s.right, {i: r for i, r in old_right.items() if r[1] in rk}, mode), epoch)
        befores, afters = set(), set()
        for r in out.changes.to_pylist():
            key = (r["l.id"], r.get("r.id"))
            row = (r["l.id"], r["l.k"], r["l.v"], r.get("r.id"), r.get("r.k"), r.get("r.w"))
            if r["_op"] in (Op.DELETE, Op.UPDATE_DELETE):
                assert key not in befores and downstream.get(key) == row, (key, row, downstream.get(key))
                befores.add(key)
        for r in out.changes.to_pylist():
            key = (r["l.id"], r.get("r.id"))
            row = (r["l.id"], r["l.k"], r["l.v"], r.get("r.id"), r.get("r.k"), r.get("r.w"))
            if r["_op"] in (Op.DELETE, Op.UPDATE_DELETE):
                del downstream[key]
            else:
                assert key not in afters and key not in downstream
                afters.add(key)
                downstream[key] = row
        assert downstream == model_join(kind, left, right, mode), f"epoch {epoch}"
