"""Point and prefix lookups in O(keys · log n), as Hummock's get: read only the blocks that can hold
the keys, find the rows by binary search.

For a batch of lookup keys (``_vnode`` + the first ``n`` pk columns, ``n`` = all of them for a point
lookup), encoded as memcomparable prefixes ``P`` (`risingspark.storage.memcmp`), each candidate SST
(its vnode range meets the keys', it holds versions at or before the read epoch):

1. keeps the keys with ``first key <= P + 0xFF`` and ``P <= last key``, and, when the SST's bloom
   filter covers at most ``n`` pk columns, the keys whose filter prefix it may contain;
2. finds, in its index of block first keys, the blocks ``j..k`` each key's range ``[P, P + 0xFF)``
   can touch (`risingspark.storage.sst_meta`) and reads the missing ones in one Parquet read,
   through the process' block cache (decoded blocks: rows and an S-dtype key array);
3. in each block, two binary searches per key give its rows (every version of every key with that
   prefix; a key's versions are adjacent, newest first).

The rows found in every SST then go through the MVCC merge (newest version at or before the read
epoch, tombstones hide the key). The work is ``O(keys · (log blocks + log block_rows))`` searches plus
the rows of the blocks read, whatever the table holds.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from risingspark.chunk import EPOCH, KEY, TOMBSTONE, VNODE
from risingspark.errors import InternalError
from risingspark.storage.bloom import FEW_KEYS, hash_key, hash_keys
from risingspark.storage.cache import BlockCache
from risingspark.storage.desc import SstableInfo, StateTableDesc, TableLevels
from risingspark.storage.memcmp import encode_keys, key_matrix, upper_bounds
from risingspark.storage.object_store import ObjectStore
from risingspark.storage.sst import _conform, encode_row_keys, file_schema
from risingspark.storage.sst_meta import SstMeta, meta_of_footer

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Block:
    """A decoded block: its rows (`file_schema`) and their keys as an S-dtype array."""

    rows: pa.Table
    keys: np.ndarray

    @property
    def nbytes(self) -> int:
        # (with a byte a row for `tombstones`, made when a point lookup first reads the block)
        return int(self.rows.nbytes) + int(self.keys.nbytes) + self.rows.num_rows + 128

    @functools.cached_property
    def epochs(self) -> np.ndarray:
        """The rows' epochs as numpy (a view of the column: a point lookup reads a few, each a
        pyarrow call otherwise)."""
        return self.rows.column(EPOCH).to_numpy()

    @functools.cached_property
    def tombstones(self) -> np.ndarray:
        return self.rows.column(TOMBSTONE).to_numpy()


@dataclass(frozen=True)
class LookupKeys:
    """A batch of lookup keys, deduplicated and sorted by their encoding.

    Attributes:
        rows: one row per distinct key: ``_vnode`` and the looked-up pk columns.
        encoded: the keys' encodings (`rows`' order), as Arrow binary: their true lengths.
        lo: the same as an S-dtype array (zero-padded, for binary searches).
        hi: ``key + 0xFF`` per key, past every stored key with that prefix.
        columns: the pk columns the keys hold.
    """

    rows: pa.Table
    encoded: pa.Array
    lo: np.ndarray
    hi: np.ndarray
    columns: int
    _hashes: dict[int, np.ndarray] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, desc: StateTableDesc, keys: pa.Table, columns: int) -> LookupKeys:
        names = desc.pk_names[:columns]
        schema = desc.sst_schema()
        keys = keys.select([VNODE, *names]).cast(pa.schema([schema.field(n) for n in [VNODE, *names]]))
        encoded = encode_keys(keys.column(VNODE), [keys.column(n) for n in names])
        lengths = pc.binary_length(encoded).to_numpy()
        width = int(lengths.max()) + 1 if len(lengths) else 1
        if len(lengths) == 1:  # a point query's key: nothing to deduplicate
            lo = key_matrix(encoded, width)
            return cls(keys, encoded, lo, upper_bounds(lo, lengths=lengths), columns)
        lo, first = np.unique(key_matrix(encoded, width), return_index=True)
        take = pa.array(first)
        return cls(keys.take(take), encoded.take(take), lo,
                   upper_bounds(lo, lengths=lengths[first]), columns)

    def __len__(self) -> int:
        return len(self.lo)

    def hashes(self, desc: StateTableDesc, columns: int) -> np.ndarray:
        """The bloom hashes (`risingspark.storage.bloom.hash_keys`) of `prefix`, computed once per
        prefix length for every SST the keys are looked up in."""
        h = self._hashes.get(columns)
        if h is None:
            h = self._hashes[columns] = hash_keys(self.prefix(desc, columns))
        return h

    def prefix(self, desc: StateTableDesc, columns: int) -> pa.Array:
        """The keys' encodings cut to `columns` pk columns, as Arrow binary (for a bloom filter
        of that prefix: it hashes the true bytes)."""
        if columns == self.columns:
            return self.encoded
        names = desc.pk_names[:columns]
        return encode_keys(self.rows.column(VNODE), [self.rows.column(n) for n in names])


class WouldRead(Exception):
    """A read in `BlockReader.cached_only` mode needed a file: the caller retries where it may wait."""


class BlockReader:
    """Reads SST indexes and blocks through a meta cache and a block cache (both may be None).

    In `cached_only` mode (of the calling thread), a read that would open a file raises `WouldRead`
    instead: a frontend answers a point query on its event loop when the blocks are cached, and on a
    thread when they are not (a file read must not hold every connection of the loop)."""

    def __init__(self, store: ObjectStore, blocks: BlockCache | None, metas: BlockCache | None) -> None:
        self.store = store
        self.block_cache = blocks
        self.meta_cache = metas
        self._mode = threading.local()

    @contextlib.contextmanager
    def cached_only(self) -> Iterator[None]:
        self._mode.cached_only = True
        try:
            yield
        finally:
            self._mode.cached_only = False

    def _may_read(self) -> None:
        if getattr(self._mode, "cached_only", False):
            raise WouldRead()

    def meta(self, path: str) -> SstMeta:
        def load() -> SstMeta:
            self._may_read()
            with self.store.filesystem.open_input_file(self.store.full_path(path)) as f:
                return meta_of_footer(pq.ParquetFile(f).metadata, path)

        if self.meta_cache is None:
            return load()
        return self.meta_cache.get_or_load(f"{self.store.url}::{path}", load)

    def blocks(self, desc: StateTableDesc, path: str, meta: SstMeta, ids: Sequence[int]) -> dict[int, Block]:
        """The decoded blocks `ids` of an SST; missing ones are read together, in one Parquet read."""
        out: dict[int, Block] = {}
        missing = []
        for i in ids:
            block = self.block_cache.get(self._cache_key(path, i)) if self.block_cache is not None else None
            if block is None:
                missing.append(i)
            else:
                out[i] = block
        if missing:
            self._may_read()
        if self.block_cache is not None:
            self.block_cache.count(hits=len(ids) - len(missing), misses=len(missing))
        if missing:
            for i, block in self._read(desc, path, meta, missing).items():
                out[i] = block
                if self.block_cache is not None:
                    self.block_cache.put(self._cache_key(path, i), block)
        return out

    def block(self, desc: StateTableDesc, path: str, meta: SstMeta, i: int) -> Block:
        """`blocks` of one block: a cached one found with one lookup of the cache."""
        if self.block_cache is not None:
            block = self.block_cache.get(self._cache_key(path, i), count_hit=True)
            if block is not None:
                return block
            self._may_read()
            self.block_cache.count(hits=0, misses=1)
            block = self._read(desc, path, meta, [i])[i]
            self.block_cache.put(self._cache_key(path, i), block)
            return block
        return self.blocks(desc, path, meta, [i])[i]

    def _cache_key(self, path: str, block: int) -> str:
        return f"{self.store.url}::{path}#{block}"

    def _read(self, desc: StateTableDesc, path: str, meta: SstMeta, ids: list[int]) -> dict[int, Block]:
        schema = file_schema(desc)
        with self.store.filesystem.open_input_file(self.store.full_path(path)) as f:
            pf = pq.ParquetFile(f, metadata=meta.parquet)
            if not meta.indexed:  # a file written before SSTs had keys: one block, keys computed
                table = _conform(pf.read(), desc.sst_schema(), path)
                table = table.append_column(schema.field(KEY), encode_row_keys(desc, table))
                return {0: Block(table, key_matrix(table.column(KEY)))}
            table = pf.read_row_groups(sorted(ids), columns=schema.names)
        table = _conform(table, schema, path)
        out, offset = {}, 0
        for i in sorted(ids):
            start, end = meta.block_bounds(i)
            rows = table.slice(offset, end - start)
            offset += end - start
            out[i] = Block(rows, key_matrix(rows.column(KEY)))
        if offset != table.num_rows:
            raise InternalError(f"SST {path}: blocks {sorted(ids)} hold {table.num_rows} rows, the index says {offset}")
        return out


def lookup_rows(reader: BlockReader, desc: StateTableDesc, ssts: Sequence[SstableInfo], epoch: int | None,
                keys: LookupKeys) -> list[pa.Table]:
    """Every version (at or before `epoch`) of every stored key starting with one of `keys`, per SST,
    in `file_schema` (not merged: see the module doc)."""
    parts = []
    vnodes = np.unique(keys.rows.column(VNODE).to_numpy().astype(np.int64))
    # A few keys (a point query's) are compared with each SST's key range in Python first: below L0 a
    # level's SSTs have disjoint ranges, so the key meets one per level, and the others cost a bytes
    # comparison instead of an index lookup (the lookup's cost then grows with the levels, not with
    # the SSTs). `lo` is stripped of trailing zero bytes (an S-dtype element): the test is loose, safe.
    ranges = [(bytes(lo), bytes(hi)) for lo, hi in zip(keys.lo, keys.hi, strict=True)] \
        if len(keys) <= FEW_KEYS else None
    for sst in ssts:
        if epoch is not None and sst.min_epoch > epoch:
            continue
        if ranges is not None and sst.max_key and \
                not any(lo <= sst.max_key and sst.min_key < hi for lo, hi in ranges):
            continue
        i = int(np.searchsorted(vnodes, sst.min_vnode, side="left"))
        if i >= len(vnodes) or vnodes[i] > sst.max_vnode:
            continue
        part, _ = _lookup_sst(reader, desc, sst, keys)
        if part is not None and part.num_rows:
            if epoch is not None and sst.max_epoch > epoch:
                part = part.filter(pa.array(part.column(EPOCH).to_numpy() <= epoch))
            parts.append(part)
    return parts


def ranges_to_indices(start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """The concatenation of ``range(start[i], start[i] + length[i])``, vectorized.

    >>> ranges_to_indices(np.array([3, 10]), np.array([2, 3])).tolist()
    [3, 4, 10, 11, 12]
    """
    total = int(length.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.cumsum(length) - length
    return np.arange(total, dtype=np.int64) + np.repeat(start - offsets, length)


def _lookup_sst(reader: BlockReader, desc: StateTableDesc, sst: SstableInfo, keys: LookupKeys,
                edge: tuple[int, bool] | None = None) -> tuple[pa.Table | None, np.ndarray]:
    """The rows of one SST with a key starting with one of `keys` (see `read_ranges`), the keys its
    bloom filter rules out skipped."""
    meta = reader.meta(sst.path)

    def bloom(wanted: np.ndarray) -> np.ndarray:
        if meta.bloom is None or meta.bloom_prefix > keys.columns:
            return wanted
        if len(wanted) == 1:
            wanted[0] = wanted[0] and meta.bloom.may_contain_hash(int(keys.hashes(desc, meta.bloom_prefix)[0]))
            return wanted
        idx = np.flatnonzero(wanted)
        wanted[idx] &= meta.bloom.may_contain_hashes(keys.hashes(desc, meta.bloom_prefix)[idx])
        return wanted

    return read_ranges(reader, desc, sst, keys.lo, keys.hi, edge, bloom)


def read_ranges(reader: BlockReader, desc: StateTableDesc, sst: SstableInfo, lo: np.ndarray, hi: np.ndarray,
                edge: tuple[int, bool] | None = None,
                probe: Callable[[np.ndarray], np.ndarray] | None = None) -> tuple[pa.Table | None, np.ndarray]:
    """The rows of one SST with a key in one of the ranges ``[lo[i], hi[i])`` (sorted, disjoint,
    S-dtype), in `file_schema`, sorted by key; and the indices of the ranges it did not read whole:
    with `edge` ``(blocks, from_end)``, at most that many blocks per range are read, from its end
    (or its start). `probe` may rule ranges out (a bloom filter) given a mask of the candidates."""
    meta = reader.meta(sst.path)
    if len(lo) == 1 and edge is None:
        one = None if probe is None else lambda: bool(probe(np.ones(1, dtype=bool))[0])
        return _read_range(reader, desc, sst, meta, lo[0], hi[0], one), _NONE
    index = np.arange(len(lo))
    if meta.indexed:
        wanted = (lo <= np.array([meta.last_key])) & (hi > meta.first_keys[:1])
        if probe is not None and wanted.any():
            wanted = probe(wanted)
        if not wanted.all():
            if not wanted.any():
                return None, np.zeros(0, dtype=np.int64)
            lo, hi, index = lo[wanted], hi[wanted], index[wanted]
        # the blocks first..last of each range (both non-decreasing, as the ranges are sorted)
        first = np.maximum(np.searchsorted(meta.first_keys, lo, side="left") - 1, 0)
        last = np.maximum(np.searchsorted(meta.first_keys, hi, side="left") - 1, 0)
    else:
        first = last = np.zeros(len(lo), dtype=np.int64)
    partial = np.zeros(0, dtype=np.int64)
    if edge is not None:  # still non-decreasing after the cut
        count, from_end = edge
        if from_end:
            cut = np.maximum(first, last - count + 1)
            partial, first = index[cut > first], cut
        else:
            cut = np.minimum(last, first + count - 1)
            partial, last = index[cut < last], cut
    spans = last - first + 1
    needed = np.unique(ranges_to_indices(first, spans))
    blocks = reader.blocks(desc, sst.path, meta, needed.tolist())
    pieces = []
    for b in needed.tolist():
        block = blocks[b]
        # the ranges whose block span holds b: a contiguous run of the sorted ranges
        run = slice(int(np.searchsorted(last, b, side="left")), int(np.searchsorted(first, b, side="right")))
        starts = np.searchsorted(block.keys, lo[run], side="left")
        ends = np.searchsorted(block.keys, hi[run], side="left")
        rows = ranges_to_indices(starts, np.maximum(ends - starts, 0))
        if len(rows):
            pieces.append(block.rows.take(pa.array(rows)))
    if not pieces:
        return None, partial
    return (pa.concat_tables(pieces) if len(pieces) > 1 else pieces[0]), partial


_NONE = np.zeros(0, dtype=np.int64)


def sorted_position(keys: np.ndarray, needle: bytes, side: str) -> int:
    """``keys.searchsorted(needle, side)`` for one bytes needle, in ``O(log n)`` whatever its length.

    numpy compares a fixed-width bytes (S) array with a longer needle by casting the whole array to
    the needle's width first: ``O(n)`` a search (a 4,096-key block: 0.8 -> 21 µs; 65,536 keys: 335
    µs), and a point lookup's upper bound (the key and ``\\xff``) is one byte longer than the keys of
    a fixed-width key. An element ``e`` of width ``w`` compares with a longer needle ``x`` as ``e``
    padded with zero bytes: below ``x`` when ``e < x[:w]``, or ``e == x[:w]`` and the rest of ``x``
    holds a non-zero byte; equal when that rest is all zeros. So the search runs on ``x[:w]``, on
    the right of an equal element when the rest is non-zero (for either side), else on `side`."""
    width = keys.dtype.itemsize
    if len(needle) > width:
        if needle[width:].strip(b"\x00"):
            side = "right"
        needle = needle[:width]
    return int(keys.searchsorted(needle, side=side))  # type: ignore[call-overload]


def _read_range(reader: BlockReader, desc: StateTableDesc, sst: SstableInfo, meta: SstMeta, lo: bytes, hi: bytes,
                probe: Callable[[], bool] | None) -> pa.Table | None:
    """`read_ranges` of one range ``[lo, hi)`` (bytes as numpy's S dtype compares them: stripped of
    trailing zero bytes): the same steps with scalars, about a tenth of the numpy calls (each costs
    microseconds, more than the work on one key). `probe` may rule the range out."""
    pieces = [block.rows.slice(start, end - start) for block, start, end in _range_hits(reader, desc, sst, meta, lo, hi, probe)]
    if not pieces:
        return None
    return pa.concat_tables(pieces) if len(pieces) > 1 else pieces[0]


def _range_hits(reader: BlockReader, desc: StateTableDesc, sst: SstableInfo, meta: SstMeta, lo: bytes, hi: bytes,
                probe: Callable[[], bool] | None) -> list[tuple[Block, int, int]]:
    """The rows of ``[lo, hi)`` in an SST, as ``(block, start, end)`` per block that holds some (in
    key order), without slicing a table: a point lookup reads one row of them."""
    first = last = 0
    if meta.indexed:
        if not (lo <= meta.last_key.rstrip(b"\x00") and hi > meta.first_keys[0]):
            return []
        if probe is not None and not probe():
            return []
        if meta.num_blocks > 1:
            first = max(sorted_position(meta.first_keys, lo, "left") - 1, 0)
            last = max(sorted_position(meta.first_keys, hi, "left") - 1, 0)
    if first == last:  # (a point lookup's usual case: one block, without the dict of `blocks`)
        blocks = {first: reader.block(desc, sst.path, meta, first)}
    else:
        blocks = reader.blocks(desc, sst.path, meta, list(range(first, last + 1)))
    hits = []
    for b in range(first, last + 1):
        block = blocks[b]
        start = sorted_position(block.keys, lo, "left")
        end = sorted_position(block.keys, hi, "left")
        if end > start:
            hits.append((block, start, end))
    return hits


class PointKey:
    """One full key of a point lookup, encoded in Python (`encode_scalar_parts`): the same steps as a
    batch of `LookupKeys` with scalars, as Hummock's ``get`` of one key."""

    def __init__(self, vnode: int, parts: list[bytes]) -> None:
        self.vnode = vnode
        self.parts = parts
        self.encoded = b"".join(parts)
        # the range's bounds as numpy's S dtype compares them (an element is stripped of trailing
        # zero bytes); numpy converts each to an S scalar when it searches an S array
        self.lo = self.encoded.rstrip(b"\x00")
        self.hi = self.encoded + b"\xff"
        self._hashes: dict[int, int] = {}

    def hash(self, columns: int) -> int:
        """The bloom hash of the key's first `columns` pk columns (with its vnode)."""
        h = self._hashes.get(columns)
        if h is None:
            h = self._hashes[columns] = hash_key(b"".join(self.parts[:columns + 1]))
        return h


