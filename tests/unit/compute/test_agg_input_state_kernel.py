"""StreamHashAgg with materialized input states (min, max, DISTINCT, string_agg) and bool_and/bool_or,
fused with the MV's materialize as the compute node runs them: state looked up at the previous epoch
from real SSTs (the input states by group-key prefix), written at the epoch; random insert/delete
histories folded epoch by epoch must equal a recomputation from the live input."""

from __future__ import annotations

import decimal
import random
import zlib
from decimal import Decimal

import duckdb
import pyarrow as pa
import pytest

from compute.executor.agg_input_state import _results, input_deltas
from compute.executor.hash_agg import (
    SPARK_SIGN,
    AggCallSpec,
    HashAggSpec,
    all_input_deltas,
    apply,
    deltas,
    fold,
    spark_partials,
)
from compute.executor.materialize import emit
from risingspark.aggregate import (
    VALUE_COUNT,
    agg_return_type,
    agg_state_fields,
    input_state_fields,
    keeps_nulls,
    needs_input_state,
)
from risingspark.chunk import OP, TOMBSTONE, VNODE, Op
from risingspark.storage.desc import SstableInfo, StateTableDesc
from risingspark.storage.object_store import ObjectStore
from risingspark.storage.reader import StateTableReader, read_schema
from risingspark.storage.sst import write_sst
from risingspark.types import BOOL, INT4, VARCHAR, DataType, Field

NUM = DataType.parse("numeric(12,2)")
INPUT = (Field("g", INT4), Field("x", INT4), Field("s", VARCHAR), Field("y", INT4), Field("m", NUM), Field("b", BOOL))
TYPES = {f.name: f.type for f in INPUT}
# (kind, arg, distinct, order, delimiter, output)
CALLS = [
    ("count_star", None, False, (), None, "cnt"),
    ("min", "x", False, (), None, "min_x"),
    ("max", "x", False, (), None, "max_x"),
    ("min", "s", False, (), None, "min_s"),
    ("max", "m", False, (), None, "max_m"),
    ("count", "x", True, (), None, "cd_x"),
    ("sum", "x", True, (), None, "sd_x"),
    ("sum", "m", True, (), None, "sd_m"),
    ("avg", "m", True, (), None, "ad_m"),
    ("count", "x", False, (), None, "cnt_x"),
    ("bool_and", "b", False, (), None, "band"),
    ("bool_or", "b", False, (), None, "bor"),
    ("string_agg", "s", False, (("y", True, True),), ",", "sa_y"),  # ORDER BY y DESC (NULLS FIRST)
    ("string_agg", "s", False, (), "", "sa"),
    ("string_agg", "s", True, (("s2", True, True),), "|", "sa_d"),
    ("array_agg", "x", False, (("y", False, False),), None, "aa_y"),  # ORDER BY y (NULLS LAST), NULLs kept
    ("array_agg", "s", True, (), None, "aa_d"),  # DISTINCT: NULL once, last
]
SCALE10 = Decimal("1e-10")


def make_spec(group: tuple[str, ...], base_id: int) -> tuple[HashAggSpec, StateTableDesc]:
    gfields = [Field(g, TYPES[g]) for g in group]
    k = len(group)
    gkey = tuple(range(k))
    calls = []
    for i, (kind, arg, distinct, order, delim, out) in enumerate(CALLS):
        at = TYPES.get(arg) if arg else None
        state = None
        if needs_input_state(kind, distinct):
            assert arg is not None
            fields = input_state_fields(gfields, Field(arg, TYPES[arg]),
                                        [Field(o, TYPES.get(o, VARCHAR)) for o, _, _ in order])
            state = StateTableDesc(base_id + 10 + i, fields, tuple(range(len(fields) - 1)), gkey)
        calls.append(AggCallSpec(kind, arg, at, agg_return_type(kind, at), out, distinct, order, delim, state))
    main = StateTableDesc(base_id, agg_state_fields(gfields, [(c.kind, c.arg_type) for c in calls],
                                                    [c.distinct for c in calls]), gkey, gkey)
    spec = HashAggSpec(group, tuple(calls), main)
    mv = StateTableDesc(base_id + 1, (*gfields, *(Field(c.output, c.return_type) for c in calls)), gkey, gkey)
    return spec, mv


