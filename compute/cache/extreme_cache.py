"""The cache of min and max: each group's extreme values, as RisingWave's `MaterializedInputState`
with its top-N cache (`executor/aggregate/minput.rs`).

The input state of ``min(x)`` / ``max(x)`` holds one row per input row, keyed by ``(group key, x,
the input's stream key)`` — sorted by (group, value) — with no count: an input row's insert writes
its key, its delete a tombstone, and neither reads anything. Per group the cache holds a run of its
keys at the extreme end (the greatest for max, the least for min) with their values, and a **bound**:
every key of the group on the extreme side of the bound is in the run (no bound: the run is the whole
group). So:

* the result is the run's extreme key's value;
* an insert or delete on the extreme side of the bound updates the run; one beyond it changes
  nothing the result depends on and is not read (RisingWave: "retracting a value that is not the
  current result costs no read");
* a run that deletes empty, bound still set, is dropped and loaded again; a run that grows past twice
  its capacity is cut back to its capacity (the bound moves in).

A run loads with a bounded read of the group's end (`risingspark.storage.point_get.edge_rows`): two
blocks per SST, more (four times as many, then the whole group) when that leaves no live key. The
runs are entries of the worker's state cache, kept exact across workers as every table cache is
(`compute.cache.state_cache`).
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from compute.cache.state_cache import _ABSENT, APPLY_CHUNK_ROWS, CacheManager, TableCache, _size_of
from risingspark.chunk import EPOCH, KEY, TOMBSTONE, VNODE
from risingspark.storage.desc import SstableInfo, StateTableDesc
from risingspark.storage.memcmp import encode_keys, key_matrix
from risingspark.storage.mvcc import merge_versions
from risingspark.storage.point_get import LookupKeys, edge_rows
from risingspark.storage.reader import StateTableReader

logger = logging.getLogger(__name__)

RUN_CAPACITY = 256  # keys a run keeps at most (cut back from twice as many)
LOAD_BLOCKS = 2


class Run:
    """One group's run of extreme keys (see the module doc)."""

    __slots__ = ("keys", "values", "bound", "size")

    def __init__(self, bound: bytes | None) -> None:
        self.keys: list[bytes] = []  # sorted
        self.values: dict[bytes, Any] = {}
        self.bound = bound
        self.size = 64

    def holds(self, key: bytes, descending: bool) -> bool:
        """Whether `key` is on the run's side of its bound."""
        return self.bound is None or (key > self.bound if descending else key < self.bound)

    def extreme(self, descending: bool) -> Any:
        if not self.keys:
            return None
        return self.values[self.keys[-1] if descending else self.keys[0]]

    def put(self, key: bytes, value: Any) -> int:
        if key not in self.values:
            bisect.insort(self.keys, key)
            self.size += len(key) + _size_of((value,)) + 32
        self.values[key] = value
        return self.size

    def delete(self, key: bytes, value: Any) -> int:
        if self.values.pop(key, _ABSENT) is not _ABSENT:
            del self.keys[bisect.bisect_left(self.keys, key)]
            self.size -= len(key) + _size_of((value,)) + 32
        return self.size

    def trim(self, descending: bool) -> None:
        """Keep the `RUN_CAPACITY` most extreme keys once the run holds twice as many."""
        if len(self.keys) <= 2 * RUN_CAPACITY:
            return
        if descending:
            drop, self.keys = self.keys[:-RUN_CAPACITY], self.keys[-RUN_CAPACITY:]
            self.bound = drop[-1]
        else:
            drop, self.keys = self.keys[RUN_CAPACITY:], self.keys[:RUN_CAPACITY]
            self.bound = drop[0]
        for k in drop:
            self.size -= len(k) + _size_of((self.values.pop(k),)) + 32


