"""The over-window kernel against PostgreSQL's window functions on the same rows (random partitions
with NULLs, ties and repeated values), and its epoch fold against recomputation: the changes it emits,
applied downstream, always equal the windows of the current rows."""

from __future__ import annotations

import random
from decimal import Decimal

import psycopg
import pyarrow as pa
import pytest

from compute.executor.over_window import OverWindowSpec, compute, over_window_epoch
from risingspark.chunk import Op
from risingspark.storage.desc import StateTableDesc
from risingspark.stream_plan import WindowCall
from risingspark.types import INT4, INT8, NUMERIC, DataType, Field

PG = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"
FIELDS = (Field("id", INT8), Field("p", INT4), Field("o", INT4), Field("x", DataType.parse("numeric(10,2)")))
STATE = StateTableDesc(50, FIELDS, (1, 2, 0), (1,))
X = FIELDS[3].type


def call(kind: str, arg: int | None, t: DataType, **frame) -> WindowCall:
    return WindowCall(kind, arg, t, kind, **frame)


ROWS_10_0 = {"frame_mode": "ROWS", "frame_start": 2, "frame_start_side": "PRECEDING", "frame_end": 0,
             "frame_end_side": "CURRENT"}
ROWS_1_1 = {"frame_mode": "ROWS", "frame_start": 1, "frame_start_side": "PRECEDING", "frame_end": 1,
            "frame_end_side": "FOLLOWING"}
RANGE_ALL = {"frame_mode": "RANGE", "frame_start": None, "frame_start_side": "PRECEDING", "frame_end": None,
             "frame_end_side": "FOLLOWING"}
RANGE_CUR_END = {"frame_mode": "RANGE", "frame_start": 0, "frame_start_side": "CURRENT", "frame_end": None,
                 "frame_end_side": "FOLLOWING"}

# ordered by o alone (ties: results that do not depend on the order among peers)
PEER_CALLS = [
    (call("rank", None, INT8), "rank() OVER ({w})", ""),
    (call("dense_rank", None, INT8), "dense_rank() OVER ({w})", ""),
    (call("sum", 3, NUMERIC), "sum(x) OVER ({w})", ""),
    (call("count", 3, INT8), "count(x) OVER ({w})", ""),
    (call("count_star", None, INT8), "count(*) OVER ({w})", ""),
    (call("avg", 3, DataType.parse("numeric(38,6)")), "round(avg(x) OVER ({w}), 6)", ""),
    (call("min", 3, X), "min(x) OVER ({w})", ""),
    (call("max", 3, X, **RANGE_ALL), "max(x) OVER ({w})", "RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING"),
    (call("sum", 3, NUMERIC, **RANGE_CUR_END), "sum(x) OVER ({w})", "RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING"),
]
# ordered by (o, id): a total order
ROW_CALLS = [
    (call("row_number", None, INT8), "row_number() OVER ({w})", ""),
    (call("lag", 3, X), "lag(x) OVER ({w})", ""),
    (WindowCall("lead", 3, X, "lead", offset=2, default="-1.5"), "lead(x, 2, -1.5) OVER ({w})", ""),
    (call("first_value", 3, X, **ROWS_1_1), "first_value(x) OVER ({w})", "ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING"),
    (call("last_value", 3, X), "last_value(x) OVER ({w})", ""),
    (call("sum", 3, NUMERIC, **ROWS_10_0), "sum(x) OVER ({w})", "ROWS BETWEEN 2 PRECEDING AND CURRENT ROW"),
    (call("max", 3, X, **ROWS_1_1), "max(x) OVER ({w})", "ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING"),
    (call("avg", 3, DataType.parse("numeric(38,6)"), **ROWS_1_1), "round(avg(x) OVER ({w}), 6)",
     "ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING"),
]


def spec(calls: list, by_id: bool) -> OverWindowSpec:
    order = (("o", False, False),) + ((("id", False, False),) if by_id else ())
    return OverWindowSpec(STATE, ("p",), order, tuple(c for c, _, _ in calls), tuple(
        FIELDS[c.arg].name if c.arg is not None else None for c, _, _ in calls),
        tuple(f"w{i}" for i in range(len(calls))), ("id",))


