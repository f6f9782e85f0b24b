"""Descriptors of state tables and SSTs, shared by meta (which records them) and compute/compactor
(which read and write them).

An SST is one immutable Parquet file of one state table, sorted by ``(_vnode, pk...)`` and, for the
same key, by ``_epoch`` descending. Its columns, in order::

    | _vnode int16 | value columns ... (the pk columns among them) | _epoch int64 | _tombstone bool |
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import pyarrow as pa

from risingspark.chunk import EPOCH, TOMBSTONE, VNODE
from risingspark.types import Field, arrow_schema


@dataclass(frozen=True)
class StateTableDesc:
    """The layout of a state table: value columns, the key, and the distribution key.

    Attributes:
        table_id: the state table's id (a user table's or MV's id for their own data).
        fields: the value columns in storage order; the pk columns are among them.
        pk: indices into `fields` of the key columns, in key order (all ascending).
        dist_key: indices into `fields` whose hash gives the vnode (a subset of `pk`; empty means a
            singleton table living in vnode 0).
    """

    table_id: int
    fields: tuple[Field, ...]
    pk: tuple[int, ...]
    dist_key: tuple[int, ...] = ()

    @property
    def pk_names(self) -> list[str]:
        return [self.fields[i].name for i in self.pk]

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    def value_schema(self) -> pa.Schema:
        return arrow_schema(self.fields)

    def sst_schema(self) -> pa.Schema:
        return self._sst_schema

    @functools.cached_property
    def _sst_schema(self) -> pa.Schema:
        """(Built once per descriptor: a point query asked for it three times, ~20 µs each.)"""
        return pa.schema(
            [pa.field(VNODE, pa.int16(), nullable=False)]
            + list(arrow_schema(self.fields))
            + [pa.field(EPOCH, pa.int64(), nullable=False), pa.field(TOMBSTONE, pa.bool_(), nullable=False)]
        )

    @functools.cached_property
    def pk_types(self) -> tuple[pa.DataType, ...]:
        """The key columns' Arrow types as the SSTs hold them (once per descriptor: a point lookup
        encodes its key with them)."""
        schema = self._sst_schema
        return tuple(schema.field(self.fields[i].name).type for i in self.pk)

    def to_json(self) -> dict:
        return {"table_id": self.table_id, "fields": [f.to_json() for f in self.fields],
                "pk": list(self.pk), "dist_key": list(self.dist_key)}

    @classmethod
    def from_json(cls, d: dict) -> StateTableDesc:
        return cls(int(d["table_id"]), tuple(Field.from_json(f) for f in d["fields"]),
                   tuple(d["pk"]), tuple(d.get("dist_key", ())))


def vnode_key(vnode: int) -> bytes:
    """The memcomparable encoding of `vnode` (`risingspark.storage.memcmp`): every key of the vnode
    starts with it and lies in ``[vnode_key(v), vnode_key(v) + b"\\xff")``."""
    return ((vnode ^ 0x8000) & 0xFFFF).to_bytes(2, "big")


@dataclass(frozen=True)
class SstableInfo:
    """What the meta store records of one SST. `sst_id` is 0 until meta assigns one at commit.

    `min_key` and `max_key` are the memcomparable keys (``_vnode`` + pk) of its first and last row;
    empty for an SST written before SSTs carried keys, whose key range is then its vnodes' (`key_range`).
    """

    path: str
    table_id: int
    level: int  # 0 for L0
    sub_level: int  # the epoch of the checkpoint that added it, for L0; 0 otherwise
    min_vnode: int
    max_vnode: int
    min_epoch: int
    max_epoch: int
    row_count: int
    tombstone_count: int
    size_bytes: int
    sst_id: int = 0
    min_key: bytes = b""
    max_key: bytes = b""

    @property
    def key_range(self) -> tuple[bytes, bytes]:
        """``(lo, hi)``: every key of the SST lies in ``[lo, hi]`` (byte order)."""
        lo = self.min_key or vnode_key(self.min_vnode)
        hi = self.max_key or vnode_key(self.max_vnode) + b"\xff"
        return lo, hi

    def overlaps(self, lo: bytes, hi: bytes) -> bool:
        """Whether the SST's key range meets ``[lo, hi]``."""
        my_lo, my_hi = self.key_range
        return my_lo <= hi and lo <= my_hi

    def to_json(self) -> dict:
        d = dict(self.__dict__)
        d["min_key"], d["max_key"] = self.min_key.hex(), self.max_key.hex()
        return d

    @classmethod
    def from_json(cls, d: dict) -> SstableInfo:
        d = dict(d)
        for k in ("min_key", "max_key"):
            if isinstance(d.get(k), str):
                d[k] = bytes.fromhex(d[k])
        return cls(**d)