class ExtremeCache(TableCache):
    """The runs of one min/max input state table in one worker (a prefix cache by group key)."""

    def __init__(self, manager: CacheManager, name: str, desc: StateTableDesc, prefix: int | None,
                 descending: bool = False) -> None:
        super().__init__(manager, name, desc, prefix)
        self.descending = descending
        self.value_index = (prefix or 0) + 1  # in (_vnode, group key..., value, stream key...)

    def _apply(self, rows: pa.Table) -> None:
        """Apply row versions (inserts and tombstones, SST shape) to the runs held (a sync's
        catch-up): as `apply_to`, then the emptied runs go and the others' sizes are recounted."""
        rows = self.held_rows(rows)
        if rows.num_rows == 0:
            return
        assert self.prefix is not None
        prefixes = set(encode_keys(rows.column(VNODE),
                                   [rows.column(n) for n in self.desc.pk_names[:self.prefix]]).to_pylist())
        held = self.held(list(prefixes))
        emptied = self.apply_to(held, rows)
        for p in emptied:
            self.manager._drop(self.name, p)  # load again when needed
        for p, run in held.items():
            self.manager._put(self.name, p, run, run.size + len(p))

    def apply_to(self, runs: dict[bytes, Run], rows: pa.Table, *, settle_each_chunk: bool = True) -> list[bytes]:
        """Apply row versions (SST shape) to `runs` (a task's own, by encoded group), a chunk of rows
        at a time; after each chunk (after all of them, without `settle_each_chunk`: a whole group
        must not be cut before all its deletes apply) a long run is trimmed and an emptied one (every
        key it held went, its bound still set) removed from `runs`. Returns the emptied groups."""
        if rows.num_rows == 0 or not runs:
            return []
        rows = rows.sort_by([(EPOCH, "ascending")]) if rows.num_rows > 1 else rows
        emptied: list[bytes] = []
        touched: set[bytes] = set()
        for start in range(0, rows.num_rows, APPLY_CHUNK_ROWS):
            self._apply_runs(rows.slice(start, APPLY_CHUNK_ROWS), runs, touched)
            if settle_each_chunk:
                emptied += self._settle(runs, touched)
        return emptied + self._settle(runs, touched)

    def _apply_runs(self, rows: pa.Table, runs: dict[bytes, Run], touched: set[bytes]) -> None:
        assert self.prefix is not None
        full = encode_keys(rows.column(VNODE), [rows.column(n) for n in self.desc.pk_names]).to_pylist()
        prefixes = encode_keys(rows.column(VNODE),
                               [rows.column(n) for n in self.desc.pk_names[:self.prefix]]).to_pylist()
        tomb = rows.column(TOMBSTONE).to_pylist()
        values = rows.column(self.desc.names[self.value_index - 1]).to_pylist()
        for p, key, dead, value in zip(prefixes, full, tomb, values, strict=True):
            run = runs.get(p)
            if run is None or not run.holds(key, self.descending):
                continue
            touched.add(p)
            if dead:
                run.delete(key, value)
            else:
                run.put(key, value)

    def _settle(self, runs: dict[bytes, Run], touched: set[bytes]) -> list[bytes]:
        emptied = []
        for p in touched:
            run = runs[p]
            if not run.keys and run.bound is not None:
                del runs[p]
                emptied.append(p)
            else:
                run.trim(self.descending)
        touched.clear()
        return emptied

    def runs(self, reader: StateTableReader, ssts: Sequence[SstableInfo], epoch: int,
             groups: pa.Table) -> dict[bytes, Run]:
        """The runs of `groups` (``_vnode`` + group key) as of `epoch`, the held ones and the others
        read from storage — the task's own from here on (`keep` offers them back to the cache).
        Call `sync` first."""
        assert self.prefix is not None
        names = self.desc.pk_names[:self.prefix]
        encoded = encode_keys(groups.column(VNODE), [groups.column(n) for n in names]).to_pylist()
        out: dict[bytes, Run] = {}
        missing: list[int] = []
        seen: set[bytes] = set()
        with self.manager.lock:
            for i, p in enumerate(encoded):
                if p in seen:
                    continue
                seen.add(p)
                run = self.manager._get(self.name, p)
                if run is _ABSENT:
                    missing.append(i)
                else:
                    out[p] = run
            self.counters.hits += len(out)
            self.counters.misses += len(missing)
        if missing:
            out.update(self.load(reader, ssts, epoch, groups.take(pa.array(missing, pa.int64()))))
        return out

    def keep(self, runs: dict[bytes, Run], epoch: int) -> None:
        """Offer a task's runs, with its writes of `epoch` applied, to the cache (each replaces the
        held one; one too big for the budget is not kept)."""
        with self.manager.lock:
            for p, run in runs.items():
                self.manager._put(self.name, p, run, run.size + len(p))
            self._wrote(epoch, self.task_partition)

    def held(self, prefixes: Sequence[bytes]) -> dict[bytes, Run]:
        """The runs held of these groups (encoded ``_vnode`` + group key)."""
        with self.manager.lock:
            return {p: run for p in prefixes if (run := self.manager._get(self.name, p)) is not _ABSENT}

    def load(self, reader: StateTableReader, ssts: Sequence[SstableInfo], epoch: int,
             groups: pa.Table, *, whole: bool = False) -> dict[bytes, Run]:
        """Read the runs of `groups` from storage (see the module doc); `whole`: every key of each
        group (a run without a bound)."""
        assert self.prefix is not None
        keys = LookupKeys.of(self.desc, groups, self.prefix)
        prefixes = [bytes(p) for p in keys.encoded.to_pylist()]
        out: dict[bytes, Run] = {}
        pending = list(range(len(keys)))
        blocks = 1 << 30 if whole else LOAD_BLOCKS
        while pending:
            sub = LookupKeys(keys.rows.take(pa.array(pending, pa.int64())), keys.encoded.take(pa.array(pending)),
                             keys.lo[pending], keys.hi[pending], keys.columns)
            edge = edge_rows(reader.blocks, self.desc, ssts, epoch, sub, blocks if blocks <= 64 else 1 << 30,
                             self.descending)
            live = merge_versions([edge.rows.drop_columns([KEY])], self.desc, epoch)
            row_keys = encode_keys(live.column(VNODE), [live.column(n) for n in self.desc.pk_names])
            owners = np.searchsorted(sub.lo, key_matrix(row_keys, sub.lo.itemsize), side="right") - 1
            by_prefix: dict[int, list[tuple[bytes, Any]]] = {}
            values = live.column(self.desc.names[self.value_index - 1]).to_pylist()
            for o, k, v in zip(owners.tolist(), row_keys.to_pylist(), values, strict=True):
                by_prefix.setdefault(o, []).append((k, v))
            retry = []
            for j, i in enumerate(pending):
                bound = edge.bounds[j]
                found = by_prefix.get(j, [])
                if not found and bound is not None:
                    retry.append(i)
                    continue
                run = Run(bound)
                for k, v in found:
                    run.put(k, v)
                if not whole:  # a whole group is trimmed once the epoch's rows apply (`apply_to`)
                    run.trim(self.descending)
                out[prefixes[i]] = run
            pending = retry
            blocks *= 4
        return out
