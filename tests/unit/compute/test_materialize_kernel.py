"""StreamMaterialize kernels: `pairs_from_dml` (a table's overwrite conflict handling),
`pairs_from_changes` (an MV's change stream) and `emit` (SST rows and change log), over real SSTs."""

from __future__ import annotations

import itertools
import random
import zlib
from decimal import Decimal

import pyarrow as pa
import pytest

from compute.executor.materialize import emit, pairs_from_changes, pairs_from_dml
from risingspark.chunk import EPOCH, OP, SEQ, TOMBSTONE, VNODE, Op
from risingspark.storage.desc import SstableInfo, StateTableDesc
from risingspark.storage.object_store import ObjectStore
from risingspark.storage.reader import StateTableReader
from risingspark.storage.sst import write_sst
from risingspark.types import INT8, VARCHAR, DataType, Field

NUM = DataType.parse("numeric(12,2)")
DESC = StateTableDesc(3, (Field("name", VARCHAR), Field("id", INT8), Field("amount", NUM)), pk=(1,), dist_key=(1,))
NAMES = DESC.names  # name, id, amount
E1, E2, E3 = 1 << 16, 2 << 16, 3 << 16


def vnode(key: tuple) -> int:
    return zlib.crc32(repr(key).encode()) % 4


def tuples(table: pa.Table, names: list[str]) -> list[tuple]:
    return list(zip(*(table.column(n).to_pylist() for n in names), strict=True))


def dml(ops: list[tuple[Op, int, str | None, str | None, int]], desc: StateTableDesc = DESC) -> pa.Table:
    """DML rows from (op, id, name, amount, seq) tuples, in the order given."""
    return pa.table({OP: pa.array([int(o[0]) for o in ops], pa.int8()),
                     SEQ: pa.array([o[4] for o in ops], pa.int64()),
                     VNODE: pa.array([vnode((o[1],)) for o in ops], pa.int16()),
                     "name": pa.array([o[2] for o in ops], pa.string()),
                     "id": pa.array([o[1] for o in ops], pa.int64()),
                     "amount": pa.array([None if o[3] is None else Decimal(o[3]) for o in ops], NUM.to_arrow())})


def change_rows(out) -> list[tuple]:
    """The change log as sorted (op name, _vnode, name, id, amount) tuples."""
    return sorted(((Op(r[0]).name, *r[1:]) for r in tuples(out.changes, [OP, VNODE, *NAMES])), key=repr)


def sst_tuples(out) -> list[tuple]:
    return sorted(tuples(out.sst_rows, [VNODE, *NAMES, EPOCH, TOMBSTONE]), key=repr)


def assert_updates_adjacent(chunk: pa.Table, key: list[str]) -> None:
    """An update is a U- row directly followed by its U+ row, of the same key (`risingspark.chunk`)."""
    ops = chunk.column(OP).to_pylist()
    keys = tuples(chunk, key)
    for i, o in enumerate(ops):
        if o == Op.UPDATE_DELETE:
            assert i + 1 < len(ops) and ops[i + 1] == Op.UPDATE_INSERT and keys[i + 1] == keys[i], (i, ops)
        if o == Op.UPDATE_INSERT:
            assert i > 0 and ops[i - 1] == Op.UPDATE_DELETE, (i, ops)


class TableJob:
    """A table's DML job on real SSTs: lookup at the previous epoch, then pairs_from_dml + emit."""

    def __init__(self, store: ObjectStore, desc: StateTableDesc = DESC) -> None:
        self.store, self.desc = store, desc
        self.reader = StateTableReader(store)
        self.ssts: list[SstableInfo] = []

    def run(self, rows: pa.Table, epoch: int, prev: int | None):
        old = self.reader.lookup(self.desc, self.ssts, prev, rows.select([VNODE, *self.desc.pk_names]))
        out = emit(self.desc, pairs_from_dml(self.desc, rows, old), epoch)
        if out.sst_rows.num_rows:
            self.ssts.append(write_sst(self.store, self.desc, out.sst_rows, f"t/{epoch}.parquet", level=0,
                                       sub_level=epoch))
        return out

    def read(self, epoch: int | None) -> list[tuple]:
        return tuples(self.reader.read(self.desc, self.ssts, epoch), [VNODE, *self.desc.names])


@pytest.fixture
def job(tmp_path) -> TableJob:
    return TableJob(ObjectStore(str(tmp_path)))


def D(s: str) -> Decimal:
    return Decimal(s)