def vnode(group: tuple) -> int:
    return zlib.crc32(repr(group).encode()) % 4


def tuples(table: pa.Table, names: list[str]) -> list[tuple]:
    return list(zip(*(table.column(n).to_pylist() for n in names), strict=True))


def chunk(group: tuple[str, ...], rows: list[tuple]) -> pa.Table:
    """An input chunk from (op, g, x, s, y, m, b) tuples; ``s2`` repeats ``s`` (string_agg(DISTINCT s
    ORDER BY s) keeps its order column apart from its value, as the planner projects it)."""
    names = [f.name for f in INPUT]
    cols = {OP: pa.array([int(r[0]) for r in rows], pa.int8()),
            VNODE: pa.array([vnode(tuple(r[1 + names.index(g)] for g in group)) for r in rows], pa.int16())}
    for i, f in enumerate(INPUT):
        values = [r[1 + i] for r in rows]
        if f.type == NUM:
            values = [None if v is None else Decimal(v) for v in values]
        cols[f.name] = pa.array(values, f.type.to_arrow())
    cols["s2"] = cols["s"]
    return pa.table(cols)


def _agg_string(vals: list[tuple], delim: str, order: tuple) -> str | None:
    """string_agg over (s, y) pairs, s not NULL."""
    rows = sorted(vals, key=lambda r: r[0])
    if order:
        rows.sort(key=lambda r: (r[1] is not None, -(r[1] or 0)))  # y DESC NULLS FIRST, stable
    return delim.join(r[0] for r in rows) if rows else None


def _array_agg(vals: list[tuple]) -> list | None:
    """array_agg(x ORDER BY y) over (x, y) pairs: y ascending NULLS LAST, ties by x (NULLs last)."""
    rows = sorted(vals, key=lambda r: (r[0] is None, r[0] or 0))
    rows.sort(key=lambda r: (r[1] is None, r[1] or 0))
    return [r[0] for r in rows] if rows else None


def recompute(group: tuple[str, ...], live: list[tuple]) -> dict[tuple, tuple]:
    names = [f.name for f in INPUT]
    groups: dict[tuple, list[dict]] = {}
    for r in live:
        d = dict(zip(names, r, strict=True))
        groups.setdefault(tuple(d[g] for g in group), []).append(d)
    if not group:
        groups.setdefault((), [])
    out = {}
    for g, rows in groups.items():
        xs = [r["x"] for r in rows if r["x"] is not None]
        ss = [r["s"] for r in rows if r["s"] is not None]
        ms = [Decimal(r["m"]) for r in rows if r["m"] is not None]
        bs = [r["b"] for r in rows if r["b"] is not None]
        dm = set(ms)
        out[g] = (*g, len(rows), min(xs, default=None), max(xs, default=None), min(ss, default=None),
                  max(ms, default=None), len(set(xs)), sum(set(xs)) if xs else None, sum(dm) if dm else None,
                  (sum(dm) / len(dm)).quantize(SCALE10, rounding=decimal.ROUND_HALF_UP) if dm else None,
                  len(xs), all(bs) if bs else None, any(bs) if bs else None,
                  _agg_string([(r["s"], r["y"]) for r in rows if r["s"] is not None], ",", ("y",)),
                  _agg_string([(s, None) for s in ss], "", ()),
                  "|".join(sorted(set(ss), reverse=True)) if ss else None,
                  _array_agg([(r["x"], r["y"]) for r in rows]),
                  sorted({r["s"] for r in rows if r["s"] is not None})
                  + ([None] if any(r["s"] is None for r in rows) else []) if rows else None)
    return out


