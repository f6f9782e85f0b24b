"""The temporal filter kernel over real SSTs: random inserts, updates (of the time column too) and
deletes, and epochs without input, while the bound moves forward; the output's changes, applied
downstream, always equal the rows passing the filter at the epoch's bound, and each epoch reads only
the state rows between the two bounds."""

from __future__ import annotations

import datetime as dt
import random

import pyarrow as pa
import pytest

from compute.executor.temporal_filter import (
    TemporalFilterSpec,
    bound_at,
    last_bound,
    range_to_read,
    temporal_filter_epoch,
)
from risingspark.chunk import OP, Op
from risingspark.epoch import Epoch
from risingspark.storage.desc import SstableInfo, StateTableDesc
from risingspark.storage.object_store import ObjectStore
from risingspark.storage.reader import StateTableReader, read_schema
from risingspark.storage.sst import write_sst
from risingspark.stream_plan import TEMPORAL_BOUND_FIELDS
from risingspark.types import INT4, INT8, TIMESTAMP, Field

FIELDS = (Field("id", INT8), Field("v", INT4), Field("ts", TIMESTAMP))
START_MS = 1_790_000_000_000  # the physical time of the first epoch
BASE = dt.datetime(1970, 1, 1)


def ts_of(ms: int | None) -> dt.datetime | None:
    return None if ms is None else BASE + dt.timedelta(milliseconds=ms)