def _candidates(levels: TableLevels, key: bytes) -> Iterator[SstableInfo]:
    """The SSTs that may hold `key`, in `TableLevels.all_ssts`' order: every L0 SST (their number is
    bounded by compaction, not by the table's size), and in each level below the one SST whose key
    range can hold it, found by binary search (a level is a sorted run of disjoint ranges), so a
    lookup's cost grows with the levels, not with the SSTs."""
    for sub in levels.l0:
        yield from sub.ssts
    for level in levels.levels:
        i = bisect.bisect_left(level, key, key=lambda s: s.key_range[1])
        if i < len(level):
            yield level[i]


def get_row(reader: BlockReader, desc: StateTableDesc, levels: TableLevels, epoch: int | None,
            key: PointKey) -> pa.Table | None:
    """The live row of one full key at `epoch` (`file_schema`'s SST columns, one row), or None: the
    newest version at or before `epoch` among every SST's (each SST holds a key's versions newest
    first), none when it is a tombstone. Two SSTs with one epoch: the first in `all_ssts` order wins,
    as the stable sort of `merge_versions` picks."""
    found = _live_version(reader, desc, levels, epoch, key)
    return None if found is None else found[0].slice(found[1], 1)


def get_values(reader: BlockReader, desc: StateTableDesc, levels: TableLevels, epoch: int | None,
               key: PointKey, names: Sequence[str]) -> tuple | None:
    """`get_row`'s row as the Python values of columns `names` (no Arrow table is made: a point
    query's answer is one row)."""
    found = _live_version(reader, desc, levels, epoch, key)
    if found is None:
        return None
    rows, i = found
    return tuple(rows.column(n)[i].as_py() for n in names)