class AggJob:
    """StreamHashAgg + StreamMaterialize over real SSTs, epoch by epoch (group key `group`)."""

    def __init__(self, store: ObjectStore, group: tuple[str, ...]) -> None:
        self.store = store
        self.group = group
        self.spec, self.mv_desc = make_spec(group, 40 if group else 70)
        self.reader = StateTableReader(store)
        self.ssts: dict[int, list[SstableInfo]] = {}
        self.epoch = 0
        self.replica: dict[tuple, tuple] = {}

    def write(self, desc: StateTableDesc, rows: pa.Table) -> None:
        if rows.num_rows:
            self.ssts.setdefault(desc.table_id, []).append(
                self.store_sst(desc, rows))

    def store_sst(self, desc: StateTableDesc, rows: pa.Table) -> SstableInfo:
        return write_sst(self.store, desc, rows, f"{desc.table_id}/{self.epoch}.parquet", level=0,
                         sub_level=self.epoch)

    def ssts_of(self, desc: StateTableDesc) -> list[SstableInfo]:
        return self.ssts.get(desc.table_id, [])

    def run(self, rows: list[tuple], *, via_sql: bool = False):
        prev = self.epoch or None
        self.epoch += 1 << 16
        t = chunk(self.group, rows)
        keys = t.select([VNODE, *self.group])
        spec = self.spec
        old = self.reader.lookup(spec.state, self.ssts_of(spec.state), prev, keys)
        old_inputs = {}
        for i in spec.input_calls:
            desc = spec.calls[i].input_state
            assert desc is not None
            old_inputs[i] = self.reader.lookup(desc, self.ssts_of(desc), prev, keys, columns=list(self.group))
        if via_sql:
            partials, inputs = sql_partials(spec, t)
            agg = fold(spec, partials, old, self.epoch, inputs, old_inputs)
        else:
            agg = apply(spec, t, old, self.epoch, old_inputs)
        out = emit(self.mv_desc, agg.pairs, self.epoch)
        self.write(spec.state, agg.state_rows)
        for i, rows_i in agg.input_state_rows.items():
            desc = spec.calls[i].input_state
            assert desc is not None
            self.write(desc, rows_i)
        self.write(self.mv_desc, out.sst_rows)
        self.apply_to_replica(out.changes)
        return agg, out

    def key(self, row: tuple) -> tuple:
        return tuple(row[: len(self.group)])

    def apply_to_replica(self, changes: pa.Table) -> None:
        start = dict(self.replica)
        rows = tuples(changes, [OP, *self.mv_desc.names])
        for op, *row in rows:
            if op in (Op.DELETE, Op.UPDATE_DELETE):
                assert start[self.key(row)] == tuple(row)
                del self.replica[self.key(row)]
        for op, *row in rows:
            if op in (Op.INSERT, Op.UPDATE_INSERT):
                self.replica[self.key(row)] = tuple(row)

    def mv(self) -> dict[tuple, tuple]:
        t = self.reader.read(self.mv_desc, self.ssts_of(self.mv_desc), self.epoch)
        return {self.key(r): r for r in tuples(t, self.mv_desc.names)}

    def input_state(self, i: int) -> list[tuple]:
        desc = self.spec.calls[i].input_state
        assert desc is not None
        return sorted(tuples(self.reader.read(desc, self.ssts_of(desc), self.epoch), desc.names), key=repr)


def sql_partials(spec: HashAggSpec, rows: pa.Table) -> tuple[pa.Table, dict[int, pa.Table]]:
    """What the epoch round hands the fold: `spark_partials` and the input states' signed counts
    evaluated by a SQL engine (DuckDB standing in for Spark: plain CASE/CAST/sum)."""
    con = duckdb.connect()
    con.register("input_rows", rows)
    g = ", ".join(f'"{n}"' for n in [VNODE, *spec.group_key])
    exprs = ", ".join(f'{e.replace("`", chr(34))} AS "{n}"' for n, e in spark_partials(spec))
    out = con.sql(f'SELECT {g}, {exprs} FROM input_rows GROUP BY {g}').to_arrow_table()
    schema = read_schema(spec.state)
    partials = pa.table({n: out.column(n).cast(schema.field(n).type) for n in out.column_names})
    inputs = {}
    for i in spec.input_calls:
        c = spec.calls[i]
        assert c.input_state is not None
        cols = ", ".join(f'"{n}"' for n in [VNODE, *c.input_state.names[:-1]])
        sign = SPARK_SIGN.replace("`", '"')
        where = "TRUE" if keeps_nulls(c.kind) else f'"{c.arg}" IS NOT NULL'
        t = con.sql(f'SELECT {cols}, sum({sign}) AS "{VALUE_COUNT}" FROM input_rows WHERE {where} '
                    f'GROUP BY {cols} HAVING sum({sign}) <> 0').to_arrow_table()
        inputs[i] = t
    return partials, inputs