def random_rows(rng: random.Random, n: int) -> list[tuple]:
    return [(i, rng.choice([None, 1, 2, 3]), rng.choice([None, 1, 2, 2, 3, 5]),
             rng.choice([None, Decimal(rng.randint(-500, 500)) / 10])) for i in range(n)]


def table(rows: list[tuple]) -> pa.Table:
    return pa.table({f.name: pa.array([r[i] for r in rows], f.type.to_arrow()) for i, f in enumerate(FIELDS)})


def norm(v):
    return v.normalize() + 0 if isinstance(v, Decimal) else v


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("by_id", [False, True])
def test_windows_equal_postgres(seed: int, by_id: bool) -> None:
    rng = random.Random(seed)
    rows = random_rows(rng, 60)
    calls = ROW_CALLS if by_id else PEER_CALLS
    out = compute(spec(calls, by_id), table(rows))
    got = {r["id"]: tuple(norm(r[f"w{i}"]) for i in range(len(calls))) for r in out.to_pylist()}
    order = "o, id" if by_id else "o"
    select = ", ".join(sql.format(w=f"PARTITION BY p ORDER BY {order} {frame}") for _, sql, frame in calls)
    with psycopg.connect(PG) as pg:
        pg.execute("CREATE TEMP TABLE w (id bigint, p int, o int, x numeric(10,2))")
        with pg.cursor() as cur, cur.copy("COPY w FROM STDIN") as copy:
            for r in rows:
                copy.write_row(r)
        want = {r[0]: tuple(norm(v) for v in r[1:]) for r in pg.execute(f"SELECT id, {select} FROM w").fetchall()}
    assert got == want


def test_epochs_emit_the_difference_of_the_windows() -> None:
    rng = random.Random(7)
    s = spec(ROW_CALLS, True)
    live: dict[int, tuple] = {}
    downstream: dict[int, tuple] = {}
    state = pa.table({"_vnode": pa.array([], pa.int16()), **{f.name: pa.array([], f.type.to_arrow()) for f in FIELDS}})
    for epoch in range(1, 20):
        changes = []
        for rid in rng.sample(range(30), 6):
            before = live.get(rid)
            after = None if rng.random() < 0.3 else random_rows(rng, 1)[0][1:]
            after = (rid, *after) if after is not None else None
            if before and after:
                changes += [(Op.UPDATE_DELETE, before), (Op.UPDATE_INSERT, after)]
            elif before:
                changes.append((Op.DELETE, before))
            elif after:
                changes.append((Op.INSERT, after))
            if after is None:
                live.pop(rid, None)
            else:
                live[rid] = after
        vnode = [0 if r[1] is None else r[1] % 4 for _, r in changes]
        rows = pa.table({"_op": pa.array([int(o) for o, _ in changes], pa.int8()), "_vnode": pa.array(vnode, pa.int16()),
                         **{f.name: pa.array([r[i] for _, r in changes], f.type.to_arrow()) for i, f in enumerate(FIELDS)}})
        out = over_window_epoch(s, rows, state, epoch)
        for r in out.changes.to_pylist():
            key = r["id"]
            row = tuple(r[n] for n in s.output_names)
            if r["_op"] in (Op.DELETE, Op.UPDATE_DELETE):
                assert downstream.pop(key) == row
        for r in out.changes.to_pylist():
            if r["_op"] in (Op.INSERT, Op.UPDATE_INSERT):
                downstream[r["id"]] = tuple(r[n] for n in s.output_names)
        expected = {r["id"]: tuple(r[n] for n in s.output_names) for r in compute(s, table(list(live.values()))).to_pylist()}
        assert downstream == expected, f"epoch {epoch}"
        state = table(list(live.values())).add_column(
            0, "_vnode", pa.array([0 if r[1] is None else r[1] % 4 for r in live.values()], pa.int16()))
