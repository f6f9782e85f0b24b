"""StreamHashAgg kernels (`deltas`, `apply`) fused with the MV's materialize, as the compute node runs
them: state looked up at the previous epoch from real SSTs, state and MV rows written at the epoch;
results compared with a recomputation from the full input."""

from __future__ import annotations

import decimal
import random
import zlib
from decimal import Decimal

import duckdb
import pyarrow as pa
import pytest

from compute.executor.hash_agg import AggCallSpec, HashAggSpec, apply, deltas, fold, spark_partials
from compute.executor.materialize import emit
from risingspark.aggregate import ROW_COUNT, agg_return_type, agg_state_fields
from risingspark.chunk import OP, TOMBSTONE, VNODE, Op
from risingspark.storage.desc import SstableInfo, StateTableDesc
from risingspark.storage.object_store import ObjectStore
from risingspark.storage.reader import StateTableReader, read_schema
from risingspark.storage.sst import write_sst
from risingspark.types import FLOAT8, INT4, VARCHAR, DataType, Field

NUM = DataType.parse("numeric(12,2)")
INPUT = (Field("g1", INT4), Field("g2", VARCHAR), Field("x", INT4), Field("m", NUM), Field("f", FLOAT8))
TYPES = {f.name: f.type for f in INPUT}
CALLS = [  # (kind, arg, output name)
    ("count_star", None, "cnt"),
    ("count", "x", "cnt_x"),
    ("sum", "x", "sum_x"),
    ("avg", "x", "avg_x"),
    ("sum", "m", "sum_m"),
    ("avg", "m", "avg_m"),
    ("count", "m", "cnt_m"),
    ("sum", "f", "sum_f"),
    ("avg", "f", "avg_f"),
]
GROUP = ("g1", "g2")
STATE = StateTableDesc(21, agg_state_fields([INPUT[0], INPUT[1]], [(k, TYPES.get(a)) for k, a, _ in CALLS]),
                       pk=(0, 1), dist_key=(0, 1))
SPEC = HashAggSpec(GROUP, tuple(AggCallSpec(k, a, TYPES.get(a), agg_return_type(k, TYPES.get(a)), out)
                                for k, a, out in CALLS), STATE)
MV = StateTableDesc(22, (INPUT[0], INPUT[1], *(Field(out, agg_return_type(k, TYPES.get(a))) for k, a, out in CALLS)),
                    pk=(0, 1), dist_key=(0, 1))
OUT_NAMES = MV.names
SCALE10 = Decimal("1e-10")


def vnode(group: tuple) -> int:
    return zlib.crc32(repr(group).encode()) % 8


def tuples(table: pa.Table, names: list[str]) -> list[tuple]:
    return list(zip(*(table.column(n).to_pylist() for n in names), strict=True))


def chunk(rows: list[tuple]) -> pa.Table:
    """An input chunk from (op, g1, g2, x, m, f) tuples; `_vnode` from the group key."""
    cols = {OP: pa.array([int(r[0]) for r in rows], pa.int8()),
            VNODE: pa.array([vnode(r[1:3]) for r in rows], pa.int16())}
    for i, f in enumerate(INPUT):
        values = [r[1 + i] for r in rows]
        if f.type == NUM:
            values = [None if v is None else Decimal(v) for v in values]
        cols[f.name] = pa.array(values, f.type.to_arrow())
    return pa.table(cols)


def half_up(d: Decimal) -> Decimal:
    return d.quantize(SCALE10, rounding=decimal.ROUND_HALF_UP)


def recompute(live: list[tuple]) -> dict[tuple, tuple]:
    """The MV from scratch: group key -> output row (as `OUT_NAMES`)."""
    groups: dict[tuple, list[tuple]] = {}
    for r in live:
        groups.setdefault((r[0], r[1]), []).append(r)
    out = {}
    for g, rows in groups.items():
        xs = [r[2] for r in rows if r[2] is not None]
        ms = [Decimal(r[3]) for r in rows if r[3] is not None]
        fs = [r[4] for r in rows if r[4] is not None]
        out[g] = (*g, len(rows), len(xs), sum(xs) if xs else None,
                  half_up(Decimal(sum(xs)) / len(xs)) if xs else None,
                  sum(ms) if ms else None, half_up(sum(ms) / len(ms)) if ms else None, len(ms),
                  float(sum(fs)) if fs else None, sum(fs) / len(fs) if fs else None)
    return out