@pytest.mark.parametrize(("seed", "group", "via_sql"), [(s, grp, s % 2 == 1) for s in range(3)
                                                        for grp in (("g",), ())])
def test_random_epochs_match_recomputation(tmp_path, seed, group, via_sql):
    rng = random.Random(seed)
    job = AggJob(ObjectStore(str(tmp_path)), group)
    live: list[tuple] = []

    def row() -> tuple:
        return (rng.choice([None, 0, 1, 2]), rng.choice([None, -5, 0, 3, 3, 7]),
                rng.choice([None, "", "a", "b", "ab", "é"]), rng.choice([None, 1, 2, 3]),
                rng.choice([None, "0.01", "-0.07", "12.50", "0.01"]), rng.choice([None, True, False]))

    for _ in range(12):
        ops: list[tuple] = []
        for _ in range(rng.randrange(0, 20)):
            r = rng.random()
            if live and r < 0.35:  # deletes often remove the current min/max
                victim = min(range(len(live)), key=lambda j: (live[j][1] is None, live[j][1])) \
                    if rng.random() < 0.3 else rng.randrange(len(live))
                ops.append((Op.DELETE, *live.pop(victim)))
            elif live and r < 0.55:
                old = live.pop(rng.randrange(len(live)))
                new = row() if rng.random() < 0.5 else (old[0], *row()[1:])
                ops += [(Op.UPDATE_DELETE, *old), (Op.UPDATE_INSERT, *new)]
                live.append(new)
            else:
                new = row()
                ops.append((Op.INSERT, *new))
                live.append(new)
        rng.shuffle(ops)
        if not ops:
            continue
        job.run(ops, via_sql=via_sql)
        expected = recompute(group, live)
        if group:
            assert job.mv() == expected
            assert job.replica == expected
        else:  # a global aggregate's one row exists from its first epoch on
            assert job.mv() == expected and job.replica == expected
    # every input state row holds a positive multiplicity of a live input
    for i in job.spec.input_calls:
        c = job.spec.calls[i]
        assert all(r[-1] > 0 for r in job.input_state(i))
        column = [f.name for f in INPUT].index(c.arg or "")
        assert sum(r[-1] for r in job.input_state(i)) == sum(1 for r in live
                                                             if r[column] is not None or keeps_nulls(c.kind))


def test_deleting_the_min_and_max_falls_back_to_the_next_values(tmp_path):
    job = AggJob(ObjectStore(str(tmp_path)), ("g",))
    job.run([(Op.INSERT, 1, x, s, y, None, None) for x, s, y in ((5, "m", 1), (1, "z", 2), (9, "a", 3), (1, "z", 2))])
    assert job.mv()[(1,)][1:5] == (4, 1, 9, "a")
    assert job.mv()[(1,)][13] == "a,z,z,m"  # string_agg(s, ',' ORDER BY y DESC)
    # one copy of the duplicated min goes: the min stays, its multiplicity drops to 1
    agg, out = job.run([(Op.DELETE, 1, 1, "z", 2, None, None)])
    assert job.mv()[(1,)][1:5] == (3, 1, 9, "a")
    assert job.input_state(1) == [(1, 1, 1), (1, 5, 1), (1, 9, 1)]
    # both extremes go in one epoch, one by an update
    agg, out = job.run([(Op.DELETE, 1, 1, "z", 2, None, None), (Op.UPDATE_DELETE, 1, 9, "a", 3, None, None),
                        (Op.UPDATE_INSERT, 1, 4, None, 3, None, None)])
    assert job.mv()[(1,)][1:7] == (2, 4, 5, "m", None, 2)
    assert job.mv()[(1,)][13] == "m"
    # the deleted keys are tombstones of the input state, keyed by (group, value)
    state = agg.input_state_rows[1]
    assert sorted(tuples(state.filter(state.column(TOMBSTONE)), ["g", "x", VALUE_COUNT])) == [(1, 1, None),
                                                                                              (1, 9, None)]
    assert sorted(tuples(out.changes, [OP])) == [(Op.UPDATE_DELETE,), (Op.UPDATE_INSERT,)]