@dataclass(frozen=True)
class SubLevel:
    """One L0 sub-level: the SSTs one checkpoint added to a table (they may overlap each other's
    key ranges; they never hold the same key twice), or the merge of adjacent sub-levels (intra-L0)."""

    sub_level_id: int
    ssts: tuple[SstableInfo, ...]


@dataclass(frozen=True)
class TableLevels:
    """The levels of one state table (an LSM tree, as RisingWave's Hummock).

    L0 sub-levels are ordered oldest first. ``levels[i]`` is level ``i + 1``: a sorted run, its SSTs
    ordered by key and their key ranges disjoint. Every version of a key in a level is older than its
    versions in the levels above and in L0.
    """

    table_id: int
    l0: tuple[SubLevel, ...] = ()
    levels: tuple[tuple[SstableInfo, ...], ...] = ()
    # The newest L0 sub-level (an epoch) whose writes a compaction has moved out of L0, whole or in
    # part — even a compaction that wrote nothing. A worker's state cache exact at an older epoch can
    # no longer catch up from L0 (`compute.cache.state_cache`). Kept in meta's memory only: a restart
    # of meta recovers every compute node, and their caches start over.
    l0_compacted_epoch: int = field(default=0, compare=False)

    def level(self, n: int) -> tuple[SstableInfo, ...]:
        """The SSTs of level `n` (n >= 1), by key."""
        return self.levels[n - 1] if 0 < n <= len(self.levels) else ()

    @property
    def sorted_ssts(self) -> list[SstableInfo]:
        """The SSTs of every level below L0."""
        return [s for lv in self.levels for s in lv]

    def all_ssts(self) -> list[SstableInfo]:
        return [s for sub in self.l0 for s in sub.ssts] + self.sorted_ssts


@dataclass(frozen=True)
class HummockVersion:
    """Every live SST by table and level, as of `committed_epoch`."""

    id: int
    committed_epoch: int
    tables: dict[int, TableLevels] = field(default_factory=dict)

    def levels(self, table_id: int) -> TableLevels:
        return self.tables.get(table_id) or TableLevels(table_id)

    def ssts(self, table_id: int) -> list[SstableInfo]:
        return self.levels(table_id).all_ssts()


@dataclass(frozen=True)
class VersionDelta:
    """What changed from version `base_id` to version `id` (RisingWave's ``HummockVersionDelta``),
    by table: the levels of the tables that changed, whole, and the tables dropped. A commit or a
    compaction replaces the levels of the tables it touches and keeps the others' objects, so the
    delta of a barrier costs what its tables hold, not what every table holds.

    >>> old = HummockVersion(1, 10, {1: TableLevels(1), 2: TableLevels(2)})
    >>> new = HummockVersion(2, 20, {**old.tables, 1: TableLevels(1, l0_compacted_epoch=5)})
    >>> delta = VersionDelta.between(old, new)
    >>> sorted(delta.changed), delta.apply(old) == new
    ([1], True)
    """

    base_id: int
    id: int
    committed_epoch: int
    changed: dict[int, TableLevels] = field(default_factory=dict)
    dropped: tuple[int, ...] = ()

    @classmethod
    def between(cls, old: HummockVersion, new: HummockVersion) -> VersionDelta:
        changed = {tid: lv for tid, lv in new.tables.items() if old.tables.get(tid) is not lv}
        return cls(old.id, new.id, new.committed_epoch, changed, tuple(t for t in old.tables if t not in new.tables))

    def apply(self, old: HummockVersion) -> HummockVersion:
        """`old` (version `base_id`) brought to version `id`."""
        assert old.id == self.base_id, f"a delta from version {self.base_id} applied to {old.id}"
        tables = {tid: lv for tid, lv in old.tables.items() if tid not in self.dropped}
        tables.update(self.changed)
        return HummockVersion(self.id, self.committed_epoch, tables)
