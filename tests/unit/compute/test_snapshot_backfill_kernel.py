"""The net change of several epochs of a change log (`compact_changes`), and split planning."""

from __future__ import annotations

import random

import pyarrow as pa

from compute.executor.backfill.snapshot_backfill import LOG_EPOCH, compact_changes, next_split
from risingspark.barrier import SnapshotState, VnodeProgress
from risingspark.chunk import Op
from risingspark.snapshot_splits import plan_splits
from risingspark.storage.desc import StateTableDesc
from risingspark.types import INT4, INT8, Field

DESC = StateTableDesc(1, (Field("k", INT8), Field("v", INT4)), (0,), (0,))


def log(rows: list[tuple[int, Op, int, int | None]]) -> pa.Table:
    """(epoch, op, key, value) rows."""
    return pa.table({"_op": pa.array([int(r[1]) for r in rows], pa.int8()),
                     "_vnode": pa.array([r[2] % 4 for r in rows], pa.int16()),
                     "k": pa.array([r[2] for r in rows], pa.int64()), "v": pa.array([r[3] for r in rows], pa.int32()),
                     LOG_EPOCH: pa.array([r[0] for r in rows], pa.int64())})


def changes(t: pa.Table) -> set[tuple[int, int, int | None]]:
    return set(zip(t.column("_op").to_pylist(), t.column("k").to_pylist(), t.column("v").to_pylist(), strict=True))


def test_net_change_of_each_key() -> None:
    D, INS, UD, UI = Op.DELETE, Op.INSERT, Op.UPDATE_DELETE, Op.UPDATE_INSERT  # noqa: N806
    rows = log([
        (1, INS, 1, 10), (2, UD, 1, 10), (2, UI, 1, 11),        # inserted then updated: an insert
        (1, UD, 2, 20), (1, UI, 2, 21), (3, UD, 2, 21), (3, UI, 2, 22),  # updated twice: one update
        (1, D, 3, 30), (2, INS, 3, 31),                          # deleted then back: an update
        (1, INS, 4, 40), (3, D, 4, 40),                          # inserted then deleted: nothing
        (2, D, 5, 50),                                         # deleted once
    ])
    got = compact_changes(DESC, rows)
    assert changes(got) == {(int(INS), 1, 11), (int(UD), 2, 20), (int(UI), 2, 22), (int(UD), 3, 30), (int(UI), 3, 31),
                            (int(D), 5, 50)}


def test_random_histories_compose() -> None:
    rng = random.Random(7)
    for _ in range(30):
        start = {k: rng.randrange(100) for k in range(20) if rng.random() < 0.5}
        state = dict(start)
        rows = []
        for epoch in range(1, rng.randrange(2, 6)):
            for k in rng.sample(range(20), 8):
                before, after = state.get(k), (rng.randrange(100) if rng.random() < 0.7 else None)
                if before is not None and after is not None:
                    rows += [(epoch, Op.UPDATE_DELETE, k, before), (epoch, Op.UPDATE_INSERT, k, after)]
                elif before is not None:
                    rows.append((epoch, Op.DELETE, k, before))
                elif after is not None:
                    rows.append((epoch, Op.INSERT, k, after))
                if after is None:
                    state.pop(k, None)
                else:
                    state[k] = after
        if not rows:
            continue
        out = compact_changes(DESC, log(rows))
        applied = dict(start)
        seen_before, seen_after = set(), set()
        for op, k, v in zip(out.column("_op").to_pylist(), out.column("k").to_pylist(), out.column("v").to_pylist(),
                            strict=True):
            if op in (Op.DELETE, Op.UPDATE_DELETE):
                assert applied.get(k) == v and k not in seen_before
                seen_before.add(k)
                del applied[k]
        for op, k, v in zip(out.column("_op").to_pylist(), out.column("k").to_pylist(), out.column("v").to_pylist(),
                            strict=True):
            if op in (Op.INSERT, Op.UPDATE_INSERT):
                assert k not in applied and k not in seen_after
                seen_after.add(k)
                applied[k] = v
        assert applied == state


def test_splits_cover_every_vnode_once_and_resume_at_the_first_unfinished() -> None:
    for total in (0, 1, 3_999_999, 4_000_001, 10**8):
        splits = plan_splits(total)
        assert splits[0][0] == 0 and splits[-1][1] == 255
        assert all(a[1] + 1 == b[0] for a, b in zip(splits, splits[1:], strict=False))
    state = SnapshotState(1, (), True, plan_splits(10_000_000), 1)
    progress = [VnodeProgress(v, None, v < 85, 0) for v in range(256)]
    assert next_split(state, progress) == (85, 169)
    assert next_split(state, [VnodeProgress(v, None, True, 0) for v in range(256)]) is None