def test_dml_conflict_handling(job):
    first = job.run(dml([(Op.INSERT, i, f"o{i}", f"{i}.50", i) for i in (3, 4, 6, 7, 8)]), E1, None)
    assert first.row_delta == 5 and first.changes.num_rows == 5
    assert {r[0] for r in change_rows(first)} == {"INSERT"}

    rows = dml([
        # 1: insert, delete, insert again: the last (by _seq, not by row order) wins
        (Op.INSERT, 1, "b", "2.00", 90), (Op.INSERT, 1, "a", "1.00", 10), (Op.DELETE, 1, None, None, 50),
        # 2: inserted twice then deleted: nothing
        (Op.DELETE, 2, "y", "0", 70), (Op.INSERT, 2, "x", "0", 20), (Op.INSERT, 2, "y", "0", 30),
        # 3 exists: deleted and re-inserted with the same values: nothing
        (Op.INSERT, 3, "o3", "3.50", 60), (Op.DELETE, 3, "o3", "3.50", 40),
        # 4 exists: an insert of an existing key is an update
        (Op.INSERT, 4, "n4", "-4.25", 11),
        # 5 is missing: deleting it does nothing
        (Op.DELETE, 5, "ghost", "1", 12),
        # 6 exists: deleted
        (Op.DELETE, 6, None, None, 13),
        # 7 exists: UPDATE as U-/U+
        (Op.UPDATE_INSERT, 7, "n7", None, 15), (Op.UPDATE_DELETE, 7, "o7", "7.50", 14),
        # 8 exists: an identical UPDATE
        (Op.UPDATE_DELETE, 8, "o8", "8.50", 16), (Op.UPDATE_INSERT, 8, "o8", "8.50", 17),
        # 9 is new
        (Op.INSERT, 9, None, "0.01", 18),
    ])
    out = job.run(rows, E2, E1)
    assert change_rows(out) == sorted([
        ("INSERT", vnode((1,)), "b", 1, D("2.00")),
        ("UPDATE_DELETE", vnode((4,)), "o4", 4, D("4.50")), ("UPDATE_INSERT", vnode((4,)), "n4", 4, D("-4.25")),
        ("DELETE", vnode((6,)), "o6", 6, D("6.50")),
        ("UPDATE_DELETE", vnode((7,)), "o7", 7, D("7.50")), ("UPDATE_INSERT", vnode((7,)), "n7", 7, None),
        ("INSERT", vnode((9,)), None, 9, D("0.01")),
    ], key=repr)
    assert_updates_adjacent(out.changes, ["id"])
    assert out.changes.schema.names == [OP, VNODE, *NAMES]
    assert out.row_delta == 1  # +1 (id 1), +1 (id 9), -1 (id 6)
    # SST rows: upserts of the new after-images and a tombstone keeping only the pk
    assert sst_tuples(out) == sorted([
        (vnode((1,)), "b", 1, D("2.00"), E2, False), (vnode((4,)), "n4", 4, D("-4.25"), E2, False),
        (vnode((7,)), "n7", 7, None, E2, False), (vnode((9,)), None, 9, D("0.01"), E2, False),
        (vnode((6,)), None, 6, None, E2, True),
    ], key=repr)
    assert sorted(job.read(E2), key=lambda r: r[2]) == [
        (vnode((1,)), "b", 1, D("2.00")), (vnode((3,)), "o3", 3, D("3.50")), (vnode((4,)), "n4", 4, D("-4.25")),
        (vnode((7,)), "n7", 7, None), (vnode((8,)), "o8", 8, D("8.50")), (vnode((9,)), None, 9, D("0.01"))]
    # the previous epoch still reads the old table
    assert sorted(r[2] for r in job.read(E1)) == [3, 4, 6, 7, 8]

    # a deleted key re-inserted in a later epoch is an Insert again
    out = job.run(dml([(Op.INSERT, 6, "back", None, 1)]), E3, E2)
    assert change_rows(out) == [("INSERT", vnode((6,)), "back", 6, None)]
    assert out.row_delta == 1


def test_dml_with_nothing_to_change(job):
    job.run(dml([(Op.INSERT, 1, "a", "1", 1)]), E1, None)
    out = job.run(dml([(Op.DELETE, 2, None, None, 1), (Op.INSERT, 1, "a", "1.00", 2),
                       (Op.INSERT, 3, "t", "1", 3), (Op.DELETE, 3, "t", "1", 4)]), E2, E1)
    assert out.changes.num_rows == 0 and out.sst_rows.num_rows == 0 and out.row_delta == 0
    assert out.sst_rows.schema.names == [VNODE, *NAMES, EPOCH, TOMBSTONE]