def _live_version(reader: BlockReader, desc: StateTableDesc, levels: TableLevels, epoch: int | None,
                  key: PointKey) -> tuple[pa.Table, int] | None:
    """The rows of the block holding `get_row`'s version, and its index there. A key's versions are
    adjacent in an SST, newest first (they may run on into the next block), so the first at or before
    `epoch` is its version there."""
    columns = len(desc.pk)
    lo, hi = key.encoded, key.encoded + b"\xff"  # (true bytes: exact against an SST's true key bounds)
    best: tuple[int, Block, int] | None = None  # (epoch, block, row)
    for sst in _candidates(levels, key.encoded):
        if epoch is not None and sst.min_epoch > epoch:
            continue
        if not sst.min_vnode <= key.vnode <= sst.max_vnode:
            continue
        if sst.max_key and not (lo <= sst.max_key and sst.min_key < hi):
            continue
        meta = reader.meta(sst.path)
        # (the bloom filter first: it rules out most L0 SSTs of a key, without a closure made for each)
        if meta.indexed and meta.bloom is not None and meta.bloom_prefix <= columns \
                and not meta.bloom.may_contain_hash(key.hash(meta.bloom_prefix)):
            continue
        for block, start, end in _range_hits(reader, desc, sst, meta, key.lo, key.hi, None):
            epochs = block.epochs
            i = next((j for j in range(start, end) if epoch is None or epochs[j] <= epoch), None)
            if i is not None:
                if best is None or epochs[i] > best[0]:
                    best = (int(epochs[i]), block, i)
                break
    if best is None:
        return None
    _, block, i = best
    if block.tombstones[i]:
        return None
    return block.rows, i


