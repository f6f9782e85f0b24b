"""A table's primary-key conflict handling (`compute.executor.pk_conflict`): the vectorized kernels
against a reference that applies each op in order, as RisingWave's materialize does, over random
DML with repeated keys, deletes and updates."""

from __future__ import annotations

import random
import zlib

import pyarrow as pa
import pytest

from compute.executor.materialize import AFTER, BEFORE, emit
from compute.executor.pk_conflict import resolve_dml
from risingspark.chunk import OP, SEQ, VNODE, Op
from risingspark.storage.desc import StateTableDesc
from risingspark.table_kind import ConflictBehavior
from risingspark.types import INT4, INT8, VARCHAR, Field

DESC = StateTableDesc(7, (Field("id", INT8), Field("a", INT4), Field("b", VARCHAR)), pk=(0,), dist_key=(0,))
Row = tuple[int, int | None, str | None]


def reference(behavior: ConflictBehavior, stored: dict[int, Row], ops: list[tuple[Op, Row]]) -> dict[int, Row]:
    rows = dict(stored)
    for op, row in ops:
        key = row[0]
        if op in (Op.DELETE, Op.UPDATE_DELETE):
            rows.pop(key, None)
        elif key not in rows or behavior is ConflictBehavior.OVERWRITE:
            rows[key] = row
        elif behavior is ConflictBehavior.DO_UPDATE_IF_NOT_NULL:
            old = rows[key]
            rows[key] = (key, *(n if n is not None else o for o, n in zip(old[1:], row[1:], strict=True)))
    return rows


def dml_table(ops: list[tuple[Op, Row]], seqs: list[int]) -> pa.Table:
    return pa.table({OP: pa.array([int(o) for o, _ in ops], pa.int8()), SEQ: pa.array(seqs, pa.int64()),
                     VNODE: pa.array([r[0] % 4 for _, r in ops], pa.int16()),
                     "id": pa.array([r[0] for _, r in ops], pa.int64()), "a": pa.array([r[1] for _, r in ops], pa.int32()),
                     "b": pa.array([r[2] for _, r in ops], pa.string())})


def stored_table(stored: dict[int, Row]) -> pa.Table:
    rows = list(stored.values())
    return pa.table({VNODE: pa.array([r[0] % 4 for r in rows], pa.int16()), "id": pa.array([r[0] for r in rows], pa.int64()),
                     "a": pa.array([r[1] for r in rows], pa.int32()), "b": pa.array([r[2] for r in rows], pa.string())})


def apply(behavior: ConflictBehavior, stored: dict[int, Row], ops: list[tuple[Op, Row]],
          shuffle: random.Random | None = None) -> dict[int, Row]:
    """The kernel's result: the stored rows with the epoch's after-images applied. The DML rows may
    arrive in any order (a Spark partition's order); `_seq` orders them."""
    seqs = list(range(100, 100 + len(ops)))
    order = list(range(len(ops)))
    if shuffle is not None:
        shuffle.shuffle(order)
    rows = dml_table([ops[i] for i in order], [seqs[i] for i in order])
    pairs = resolve_dml(DESC, rows, stored_table(stored), behavior).table
    out = dict(stored)
    for r in pairs.to_pylist():
        key = r["id"]
        assert r[f"__present{BEFORE}"] == (key in stored)
        if r[f"__present{AFTER}"]:
            out[key] = (key, r[f"a{AFTER}"], r[f"b{AFTER}"])
        else:
            out.pop(key, None)
    return out


def test_ignore_keeps_the_first_row_of_a_key():
    ops = [(Op.INSERT, (1, 1, "x")), (Op.INSERT, (1, 2, "y")), (Op.INSERT, (2, 3, None))]
    assert apply(ConflictBehavior.IGNORE, {2: (2, 9, "old")}, ops) == {1: (1, 1, "x"), 2: (2, 9, "old")}


def test_ignore_after_a_delete_takes_the_next_insert():
    ops = [(Op.INSERT, (1, 5, "dropped")), (Op.DELETE, (1, 0, "old")), (Op.INSERT, (1, 6, "kept")),
           (Op.INSERT, (1, 7, "dropped"))]
    assert apply(ConflictBehavior.IGNORE, {1: (1, 0, "old")}, ops) == {1: (1, 6, "kept")}


def test_do_update_if_not_null_merges_non_null_columns():
    ops = [(Op.INSERT, (1, None, "new")), (Op.INSERT, (1, 4, None)), (Op.INSERT, (3, None, None))]
    assert apply(ConflictBehavior.DO_UPDATE_IF_NOT_NULL, {1: (1, 0, "old")}, ops) == \
        {1: (1, 4, "new"), 3: (3, None, None)}


def test_an_update_to_null_is_no_conflict():
    """UPDATE t SET a = NULL is a delete and an insert: the NULL is stored, not merged."""
    ops = [(Op.UPDATE_DELETE, (1, 0, "old")), (Op.UPDATE_INSERT, (1, None, "old"))]
    assert apply(ConflictBehavior.DO_UPDATE_IF_NOT_NULL, {1: (1, 0, "old")}, ops) == {1: (1, None, "old")}


@pytest.mark.parametrize("behavior", [ConflictBehavior.OVERWRITE, ConflictBehavior.IGNORE,
                                      ConflictBehavior.DO_UPDATE_IF_NOT_NULL])
def test_random_epochs_match_applying_ops_in_order(behavior: ConflictBehavior):
    rng = random.Random(zlib.crc32(behavior.value.encode()))
    for _ in range(200):
        stored = {k: (k, rng.choice([None, rng.randint(0, 9)]), rng.choice([None, "s", "t"]))
                  for k in rng.sample(range(8), rng.randint(0, 6))}
        ops: list[tuple[Op, Row]] = []
        for _ in range(rng.randint(1, 14)):
            key = rng.randint(0, 7)
            row = (key, rng.choice([None, rng.randint(0, 9)]), rng.choice([None, "u", "v", "w"]))
            ops.append((rng.choice([Op.INSERT, Op.INSERT, Op.INSERT, Op.DELETE]), row))
        assert apply(behavior, stored, ops, rng) == reference(behavior, stored, ops), (stored, ops)


def test_emit_of_ignored_inserts_changes_nothing():
    """An insert IGNORE drops emits no change and writes no row."""
    rows = dml_table([(Op.INSERT, (1, 2, "y"))], [5])
    pairs = resolve_dml(DESC, rows, stored_table({1: (1, 1, "x")}), ConflictBehavior.IGNORE)
    out = emit(DESC, pairs, 1 << 16)
    assert out.changes.num_rows == 0 and out.sst_rows.num_rows == 0