def test_dml_null_values_compare_equal(job):
    job.run(dml([(Op.INSERT, 1, None, None, 1), (Op.INSERT, 2, None, "5", 2)]), E1, None)
    out = job.run(dml([(Op.INSERT, 1, None, None, 1), (Op.INSERT, 2, "x", "5", 2)]), E2, E1)
    assert change_rows(out) == [("UPDATE_DELETE", vnode((2,)), None, 2, D("5")),
                                ("UPDATE_INSERT", vnode((2,)), "x", 2, D("5"))]


def test_dml_two_column_pk(tmp_path):
    desc = StateTableDesc(4, (Field("a", INT8), Field("b", VARCHAR), Field("v", INT8)), pk=(1, 0), dist_key=(0,))
    job = TableJob(ObjectStore(str(tmp_path)), desc)

    def rows(ops):
        return pa.table({OP: pa.array([int(o[0]) for o in ops], pa.int8()),
                         SEQ: pa.array(range(len(ops)), pa.int64()),
                         VNODE: pa.array([o[1] % 2 for o in ops], pa.int16()),
                         "a": pa.array([o[1] for o in ops], pa.int64()), "b": [o[2] for o in ops],
                         "v": pa.array([o[3] for o in ops], pa.int64())})

    job.run(rows([(Op.INSERT, 1, "x", 1), (Op.INSERT, 1, "y", 2), (Op.INSERT, 2, "x", 3)]), E1, None)
    out = job.run(rows([(Op.INSERT, 1, "x", 10), (Op.DELETE, 1, "y", None), (Op.INSERT, 2, "", 4)]), E2, E1)
    got = sorted((Op(r[0]).name, *r[1:]) for r in tuples(out.changes, [OP, "a", "b", "v"]))
    assert got == [("DELETE", 1, "y", 2), ("INSERT", 2, "", 4), ("UPDATE_DELETE", 1, "x", 1),
                   ("UPDATE_INSERT", 1, "x", 10)]
    assert sorted(tuples(job.reader.read(desc, job.ssts, E2), ["a", "b", "v"])) == [(1, "x", 10), (2, "", 4),
                                                                                   (2, "x", 3)]


# ---- pairs_from_changes (an MV's materialize: no lookup, the input carries both images) ---------

MV = StateTableDesc(5, (Field("g", VARCHAR), Field("n", INT8)), pk=(0,), dist_key=(0,))


def changes(rows: list[tuple[Op, str | None, int | None]]) -> pa.Table:
    return pa.table({OP: pa.array([int(r[0]) for r in rows], pa.int8()),
                     VNODE: pa.array([0 if r[1] is None else len(r[1]) % 3 for r in rows], pa.int16()),
                     "g": pa.array([r[1] for r in rows], pa.string()),
                     "n": pa.array([r[2] for r in rows], pa.int64())})


def mv_changes(out) -> list[tuple]:
    return sorted(((Op(r[0]).name, *r[1:]) for r in tuples(out.changes, [OP, "g", "n"])), key=repr)


CHANGE_CASES = [
    # (input, expected change log)
    ([(Op.INSERT, "a", 1)], [("INSERT", "a", 1)]),
    ([(Op.DELETE, "a", 1)], [("DELETE", "a", 1)]),
    ([(Op.UPDATE_DELETE, "a", 1), (Op.UPDATE_INSERT, "a", 2)], [("UPDATE_DELETE", "a", 1), ("UPDATE_INSERT", "a", 2)]),
    ([(Op.UPDATE_DELETE, "a", 1), (Op.UPDATE_INSERT, "a", 1)], []),  # identical images
    ([(Op.DELETE, "a", 1), (Op.INSERT, "a", 5)], [("UPDATE_DELETE", "a", 1), ("UPDATE_INSERT", "a", 5)]),
    # NULL is a key like any other, distinct from the empty string
    ([(Op.DELETE, None, 1), (Op.INSERT, None, 2), (Op.INSERT, "", 3)],
     [("INSERT", "", 3), ("UPDATE_DELETE", None, 1), ("UPDATE_INSERT", None, 2)]),
    ([(Op.UPDATE_DELETE, None, None), (Op.UPDATE_INSERT, None, None)], []),
    ([(Op.UPDATE_DELETE, "b", None), (Op.UPDATE_INSERT, "b", 0)], [("UPDATE_DELETE", "b", None),
                                                                   ("UPDATE_INSERT", "b", 0)]),
]


