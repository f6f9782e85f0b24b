"""Arrangement backfill (`snapshot_positions`, `step`) against real SSTs and a Python model.

The model-based test runs what a compute node runs, epoch by epoch: the upstream table's job
(`materialize.pairs_from_dml` + `emit` over a lookup at the previous epoch) produces the epoch's
change log and SST rows; the backfilling job reads the upstream snapshot after its per-vnode
positions at the previous epoch (`StateTableReader.scan_after`) and merges it with the change log
(`step`); its output feeds a downstream model that checks every op, and a downstream MV written
through `materialize.pairs_from_changes` + `emit` as SSTs.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

import pyarrow as pa
import pytest

from compute.executor.backfill.arrangement_backfill import snapshot_positions, step
from compute.executor.materialize import emit, pairs_from_changes, pairs_from_dml
from risingspark.barrier import VnodeProgress
from risingspark.chunk import OP, SEQ, VNODE, Op
from risingspark.keys import decode_key, encode_key
from risingspark.storage.cache import BlockCache
from risingspark.storage.changelog import changelog_schema
from risingspark.storage.desc import SstableInfo, StateTableDesc
from risingspark.storage.object_store import ObjectStore
from risingspark.storage.reader import ScanResult, StateTableReader, read_schema
from risingspark.storage.sst import write_sst
from risingspark.types import INT4, INT8, VARCHAR, DataType, Field

NUM = DataType.parse("numeric(12,2)")
EPOCH_STEP = 1 << 16
BEFORE_OPS = (Op.DELETE, Op.UPDATE_DELETE)


def epoch_of(i: int) -> int:
    return (i + 1) * EPOCH_STEP


def tuples(table: pa.Table, names: list[str]) -> list[tuple]:
    return list(zip(*(table.column(n).to_pylist() for n in names), strict=True))


# ---- the upstream table, run as its job runs -------------------------------------------------


class Table:
    """A state table on SSTs plus a dict model of it (pk tuple -> row tuple in `desc.names` order)."""

    def __init__(self, store: ObjectStore, desc: StateTableDesc, vnode_of: Callable[[tuple], int]) -> None:
        self.store, self.desc, self.vnode_of = store, desc, vnode_of
        self.reader = StateTableReader(store, BlockCache(1 << 28))  # as compute nodes read
        self.ssts: list[SstableInfo] = []
        self.model: dict[tuple, tuple] = {}
        self.pk_idx = list(desc.pk)

    def pk_of(self, row: tuple) -> tuple:
        return tuple(row[i] for i in self.pk_idx)

    def write(self, rows: pa.Table, epoch: int) -> None:
        if rows.num_rows:
            self.ssts.append(write_sst(self.store, self.desc, rows, f"t{self.desc.table_id}/{epoch}.parquet",
                                       level=0, sub_level=epoch, row_group_size=8))

    def read(self, epoch: int | None) -> dict[tuple, tuple]:
        t = self.reader.read(self.desc, self.ssts, epoch)
        rows = tuples(t, self.desc.names)
        vnodes = t.column(VNODE).to_pylist()
        for vn, row in zip(vnodes, rows, strict=True):
            assert vn == self.vnode_of(self.pk_of(row))
        return {self.pk_of(r): r for r in rows}


def dml_table(desc: StateTableDesc, vnode_of: Callable[[tuple], int], ops: list[tuple[Op, tuple]],
              rng: random.Random) -> pa.Table:
    """DML rows (`_op`, `_seq`, `_vnode`, values) with `_seq` in list order, rows shuffled."""
    order = list(range(len(ops)))
    rng.shuffle(order)
    schema = desc.value_schema()
    cols = {OP: pa.array([int(ops[i][0]) for i in order], pa.int8()),
            SEQ: pa.array([10 * i + 3 for i in order], pa.int64()),
            VNODE: pa.array([vnode_of(tuple(ops[i][1][k] for k in desc.pk)) for i in order], pa.int16())}
    for j, f in enumerate(schema):
        cols[f.name] = pa.array([ops[i][1][j] for i in order], f.type)
    return pa.table(cols)


def run_table_job(table: Table, ops: list[tuple[Op, tuple]], epoch: int, prev: int | None,
                  rng: random.Random):
    """The upstream's DML job for one epoch: returns its `MaterializeOutput` (not yet written)."""
    rows = dml_table(table.desc, table.vnode_of, ops, rng)
    keys = rows.select([VNODE, *table.desc.pk_names])
    old = table.reader.lookup(table.desc, table.ssts, prev, keys)
    return emit(table.desc, pairs_from_dml(table.desc, rows, old), epoch)


