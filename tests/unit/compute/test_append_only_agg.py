"""min and max over an append-only input (`compute.executor.hash_agg`): no input state, the value
kept in the agg state row and folded epoch by epoch, through the Python path (`apply`) and with
partials as Spark computes them (`fold`), against min/max of every row inserted so far, NaN the
greatest value as in PostgreSQL."""

from __future__ import annotations

import math
import random

import pyarrow as pa
import pyarrow.compute as pc

from compute.executor.hash_agg import AggCallSpec, HashAggSpec, apply, extreme_of
from risingspark.aggregate import ROW_COUNT, agg_state_fields, value_column
from risingspark.chunk import OP, VNODE, Op
from risingspark.storage.desc import StateTableDesc
from risingspark.types import FLOAT8, INT4, VARCHAR, Field

G, F, S = Field("g", INT4), Field("f", FLOAT8), Field("s", VARCHAR)
CALLS = (("min", F), ("max", F), ("min", S), ("max", S))
STATE = StateTableDesc(5, agg_state_fields([G], [(k, a.type) for k, a in CALLS], append_only=True), pk=(0,),
                       dist_key=(0,))
SPEC = HashAggSpec(("g",), tuple(AggCallSpec(k, a.name, a.type, a.type, f"o{i}") for i, (k, a) in enumerate(CALLS)),
                   STATE)


def test_state_keeps_values_not_inputs():
    assert value_column(0) in STATE.names and all(c.input_state is None and c.keeps_value for c in SPEC.calls)


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


def test_random_inserts_fold_to_the_extremes_of_all_rows():
    rng = random.Random(7)
    state = pa.table({VNODE: pa.array([], pa.int16()), **{f.name: pa.array([], f.type.to_arrow()) for f in STATE.fields}})
    seen: dict[int, list[tuple]] = {}
    for epoch in range(1, 30):
        rows = [(rng.randint(0, 3), rng.choice([None, float("nan"), rng.uniform(-5, 5)]),
                 rng.choice([None, "a", "b", "é", "Z"])) for _ in range(rng.randint(0, 6))]
        for r in rows:
            seen.setdefault(r[0], []).append(r)
        chunk = pa.table({OP: pa.array([int(Op.INSERT)] * len(rows), pa.int8()),
                          VNODE: pa.array([r[0] for r in rows], pa.int16()),
                          "g": pa.array([r[0] for r in rows], pa.int32()), "f": pa.array([r[1] for r in rows], pa.float64()),
                          "s": pa.array([r[2] for r in rows], pa.string())})
        out = apply(SPEC, chunk, state, epoch << 16)
        after = out.pairs.table
        for r in after.to_pylist():
            values = seen[r["g"]]
            floats = [v[1] for v in values if v[1] is not None]
            texts = [v[2].encode() for v in values if v[2] is not None]
            want = (min(floats, key=lambda x: (math.isnan(x), x)) if floats else None,
                    max(floats, key=lambda x: (math.isnan(x), x)) if floats else None,
                    min(texts).decode() if texts else None, max(texts).decode() if texts else None)
            got = tuple(r[f"o{i}__a"] for i in range(4))
            assert all(_same(a, b) for a, b in zip(got, want, strict=True)), (r["g"], got, want)
        # the state as the next epoch reads it: the written rows replace the old ones
        written = out.state_rows.select([VNODE, *STATE.names])
        kept = state.filter(pc.invert(pc.is_in(state.column("g"), written.column("g"))))
        state = pa.concat_tables([kept, written.cast(state.schema)])
        assert pc.sum(state.column(ROW_COUNT)).as_py() in (None, sum(len(v) for v in seen.values()))


def test_extreme_of_orders_nan_greatest():
    a = pa.array([1.0, float("nan"), None, float("nan")])
    b = pa.array([float("nan"), 2.0, float("nan"), None])
    assert [str(x) for x in extreme_of("max", a, b).to_pylist()] == ["nan", "nan", "nan", "nan"]
    assert [str(x) for x in extreme_of("min", a, b).to_pylist()] == ["1.0", "2.0", "nan", "nan"]