@pytest.mark.parametrize(("rows", "expected"), CHANGE_CASES)
def test_pairs_from_changes_in_any_order(rows, expected):
    for perm in itertools.permutations(rows):
        out = emit(MV, pairs_from_changes(MV, changes(list(perm))), E1)
        assert mv_changes(out) == sorted(expected, key=repr)
        inserted = sum(1 for r in expected if r[0] == "INSERT")
        deleted = sum(1 for r in expected if r[0] == "DELETE")
        assert out.row_delta == inserted - deleted
        # one SST row per changed key: the after-image, or a tombstone
        sst = sorted(tuples(out.sst_rows, ["g", "n", TOMBSTONE]), key=repr)
        want = [(r[1], r[2], False) for r in expected if r[0] in ("INSERT", "UPDATE_INSERT")]
        want += [(r[1], None, True) for r in expected if r[0] == "DELETE"]
        assert sst == sorted(want, key=repr)


def test_emit_of_no_pairs():
    out = emit(MV, pairs_from_changes(MV, changes([])), E1)
    assert out.changes.num_rows == 0 and out.sst_rows.num_rows == 0 and out.row_delta == 0
    assert out.changes.schema.names == [OP, VNODE, "g", "n"]


# ---- a random table job across epochs, against a dict model --------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_table_job_matches_model(tmp_path, seed):
    rng = random.Random(seed)
    job = TableJob(ObjectStore(str(tmp_path)))
    model: dict[int, tuple] = {}
    replica: dict[int, tuple] = {}
    prev = None
    for e in range(1, 15):
        epoch = e << 16
        ops = []
        for seq in range(rng.randrange(1, 30)):
            k = rng.randrange(25)
            op = rng.choice([Op.INSERT, Op.INSERT, Op.DELETE, Op.UPDATE_DELETE, Op.UPDATE_INSERT])
            name = rng.choice([None, "", "a", "b"])
            amount = rng.choice([None, "0", "1.50", "-2.25", "99999999.99"])
            ops.append((op, k, name, amount, seq * 7 + rng.randrange(7)))
        shuffled = ops[:]
        rng.shuffle(shuffled)
        out = job.run(dml(shuffled), epoch, prev)
        for op, k, name, amount, _ in sorted(ops, key=lambda o: o[4]):
            if op in (Op.INSERT, Op.UPDATE_INSERT):
                model[k] = (vnode((k,)), name, k, None if amount is None else Decimal(amount))
            else:
                model.pop(k, None)
        assert job.read(epoch) == sorted(model.values(), key=lambda r: (r[0], r[2]))
        assert_updates_adjacent(out.changes, ["id"])
        # the change log, applied to a replica of the previous epoch, gives the new table
        start = dict(replica)
        for op, vn, name, k, amount in tuples(out.changes, [OP, VNODE, *NAMES]):
            if op in (Op.DELETE, Op.UPDATE_DELETE):
                assert start[k] == (vn, name, k, amount)
                del replica[k]
        for op, vn, name, k, amount in tuples(out.changes, [OP, VNODE, *NAMES]):
            if op in (Op.INSERT, Op.UPDATE_INSERT):
                assert op == Op.UPDATE_INSERT or k not in start
                replica[k] = (vn, name, k, amount)
        assert replica == model
        assert out.row_delta == len(model) - len(start)
        prev = epoch


def test_float_keys_and_values_with_nan():
    """A double pk (e.g. an MV grouped by a double column): NaN is one key, and a NaN value updated
    to NaN is no change, as Postgres compares them."""
    nan = float("nan")
    desc = StateTableDesc(6, (Field("f", DataType.parse("double")), Field("n", INT8)), pk=(0,), dist_key=(0,))
    rows = pa.table({OP: pa.array([Op.DELETE, Op.INSERT, Op.UPDATE_DELETE, Op.UPDATE_INSERT], pa.int8()),
                     VNODE: pa.array([0, 0, 1, 1], pa.int16()), "f": [nan, nan, 1.5, 1.5], "n": [1, 2, 3, 3]})
    out = emit(desc, pairs_from_changes(desc, rows), E1)
    got = [(Op(o).name, f, n) for o, f, n in tuples(out.changes, [OP, "f", "n"])]
    assert repr(got) == repr([("UPDATE_DELETE", nan, 1), ("UPDATE_INSERT", nan, 2)])
    assert out.sst_rows.num_rows == 1 and out.row_delta == 0

    desc = StateTableDesc(7, (Field("k", INT8), Field("f", DataType.parse("double"))), pk=(0,), dist_key=(0,))
    rows = pa.table({OP: pa.array([Op.UPDATE_DELETE, Op.UPDATE_INSERT], pa.int8()),
                     VNODE: pa.array([0, 0], pa.int16()), "k": [1, 1], "f": [nan, nan]})
    out = emit(desc, pairs_from_changes(desc, rows), E1)
    assert out.changes.num_rows == 0 and out.sst_rows.num_rows == 0