def apply_dml_to_model(model: dict[tuple, tuple], pk_of: Callable[[tuple], tuple],
                       ops: list[tuple[Op, tuple]]) -> None:
    for op, row in ops:
        if op in (Op.INSERT, Op.UPDATE_INSERT):
            model[pk_of(row)] = row
        else:
            model.pop(pk_of(row), None)


# ---- the downstream model ----------------------------------------------------------------------


class Downstream:
    """Applies a change stream and checks every op against what it holds."""

    def __init__(self, desc: StateTableDesc) -> None:
        self.desc = desc
        self.rows: dict[tuple, tuple] = {}

    def apply(self, changes: pa.Table) -> None:
        names = self.desc.names
        ops = [Op(o) for o in changes.column(OP).to_pylist()]
        rows = tuples(changes, names)
        before: dict[tuple, Op] = {}
        after: dict[tuple, Op] = {}
        start = dict(self.rows)
        for op, row in zip(ops, rows, strict=True):
            key = tuple(row[i] for i in self.desc.pk)
            side = before if op in BEFORE_OPS else after
            assert key not in side, f"key {key} has two {'before' if side is before else 'after'}-images"
            side[key] = op
        # an epoch's ops may be applied in any order: before-images first, then after-images
        for op, row in zip(ops, rows, strict=True):
            key = tuple(row[i] for i in self.desc.pk)
            if op in BEFORE_OPS:
                assert key in start, f"{op.name} of {key}, which downstream does not hold"
                assert start[key] == row, f"{op.name} of {row}, downstream holds {start[key]}"
                if op is Op.UPDATE_DELETE:
                    assert after.get(key) is Op.UPDATE_INSERT, f"U- of {key} without its U+"
                del self.rows[key]
        for op, row in zip(ops, rows, strict=True):
            key = tuple(row[i] for i in self.desc.pk)
            if op is Op.INSERT:
                assert key not in start, f"Insert of {key}, which downstream already holds: {start[key]}"
                assert key not in before, f"Insert of {key} after a {before[key].name} in one epoch"
            elif op is Op.UPDATE_INSERT:
                assert before.get(key) is Op.UPDATE_DELETE, f"U+ of {key} without its U-"
            else:
                continue
            self.rows[key] = row


# ---- scenario configurations -------------------------------------------------------------------

ALPHABET = ["a", "b", "Z", "é", "_", "ab", "ß"]


def rand_str(rng: random.Random, max_parts: int = 3) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(max_parts + 1)))


def crc_vnode(parts: tuple, n: int) -> int:
    return zlib.crc32(repr(parts).encode()) % n


@dataclass(frozen=True)
class Config:
    """An upstream table: its desc, vnode count, and generators of keys and value rows."""

    name: str
    desc: StateTableDesc
    vnodes: int
    new_key: Callable[[random.Random], tuple]
    neighbours: Callable[[tuple], list[tuple]]  # keys just before and after a key (any vnode)
    make_row: Callable[[random.Random, tuple], tuple]  # a row of a key with random values

    def vnode_of(self, pk: tuple) -> int:
        dist = tuple(pk[self.desc.pk.index(i)] for i in self.desc.dist_key)
        return crc_vnode(dist, self.vnodes)


def _row_a(rng: random.Random, pk: tuple) -> tuple:
    # fields: note, k1, v, k2, amount
    note = None if rng.random() < 0.2 else rand_str(rng)
    v = None if rng.random() < 0.2 else rng.randrange(-3, 4)  # small: identical updates happen
    amount = None if rng.random() < 0.1 else Decimal(rng.randrange(-10**6, 10**6)).scaleb(-2)
    return (note, pk[0], v, pk[1], amount)


def _neighbours_a(pk: tuple) -> list[tuple]:
    k1, k2 = pk
    out = [(k1, k2 + c) for c in ("a", "", "\x01", "Z", "é")] + [(k1, k2[:-1]), (k1, "")]
    if k2 and ord(k2[-1]) > 1:
        out.append((k1, k2[:-1] + chr(ord(k2[-1]) - 1) + "zz"))
    return [k for k in out if k != pk]


