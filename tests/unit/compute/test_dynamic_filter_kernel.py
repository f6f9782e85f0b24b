"""The dynamic filter kernel over real SSTs: random inserts, updates (of the compared column too)
and deletes of the left side, while the one-row right side moves up and down, disappears and comes
back; the output's changes, applied downstream, always equal the rows passing ``key op bound`` at the
epoch's bound, and each epoch reads only the state rows between the two bounds."""

from __future__ import annotations

import random
from decimal import Decimal

import pyarrow as pa
import pytest

from compute.executor.dynamic_filter import (
    BOUND_COLUMN,
    DynamicFilterSpec,
    dynamic_filter_epoch,
    last_bound,
    new_bound,
    range_to_read,
)
from risingspark.chunk import OP, Op
from risingspark.storage.desc import SstableInfo, StateTableDesc
from risingspark.storage.object_store import ObjectStore
from risingspark.storage.reader import StateTableReader, read_schema
from risingspark.storage.sst import write_sst
from risingspark.types import INT2, INT8, DataType, Field

KEY = DataType.parse("numeric(12,2)")
FIELDS = (Field("id", INT8), Field("k", KEY))


class FilterJob:
    """A StreamDynamicFilter over real SSTs, epoch by epoch, with a replica of its output."""

    def __init__(self, store: ObjectStore, op: str) -> None:
        self.reader = StateTableReader(store)
        self.store = store
        self.spec = DynamicFilterSpec(StateTableDesc(40, FIELDS, (1, 0), ()),
                                      StateTableDesc(41, (Field("_rw_key", INT2), Field(BOUND_COLUMN, KEY)), (0,), ()),
                                      "k", op, "b", ("id",))
        self.ssts: dict[int, list[SstableInfo]] = {}
        self.epoch = 0
        self.replica: dict[int, tuple] = {}
        self.last_range_rows = 0

    def write(self, desc: StateTableDesc, rows: pa.Table) -> None:
        if rows.num_rows:
            self.ssts.setdefault(desc.table_id, []).append(
                write_sst(self.store, desc, rows, f"{desc.table_id}/{self.epoch}.parquet", level=0, sub_level=self.epoch))

    def run(self, changes: list[tuple[Op, tuple]], right: list[tuple[Op, Decimal | None]]) -> None:
        prev = self.epoch or None
        self.epoch += 1
        spec = self.spec
        old = last_bound(self.reader.read(spec.bound_table, self.ssts.get(41, []), prev))
        right_rows = pa.table({OP: pa.array([int(o) for o, _ in right], pa.int8()),
                               "b": pa.array([v for _, v in right], KEY.to_arrow())})
        bound, changed = new_bound(spec, right_rows, old)
        read, lo, hi = range_to_read(spec, old, bound)
        in_range = self.reader.read_key_range(spec.state, self.ssts.get(40, []), prev, 0, lo, hi) if read \
            else read_schema(spec.state).empty_table()
        self.last_range_rows = in_range.num_rows
        rows = pa.table({OP: pa.array([int(o) for o, _ in changes], pa.int8()),
                         "_vnode": pa.array([0] * len(changes), pa.int16()),
                         **{f.name: pa.array([r[i] for _, r in changes], f.type.to_arrow())
                            for i, f in enumerate(FIELDS)}})
        out = dynamic_filter_epoch(spec, rows, in_range, old, bound, changed, self.epoch)
        self.write(spec.state, out.state_rows)
        self.write(spec.bound_table, out.bound_rows)
        befores, afters = set(), set()
        for op, *row in zip(*(out.changes.column(n).to_pylist() for n in [OP, "id", "k"]), strict=True):
            if op in (Op.INSERT, Op.UPDATE_INSERT):
                assert row[0] not in afters, "a stream key has one after-image per epoch"
                afters.add(row[0])
                self.replica[row[0]] = tuple(row)
            else:
                assert row[0] not in befores and self.replica.get(row[0]) == tuple(row)
                befores.add(row[0])
                if row[0] not in afters:
                    del self.replica[row[0]]


def passing(op: str, rows: dict[int, tuple], bound: Decimal | None) -> dict[int, tuple]:
    if bound is None:
        return {}
    cmp = {">": lambda a: a > bound, ">=": lambda a: a >= bound, "<": lambda a: a < bound, "<=": lambda a: a <= bound}
    return {i: r for i, r in rows.items() if r[1] is not None and cmp[op](r[1])}


@pytest.mark.parametrize("op", [">", ">=", "<", "<="])
@pytest.mark.parametrize("seed", range(3))
def test_random_epochs_match_the_filter_at_each_bound(tmp_path, op: str, seed: int) -> None:
    rng = random.Random(seed)
    job = FilterJob(ObjectStore(str(tmp_path)), op)
    rows: dict[int, tuple] = {}
    bound: Decimal | None = None
    present = False  # whether the right side has its row
    for _ in range(40):
        changes: list[tuple[Op, tuple]] = []
        for rid in rng.sample(range(40), rng.choice([0, 3, 8])):
            before = rows.get(rid)
            k = None if rng.random() < 0.1 else Decimal(rng.randint(0, 2000)) / 100
            after = None if rng.random() < 0.2 else (rid, k)
            if before is None and after is not None:
                changes.append((Op.INSERT, after))
            elif before is not None and after is None:
                changes.append((Op.DELETE, before))
            elif before is not None and after is not None:
                changes += [(Op.UPDATE_DELETE, before), (Op.UPDATE_INSERT, after)]
            if after is None:
                rows.pop(rid, None)
            else:
                rows[rid] = after
        right: list[tuple[Op, Decimal | None]] = []
        x = rng.random()
        if x < 0.5:  # the value moves (to one of the keys sometimes), or is NULL
            value = rng.choice([None, Decimal(rng.randint(0, 2000)) / 100,
                                next(iter(rows.values()))[1] if rows else None])
            right = [(Op.UPDATE_DELETE, bound), (Op.UPDATE_INSERT, value)] if present else [(Op.INSERT, value)]
            bound, present = value, True
        elif x < 0.55 and present:  # the row goes away
            right = [(Op.DELETE, bound)]
            bound, present = None, False
        job.run(changes, right)
        assert job.replica == passing(op, rows, bound)


def test_a_move_reads_only_the_rows_between_the_bounds(tmp_path) -> None:
    job = FilterJob(ObjectStore(str(tmp_path)), ">")
    rows = {i: (i, Decimal(i)) for i in range(100)}
    job.run([(Op.INSERT, r) for r in rows.values()], [(Op.INSERT, Decimal("49.5"))])
    assert sorted(job.replica) == list(range(50, 100))
    job.run([], [(Op.UPDATE_DELETE, Decimal("49.5")), (Op.UPDATE_INSERT, Decimal("52.5"))])
    assert sorted(job.replica) == list(range(53, 100))
    assert job.last_range_rows == 3  # keys 50, 51, 52: the rows between the bounds, of the 100 kept
    job.run([], [(Op.UPDATE_DELETE, Decimal("52.5")), (Op.UPDATE_INSERT, Decimal("52.5"))])
    assert job.last_range_rows == 0  # the same value: nothing read