class AggJob:
    """StreamHashAgg + StreamMaterialize of its output over real SSTs, epoch by epoch."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self.reader = StateTableReader(store)
        self.state_ssts: list[SstableInfo] = []
        self.mv_ssts: list[SstableInfo] = []
        self.epoch = 0
        self.replica: dict[tuple, tuple] = {}

    def run(self, rows: list[tuple]):
        prev = self.epoch or None
        self.epoch += 1 << 16
        t = chunk(rows)
        old = self.reader.lookup(STATE, self.state_ssts, prev, t.select([VNODE, *GROUP]))
        agg = apply(SPEC, t, old, self.epoch)
        out = emit(MV, agg.pairs, self.epoch)
        for desc, ssts, sst_rows in ((STATE, self.state_ssts, agg.state_rows), (MV, self.mv_ssts, out.sst_rows)):
            if sst_rows.num_rows:
                ssts.append(write_sst(self.store, desc, sst_rows, f"{desc.table_id}/{self.epoch}.parquet",
                                      level=0, sub_level=self.epoch))
        self.apply_to_replica(out.changes)
        return agg, out

    def apply_to_replica(self, changes: pa.Table) -> None:
        start = dict(self.replica)
        rows = tuples(changes, [OP, *OUT_NAMES])
        for op, *row in rows:
            if op in (Op.DELETE, Op.UPDATE_DELETE):
                assert start[(row[0], row[1])] == tuple(row)
                del self.replica[(row[0], row[1])]
        for op, *row in rows:
            if op in (Op.INSERT, Op.UPDATE_INSERT):
                assert (op == Op.INSERT) == ((row[0], row[1]) not in start)
                self.replica[(row[0], row[1])] = tuple(row)

    def mv(self) -> dict[tuple, tuple]:
        t = self.reader.read(MV, self.mv_ssts, self.epoch)
        for vn, g1, g2 in tuples(t, [VNODE, "g1", "g2"]):
            assert vn == vnode((g1, g2))
        return {(r[0], r[1]): r for r in tuples(t, OUT_NAMES)}

    def state(self) -> dict[tuple, tuple]:
        t = self.reader.read(STATE, self.state_ssts, self.epoch)
        return {(r[0], r[1]): r for r in tuples(t, STATE.names)}


@pytest.fixture
def job(tmp_path) -> AggJob:
    return AggJob(ObjectStore(str(tmp_path)))


def test_deltas_sum_signed_partials():
    t = chunk([(Op.INSERT, 1, "a", 5, "1.10", 0.5), (Op.INSERT, 1, "a", None, None, None),
               (Op.DELETE, 1, "a", 2, "0.10", 0.25), (Op.UPDATE_INSERT, None, None, 7, "-3", None),
               (Op.UPDATE_DELETE, None, None, None, "1", 1.0)])
    d = deltas(SPEC, t)
    by_group = {(r["g1"], r["g2"]): r for r in d.to_pylist()}
    assert set(by_group) == {(1, "a"), (None, None)}
    a = by_group[(1, "a")]
    assert a[ROW_COUNT] == 1 and a["_a1_count"] == 0 and a["_a2_sum"] == 3
    assert a["_a4_sum"] == Decimal("1.00") and a["_a6_count"] == 0 and a["_a7_sum"] == 0.25
    n = by_group[(None, None)]
    assert n[ROW_COUNT] == 0 and n["_a1_count"] == 1 and n["_a3_sum"] == 7 and n["_a4_sum"] == Decimal("-4")
    assert n["_a8_count"] == -1
    assert a[VNODE] == vnode((1, "a")) and n[VNODE] == vnode((None, None))


def test_groups_with_null_keys_and_null_inputs(job):
    agg, out = job.run([
        (Op.INSERT, None, None, 1, "1.00", 1.0), (Op.INSERT, None, None, None, None, None),
        (Op.INSERT, 1, None, None, None, None), (Op.INSERT, 1, None, None, None, None),
        (Op.INSERT, 1, "", 4, "0.10", 0.5), (Op.INSERT, 0, None, 3, "0.20", 0.25),
    ])
    assert job.mv() == {
        (None, None): (None, None, 2, 1, 1, Decimal("1.0000000000"), Decimal("1.00"), Decimal("1.0000000000"),
                       1, 1.0, 1.0),
        # every input NULL: count(*) counts the rows, count(x) is 0, sum and avg are NULL
        (1, None): (1, None, 2, 0, None, None, None, None, 0, None, None),
        (1, ""): (1, "", 1, 1, 4, Decimal("4.0000000000"), Decimal("0.10"), Decimal("0.1000000000"), 1, 0.5, 0.5),
        (0, None): (0, None, 1, 1, 3, Decimal("3.0000000000"), Decimal("0.20"), Decimal("0.2000000000"), 1, 0.25,
                    0.25),
    }
    assert {r[0] for r in tuples(out.changes, [OP])} == {Op.INSERT}
    assert out.row_delta == 4
    # next epoch: NULL groups are found again in state (NULL matches NULL, and not '' or 0)
    agg, out = job.run([(Op.INSERT, 1, None, 10, "5.55", None), (Op.DELETE, None, None, None, None, None)])
    mv = job.mv()
    assert mv[(1, None)] == (1, None, 3, 1, 10, Decimal("10.0000000000"), Decimal("5.55"), Decimal("5.5500000000"),
                             1, None, None)
    assert mv[(None, None)][2:5] == (1, 1, 1)
    assert mv[(1, "")][2] == 1 and mv[(0, None)][2] == 1
    assert sorted(Op(o).name for (o,) in tuples(out.changes, [OP])) == ["UPDATE_DELETE", "UPDATE_DELETE",
                                                                      "UPDATE_INSERT", "UPDATE_INSERT"]
    assert job.replica == mv


def test_retraction_to_zero_removes_the_group(job):
    job.run([(Op.INSERT, 1, "a", 2, "1.50", None), (Op.INSERT, 1, "a", 3, "2.50", None),
             (Op.INSERT, 2, "b", 1, "1", None)])
    agg, out = job.run([(Op.DELETE, 1, "a", 2, "1.50", None), (Op.UPDATE_DELETE, 1, "a", 3, "2.50", None),
                        (Op.UPDATE_INSERT, 2, "b", 9, "9", None)])
    assert sorted(tuples(out.changes, [OP, "g1", "g2", "cnt", "sum_x"])) == [
        (Op.DELETE, 1, "a", 2, 5), (Op.UPDATE_DELETE, 2, "b", 1, 1), (Op.UPDATE_INSERT, 2, "b", 2, 10)]
    assert out.row_delta == -1
    # the state row is tombstoned at the epoch, keeping only the group key
    tomb = agg.state_rows.filter(agg.state_rows.column(TOMBSTONE))
    assert tuples(tomb, ["g1", "g2", ROW_COUNT, "_a2_sum"]) == [(1, "a", None, None)]
    assert set(job.state()) == {(2, "b")} and set(job.mv()) == {(2, "b")}
    # a group that comes back starts from zero, as an Insert
    agg, out = job.run([(Op.INSERT, 1, "a", None, "0.01", None)])
    assert tuples(out.changes, [OP, *OUT_NAMES]) == [
        (Op.INSERT, 1, "a", 1, 0, None, None, Decimal("0.01"), Decimal("0.0100000000"), 1, None, None)]
    # inserted and deleted in one epoch: nothing at all
    agg, out = job.run([(Op.INSERT, 3, "c", 1, "1", 1.0), (Op.DELETE, 3, "c", 1, "1", 1.0)])
    assert out.changes.num_rows == 0 and out.sst_rows.num_rows == 0
    assert (3, "c") not in job.state()


def test_numeric_sums_are_exact(job):
    big = "9999999999.99"  # the largest numeric(12,2)
    job.run([(Op.INSERT, 1, "n", None, "0.10", None), (Op.INSERT, 1, "n", None, "0.20", None)]
            + [(Op.INSERT, 2, "n", None, big, None)] * 7)
    mv = job.mv()
    assert mv[(1, "n")][6] == Decimal("0.30") and mv[(1, "n")][7] == Decimal("0.1500000000")
    assert mv[(2, "n")][6] == Decimal("69999999999.93")  # wider than numeric(12,2)
    assert mv[(2, "n")][7] == Decimal(big)
    job.run([(Op.DELETE, 2, "n", None, big, None)] * 6 + [(Op.DELETE, 1, "n", None, "0.10", None)])
    mv = job.mv()
    assert mv[(2, "n")][6] == Decimal(big) and mv[(1, "n")][6] == Decimal("0.20")
    # many epochs of tiny amounts do not drift
    for _ in range(5):
        job.run([(Op.INSERT, 3, "n", None, "0.01", None)] * 10 + [(Op.INSERT, 3, "n", None, "-0.03", None)])
    assert job.mv()[(3, "n")][6] == Decimal("0.35")
    assert job.mv()[(3, "n")][7] == Decimal("0.0063636364")  # 0.35 / 55


def test_avg_rounds_half_away_from_zero(job):
    # 1 / 2048 = 0.00048828125: exactly half a unit of the 10th decimal
    job.run([(Op.INSERT, 1, "p", 1, None, None)] + [(Op.INSERT, 1, "p", 0, None, None)] * 2047
            + [(Op.INSERT, 2, "n", -1, None, None)] + [(Op.INSERT, 2, "n", 0, None, None)] * 2047
            + [(Op.INSERT, 3, "t", v, None, None) for v in (1, 1, 0)]
            + [(Op.INSERT, 4, "t", v, None, None) for v in (-1, -1, 0)])
    mv = job.mv()
    assert mv[(1, "p")][5] == Decimal("0.0004882813")
    assert mv[(2, "n")][5] == Decimal("-0.0004882813")
    assert mv[(3, "t")][5] == Decimal("0.6666666667")
    assert mv[(4, "t")][5] == Decimal("-0.6666666667")


@pytest.mark.parametrize("seed", range(6))
def test_random_epochs_match_recomputation(job, seed):
    rng = random.Random(seed)
    live: list[tuple] = []  # the input rows currently live (a multiset)

    def row() -> tuple:
        return (rng.choice([None, 0, 1, 2]), rng.choice([None, "", "a", "b"]),
                rng.choice([None, -5, 0, 3, 2**31 - 1]),
                rng.choice([None, "0.01", "-0.07", "12.50", "9999999999.99"]),
                rng.choice([None, 0.5, -0.25, 3.0]))

    for _ in range(25):
        ops: list[tuple] = []
        for _ in range(rng.randrange(0, 25)):
            r = rng.random()
            if live and r < 0.3:
                old = live.pop(rng.randrange(len(live)))
                ops.append((Op.DELETE, *old))
            elif live and r < 0.5:  # an update, which may move the row to another group
                old = live.pop(rng.randrange(len(live)))
                new = row() if rng.random() < 0.5 else (*old[:2], *row()[2:])
                ops += [(Op.UPDATE_DELETE, *old), (Op.UPDATE_INSERT, *new)]
                live.append(new)
            else:
                new = row()
                ops.append((Op.INSERT, *new))
                live.append(new)
        rng.shuffle(ops)  # an epoch's rows may come in any order
        if not ops:
            continue
        job.run(ops)
        expected = recompute(live)
        assert job.mv() == expected
        assert job.replica == expected
        assert set(job.state()) == set(expected)


def test_double_group_key_with_nan(tmp_path):
    """NaN is one group (as in Postgres), within an epoch and across epochs through the state table."""
    nan = float("nan")
    f = Field("f", FLOAT8)
    state = StateTableDesc(31, agg_state_fields([f], [("count_star", None)]), pk=(0,), dist_key=(0,))
    spec = HashAggSpec(("f",), (AggCallSpec("count_star", None, None, agg_return_type("count_star", None), "c"),),
                       state)
    mv = StateTableDesc(32, (f, Field("c", agg_return_type("count_star", None))), pk=(0,), dist_key=(0,))
    store = ObjectStore(str(tmp_path))
    reader = StateTableReader(store)
    ssts: dict[int, list[SstableInfo]] = {31: [], 32: []}

    def run(epoch: int, ops: list[tuple[Op, float]]) -> pa.Table:
        t = pa.table({OP: pa.array([int(o) for o, _ in ops], pa.int8()),
                      VNODE: pa.array([0 for _ in ops], pa.int16()), "f": pa.array([v for _, v in ops], pa.float64())})
        old = reader.lookup(state, ssts[31], epoch - 1, t.select([VNODE, "f"]))
        agg = apply(spec, t, old, epoch)
        out = emit(mv, agg.pairs, epoch)
        for desc, rows in ((state, agg.state_rows), (mv, out.sst_rows)):
            if rows.num_rows:
                ssts[desc.table_id].append(write_sst(store, desc, rows, f"{desc.table_id}/{epoch}.parquet",
                                                     level=0, sub_level=epoch))
        return out.changes

    def mv_rows(epoch: int) -> str:
        return repr(sorted(tuples(reader.read(mv, ssts[32], epoch), ["f", "c"]), key=repr))

    ch = run(10, [(Op.INSERT, nan), (Op.INSERT, 1.0), (Op.INSERT, nan)])
    assert repr(sorted(tuples(ch, [OP, "f", "c"]), key=repr)) == repr([(1, 1.0, 1), (1, nan, 2)])  # Insert
    assert mv_rows(10) == repr([(1.0, 1), (nan, 2)])
    ch = run(20, [(Op.INSERT, nan), (Op.DELETE, 1.0)])
    assert repr(tuples(ch, [OP, "f", "c"])) == repr([(int(Op.DELETE), 1.0, 1), (int(Op.UPDATE_DELETE), nan, 2),
                                                      (int(Op.UPDATE_INSERT), nan, 3)])
    assert mv_rows(20) == repr([(nan, 3)])


def sql_partials(rows: pa.Table) -> pa.Table:
    """`spark_partials` evaluated by a SQL engine (DuckDB standing in for Spark: the expressions are
    plain CASE/CAST/sum), grouped by ``_vnode`` and the group key as the epoch round groups them,
    in the types Spark hands to `fold` (each partial cast to its state column's type)."""
    exprs = ", ".join(f'{e.replace("`", chr(34))} AS "{n}"' for n, e in spark_partials(SPEC))
    con = duckdb.connect()
    con.register("input_rows", rows)
    out = con.sql(f'SELECT "{VNODE}", "g1", "g2", {exprs} FROM input_rows GROUP BY ALL').to_arrow_table()
    schema = read_schema(STATE)
    return pa.table({n: out.column(n).cast(schema.field(n).type) for n in out.column_names})


@pytest.mark.parametrize("seed", range(3))
def test_spark_partials_agree_with_deltas_and_fold(tmp_path, seed):
    """The epoch round pre-aggregates in Spark (`spark_partials`) and calls `fold`; that must give
    what `apply` gives from the input rows."""
    rng = random.Random(seed)
    store = ObjectStore(str(tmp_path))
    reader = StateTableReader(store)
    ssts: list[SstableInfo] = []
    live: list[tuple] = []
    for e in range(1, 6):
        ops = []
        for _ in range(40):
            if live and rng.random() < 0.3:
                ops.append((Op.DELETE if rng.random() < 0.5 else Op.UPDATE_DELETE, *live.pop(rng.randrange(len(live)))))
            else:
                r = (rng.choice([None, 1, 2]), rng.choice([None, "", "a"]), rng.choice([None, -7, 3]),
                     rng.choice([None, "0.05", "-12.34"]), rng.choice([None, 0.5, -1.25]))
                ops.append((rng.choice([Op.INSERT, Op.UPDATE_INSERT]), *r))
                live.append(r)
        t = chunk(ops)
        by_python = deltas(SPEC, t)
        by_sql = sql_partials(t)
        key = [VNODE, "g1", "g2"]
        assert sorted(tuples(by_sql, by_sql.column_names), key=repr) == \
            sorted(tuples(by_python, by_sql.column_names), key=repr)
        epoch = e << 16
        old = reader.lookup(STATE, ssts, epoch - (1 << 16), t.select(key))
        from_rows = apply(SPEC, t, old, epoch)
        from_partials = fold(SPEC, by_sql, old, epoch)
        for a, b in ((from_rows.state_rows, from_partials.state_rows), (from_rows.pairs.table, from_partials.pairs.table)):
            assert sorted(tuples(a, a.column_names), key=repr) == sorted(tuples(b, a.column_names), key=repr)
        ssts.append(write_sst(store, STATE, from_partials.state_rows, f"s/{epoch}.parquet", level=0, sub_level=epoch))
        assert {(r[0], r[1]): r[2] for r in tuples(reader.read(STATE, ssts, epoch), ["g1", "g2", ROW_COUNT])} == \
            {g: row[2] for g, row in recompute(live).items()}