CONFIG_A = Config(
    "int_and_string_pk",
    # the pk columns are not the first fields, and not in field order
    StateTableDesc(11, (Field("note", VARCHAR), Field("k1", INT8), Field("v", INT8), Field("k2", VARCHAR),
                        Field("amount", NUM)), pk=(1, 3), dist_key=(1,)),
    8,
    lambda rng: (rng.randrange(-4, 16), rand_str(rng)),
    _neighbours_a,
    _row_a,
)


def _neighbours_b(pk: tuple) -> list[tuple]:
    (s,) = pk
    out = [s + c for c in ("a", "\x01", "Z", "ab", "é")] + [s[:-1]]
    if s and ord(s[-1]) > 1:
        out.append(s[:-1] + chr(ord(s[-1]) - 1) + "~")
    if s:
        out.append(s[:-1] + chr(ord(s[-1]) + 1))
    return [(x,) for x in out if x != s]


CONFIG_B = Config(
    "string_pk",
    StateTableDesc(12, (Field("name", VARCHAR), Field("v", INT4)), pk=(0,), dist_key=(0,)),
    4,
    lambda rng: (rand_str(rng, 4),),
    _neighbours_b,
    lambda rng, pk: (pk[0], None if rng.random() < 0.2 else rng.randrange(3)),
)

CONFIG_C = Config(
    "int_pk",
    StateTableDesc(13, (Field("payload", VARCHAR), Field("id", INT4)), pk=(1,), dist_key=(1,)),
    5,
    lambda rng: (rng.randrange(-50, 120),),
    lambda pk: [(pk[0] + d,) for d in (-3, -2, -1, 1, 2, 3)],
    lambda rng, pk: (rng.choice(["x", "y", None, ""]), pk[0]),
)


# ---- the scenario --------------------------------------------------------------------------------