@dataclass(frozen=True)
class EdgeRows:
    """The rows at one end of each key prefix's range (`edge_rows`).

    Attributes:
        rows: every version of every key on the exact side of its prefix's bound (`file_schema`, not
            merged), sorted by key.
        bounds: per prefix (in `LookupKeys` order), None when its whole range was read, else the
            bound (a key's true bytes, not zero-padded): from the end, the keys above it are exact (all
            their versions were read); from the start, the keys below it.
    """

    rows: pa.Table
    bounds: list[bytes | None]


def edge_rows(reader: BlockReader, desc: StateTableDesc, ssts: Sequence[SstableInfo], epoch: int | None,
              keys: LookupKeys, blocks: int, from_end: bool) -> EdgeRows:
    """The keys nearest one end of each prefix's range, reading at most `blocks` blocks per prefix
    and SST — a bounded scan, as RisingWave's TopN and min/max caches load the top of a group.

    Each SST whose read of a prefix stopped short gives a bound: from the end, its smallest key read
    (the versions of that key may continue in the block before, which was not read: only the keys
    above it are whole); from the start, its greatest key read. A prefix's bound is the tightest of
    its SSTs' (the greatest from the end, the least from the start); only keys strictly on the read
    side of it are kept, so every version of every kept key is among the rows, whichever SST holds
    it, and the MVCC merge of the rows gives their exact values."""
    schema_rows: list[pa.Table] = []
    bounds: list[bytes | None] = [None] * len(keys)
    for sst in ssts:
        if epoch is not None and sst.min_epoch > epoch:
            continue
        part, partial = _lookup_sst(reader, desc, sst, keys, (blocks, from_end))
        if part is not None and part.num_rows and epoch is not None and sst.max_epoch > epoch:
            part = part.filter(pa.array(part.column(EPOCH).to_numpy() <= epoch))
        if part is not None and part.num_rows:
            schema_rows.append(part)
        if not len(partial):
            continue
        if part is not None and part.num_rows:
            row_keys = key_matrix(part.column(KEY), keys.lo.itemsize)
            owner = np.searchsorted(keys.lo, row_keys, side="right") - 1
        else:
            row_keys, owner = np.zeros(0, dtype=keys.lo.dtype), np.zeros(0, dtype=np.int64)
        for i in partial.tolist():
            mine = np.flatnonzero(owner == i)
            if len(mine) and part is not None:  # an SST's rows come sorted by key; the bound keeps its true bytes
                b = part.column(KEY)[int(mine[0] if from_end else mine[-1])].as_py()
            else:  # read short without reaching the range: no key of the prefix is known whole
                b = keys.encoded[i].as_py() + b"\xff" if from_end else keys.encoded[i].as_py()
            old = bounds[i]
            if old is None or (b > old if from_end else b < old):
                bounds[i] = b
    if not schema_rows:
        return EdgeRows(file_schema(desc).empty_table(), bounds)
    rows = pa.concat_tables(schema_rows)
    rows = rows.take(pc.sort_indices(rows, sort_keys=[(KEY, "ascending"), (EPOCH, "descending")]))
    if any(b is not None for b in bounds):
        row_keys = key_matrix(rows.column(KEY), keys.lo.itemsize)
        owner = np.searchsorted(keys.lo, row_keys, side="right") - 1
        limit = np.array([b if b is not None else b"" for b in bounds], dtype=object)
        has = np.array([b is not None for b in bounds])
        keep = np.ones(rows.num_rows, dtype=bool)
        for i in np.flatnonzero(has).tolist():
            mine = owner == i
            keep[mine] = (row_keys[mine] > limit[i]) if from_end else (row_keys[mine] < limit[i])
        rows = rows.filter(pa.array(keep))
    return EdgeRows(rows, bounds)