class FilterJob:
    """A StreamTemporalFilter over real SSTs, epoch by epoch, with a replica of its output."""

    def __init__(self, store: ObjectStore, op: str, offset_us: int) -> None:
        self.store = store
        self.reader = StateTableReader(store)
        state = StateTableDesc(30, FIELDS, (2, 0), ())
        self.spec = TemporalFilterSpec(state, StateTableDesc(31, TEMPORAL_BOUND_FIELDS, (0,), ()), "ts", op,
                                       offset_us, ("id",))
        self.ssts: dict[int, list[SstableInfo]] = {}
        self.epoch = 0
        self.replica: dict[int, tuple] = {}
        self.last_range_rows = 0

    def write(self, desc: StateTableDesc, rows: pa.Table) -> None:
        if rows.num_rows:
            path = f"{desc.table_id}/{self.epoch}.parquet"
            self.ssts.setdefault(desc.table_id, []).append(write_sst(self.store, desc, rows, path, level=0,
                                                                     sub_level=self.epoch))

    def run(self, now_ms: int, changes: list[tuple[Op, tuple]]) -> pa.Table:
        prev = self.epoch or None
        self.epoch = max(Epoch.from_unix_ms(now_ms).value, self.epoch + 1)  # strictly increasing
        spec = self.spec
        old_bound = last_bound(self.reader.read(spec.bound_table, self.ssts.get(31, []), prev))
        new_bound = bound_at(spec, self.epoch)
        span = range_to_read(old_bound, new_bound)
        in_range = read_schema(spec.state).empty_table() if span is None else \
            self.reader.read_range(spec.state, self.ssts.get(30, []), prev, 0, *span)
        self.last_range_rows = in_range.num_rows
        rows = pa.table({OP: pa.array([int(o) for o, _ in changes] + [0], pa.int8()),  # + a weightless seed
                         "_vnode": pa.array([0] * (len(changes) + 1), pa.int16()),
                         **{f.name: pa.array([r[i] for _, r in changes] + [None], f.type.to_arrow())
                            for i, f in enumerate(FIELDS)}})
        out = temporal_filter_epoch(spec, rows, in_range, old_bound, new_bound, self.epoch)
        self.write(spec.state, out.state_rows)
        self.write(spec.bound_table, out.bound_rows)
        befores, afters = set(), set()
        for op, *row in zip(*(out.changes.column(n).to_pylist() for n in [OP, "id", "v", "ts"]), strict=True):
            if op in (Op.INSERT, Op.UPDATE_INSERT):
                assert row[0] not in afters, "a stream key has one after-image per epoch"
                afters.add(row[0])
                self.replica[row[0]] = tuple(row)
            else:
                assert row[0] not in befores and self.replica.get(row[0]) == tuple(row)
                befores.add(row[0])
                if row[0] not in afters:
                    del self.replica[row[0]]
        return out.changes

    def passing(self, rows: dict[int, tuple], now_ms: int) -> dict[int, tuple]:
        bound = ts_of(now_ms + self.spec.offset_us // 1000)
        op = self.spec.op
        return {k: r for k, r in rows.items() if r[2] is not None and
                (r[2] > bound if op == ">" else r[2] >= bound if op == ">=" else r[2] < bound if op == "<"
                 else r[2] <= bound)}


@pytest.mark.parametrize("op,offset_ms", [(">", -3000), (">=", -3000), ("<", 2000), ("<=", 0)])
@pytest.mark.parametrize("seed", range(2))
def test_random_epochs_match_the_filter_at_each_bound(tmp_path, op: str, offset_ms: int, seed: int) -> None:
    rng = random.Random(seed)
    job = FilterJob(ObjectStore(str(tmp_path)), op, offset_ms * 1000)
    rows: dict[int, tuple] = {}
    now = START_MS
    for _ in range(30):
        now += rng.choice([0, 1, 250, 1000, 1700])
        changes: list[tuple[Op, tuple]] = []
        if rng.random() < 0.7:  # some epochs have no input at all
            for rid in rng.sample(range(30), 6):
                before = rows.get(rid)
                ms = now + rng.randint(-6000, 6000) if rng.random() > 0.1 else None
                if ms is not None and rng.random() < 0.2:
                    ms = now + offset_ms  # exactly on the bound
                after = None if rng.random() < 0.25 else (rid, rng.randint(0, 9), ts_of(ms))
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
        job.run(now, changes)
        assert job.replica == job.passing(rows, now)


def test_rows_leave_without_input_and_only_the_crossed_range_is_read(tmp_path) -> None:
    job = FilterJob(ObjectStore(str(tmp_path)), ">", -3_000_000)
    rows = {i: (i, i, ts_of(START_MS + 1000 * i)) for i in range(-5, 20)}
    job.run(START_MS, [(Op.INSERT, r) for r in rows.values()])
    assert sorted(job.replica) == list(range(-2, 20))  # ts > now - 3 s
    left = job.run(START_MS + 2000, [])  # no input: the bound moves 2 s
    assert sorted(left.column("id").to_pylist()) == [-2, -1]
    assert set(left.column(OP).to_pylist()) == {int(Op.DELETE)}
    assert job.last_range_rows == 3  # ts in [now - 3 s, now - 1 s] of the 25 rows kept
    assert sorted(job.replica) == list(range(0, 20))
    job.run(START_MS + 2000, [])  # the same bound: nothing to read or emit
    assert job.last_range_rows <= 1


def test_null_times_never_pass_and_a_moved_row_is_an_update(tmp_path) -> None:
    job = FilterJob(ObjectStore(str(tmp_path)), ">=", 0)
    job.run(START_MS, [(Op.INSERT, (1, 0, None)), (Op.INSERT, (2, 0, ts_of(START_MS + 10_000)))])
    assert list(job.replica) == [2]
    out = job.run(START_MS + 1, [(Op.UPDATE_DELETE, (2, 0, ts_of(START_MS + 10_000))),
                                 (Op.UPDATE_INSERT, (2, 1, ts_of(START_MS + 20_000))),
                                 (Op.UPDATE_DELETE, (1, 0, None)), (Op.UPDATE_INSERT, (1, 0, ts_of(START_MS + 5)))])
    ops = dict(zip(out.column("id").to_pylist(), out.column(OP).to_pylist(), strict=False))
    assert ops[1] == int(Op.INSERT)
    assert sorted(out.filter(pa.compute.equal(out.column("id"), 2)).column(OP).to_pylist()) == \
        [int(Op.UPDATE_DELETE), int(Op.UPDATE_INSERT)]
    assert job.replica == {1: (1, 0, ts_of(START_MS + 5)), 2: (2, 1, ts_of(START_MS + 20_000))}