class Scenario:
    def __init__(self, tmp_path, config: Config, seed: int) -> None:
        self.cfg = config
        self.rng = random.Random(seed)
        store = ObjectStore(str(tmp_path))
        self.up = Table(store, config.desc, config.vnode_of)
        mv_desc = StateTableDesc(99, config.desc.fields, config.desc.pk, config.desc.dist_key)
        self.mv = Table(store, mv_desc, config.vnode_of)
        self.down = Downstream(config.desc)
        self.i = 0  # epoch index
        # one vnode never holds data; one more is empty when the backfill starts
        self.dead = self.rng.randrange(config.vnodes)
        self.late = (self.dead + 1 + self.rng.randrange(config.vnodes - 1)) % config.vnodes
        self.progress = {v: VnodeProgress(v, None, False, 0) for v in range(config.vnodes)}
        self.scanned_rows = {v: 0 for v in range(config.vnodes)}
        self.pk_types = tuple(config.desc.fields[i].type for i in config.desc.pk)
        self.stats = {"pause": 0, "limit1": 0, "at_position": 0, "epochs": 0}

    # -- DML generation
    def key(self, allowed: set[int]) -> tuple:
        for _ in range(1000):
            k = self.cfg.new_key(self.rng)
            if self.cfg.vnode_of(k) in allowed:
                return k
        raise AssertionError("no key found")

    def random_ops(self, n: int, allowed: set[int], *, p_insert: float = 0.45) -> list[tuple[Op, tuple]]:
        rng, model = self.rng, dict(self.up.model)
        ops: list[tuple[Op, tuple]] = []
        existing = [k for k in model if self.cfg.vnode_of(k) in allowed]
        for _ in range(n):
            r = rng.random()
            if existing and r < 0.3:
                k = rng.choice(existing)
            else:
                k = self.key(allowed)
            kind = rng.random()
            if kind < p_insert:
                ops.append((Op.INSERT, self.cfg.make_row(rng, k)))
            elif kind < 0.7 and k in model:
                ops.append((Op.UPDATE_DELETE, model[k]))
                ops.append((Op.UPDATE_INSERT, self.cfg.make_row(rng, k)))
            elif kind < 0.8 and k in model:  # update to the same value
                ops.append((Op.UPDATE_DELETE, model[k]))
                ops.append((Op.UPDATE_INSERT, model[k]))
            else:  # delete, of a present key or not; the non-key values of a DELETE do not matter
                ops.append((Op.DELETE, self.cfg.make_row(rng, k)))
            apply_dml_to_model(model, self.up.pk_of, ops[-2:] if ops[-1][0] is Op.UPDATE_INSERT else ops[-1:])
        return ops

    def ops_at_positions(self, allowed: set[int]) -> list[tuple[Op, tuple]]:
        """DML at, just before and just after the positions of in-progress vnodes."""
        rng, cfg = self.rng, self.cfg
        ops: list[tuple[Op, tuple]] = []
        touched: set[tuple] = set()
        started = [p for p in self.progress.values() if p.position is not None and not p.finished]
        for p in rng.sample(started, min(len(started), 2)):
            pos = p.position
            assert pos is not None
            self.stats["at_position"] += 1
            if pos not in touched:
                touched.add(pos)
                if pos in self.up.model and rng.random() < 0.5:
                    ops.append((Op.DELETE, cfg.make_row(rng, pos)))
                elif pos in self.up.model:
                    ops += [(Op.UPDATE_DELETE, self.up.model[pos]), (Op.UPDATE_INSERT, cfg.make_row(rng, pos))]
                else:  # re-insert a deleted (or never present) key at the position
                    ops.append((Op.INSERT, cfg.make_row(rng, pos)))
            near = [k for k in cfg.neighbours(pos) if cfg.vnode_of(k) == p.vnode and k not in touched
                    and cfg.vnode_of(k) in allowed]
            for k in rng.sample(near, min(len(near), 3)):
                touched.add(k)
                if k in self.up.model and rng.random() < 0.5:
                    ops.append((Op.DELETE, cfg.make_row(rng, k)))
                else:
                    ops.append((Op.INSERT, cfg.make_row(rng, k)))
        return ops

    # -- epochs
    def history_epoch(self, n: int, *, p_insert: float = 0.45) -> None:
        allowed = set(range(self.cfg.vnodes)) - {self.dead, self.late}
        self.commit_upstream(self.random_ops(n, allowed, p_insert=p_insert))

    def commit_upstream(self, ops: list[tuple[Op, tuple]]):
        epoch, prev = epoch_of(self.i), (epoch_of(self.i - 1) if self.i else None)
        out = run_table_job(self.up, ops, epoch, prev, self.rng)
        apply_dml_to_model(self.up.model, self.up.pk_of, ops)
        self.up.write(out.sst_rows, epoch)
        self.i += 1
        # the upstream's own MVCC read agrees with its model
        assert self.up.read(epoch) == self.up.model
        return out

    def backfill_epoch(self, *, dml_rows: int, pause: bool | None = None) -> None:
        """One epoch of upstream DML and backfill. `pause`: read no snapshot (a rate limit of 0);
        random when None."""
        rng, cfg, desc = self.rng, self.cfg, self.cfg.desc
        epoch, prev = epoch_of(self.i), epoch_of(self.i - 1)
        allowed = set(range(cfg.vnodes)) - {self.dead}
        ops = self.ops_at_positions(allowed) if rng.random() < 0.6 else []
        ops += self.random_ops(dml_rows, allowed)
        before_ssts = list(self.up.ssts)
        prior = dict(self.up.model)
        out = run_table_job(self.up, ops, epoch, prev, rng)
        apply_dml_to_model(self.up.model, self.up.pk_of, ops)
        changes = out.changes
        self.check_change_log(changes, prior)
        # the upstream's SST of this epoch may already exist: a scan at `prev` must not see it
        self.up.write(out.sst_rows, epoch)
        scan_ssts = self.up.ssts if rng.random() < 0.5 else before_ssts

        # progress is persisted (meta store) and reloaded, and the actors may change (rescale)
        progress = [VnodeProgress(p.vnode, decode_key(encode_key(p.position), self.pk_types), p.finished,
                                  p.row_count) for p in self.progress.values()]
        parallelism = rng.choice([1, 2, 3])
        actors = [[p for p in progress if a * cfg.vnodes // parallelism <= p.vnode
                   < (a + 1) * cfg.vnodes // parallelism] for a in range(parallelism)]
        if pause is None:
            pause = rng.random() < 0.12
        limit = rng.choice([1, 1, 2, 3])
        self.stats["pause"] += pause
        self.stats["limit1"] += limit == 1
        self.stats["epochs"] += 1
        emitted = []
        new_progress = dict(self.progress)
        for actor in actors:
            positions = snapshot_positions(actor)
            assert positions == {p.vnode: p.position for p in actor if not p.finished}
            if pause:
                scan = ScanResult(read_schema(desc).empty_table())
            else:
                scan = self.up.reader.scan_after(desc, scan_ssts, prev, positions, limit)
            for v, n in scan.rows_per_vnode.items():
                self.scanned_rows[v] += n
            result = step(desc, actor, scan, changes)
            assert result.snapshot_rows == scan.rows.num_rows
            self.check_progress(actor, result.progress, pause)
            for p in result.progress:
                new_progress[p.vnode] = p
            emitted.append(result.rows)
            assert result.rows.schema.names == [OP, *desc.names]
        rows = pa.concat_tables(emitted)
        self.down.apply(rows)
        self.progress = new_progress
        self.materialize_mv(rows, epoch)
        self.i += 1
        self.check_downstream(epoch)

    def check_change_log(self, changes: pa.Table, prior: dict[tuple, tuple]) -> None:
        """The upstream change log is the net change of the epoch, as a Downstream replica sees it."""
        replica = Downstream(self.cfg.desc)
        replica.rows = dict(prior)
        replica.apply(changes)
        assert replica.rows == self.up.model
        for vn, row in zip(changes.column(VNODE).to_pylist(), tuples(changes, self.cfg.desc.names),
                           strict=True):
            assert vn == self.cfg.vnode_of(self.up.pk_of(row))

    def check_progress(self, old: list[VnodeProgress], new: tuple[VnodeProgress, ...], pause: bool) -> None:
        old_by = {p.vnode: p for p in old}
        assert {p.vnode for p in new} == {p.vnode for p in old if not p.finished}
        for p in new:
            o = old_by[p.vnode]
            assert p.row_count == self.scanned_rows[p.vnode]
            if pause:
                assert p == o
            elif not p.finished:
                # scan_after advances every unfinished vnode
                assert p.position is not None and (o.position is None or p.position > o.position)
            elif o.position is not None and p.position is not None:
                assert p.position >= o.position

    def visible(self, key: tuple) -> bool:
        p = self.progress[self.cfg.vnode_of(key)]
        return p.finished or (p.position is not None and key <= p.position)

    def check_downstream(self, epoch: int) -> None:
        expected = {k: v for k, v in self.up.model.items() if self.visible(k)}
        assert self.down.rows == expected
        assert self.mv.read(epoch) == expected
        if self.finished:
            assert self.down.rows == self.up.read(epoch)

    def materialize_mv(self, rows: pa.Table, epoch: int) -> None:
        """The downstream MV: hash exchange (vnode of the key), then StreamMaterialize."""
        desc = self.mv.desc
        vnodes = [self.cfg.vnode_of(tuple(r[i] for i in desc.pk)) for r in tuples(rows, desc.names)]
        chunk = rows.add_column(1, VNODE, pa.array(vnodes, pa.int16()))
        out = emit(desc, pairs_from_changes(desc, chunk), epoch)
        self.mv.write(out.sst_rows, epoch)
        assert out.row_delta == sum(1 for o in rows.column(OP).to_pylist() if o == Op.INSERT) \
            - sum(1 for o in rows.column(OP).to_pylist() if o == Op.DELETE)

    @property
    def finished(self) -> bool:
        return all(p.finished for p in self.progress.values())


CONFIGS = [CONFIG_A, CONFIG_B, CONFIG_C]


@pytest.mark.parametrize("config", CONFIGS, ids=[c.name for c in CONFIGS])
@pytest.mark.parametrize("seed", range(6))
def test_backfill_model_many_epochs(tmp_path, config, seed):
    s = Scenario(tmp_path, config, seed)
    # history: mostly inserts first, then updates and deletes (tombstones)
    s.history_epoch(150, p_insert=1.0)
    for n in (60, 40, 30):
        s.history_epoch(n)
    assert s.up.ssts and sum(i.tombstone_count for i in s.up.ssts) > 0
    assert all(s.cfg.vnode_of(k) not in (s.dead, s.late) for k in s.up.model)

    for _ in range(400):
        if s.finished:
            break
        s.backfill_epoch(dml_rows=s.rng.randrange(0, 7))
    assert s.finished, f"backfill did not finish: {s.progress}"
    assert s.stats["epochs"] >= 8 and s.stats["limit1"] and s.stats["at_position"]
    # the dead vnode was scanned and found empty
    assert s.progress[s.dead].row_count == 0 and s.progress[s.dead].finished
    final_epoch = epoch_of(s.i - 1)
    assert s.down.rows == s.up.read(final_epoch)

    # the job is created: every vnode forwards everything
    for _ in range(5):
        s.backfill_epoch(dml_rows=s.rng.randrange(1, 10))
    assert s.down.rows == s.up.read(epoch_of(s.i - 1)) == s.up.model
    assert s.mv.read(None) == s.up.model


@pytest.mark.parametrize("seed", range(3))
def test_backfill_model_with_frequent_pauses(tmp_path, seed):
    """Rate-limit pauses (empty scans) on most epochs, heavy DML around positions."""
    s = Scenario(tmp_path, CONFIG_A, 100 + seed)
    s.history_epoch(60, p_insert=1.0)
    s.history_epoch(20)
    rng = random.Random(seed)
    for _ in range(600):
        if s.finished:
            break
        s.backfill_epoch(dml_rows=rng.randrange(0, 8), pause=rng.random() < 0.6)
    assert s.finished
    assert s.stats["pause"] > 5
    assert s.down.rows == s.up.read(epoch_of(s.i - 1))


# ---- hand-written cases ----------------------------------------------------------------------

DESC = StateTableDesc(7, (Field("k", INT8), Field("s", VARCHAR)), pk=(0,), dist_key=(0,))


def changes_of(rows: list[tuple[Op, int, int, str | None]]) -> pa.Table:
    """A change log chunk from (op, vnode, k, s) tuples."""
    return pa.table({OP: pa.array([int(r[0]) for r in rows], pa.int8()),
                     VNODE: pa.array([r[1] for r in rows], pa.int16()),
                     "k": pa.array([r[2] for r in rows], pa.int64()),
                     "s": pa.array([r[3] for r in rows], pa.string())})


def sst(store: ObjectStore, rows: list[tuple[int, int, str | None, int, bool]], name: str) -> SstableInfo:
    """An SST of DESC from (vnode, k, s, epoch, tombstone) tuples."""
    t = pa.table({VNODE: pa.array([r[0] for r in rows], pa.int16()), "k": pa.array([r[1] for r in rows], pa.int64()),
                  "s": pa.array([r[2] for r in rows], pa.string()), "_epoch": pa.array([r[3] for r in rows], pa.int64()),
                  "_tombstone": pa.array([r[4] for r in rows], pa.bool_())})
    return write_sst(store, DESC, t, name, level=0, sub_level=max(r[3] for r in rows))


def out_rows(result) -> list[tuple]:
    return sorted((Op(o).name, k, s) for o, k, s in tuples(result.rows, [OP, "k", "s"]))


def empty_scan() -> ScanResult:
    return ScanResult(read_schema(DESC).empty_table())


def test_snapshot_positions_skips_finished_vnodes():
    progress = [VnodeProgress(0, (5,), False, 3), VnodeProgress(1, None, False, 0),
                VnodeProgress(2, (9,), True, 4)]
    assert snapshot_positions(progress) == {0: (5,), 1: None}
    assert snapshot_positions([VnodeProgress(3, None, True, 0)]) == {}


def test_first_chunk_folds_changes_in_range_and_drops_the_rest(tmp_path):
    store = ObjectStore(str(tmp_path))
    reader = StateTableReader(store)
    info = sst(store, [(0, k, f"v{k}", 10, False) for k in (10, 20, 30, 40, 50)] + [(0, 25, None, 10, True)],
               "a.parquet")
    progress = [VnodeProgress(0, None, False, 0)]
    scan = reader.scan_after(DESC, [info], 10, snapshot_positions(progress), 3)
    # the tombstone of 25 counts against the limit and becomes the position
    assert scan.positions == {0: (25,)} and not scan.finished
    changes = changes_of([
        (Op.UPDATE_DELETE, 0, 20, "v20"), (Op.UPDATE_INSERT, 0, 20, "new20"),  # in range: folded
        (Op.DELETE, 0, 10, "v10"),  # in range: folded away
        (Op.INSERT, 0, 15, "i15"), (Op.INSERT, 0, 5, "i5"),  # new keys in range: inserted
        (Op.INSERT, 0, 25, "i25"),  # re-insert of the tombstoned key at the new position: inserted
        (Op.DELETE, 0, 30, "v30"), (Op.INSERT, 0, 26, "i26"),  # after the position: dropped
        (Op.UPDATE_DELETE, 0, 40, "v40"), (Op.UPDATE_INSERT, 0, 40, "new40"),  # dropped
        (Op.INSERT, 1, 1, "other"),  # a vnode the actor does not own: ignored
    ])
    result = step(DESC, progress, scan, changes)
    assert out_rows(result) == [("INSERT", 5, "i5"), ("INSERT", 15, "i15"), ("INSERT", 20, "new20"),
                                ("INSERT", 25, "i25")]
    assert result.progress == (VnodeProgress(0, (25,), False, 2),)
    assert result.snapshot_rows == 2 and result.forwarded_rows == 0


def test_changes_at_or_before_position_are_forwarded(tmp_path):
    store = ObjectStore(str(tmp_path))
    reader = StateTableReader(store)
    info = sst(store, [(0, k, f"v{k}", 10, False) for k in (10, 20, 30, 40, 50, 60)], "a.parquet")
    progress = [VnodeProgress(0, (20,), False, 2)]
    scan = reader.scan_after(DESC, [info], 10, snapshot_positions(progress), 2)
    assert scan.positions == {0: (40,)}
    changes = changes_of([
        (Op.DELETE, 0, 20, "v20"),  # exactly at the old position: forwarded
        (Op.UPDATE_DELETE, 0, 10, "v10"), (Op.UPDATE_INSERT, 0, 10, "n10"),  # before: forwarded
        (Op.INSERT, 0, 19, "i19"),  # a new key before the old position: forwarded
        (Op.UPDATE_DELETE, 0, 40, "v40"), (Op.UPDATE_INSERT, 0, 40, "n40"),  # at the new position: folded
        (Op.INSERT, 0, 41, "i41"),  # just after the new position: dropped
        (Op.DELETE, 0, 50, "v50"),  # dropped
    ])
    result = step(DESC, progress, scan, changes)
    assert out_rows(result) == [("DELETE", 20, "v20"), ("INSERT", 19, "i19"), ("INSERT", 30, "v30"),
                                ("INSERT", 40, "n40"), ("UPDATE_DELETE", 10, "v10"), ("UPDATE_INSERT", 10, "n10")]
    assert result.progress == (VnodeProgress(0, (40,), False, 4),)
    assert result.forwarded_rows == 4

    # next epoch: the key 41 inserted above is now in the snapshot (read at the epoch that wrote it)
    info2 = sst(store, [(0, 41, "i41", 20, False), (0, 50, None, 20, True), (0, 40, "n40", 20, False),
                        (0, 20, None, 20, True), (0, 19, "i19", 20, False), (0, 10, "n10", 20, False)], "b.parquet")
    progress = list(result.progress)
    scan = reader.scan_after(DESC, [info, info2], 20, snapshot_positions(progress), 1)
    assert scan.positions == {0: (41,)}
    result = step(DESC, progress, scan, changes_of([]))
    assert out_rows(result) == [("INSERT", 41, "i41")]
    # a tombstone is skipped as a position but bounds the scan: 50 is deleted, 60 remains
    progress = list(result.progress)
    scan = reader.scan_after(DESC, [info, info2], 20, snapshot_positions(progress), 1)
    assert scan.positions == {0: (50,)} and scan.rows.num_rows == 0 and not scan.finished
    result = step(DESC, progress, scan, changes_of([(Op.INSERT, 0, 70, "i70"), (Op.INSERT, 0, 45, "i45")]))
    assert out_rows(result) == [("INSERT", 45, "i45")]
    assert result.progress == (VnodeProgress(0, (50,), False, 5),)
    # re-inserting the deleted key at the position is forwarded; the vnode then finishes
    progress = list(result.progress)
    scan = reader.scan_after(DESC, [info, info2], 20, snapshot_positions(progress), 1)
    assert scan.positions == {0: (60,)} and scan.finished == {0}
    result = step(DESC, progress, scan, changes_of([(Op.INSERT, 0, 50, "again"), (Op.INSERT, 0, 70, "i70")]))
    assert out_rows(result) == [("INSERT", 50, "again"), ("INSERT", 60, "v60"), ("INSERT", 70, "i70")]
    assert result.progress == (VnodeProgress(0, (60,), True, 6),)


def test_finishing_vnode_folds_every_change_after_its_old_position(tmp_path):
    store = ObjectStore(str(tmp_path))
    reader = StateTableReader(store)
    info = sst(store, [(0, 10, "v10", 10, False), (0, 20, "v20", 10, False)], "a.parquet")
    progress = [VnodeProgress(0, (10,), False, 1)]
    scan = reader.scan_after(DESC, [info], 10, snapshot_positions(progress), 5)
    assert scan.finished == {0} and scan.positions == {0: (20,)}
    changes = changes_of([(Op.INSERT, 0, 1000, "far"), (Op.DELETE, 0, 20, "v20"), (Op.INSERT, 0, 15, "i15"),
                          (Op.UPDATE_DELETE, 0, 10, "v10"), (Op.UPDATE_INSERT, 0, 10, "n10")])
    result = step(DESC, progress, scan, changes)
    assert out_rows(result) == [("INSERT", 15, "i15"), ("INSERT", 1000, "far"),
                                ("UPDATE_DELETE", 10, "v10"), ("UPDATE_INSERT", 10, "n10")]
    assert result.progress == (VnodeProgress(0, (20,), True, 2),)

    # once finished, the vnode forwards everything and reads nothing
    progress = list(result.progress)
    assert snapshot_positions(progress) == {}
    changes = changes_of([(Op.DELETE, 0, 1000, "far"), (Op.INSERT, 0, 5000, "x")])
    result = step(DESC, progress, empty_scan(), changes)
    assert out_rows(result) == [("DELETE", 1000, "far"), ("INSERT", 5000, "x")]
    assert result.progress == () and result.forwarded_rows == 2


def test_vnodes_without_data_finish_at_once_and_take_the_epochs_changes(tmp_path):
    store = ObjectStore(str(tmp_path))
    reader = StateTableReader(store)
    info = sst(store, [(2, 7, "v7", 10, False), (3, 8, None, 10, True)], "a.parquet")
    progress = [VnodeProgress(v, None, False, 0) for v in range(4)]
    scan = reader.scan_after(DESC, [info], 10, snapshot_positions(progress), 1)
    assert scan.finished == {0, 1, 2, 3}
    changes = changes_of([(Op.INSERT, 0, 1, "a"), (Op.INSERT, 2, 100, "late"), (Op.INSERT, 3, 8, "back")])
    result = step(DESC, progress, scan, changes)
    # vnode 2's only key was read: it finishes and the insert after its position is folded; vnode 3
    # held a tombstone only: it finishes at that key, and the key's re-insert is folded as well
    assert {p.vnode: (p.position, p.finished, p.row_count) for p in result.progress} == {
        0: (None, True, 0), 1: (None, True, 0), 2: ((7,), True, 1), 3: ((8,), True, 0)}
    assert out_rows(result) == [("INSERT", 1, "a"), ("INSERT", 7, "v7"), ("INSERT", 8, "back"),
                                ("INSERT", 100, "late")]


def test_pause_forwards_only_changes_at_or_before_positions():
    progress = [VnodeProgress(0, (20,), False, 2), VnodeProgress(1, None, False, 0),
                VnodeProgress(2, (5,), True, 1)]
    changes = changes_of([
        (Op.UPDATE_DELETE, 0, 10, "a"), (Op.UPDATE_INSERT, 0, 10, "b"),  # before: forwarded
        (Op.DELETE, 0, 20, "c"),  # at the position: forwarded
        (Op.INSERT, 0, 21, "d"),  # after: dropped
        (Op.INSERT, 1, 1, "e"),  # vnode not started: dropped
        (Op.INSERT, 2, 99, "f"),  # finished vnode: forwarded
    ])
    result = step(DESC, progress, empty_scan(), changes)
    assert out_rows(result) == [("DELETE", 20, "c"), ("INSERT", 99, "f"), ("UPDATE_DELETE", 10, "a"),
                                ("UPDATE_INSERT", 10, "b")]
    assert result.progress == (progress[0], progress[1])
    assert result.snapshot_rows == 0 and result.forwarded_rows == 4


def test_no_changes_and_no_snapshot():
    progress = [VnodeProgress(0, (1,), False, 1)]
    result = step(DESC, progress, empty_scan(), changelog_schema(DESC).empty_table())
    assert result.rows.num_rows == 0 and result.rows.schema.names == [OP, "k", "s"]
    assert result.progress == tuple(progress)
