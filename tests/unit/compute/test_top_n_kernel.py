"""The TopN kernel against a model: random inserts, updates (of the order column and of the group)
and deletes over many epochs; the output's changes, applied downstream, always equal the top rows
recomputed from scratch (plain TopN with LIMIT/OFFSET, group TopN with row numbers, NULLs first or
last, descending orders, ties broken by the stream key, NULL groups)."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from compute.executor.top_n import TopNSpec, top_n_epoch
from risingspark.chunk import Op
from risingspark.storage.desc import StateTableDesc
from risingspark.types import INT4, INT8, Field

FIELDS = (Field("id", INT8), Field("g", INT4), Field("o", INT4))


def make_spec(grouped: bool, desc: bool, nulls_first: bool, limit: int | None, offset: int) -> TopNSpec:
    pk = (1, 2, 0) if grouped else (2, 0)
    state = StateTableDesc(20, FIELDS, pk, (1,) if grouped else ())
    return TopNSpec(state, ("g",) if grouped else (), (("o", desc, nulls_first),), limit, offset, ("id",),
                    "rn" if grouped else None)


def vnode(spec: TopNSpec, row: tuple) -> int:
    return (0 if row[1] is None else row[1] % 4) if spec.group_key else 0


def model(spec: TopNSpec, rows: dict) -> dict:
    """id -> output row, by sorting each group in Python."""
    desc, nulls_first = spec.order[0][1], spec.order[0][2]
    groups: dict = {}
    for r in rows.values():
        groups.setdefault(r[1] if spec.group_key else 0, []).append(r)
    out = {}
    for members in groups.values():
        def key(r: tuple) -> tuple:
            null = r[2] is None
            value = 0 if null else (-r[2] if desc else r[2])
            return (not null if nulls_first else null, value, r[0])
        members.sort(key=key)
        stop = None if spec.limit is None else spec.offset + spec.limit
        for pos, r in enumerate(members[spec.offset:stop], start=spec.offset):
            out[r[0]] = (*r, pos + 1) if spec.rank_column else r
    return out


def table(spec: TopNSpec, rows: list[tuple[Op, tuple]]) -> pa.Table:
    return pa.table({"_op": pa.array([int(op) for op, _ in rows], pa.int8()),
                     "_vnode": pa.array([vnode(spec, r) for _, r in rows], pa.int16()),
                     **{f.name: pa.array([r[i] for _, r in rows], f.type.to_arrow()) for i, f in enumerate(FIELDS)}})


def state_table(spec: TopNSpec, rows: dict) -> pa.Table:
    t = table(spec, [(Op.INSERT, r) for r in rows.values()]).drop_columns(["_op"])
    return t.cast(pa.schema([t.schema.field(0).with_nullable(False), *list(t.schema)[1:]]))


@pytest.mark.parametrize("grouped,desc,nulls_first,limit,offset", [
    (False, False, False, 3, 0),
    (False, True, True, 4, 2),
    (True, True, False, 2, 0),
    (True, False, True, None, 0),
    (True, False, False, 1, 0),
])
@pytest.mark.parametrize("seed", range(3))
def test_top_n_equals_model(grouped: bool, desc: bool, nulls_first: bool, limit: int | None, offset: int,
                            seed: int) -> None:
    spec = make_spec(grouped, desc, nulls_first, limit, offset)
    rng = random.Random(seed)
    rows: dict = {}
    downstream: dict = {}
    for epoch in range(1, 30):
        prev = dict(rows)
        changes = []
        for rid in rng.sample(range(14), 5):
            before = rows.get(rid)
            after = None
            if rng.random() < 0.75:
                after = (rid, rng.choice([None, 1, 2, 3]), rng.choice([None, 1, 2, 3, 5, 8]))
            if before is not None and after is not None:
                changes += [(Op.UPDATE_DELETE, before), (Op.UPDATE_INSERT, after)]
            elif before is not None:
                changes.append((Op.DELETE, before))
            elif after is not None:
                changes.append((Op.INSERT, after))
            if after is None:
                rows.pop(rid, None)
            else:
                rows[rid] = after
        out = top_n_epoch(spec, table(spec, changes), state_table(spec, prev), epoch)
        for r in out.changes.to_pylist():
            values = tuple(r[n] for n in spec.output_names)
            if r["_op"] in (int(Op.INSERT), int(Op.UPDATE_INSERT)):
                assert values[0] not in downstream, f"epoch {epoch}: {values} inserted twice"
                downstream[values[0]] = values
            else:
                assert downstream.pop(values[0]) == values, f"epoch {epoch}: retracted a row it did not emit"
        assert downstream == model(spec, rows), f"epoch {epoch}"