def test_global_aggregate_over_nothing_gives_nulls_and_zero_counts(tmp_path):
    job = AggJob(ObjectStore(str(tmp_path)), ())
    job.run([(Op.INSERT, 1, None, None, None, None, None)])
    # array_agg keeps the NULL input: {NULL}
    assert job.mv()[()] == (1, None, None, None, None, 0, None, None, None, 0, None, None, None, None, None,
                            [None], [None])
    job.run([(Op.DELETE, 1, None, None, None, None, None), (Op.INSERT, 2, 3, "q", 1, "1.5", True)])
    assert job.mv()[()] == (1, 3, 3, "q", Decimal("1.50"), 1, 3, Decimal("1.50"), Decimal("1.5000000000"), 1,
                            True, True, "q", "q", "q", [3], ["q"])
    job.run([(Op.DELETE, 2, 3, "q", 1, "1.5", True)])
    assert job.mv()[()] == (0, None, None, None, None, 0, None, None, None, 0, None, None, None, None, None,
                            None, None)


def test_input_deltas_drop_nulls_and_cancelled_keys():
    spec, _ = make_spec(("g",), 40)
    t = chunk(("g",), [(Op.INSERT, 1, 5, None, None, None, None), (Op.DELETE, 1, 5, None, None, None, None),
                       (Op.INSERT, 1, None, None, None, None, None), (Op.INSERT, 2, 5, None, None, None, None),
                       (Op.UPDATE_INSERT, 2, 5, None, None, None, None), (Op.DELETE, None, 6, None, None, None, None)])
    d = input_deltas(("g",), spec.calls[1], t, t.column(OP))
    assert sorted(tuples(d, ["g", "x", VALUE_COUNT]), key=repr) == [(2, 5, 2), (None, 6, -1)]
    assert set(all_input_deltas(spec, t)) == set(spec.input_calls)
    # the main state keeps no partials for input-state calls, only for the others
    assert [f.name for f in spec.state.fields] == ["g", "_row_count", "_a9_count", "_a10_count", "_a10_true",
                                                  "_a11_count", "_a11_true"]
    assert {n for n, _ in spark_partials(spec)} == {"_row_count", "_a9_count", "_a10_count", "_a10_true",
                                                   "_a11_count", "_a11_true"}
    assert deltas(spec, t).column_names == [VNODE, "g", "_row_count", "_a9_count", "_a10_count", "_a10_true",
                                            "_a11_count", "_a11_true"]


def test_nan_is_the_greatest_float():
    f = Field("f", DataType.parse("double precision"))
    spec = {}
    for kind in ("min", "max"):
        state = StateTableDesc(90, input_state_fields([], f, []), (0,), ())
        spec[kind] = AggCallSpec(kind, "f", f.type, f.type, kind, input_state=state)
    rows = pa.table({VNODE: pa.array([0, 0, 0], pa.int16()), "f": [1.5, float("nan"), -2.0],
                     VALUE_COUNT: pa.array([1, 1, 1], pa.int64())})
    groups = pa.table({VNODE: pa.array([0], pa.int16())})
    assert _results((), spec["min"], groups, rows).to_pylist() == [-2.0]
    assert str(_results((), spec["max"], groups, rows).to_pylist()) == "[nan]"


def test_string_agg_with_each_rows_delimiter_puts_it_before_its_value():
    """string_agg(s, d ORDER BY y): as PostgreSQL, every value but the first is preceded by its own
    row's delimiter, a NULL delimiter adds nothing, repeated rows repeat value and delimiter."""
    from compute.executor.agg_input_state import _result

    call = AggCallSpec("string_agg", "s", VARCHAR, VARCHAR, "out", order=(("y", False, False), ("d", False, False)),
                       delimiter_in_order=True)
    rows = [("b", 2, "+", 1), ("a", 1, "-", 1), ("c", 3, None, 2)]  # (value, y, delimiter, count)
    assert _result(call, rows) == "a+bcc"
    assert _result(call, [("x", 5, "/", 1)]) == "x"
    assert _result(call, []) is None
