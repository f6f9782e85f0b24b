"""Executor state caches, as RisingWave's managed caches (`src/stream/src/cache/`): a bounded LRU of
the state rows a stateful executor reads and writes, so a hot key costs no storage read.

Two shapes, both keyed by memcomparable keys (`risingspark.storage.memcmp`):

* a **point** cache (materialize's primary-key check, hash aggregation groups): key → the row, or
  None when the key is known not to exist;
* a **prefix** cache (a join side by join key; as RisingWave's join cache): prefix → every row
  with that prefix (full key → row).

Where the caches live, and why they need a validity rule RisingWave does not: an epoch's tasks run
in Spark's Python workers, and a task lands on whichever worker is free, so the worker holding a
cache is not always the one that wrote a key last (a RisingWave actor owns its vnodes; here no
worker does). Each table's cache therefore records the epoch ``E`` as of which it is exact for every
key it holds, and before each use (`TableCache.sync`, reading at the previous epoch ``P``):

* a new *generation* (the compute node recovered or restarted: epochs after the last commit were
  rolled back, and may be in a cache) clears it;
* ``E == P``: nothing to do (nobody wrote since);
* ``E < P``: the writes of epochs ``(E, P]`` — by other workers, or other processes — are the L0 SSTs
  with ``max_epoch > E``; the cache reads their rows with an epoch in ``(E, P]`` (a few epochs'
  writes) and applies them to the keys it holds. If a compaction has moved some of those writes out
  of L0 (meta's `TableLevels.l0_compacted_epoch` — the newest sub-level a compaction moved down,
  whole or in part, even into no output at all — is past ``E``; it comes with each task), the cache
  cannot tell which keys they touched and is cleared instead;
* after the task, its own writes at epoch ``e`` are applied (write-through), but ``E`` stays: in
  the same epoch other workers wrote other keys, which the next sync reads (its own writes apply
  again, to the same values). A task of the same epoch that lands on this worker later (another
  partition: other keys) skips the sync. An epoch written here that is newer than the next task's
  ``P`` and not its own did not commit: the cache is cleared (a recovery, which also starts a new
  generation).

Memory: one budget per worker process (`CacheManager`), shared by every table's cache; the least
recently used entries go first. Entry sizes are estimates of the Python objects' memory.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from risingspark.chunk import EPOCH, TOMBSTONE, VNODE
from risingspark.storage.desc import SstableInfo, StateTableDesc
from risingspark.storage.memcmp import encode_keys
from risingspark.storage.reader import StateTableReader, read_schema
from risingspark.storage.sst import read_sst

logger = logging.getLogger(__name__)

DEFAULT_STATE_CACHE_BYTES = 256 << 20
MIN_ENTRY_BYTES = 128  # about the smallest entry: a bulk read of more keys than fit is not cached
MAX_GROUP_SHARE = 8  # a prefix entry may take at most this share (1/n) of the budget
APPLY_CHUNK_ROWS = 65536  # rows made Python objects at a time when writes apply to the entries
_ABSENT = object()


def _size_of(values: Iterable[Any]) -> int:
    """About the memory of a row tuple of these values."""
    size = 64
    for v in values:
        size += 16 + (len(v) + 49 if isinstance(v, str | bytes) else 24)
    return size


@dataclass
class CacheCounters:
    hits: int = 0
    misses: int = 0

    def take(self) -> tuple[int, int]:
        out = (self.hits, self.misses)
        self.hits = self.misses = 0
        return out


class CacheManager:
    """Every table cache of one worker process, within one memory budget (an LRU over all of
    them)."""

    def __init__(self, capacity_bytes: int = DEFAULT_STATE_CACHE_BYTES) -> None:
        self.capacity_bytes = capacity_bytes
        self._entries: OrderedDict[tuple[str, bytes], tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._tables: dict[str, TableCache] = {}
        self._keys: dict[str, set[bytes]] = {}  # per table, the keys it holds
        self.evictions = 0
        self.lock = threading.RLock()

    def table(self, name: str, desc: StateTableDesc, prefix: int | None = None, *,
              kind: type[TableCache] | None = None, **options: Any) -> TableCache:
        """The cache of a state table (`name` tells the store and table apart); `prefix` pk columns
        per entry for a prefix cache, None for a point cache; `kind` and `options` for another kind of
        cache (`compute.cache.extreme_cache`)."""
        kind = kind or TableCache
        with self.lock:
            cache = self._tables.get(name)
            if cache is None or type(cache) is not kind or cache.desc != desc or cache.prefix != prefix \
                    or any(getattr(cache, k) != v for k, v in options.items()):
                if cache is not None:
                    cache.clear()
                cache = self._tables[name] = kind(self, name, desc, prefix, **options)
            return cache

    def resize(self, capacity_bytes: int) -> None:
        with self.lock:
            self.capacity_bytes = capacity_bytes
            self._evict()

    @property
    def used_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    # ---- entries (the table caches call these under the lock) ----------------------------------
    def _get(self, name: str, key: bytes) -> Any:
        entry = self._entries.get((name, key))
        if entry is None:
            return _ABSENT
        self._entries.move_to_end((name, key))
        return entry[0]

    def _put(self, name: str, key: bytes, value: Any, size: int) -> None:
        self._drop(name, key)
        if size > self.capacity_bytes:
            return
        self._entries[(name, key)] = (value, size)
        self._keys.setdefault(name, set()).add(key)
        self._bytes += size
        self._evict()

    def _resize(self, name: str, key: bytes, delta: int) -> None:
        """An entry's value grew (or shrank) by `delta` bytes in place."""
        entry = self._entries.get((name, key))
        if entry is None:
            return
        self._entries[(name, key)] = (entry[0], entry[1] + delta)
        self._bytes += delta
        if delta > 0:
            self._evict()

    def _drop(self, name: str, key: bytes) -> None:
        old = self._entries.pop((name, key), None)
        if old is not None:
            self._bytes -= old[1]
            self._keys[name].discard(key)

    def _held(self, name: str) -> int:
        return len(self._keys.get(name, ()))

    def _drop_table(self, name: str) -> None:
        for key in self._keys.pop(name, set()):
            self._bytes -= self._entries.pop((name, key))[1]

    def _evict(self) -> None:
        while self._bytes > self.capacity_bytes and self._entries:
            (name, key), (_, size) = self._entries.popitem(last=False)
            self._keys[name].discard(key)
            self._bytes -= size
            self.evictions += 1


