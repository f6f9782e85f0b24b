"""MVCC reads of one state table at an epoch, over the SSTs of all its levels.

Rows come back in the *read shape*: ``_vnode`` then the value columns (no ``_epoch`` and
``_tombstone``), live rows only, sorted by ``(_vnode, pk)``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from risingspark.chunk import EPOCH, TOMBSTONE, VNODE
from risingspark.errors import InvalidParameterValue
from risingspark.storage.cache import BlockCache
from risingspark.storage.desc import SstableInfo, StateTableDesc, TableLevels
from risingspark.storage.memcmp import encode_keys, encode_scalar_parts, key_matrix, upper_bounds
from risingspark.storage.mvcc import (
    compare_rows,
    compare_to_positions,
    concat_sst_tables,
    key_names,
    merge_versions,
    positions_table,
    same_key_as_previous,
    sort_keys,
    sort_table,
    vnode_array,
)
from risingspark.storage.object_store import ObjectStore
from risingspark.storage.point_get import (
    BlockReader,
    LookupKeys,
    PointKey,
    get_row,
    get_values,
    lookup_rows,
    ranges_to_indices,
    read_ranges,
)
from risingspark.storage.sst import read_sst
from risingspark.vnode import VNODE_COUNT

logger = logging.getLogger(__name__)

MAX_IO_THREADS = 8


def read_schema(desc: StateTableDesc) -> pa.Schema:
    """The schema of rows returned by reads: ``_vnode`` and the value columns."""
    schema = desc.sst_schema()
    return pa.schema([schema.field(n) for n in [VNODE, *desc.names]])


def to_read_shape(desc: StateTableDesc, rows: pa.Table) -> pa.Table:
    return rows.select([VNODE, *desc.names])


@dataclass(frozen=True)
class ScanResult:
    """One step of a backfill snapshot read (`StateTableReader.scan_after`).

    Attributes:
        rows: the live rows read, in read shape, sorted by ``(_vnode, pk)``.
        positions: the new position (last key processed) of every vnode that advanced.
        finished: the vnodes with nothing after their new position.
        rows_per_vnode: the number of live rows in `rows` for every vnode scanned.
    """

    rows: pa.Table
    positions: dict[int, tuple] = field(default_factory=dict)
    finished: set[int] = field(default_factory=set)
    rows_per_vnode: dict[int, int] = field(default_factory=dict)


def _sorted_vnodes(vnodes: Iterable[int]) -> np.ndarray:
    return np.unique(np.fromiter((int(v) for v in vnodes), dtype=np.int64))


def _overlaps(sst: SstableInfo, vnodes: np.ndarray) -> bool:
    i = int(np.searchsorted(vnodes, sst.min_vnode, side="left"))
    return i < len(vnodes) and vnodes[i] <= sst.max_vnode


def slice_vnodes(table: pa.Table, vnodes: np.ndarray) -> pa.Table:
    """The rows of `vnodes` (sorted) from `table` (sorted by ``_vnode``), by zero-copy slices."""
    if table.num_rows == 0:
        return table
    vn = vnode_array(table)
    lo = np.searchsorted(vn, vnodes, side="left")
    hi = np.searchsorted(vn, vnodes, side="right")
    nonempty = lo < hi
    lo, hi = lo[nonempty], hi[nonempty]
    if len(lo) == 0:
        return table.slice(0, 0)
    # merge adjacent ranges (consecutive vnodes that are both requested)
    run_start = np.ones(len(lo), dtype=bool)
    run_start[1:] = lo[1:] != hi[:-1]
    starts = lo[run_start]
    ends = hi[np.append(run_start[1:], True)]
    if len(starts) == 1 and starts[0] == 0 and ends[0] == table.num_rows:
        return table
    return pa.concat_tables([table.slice(int(s), int(e - s)) for s, e in zip(starts, ends, strict=True)])


class StateTableReader:
    """Reads state tables from SSTs, through a `BlockCache` when given one."""

    def __init__(self, store: ObjectStore, cache: BlockCache | None = None, *,
                 io_threads: int = MAX_IO_THREADS, metas: BlockCache | None = None) -> None:
        self.store = store
        self.cache = cache
        self.io_threads = max(1, io_threads)
        self.blocks = BlockReader(store, cache, metas)

    # ---- plumbing ---------------------------------------------------------------------------
    def _select(self, ssts: Iterable[SstableInfo], epoch: int | None,
                vnodes: np.ndarray | None) -> list[SstableInfo]:
        """The SSTs that may hold versions visible at `epoch` of the given vnodes."""
        return [s for s in ssts if (epoch is None or s.min_epoch <= epoch)
                and (vnodes is None or _overlaps(s, vnodes))]

    def _load(self, desc: StateTableDesc, ssts: Sequence[SstableInfo],
              vnodes: np.ndarray | None) -> list[pa.Table]:
        def load(sst: SstableInfo) -> pa.Table:
            table = read_sst(self.store, sst.path, desc, cache=self.cache,
                             vnodes=None if vnodes is None else vnodes.tolist())
            return table if vnodes is None else slice_vnodes(table, vnodes)

        if len(ssts) <= 1 or self.io_threads == 1:
            return [load(s) for s in ssts]
        with ThreadPoolExecutor(min(self.io_threads, len(ssts)), thread_name_prefix="sst-read") as pool:
            return list(pool.map(load, ssts))

    # ---- reads ------------------------------------------------------------------------------
    def read(self, desc: StateTableDesc, ssts: Sequence[SstableInfo], epoch: int | None, *,
             vnodes: Iterable[int] | None = None) -> pa.Table:
        """Every live row at `epoch` (of `vnodes` only, when given), sorted by ``(_vnode, pk)``."""
        wanted = None if vnodes is None else _sorted_vnodes(vnodes)
        files = self._select(ssts, epoch, wanted)
        rows = merge_versions(self._load(desc, files, wanted), desc, epoch)
        logger.debug("table %d: read %d rows at epoch %s from %d of %d SSTs", desc.table_id,
                     rows.num_rows, epoch, len(files), len(ssts))
        return to_read_shape(desc, rows)

    def lookup(self, desc: StateTableDesc, ssts: Sequence[SstableInfo], epoch: int | None,
               keys: pa.Table, *, columns: Sequence[str] | None = None) -> pa.Table:
        """The live rows at `epoch` of the given keys (``_vnode`` + pk columns), in read shape.

        With `columns` (the leading pk columns, e.g. a join key that leads the pk), `keys` holds
        ``_vnode`` and those columns, and every row matching them is returned (a prefix lookup).
        Reads only the blocks that can hold the keys (`risingspark.storage.point_get`)."""
        n = len(desc.pk) if columns is None else len(columns)
        if columns is not None and list(columns) != desc.pk_names[:n]:
            raise InvalidParameterValue(f"table {desc.table_id}: a prefix lookup by {list(columns)} does not "
                                        f"lead its key {desc.pk_names}")
        if keys.num_rows == 0:
            return read_schema(desc).empty_table()
        wanted = LookupKeys.of(desc, keys, n)
        rows = merge_versions(lookup_rows(self.blocks, desc, ssts, epoch, wanted), desc, epoch)
        logger.debug("table %d: looked up %d keys at epoch %s, %d found", desc.table_id, len(wanted), epoch,
                     rows.num_rows)
        return to_read_shape(desc, rows)

    def get(self, desc: StateTableDesc, levels: TableLevels, epoch: int | None, vnode: int,
            values: Sequence[object]) -> pa.Table | None:
        """`lookup` of one full key (its vnode and every pk column's value), in read shape (0 or 1
        row), with the key encoded and merged in Python (`risingspark.storage.point_get.get_row`);
        None when a key column's type has no Python encoding (then call `lookup`)."""
        key = _point_key(desc, vnode, values)
        if key is None:
            return None
        row = get_row(self.blocks, desc, levels, epoch, key)
        if row is None:
            return read_schema(desc).empty_table()
        return to_read_shape(desc, row)

    def get_values(self, desc: StateTableDesc, levels: TableLevels, epoch: int | None, vnode: int,
                   values: Sequence[object], names: Sequence[str]) -> list[tuple] | None:
        """`get`, as a list of zero or one tuple of the Python values of columns `names`; None when a
        key column's type has no Python encoding (then call `lookup`)."""
        key = _point_key(desc, vnode, values)
        if key is None:
            return None
        row = get_values(self.blocks, desc, levels, epoch, key, names)
        return [] if row is None else [row]

    def read_range(self, desc: StateTableDesc, ssts: Sequence[SstableInfo], epoch: int | None, vnode: int,
                   lo: int, hi: int) -> pa.Table:
        """The live rows at `epoch` of one vnode whose leading key column, as int64 (a timestamp in
        microseconds, an integer), lies in ``[lo, hi]``, in read shape.

        The range is one key range, ``[(vnode, lo), (vnode, hi) + 0xFF)``, read by blocks
        (`risingspark.storage.point_get.read_ranges`): only the blocks that can hold it. Every version
        of a key has the same leading column, so the merge sees all versions of the keys in range."""
        files = self._select(ssts, epoch, _sorted_vnodes([vnode]))
        leading = desc.sst_schema().field(desc.pk_names[0]).type
        bounds = encode_keys(pa.array([vnode, vnode], pa.int16()),
                             [pa.array([lo, hi], pa.int64()).cast(leading)]).to_pylist()
        width = len(bounds[1]) + 1
        low = key_matrix(pa.array(bounds[:1], pa.binary()), width)
        high = upper_bounds(key_matrix(pa.array(bounds[1:], pa.binary()), width - 1))
        parts = []
        for sst in files:
            part, _ = read_ranges(self.blocks, desc, sst, low, high)
            if part is not None:
                parts.append(part)
        rows = merge_versions(parts, desc, epoch)
        logger.debug("table %d: read %d rows of vnode %d in [%d, %d] at epoch %s from %d SSTs", desc.table_id,
                     rows.num_rows, vnode, lo, hi, epoch, len(files))
        return to_read_shape(desc, rows)

    def read_key_range(self, desc: StateTableDesc, ssts: Sequence[SstableInfo], epoch: int | None, vnode: int,
                       lo: Any, hi: Any) -> pa.Table:
        """The live rows at `epoch` of one vnode whose leading key column lies in ``[lo, hi]`` (values
        of its type; None: unbounded), in read shape: one key range read by blocks, as `read_range`."""
        files = self._select(ssts, epoch, _sorted_vnodes([vnode]))
        leading = desc.sst_schema().field(desc.pk_names[0]).type
        vnodes = pa.array([vnode], pa.int16())
        prefix = encode_keys(vnodes, []).to_pylist()[0]
        low_key = prefix if lo is None else encode_keys(vnodes, [pa.array([lo], leading)]).to_pylist()[0]
        high_key = prefix if hi is None else encode_keys(vnodes, [pa.array([hi], leading)]).to_pylist()[0]
        width = max(len(low_key), len(high_key)) + 1
        low = key_matrix(pa.array([low_key], pa.binary()), width)
        high = upper_bounds(key_matrix(pa.array([high_key], pa.binary()), width - 1),
                            lengths=np.array([len(high_key)]))
        parts = []
        for sst in files:
            part, _ = read_ranges(self.blocks, desc, sst, low, high)
            if part is not None:
                parts.append(part)
        rows = merge_versions(parts, desc, epoch)
        return to_read_shape(desc, rows)

    def batches(self, desc: StateTableDesc, ssts: Sequence[SstableInfo], epoch: int | None, *,
                rows_per_batch: int = 65_536, private_cache_bytes: int | None = None) -> Iterator[pa.Table]:
        """Every live row at `epoch`, as `read` returns them but in batches of about `rows_per_batch`
        rows, read as they are taken: what the reader holds at once is bounded by a batch (per SST),
        whatever the table holds. Rows are sorted by ``(_vnode, pk)`` within a batch, not across.

        The vnodes are taken in groups whose rows, estimated from the SSTs' row counts spread evenly
        over their vnodes, make about a batch; each group is read by `scan_after` with the batch shared
        among its unfinished vnodes, again until every vnode of the group is finished (a vnode bigger
        than the estimate, or than a batch, takes several reads). With `private_cache_bytes` the blocks
        go through a block cache of that size of the scan's own, not the reader's (a big scan would push
        out what point queries use; each read starts again in the block where the one before stopped);
        SST indexes still go through the reader's."""
        files = self._select(ssts, epoch, None)
        scanner = self
        if private_cache_bytes is not None:
            scanner = StateTableReader(self.store, BlockCache(private_cache_bytes), metas=self.blocks.meta_cache)
        if not files:
            return
        estimate = np.zeros(VNODE_COUNT + 1, dtype=np.float64)
        for s in files:
            width = s.max_vnode - s.min_vnode + 1
            estimate[s.min_vnode:s.max_vnode + 1] += s.row_count / max(1, width)
        vnodes = np.flatnonzero(estimate > 0)
        group: list[int] = []
        rows = 0.0
        for i, v in enumerate(vnodes.tolist()):
            group.append(v)
            rows += estimate[v]
            if rows >= rows_per_batch or i == len(vnodes) - 1:
                yield from scanner._scan_group(desc, files, epoch, group, rows_per_batch)
                group, rows = [], 0.0

    def _scan_group(self, desc: StateTableDesc, ssts: Sequence[SstableInfo], epoch: int | None,
                    vnodes: list[int], rows_per_batch: int) -> Iterator[pa.Table]:
        positions: dict[int, tuple | None] = dict.fromkeys(vnodes)
        while positions:
            scan = self.scan_after(desc, ssts, epoch, positions, max(1, rows_per_batch // len(positions)))
            if scan.rows.num_rows:
                yield scan.rows
            positions = {v: scan.positions.get(v, p) for v, p in positions.items() if v not in scan.finished}

    def scan_after(self, desc: StateTableDesc, ssts: Sequence[SstableInfo], epoch: int | None,
                   positions: Mapping[int, tuple | None], limit_per_vnode: int) -> ScanResult:
        """Read the next rows after each vnode's position, as an LSM merge iterator would.

        The algorithm, for every vnode ``v`` in `positions` at once:

        1. In each SST (rows sorted by ``(_vnode, pk, _epoch desc)``), keep the versions with
           ``_epoch <= epoch``, find the first row of ``v`` with key after ``v``'s position (a
           binary search run for all vnodes together) and take up to `limit_per_vnode` rows from
           there.
        2. If the SST has more rows of ``v`` after those taken, the last key taken is a candidate
           bound: past it, that SST's rows were not looked at. ``v``'s bound is the smallest
           candidate over the SSTs; with no candidate, every remaining row of ``v`` was taken.
        3. Merge the taken versions with key <= bound (newest version per key, tombstones hide the
           key). Each SST contributed every version of such keys newer than the ones it left out, so
           the merge sees the newest version of each key over all SSTs.
        4. The new position is the bound (or the vnode's last key taken, when there is no bound, in
           which case the vnode is finished). A bound is a key after the old position, so every call
           advances every unfinished vnode; a vnode with nothing after its position is finished.

        Each SST is read by blocks (`risingspark.storage.point_get.read_ranges`): for each vnode, from
        the block holding its position, as many blocks as `limit_per_vnode` rows need and one more; a
        vnode whose rows continue past those blocks is *truncated* there, which makes its last key
        taken a bound as in step 2. Work per SST is one vectorized pass: ``O(vnodes * log rows)``
        comparisons plus the blocks read, whatever the table holds.
        """
        if limit_per_vnode < 1:
            raise InvalidParameterValue(f"limit_per_vnode must be at least 1, got {limit_per_vnode}")
        scanned = _sorted_vnodes(positions)
        if len(scanned) == 0:
            return ScanResult(read_schema(desc).empty_table())
        started = positions_table(desc, positions)
        lo, hi = _scan_ranges(desc, scanned, started)
        files = self._select(ssts, epoch, scanned)
        taken_parts, bound_parts = [], []
        for sst in files:
            file_epoch = epoch if epoch is not None and sst.max_epoch > epoch else None
            meta = self.blocks.meta(sst.path)
            blocks = -(-limit_per_vnode // max(1, meta.block_rows)) + 1
            while True:
                part, partial = read_ranges(self.blocks, desc, sst, lo, hi, (blocks, False))
                table = concat_sst_tables([part] if part is not None else [], desc)
                truncated = np.zeros(len(scanned), dtype=bool)
                truncated[partial] = True
                taken, bounds, stuck = _scan_file(desc, table, file_epoch, scanned, started, limit_per_vnode,
                                                  truncated)
                if not stuck or blocks >= meta.num_blocks:
                    break
                blocks *= 4  # a truncated vnode left nothing visible in its blocks: read further
            taken_parts.append(taken)
            bound_parts.append(bounds)

        names = key_names(desc)
        bounds = sort_table(pa.concat_tables(bound_parts) if bound_parts else
                            positions_table(desc, {}), sort_keys(desc, with_epoch=False))
        if bounds.num_rows:
            bounds = bounds.filter(pa.array(~same_key_as_previous(bounds, [VNODE])))
        taken = merge_versions(taken_parts, desc, None, keep_tombstones=True)
        _, past_bound, _ = compare_to_positions(taken, desc, bounds)
        if past_bound.any():
            taken = taken.filter(pa.array(~past_bound))

        vn = vnode_array(taken)
        last = np.flatnonzero(np.append(vn[1:] != vn[:-1], True)) if len(vn) else np.zeros(0, np.int64)
        last_keys = taken.select(names).take(pa.array(last))
        new_positions = {int(v): tuple(key) for v, *key in
                         zip(*(last_keys.column(n).to_pylist() for n in names), strict=True)}
        finished = {int(v) for v in scanned} - {int(v) for v in vnode_array(bounds)}
        live = taken.filter(pc.invert(taken.column(TOMBSTONE))) if taken.num_rows else taken
        counts = np.bincount(vnode_array(live), minlength=int(scanned[-1]) + 1)
        rows_per_vnode = {int(v): int(counts[v]) for v in scanned}
        logger.debug("table %d: scanned %d vnodes at epoch %s from %d SSTs: %d rows, %d finished",
                     desc.table_id, len(scanned), epoch, len(files), live.num_rows, len(finished))
        return ScanResult(to_read_shape(desc, live), new_positions, finished, rows_per_vnode)


def _point_key(desc: StateTableDesc, vnode: int, values: Sequence[object]) -> PointKey | None:
    """One full key as `get` looks it up; None when a key column's type has no Python encoding."""
    parts = encode_scalar_parts(vnode, values, desc.pk_types)
    return None if parts is None else PointKey(vnode, parts)


def _scan_ranges(desc: StateTableDesc, scanned: np.ndarray, started: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """The key ranges `scan_after` reads: from each vnode's position (its start when it has none) to
    the end of the vnode, as sorted S-dtype bounds ``[lo, hi)``."""
    vnodes = pa.array(scanned, pa.int16())
    prefix = encode_keys(vnodes, [])
    width = max(3, 1 + max((len(k) for k in encode_keys(started.column(VNODE),
                                                        [started.column(n) for n in desc.pk_names]).to_pylist()),
                           default=0))
    lo_keys = prefix.to_pylist()
    if started.num_rows:
        at = {int(v): k for v, k in zip(vnode_array(started).tolist(),
                                        encode_keys(started.column(VNODE),
                                                    [started.column(n) for n in desc.pk_names]).to_pylist(),
                                        strict=True)}
        lo_keys = [at.get(int(v), k) for v, k in zip(scanned.tolist(), lo_keys, strict=True)]
    lo = key_matrix(pa.array(lo_keys, pa.binary()), width)
    hi = upper_bounds(key_matrix(prefix, 2))
    return lo, hi


def _scan_file(desc: StateTableDesc, table: pa.Table, epoch: int | None, scanned: np.ndarray,
               started: pa.Table, limit: int, truncated: np.ndarray | None = None
               ) -> tuple[pa.Table, pa.Table, bool]:
    """Step 1 and 2 of `scan_after` for one SST: the rows taken, the bound candidates, and whether a
    truncated vnode (its rows continue past `table`) took nothing (the caller reads further)."""
    names = key_names(desc)
    valid = None
    vn = vnode_array(table)
    if epoch is not None:
        valid = np.flatnonzero(table.column(EPOCH).to_numpy() <= epoch)
        vn = vn[valid]
    lo = np.searchsorted(vn, scanned, side="left")
    hi = np.searchsorted(vn, scanned, side="right")
    start = lo.copy()

    # Binary search, for all started vnodes together, of the first row after the position.
    started_vnodes = vnode_array(started)
    lut = np.full(max(int(scanned[-1]), int(started_vnodes.max(initial=0))) + 1, -1, dtype=np.int64)
    lut[started_vnodes] = np.arange(len(started_vnodes))
    slot = lut[scanned]
    active = np.flatnonzero((slot >= 0) & (lo < hi))
    if len(active):
        pos_cols = [started.column(n).take(pa.array(slot[active])) for n in desc.pk_names]
        a_lo, a_hi = lo[active].copy(), hi[active].copy()
        while True:
            open_ = np.flatnonzero(a_lo < a_hi)
            if len(open_) == 0:
                break
            mid = (a_lo[open_] + a_hi[open_]) // 2
            phys = pa.array(mid if valid is None else valid[mid])
            row_cols = [table.column(n).take(phys) for n in desc.pk_names]
            gt, _ = compare_rows(row_cols, [c.take(pa.array(open_)) for c in pos_cols], len(open_))
            a_hi[open_[gt]] = mid[gt]
            a_lo[open_[~gt]] = mid[~gt] + 1
        start[active] = a_lo

    end = np.minimum(hi, start + limit)
    more = end < hi
    stuck = False
    if truncated is not None and truncated.any():
        more |= truncated & (end > start)
        stuck = bool((truncated & (end == start)).any())
    idx = ranges_to_indices(start, end - start)
    cand = end[more] - 1
    if valid is not None:
        idx, cand = valid[idx], valid[cand]
    taken = table.take(pa.array(idx))
    bounds = table.select(names).take(pa.array(cand))
    return taken, bounds, stuck