class _Group(dict):
    """A prefix entry: full key → row, with the running size of its rows."""

    size: int = 0


class TableCache:
    """The cache of one state table in one worker process (see the module doc)."""

    def __init__(self, manager: CacheManager, name: str, desc: StateTableDesc, prefix: int | None) -> None:
        self.manager = manager
        self.name = name
        self.desc = desc
        self.prefix = prefix
        self.epoch: int | None = None  # exact as of this epoch for every key held, but ...
        self.writing: int | None = None  # ... those this worker wrote since, at this epoch
        self.partitions: set[int] = set()  # the partitions whose tasks wrote at `writing`
        self.task_partition: int | None = None  # the partition of the task that synced last
        self.generation: str | None = None
        self.counters = CacheCounters()
        self._names = [VNODE, *desc.names]

    def clear(self) -> None:
        with self.manager.lock:
            self.manager._drop_table(self.name)
            self.epoch = self.writing = None
            self.partitions = set()

    # ---- validity -----------------------------------------------------------------------------
    def sync(self, reader: StateTableReader, ssts: Sequence[SstableInfo], prev_epoch: int, epoch: int,
             generation: str, partition: int | None = None, retry: bool = False, *,
             l0_compacted_epoch: int) -> None:
        """Make the cache exact as of `prev_epoch`, for a task of epoch `epoch` on `partition` (see
        the module doc). A task of the same epoch that ran here before on another partition (other
        keys) leaves its writes in place; a retried task (`retry`, or a partition that already ran
        here this epoch) starts from an empty cache, as its failed attempt may have written to it."""
        with self.manager.lock:
            self.task_partition = partition
            if self.generation != generation or retry:
                self._reset(generation, prev_epoch)
                return
            if self.writing is not None:
                if self.writing == epoch:
                    if partition is not None and partition in self.partitions:
                        self._reset(generation, prev_epoch)
                    return
                if self.writing > prev_epoch:  # an epoch that did not commit
                    self._reset(generation, prev_epoch)
                    return
                # Other workers may have written other keys in the same epoch: catch up from the
                # epoch the whole cache is exact at (own writes apply again, to the same values).
                self.writing = None
            since = self.epoch
            if since is None or since > prev_epoch:
                self._reset(generation, prev_epoch)
                return
            if since == prev_epoch:
                return
            if l0_compacted_epoch > since:
                # a compaction moved writes newer than the cache out of L0, where the catch-up would
                # not find them (even one that wrote nothing: a write that only deleted leaves no row)
                logger.debug("table %d: a compaction moved writes after epoch %d out of L0; cache cleared",
                             self.desc.table_id, since)
                self._reset(generation, prev_epoch)
                return
            newer = [s for s in ssts if s.level == 0 and s.max_epoch > since and s.min_epoch <= prev_epoch]
            for sst in newer:
                rows = read_sst(reader.store, sst.path, self.desc, cache=reader.cache)
                epochs = rows.column(EPOCH)
                rows = rows.filter(pc.and_(pc.greater(epochs, since), pc.less_equal(epochs, prev_epoch)))
                if rows.num_rows:
                    self._apply(rows)
            self.epoch = prev_epoch

    def _reset(self, generation: str, epoch: int) -> None:
        self.clear()
        self.generation, self.epoch, self.writing = generation, epoch, None

    def write(self, sst_rows: pa.Table, epoch: int) -> None:
        """Apply a task's own writes at `epoch` (SST rows: upserts and tombstones; the task is the
        one that synced last)."""
        with self.manager.lock:
            if sst_rows.num_rows:
                self._apply(sst_rows)
            self._wrote(epoch, self.task_partition)

    def _wrote(self, epoch: int, partition: int | None) -> None:
        if self.writing != epoch:
            self.writing, self.partitions = epoch, set()
        if partition is not None:
            self.partitions.add(partition)

    def held_rows(self, rows: pa.Table) -> pa.Table:
        """The rows whose entry (key, or prefix) the cache holds. Many more rows than entries (a bulk
        epoch) are filtered in Arrow, so only the held ones become Python objects."""
        held = self.manager._keys.get(self.name)
        if not held or rows.num_rows == 0:
            return rows.slice(0, 0)
        if rows.num_rows <= 4 * len(held):
            return rows
        n = len(self.desc.pk) if self.prefix is None else self.prefix
        keys = encode_keys(rows.column(VNODE), [rows.column(c) for c in self.desc.pk_names[:n]])
        return rows.filter(pc.is_in(keys, value_set=pa.array(list(held), pa.binary())))

    def _apply(self, rows: pa.Table) -> None:
        """Apply row versions (SST shape) to the entries held; keys not held stay uncached. Within
        `rows`, a key's newest version wins."""
        rows = self.held_rows(rows)
        if rows.num_rows == 0:
            return
        rows = rows.sort_by([(EPOCH, "ascending")]) if rows.num_rows > 1 else rows
        for start in range(0, rows.num_rows, APPLY_CHUNK_ROWS):  # bounded Python objects at a time
            self._apply_chunk(rows.slice(start, APPLY_CHUNK_ROWS))

    def _apply_chunk(self, rows: pa.Table) -> None:
        full = encode_keys(rows.column(VNODE), [rows.column(n) for n in self.desc.pk_names]).to_pylist()
        tomb = rows.column(TOMBSTONE).to_pylist()
        values = list(zip(*(rows.column(n).to_pylist() for n in self._names), strict=True))
        if self.prefix is None:
            for key, dead, row in zip(full, tomb, values, strict=True):
                if self.manager._get(self.name, key) is not _ABSENT:
                    self.manager._put(self.name, key, None if dead else row, _size_of(row) + len(key))
            return
        prefixes = encode_keys(rows.column(VNODE),
                               [rows.column(n) for n in self.desc.pk_names[:self.prefix]]).to_pylist()
        for p, key, dead, row in zip(prefixes, full, tomb, values, strict=True):
            group = self.manager._get(self.name, p)
            if group is _ABSENT:
                continue
            old = group.pop(key, None)
            delta = -_row_size(key, old) if old is not None else 0
            if not dead:
                group[key] = row
                delta += _row_size(key, row)
            group.size += delta
            if group.size > self.manager.capacity_bytes // MAX_GROUP_SHARE:
                self.manager._drop(self.name, p)  # a group grown too big for the cache: read it when needed
            else:
                self.manager._resize(self.name, p, delta)

    # ---- lookups ------------------------------------------------------------------------------
    def lookup(self, reader: StateTableReader, ssts: Sequence[SstableInfo], epoch: int, keys: pa.Table) -> pa.Table:
        """`StateTableReader.lookup` through the cache: the live rows (read shape) of `keys`
        (``_vnode`` + the pk columns for a point cache, + the `prefix` leading pk columns for a
        prefix cache). Call `sync` first."""
        n = len(self.desc.pk) if self.prefix is None else self.prefix
        names = self.desc.pk_names[:n]
        schema = read_schema(self.desc)
        if keys.num_rows == 0:
            return schema.empty_table()
        keys = keys.select([VNODE, *names]).cast(pa.schema([schema.field(c) for c in [VNODE, *names]]))
        encoded = encode_keys(keys.column(VNODE), [keys.column(c) for c in names]).to_pylist()
        rows: list[tuple] = []
        missing: list[int] = []
        seen: set[bytes] = set()
        with self.manager.lock:
            for i, key in enumerate(encoded):
                if key in seen:
                    continue
                seen.add(key)
                value = self.manager._get(self.name, key)
                if value is _ABSENT:
                    missing.append(i)
                elif self.prefix is None:
                    if value is not None:
                        rows.append(value)
                else:
                    rows.extend(value.values())
            self.counters.hits += len(seen) - len(missing)
            self.counters.misses += len(missing)
        found = reader.lookup(self.desc, ssts, epoch, keys.take(pa.array(missing, pa.int64())),
                              columns=None if self.prefix is None else names) if missing else schema.empty_table()
        self._fill([encoded[i] for i in missing], found)
        if not rows:
            return found.cast(schema)
        cached = pa.Table.from_arrays([pa.array(col, f.type) for col, f in zip(zip(*rows, strict=True), schema,
                                                                              strict=True)], schema=schema)
        return pa.concat_tables([cached, found.cast(schema)]) if found.num_rows else cached

    def _fill(self, keys: list[bytes], found: pa.Table) -> None:
        """Cache what a storage read of `keys` found (and, for point keys, what it did not). A read of
        more keys than the budget could hold (a bulk epoch) fills nothing: it would only push out
        every other entry."""
        if not keys or len(keys) * MIN_ENTRY_BYTES > self.manager.capacity_bytes:
            return
        values = list(zip(*(found.column(n).to_pylist() for n in self._names), strict=True))
        full = encode_keys(found.column(VNODE), [found.column(n) for n in self.desc.pk_names]).to_pylist()
        with self.manager.lock:
            if self.prefix is None:
                by_key = dict(zip(full, values, strict=True))
                for key in keys:
                    row = by_key.get(key)
                    self.manager._put(self.name, key, row, _size_of(row or ()) + len(key))
                return
            prefixes = encode_keys(found.column(VNODE),
                                   [found.column(n) for n in self.desc.pk_names[:self.prefix]]).to_pylist()
            groups: dict[bytes, _Group] = {k: _Group() for k in keys}
            for p, key, row in zip(prefixes, full, values, strict=True):
                group = groups.setdefault(p, _Group())
                group[key] = row
                group.size += _row_size(key, row)
            for p, group in groups.items():
                if group.size <= self.manager.capacity_bytes // MAX_GROUP_SHARE:
                    self.manager._put(self.name, p, group, 64 + len(p) + group.size)


def _row_size(key: bytes, row: tuple) -> int:
    return _size_of(row) + len(key) + 32


_MANAGER: CacheManager | None = None
_MANAGER_LOCK = threading.Lock()


def cache_manager(capacity_bytes: int | None = None) -> CacheManager:
    """The process' cache manager (resized when a task brings another budget)."""
    global _MANAGER
    with _MANAGER_LOCK:
        if _MANAGER is None:
            _MANAGER = CacheManager(capacity_bytes or DEFAULT_STATE_CACHE_BYTES)
        elif capacity_bytes is not None and capacity_bytes != _MANAGER.capacity_bytes:
            _MANAGER.resize(capacity_bytes)
        return _MANAGER
