"""The per-partition functions of an epoch round, run by Spark's ``mapInArrow`` in Python workers.

They hold no Spark code: each receives a partition's rows as Arrow record batches, runs an executor
kernel, writes its files to the object store with pyarrow, and yields small metadata rows
(`META_SCHEMA`) that the driver collects and reports to meta. Readers and the block cache are
per worker process (workers are reused between tasks), so SSTs read in one epoch stay cached.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from compute.cache.extreme_cache import ExtremeCache
from compute.cache.state_cache import DEFAULT_STATE_CACHE_BYTES, TableCache, cache_manager
from compute.executor.agg_extreme import fold_extreme
from compute.executor.agg_input_state import InputFold, fold_input, split_tagged
from compute.executor.backfill.arrangement_backfill import snapshot_positions, step
from compute.executor.dynamic_filter import SIDE as DYNAMIC_SIDE
from compute.executor.dynamic_filter import DynamicFilterSpec, dynamic_filter_epoch, new_bound
from compute.executor.dynamic_filter import last_bound as last_dynamic_bound
from compute.executor.dynamic_filter import range_to_read as dynamic_range
from compute.executor.hash_agg import HashAggSpec, fold
from compute.executor.hash_join import JoinSpec, join_epoch, keys_to_read
from compute.executor.keyed import distinct_keys
from compute.executor.materialize import changes_of, emit, pairs_from_changes
from compute.executor.over_window import OverWindowSpec, over_window_epoch
from compute.executor.pk_conflict import resolve_dml
from compute.executor.temporal_filter import (
    TemporalFilterSpec,
    bound_at,
    last_bound,
    range_to_read,
    temporal_filter_epoch,
)
from compute.executor.top_n import TopNSpec, top_n_epoch
from risingspark.aggregate import keyed_by_row
from risingspark.barrier import VnodeProgress
from risingspark.chunk import VNODE
from risingspark.keys import encode_key
from risingspark.storage.cache import block_cache, meta_cache
from risingspark.storage.changelog import read_changelog, write_changelog
from risingspark.storage.desc import SstableInfo, StateTableDesc
from risingspark.storage.object_store import get_object_store
from risingspark.storage.reader import ScanResult, StateTableReader, read_schema
from risingspark.storage.sst import write_ssts
from risingspark.table_kind import ConflictBehavior

logger = logging.getLogger(__name__)

META_SCHEMA = "kind STRING, payload STRING"
_META_ARROW = pa.schema([("kind", pa.string()), ("payload", pa.string())])

Task = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


@dataclass(frozen=True)
class TaskEnv:
    """What every task of an epoch round knows: the store, the epoch pair, and this worker's cache
    budgets and the compute node's generation (`compute.cache.state_cache`)."""

    store_url: str
    epoch: int
    prev_epoch: int
    generation: str = ""
    state_cache_bytes: int = DEFAULT_STATE_CACHE_BYTES
    block_cache_bytes: int | None = None
    # (state table, the newest epoch whose writes a compaction moved out of L0) (`TableLevels`)
    l0_compacted: tuple[tuple[int, int], ...] = ()

    def compacted_epoch(self, table_id: int) -> int:
        return next((e for t, e in self.l0_compacted if t == table_id), 0)

    def reader(self) -> StateTableReader:
        return StateTableReader(get_object_store(self.store_url), block_cache(self.block_cache_bytes),
                                metas=meta_cache())

    def cache(self, reader: StateTableReader, desc: StateTableDesc, ssts: tuple[SstableInfo, ...],
              prefix: int | None = None) -> TableCache:
        """The executor cache of a state table in this worker, exact as of the previous epoch."""
        cache = cache_manager(self.state_cache_bytes).table(f"{self.store_url}#{desc.table_id}", desc, prefix)
        cache.sync(reader, ssts, self.prev_epoch, self.epoch, self.generation, *_task_attempt(),
                   l0_compacted_epoch=self.compacted_epoch(desc.table_id))
        return cache

    def extreme_cache(self, reader: StateTableReader, desc: StateTableDesc, ssts: tuple[SstableInfo, ...],
                      prefix: int, *, descending: bool) -> ExtremeCache:
        """The cache of min's or max's input state (its groups' extreme keys), exact as of the
        previous epoch."""
        cache = cache_manager(self.state_cache_bytes).table(f"{self.store_url}#{desc.table_id}", desc, prefix,
                                                            kind=ExtremeCache, descending=descending)
        assert isinstance(cache, ExtremeCache)
        cache.sync(reader, ssts, self.prev_epoch, self.epoch, self.generation, *_task_attempt(),
                   l0_compacted_epoch=self.compacted_epoch(desc.table_id))
        return cache


def _task_attempt() -> tuple[int | None, bool]:
    """The running Spark task's partition, and whether it is a retry: a failed attempt may have
    written its epoch's rows to this worker's caches. (A resubmitted stage starts its attempts at 0
    again; its task is caught as a partition that already ran here this epoch.)"""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return None, False
    return ctx.partitionId(), ctx.attemptNumber() > 0


def _cache_report(executor: str, *caches: TableCache) -> tuple[str, dict]:
    hits = misses = 0
    for c in caches:
        h, m = c.counters.take()
        hits, misses = hits + h, misses + m
    return "cache", {"executor": executor, "hits": hits, "misses": misses}


def _collect(batches: Iterator[pa.RecordBatch]) -> pa.Table | None:
    parts = [b for b in batches if b.num_rows]
    if not parts:
        return None
    return pa.Table.from_batches(parts)


def _meta(items: list[tuple[str, dict]]) -> Iterator[pa.RecordBatch]:
    if items:
        yield pa.RecordBatch.from_pydict({"kind": [k for k, _ in items],
                                          "payload": [json.dumps(p) for _, p in items]}, schema=_META_ARROW)


def _write_outputs(env: TaskEnv, desc: StateTableDesc, sst_rows: pa.Table, changes: pa.Table | None,
                   items: list[tuple[str, dict]]) -> None:
    store = get_object_store(env.store_url)
    name = f"{env.epoch}-{uuid.uuid4().hex[:12]}.parquet"
    for info in write_ssts(store, desc, sst_rows, f"hummock/{desc.table_id}/{name}", level=0, sub_level=env.epoch):
        items.append(("sst", info.to_json()))
    if changes is not None and changes.num_rows:
        path = f"changelog/{desc.table_id}/{name}"
        rows = write_changelog(store, desc, changes, path)
        items.append(("changelog", {"table_id": desc.table_id, "path": path, "row_count": rows}))


def materialize_task(env: TaskEnv, desc: StateTableDesc, ssts: tuple[SstableInfo, ...],
                     conflict: ConflictBehavior) -> Task:
    """StreamMaterialize over a partition of the job's change stream (or of a table's DML, whose
    primary-key conflicts `conflict` resolves against the rows stored for the keys)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rows = _collect(batches)
        if rows is None:
            return
        cache = None
        if conflict.checks:
            keys = rows.select([VNODE, *desc.pk_names])
            reader = env.reader()
            cache = env.cache(reader, desc, ssts)
            old = cache.lookup(reader, ssts, env.prev_epoch, keys)
            pairs = resolve_dml(desc, rows, old, conflict)
        else:
            pairs = pairs_from_changes(desc, rows)
        out = emit(desc, pairs, env.epoch)
        items: list[tuple[str, dict]] = [("rows", {"table_id": desc.table_id, "delta": out.row_delta,
                                                   "input": rows.num_rows})]
        _write_outputs(env, desc, out.sst_rows, out.changes, items)
        if cache is not None:
            cache.write(out.sst_rows, env.epoch)
            items.append(_cache_report("materialize", cache))
        yield from _meta(items)

    return run


def manifest_dir(epoch: int, job_id: int) -> str:
    return f"manifests/{epoch}/{job_id}"


def _write_manifest(env: TaskEnv, job_id: int, op_id: int, items: list[tuple[str, dict]]) -> None:
    """What a task in the middle of a job's graph wrote, for the driver to report after the job.
    One file per operator and partition, so a retried task replaces its attempt's manifest."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    partition = ctx.partitionId() if ctx is not None else 0
    path = f"{manifest_dir(env.epoch, job_id)}/{op_id}-{partition}.json"
    get_object_store(env.store_url).write_bytes(path, json.dumps(items).encode())


def hash_agg_changes_task(env: TaskEnv, spec: HashAggSpec, ssts: dict[int, tuple[SstableInfo, ...]], job_id: int,
                          op_id: int) -> Task:
    """StreamHashAgg over pre-aggregated partials (one row per group, `hash_agg.spark_partials`;
    with materialized input states, also the calls' value counts, tagged: `agg_input_state`):
    folds them into the state, writes the state's SSTs (reported by manifest) and yields the
    aggregate's change stream (``_op``, ``_vnode``, group key, one column per call). `ssts`: per
    state table id, its SSTs."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rows = _collect(batches)
        if rows is None:
            return
        calls = spec.input_calls
        inputs: dict[int, pa.Table] = {}
        if calls:
            rows, inputs = split_tagged(spec, rows)
        keys = rows.select([VNODE, *spec.group_key])
        reader = env.reader()
        state_ssts = ssts[spec.state.table_id]
        cache = env.cache(reader, spec.state, state_ssts)
        old = cache.lookup(reader, state_ssts, env.prev_epoch, keys)
        old_inputs = {}
        extremes: dict[int, ExtremeCache] = {}
        for i in calls:
            call = spec.calls[i]
            desc = call.input_state
            assert desc is not None
            if call.row_key or keyed_by_row(desc):  # min / max: a cache of each group's extreme keys
                extremes[i] = env.extreme_cache(reader, desc, ssts[desc.table_id], len(spec.group_key),
                                                descending=call.kind == "max")
                continue
            old_inputs[i] = reader.lookup(desc, ssts[desc.table_id], env.prev_epoch, keys,
                                          columns=list(spec.group_key))

        def input_fold(i: int, groups: pa.Table) -> InputFold:
            call = spec.calls[i]
            if i in extremes:
                assert call.input_state is not None
                return fold_extreme(spec.group_key, call, groups, inputs[i], extremes[i], reader,
                                    ssts[call.input_state.table_id], env.prev_epoch, env.epoch)
            return fold_input(spec.group_key, call, groups, inputs[i], old_inputs[i], env.epoch)

        agg = fold(spec, rows, old, env.epoch, inputs, old_inputs, input_fold)
        items: list[tuple[str, dict]] = []
        _write_outputs(env, spec.state, agg.state_rows, None, items)
        cache.write(agg.state_rows, env.epoch)
        items.append(_cache_report("hash_agg", cache))
        if extremes:
            items.append(_cache_report("agg_min_max", *extremes.values()))
        for i, state_rows in agg.input_state_rows.items():
            desc = spec.calls[i].input_state
            assert desc is not None
            _write_outputs(env, desc, state_rows, None, items)
        if items:
            _write_manifest(env, job_id, op_id, items)
        yield from changes_of(spec.output_names, agg.pairs).to_batches(max_chunksize=65536)

    return run


def backfill_task(env: TaskEnv, job_id: int, scan_id: int, upstream: StateTableDesc, ssts: tuple[SstableInfo, ...],
                  changelog_paths: tuple[str, ...], actors: tuple[tuple[VnodeProgress, ...], ...],
                  limit_per_vnode: int) -> Task:
    """The arrangement backfill of one actor per input row (column ``id`` = actor index). Yields the
    rows for the downstream operators; the new per-vnode state goes to a progress file that the
    driver reads after the job (`progress_path`)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        store = get_object_store(env.store_url)
        reader = env.reader()
        for batch in batches:
            for actor in batch.column("id").to_pylist():
                progress = list(actors[actor])
                changes = read_changelog(store, upstream, changelog_paths)
                positions = snapshot_positions(progress)
                if limit_per_vnode > 0:
                    scan = reader.scan_after(upstream, ssts, env.prev_epoch, positions, limit_per_vnode)
                else:  # paused (backfill_rate_limit = 0): no snapshot read, changes still merge
                    scan = ScanResult(read_schema(upstream).empty_table())
                result = step(upstream, progress, scan, changes)
                report = {"vnodes": [[p.vnode, encode_key(p.position), p.finished, p.row_count]
                                     for p in result.progress],
                          "snapshot_rows": result.snapshot_rows, "forwarded_rows": result.forwarded_rows}
                store.write_bytes(progress_path(job_id, scan_id, env.epoch, actor), json.dumps(report).encode())
                yield from result.rows.to_batches(max_chunksize=65536)

    return run


def progress_path(job_id: int, scan_id: int, epoch: int, actor: int) -> str:
    return f"backfill/{job_id}/{epoch}/scan-{scan_id}-actor-{actor}.json"


def read_files_task(store_url: str, paths: tuple[str, ...], schema: pa.Schema, slices: int) -> Task:
    """A source: input row ``id`` = the number of one of `slices` consecutive slices of `paths`
    (as a range of the files' indices splits them); yields its files' rows in `schema`. Files are
    read with pyarrow's file systems, so any object store works without Hadoop."""
    n = len(paths)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        store = get_object_store(store_url)
        for batch in batches:
            for j in batch.column("id").to_pylist():
                for path in paths[j * n // slices:(j + 1) * n // slices]:
                    table = store.read_parquet(path).select(schema.names).cast(schema)
                    yield from table.to_batches(max_chunksize=65536)

    return run


def hash_join_task(env: TaskEnv, spec: JoinSpec, left_ssts: tuple[SstableInfo, ...],
                   right_ssts: tuple[SstableInfo, ...], job_id: int, op_id: int) -> Task:
    """StreamHashJoin over a partition holding both sides' changes of its join keys (``_side``):
    looks up the touched keys' rows of each side, writes both sides' state (reported by manifest),
    and yields the join's change stream."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rows = _collect(batches)
        if rows is None:
            return
        read_left, read_right = keys_to_read(spec, rows)
        reader = env.reader()
        n = len(spec.left_key)
        left_cache = env.cache(reader, spec.left, left_ssts, prefix=n)
        right_cache = env.cache(reader, spec.right, right_ssts, prefix=n)
        left = left_cache.lookup(reader, left_ssts, env.prev_epoch, read_left)
        right = right_cache.lookup(reader, right_ssts, env.prev_epoch,
                                   read_right.rename_columns([VNODE, *spec.right_key]))
        out = join_epoch(spec, rows, left, right, env.epoch, (read_left, read_right))
        items: list[tuple[str, dict]] = []
        _write_outputs(env, spec.left, out.left_state_rows, None, items)
        _write_outputs(env, spec.right, out.right_state_rows, None, items)
        left_cache.write(out.left_state_rows, env.epoch)
        right_cache.write(out.right_state_rows, env.epoch)
        items.append(_cache_report("hash_join", left_cache, right_cache))
        if items:
            _write_manifest(env, job_id, op_id, items)
        yield from out.changes.to_batches(max_chunksize=65536)

    return run


def over_window_task(env: TaskEnv, spec: OverWindowSpec, ssts: tuple[SstableInfo, ...], job_id: int,
                     op_id: int) -> Task:
    """StreamOverWindow over a partition holding every change of its window partitions (see
    `_grouped_task`)."""
    return _grouped_task(env, spec.state, spec.partition, ssts, job_id, op_id, "over_window",
                         lambda rows, state: over_window_epoch(spec, rows, state, env.epoch))


def top_n_task(env: TaskEnv, spec: TopNSpec, ssts: tuple[SstableInfo, ...], job_id: int, op_id: int) -> Task:
    """StreamTopN over a partition holding every change of its groups (see `_grouped_task`)."""
    return _grouped_task(env, spec.state, spec.group_key, ssts, job_id, op_id, "top_n",
                         lambda rows, state: top_n_epoch(spec, rows, state, env.epoch))


def _grouped_task(env: TaskEnv, desc: StateTableDesc, group_key: tuple[str, ...], ssts: tuple[SstableInfo, ...],
                  job_id: int, op_id: int, name: str, epoch_fn: Callable[[pa.Table, pa.Table], Any]) -> Task:
    """An operator whose state holds every input row keyed by a group prefix (TopN, over window):
    reads the touched groups' rows (the state cache holds groups whole), runs the epoch, writes the
    state (reported by manifest) and yields the operator's changes."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rows = _collect(batches)
        if rows is None:
            return
        groups = distinct_keys([rows.select([VNODE, *group_key])], [VNODE, *group_key])
        reader = env.reader()
        cache = env.cache(reader, desc, ssts, prefix=len(group_key))
        state = cache.lookup(reader, ssts, env.prev_epoch, groups)
        out = epoch_fn(rows, state)
        items: list[tuple[str, dict]] = []
        _write_outputs(env, desc, out.state_rows, None, items)
        cache.write(out.state_rows, env.epoch)
        items.append(_cache_report(name, cache))
        if items:
            _write_manifest(env, job_id, op_id, items)
        yield from out.changes.to_batches(max_chunksize=65536)

    return run


def temporal_filter_task(env: TaskEnv, spec: TemporalFilterSpec, ssts: tuple[SstableInfo, ...],
                         bound_ssts: tuple[SstableInfo, ...], job_id: int, op_id: int) -> Task:
    """StreamTemporalFilter over its single partition (the epoch's changes and a weightless seed
    row, so it runs every epoch): reads the last bound and the state rows between it and this
    epoch's bound, writes both tables (reported by manifest) and yields the filter's changes."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rows = _collect(batches)
        if rows is None:
            return
        reader = env.reader()
        old_bound = last_bound(reader.read(spec.bound_table, bound_ssts, env.prev_epoch))
        new_bound = bound_at(spec, env.epoch)
        span = range_to_read(old_bound, new_bound)
        if span is None:
            in_range = read_schema(spec.state).empty_table()
        else:
            in_range = reader.read_range(spec.state, ssts, env.prev_epoch, 0, *span)
        out = temporal_filter_epoch(spec, rows, in_range, old_bound, new_bound, env.epoch)
        items: list[tuple[str, dict]] = []
        _write_outputs(env, spec.state, out.state_rows, None, items)
        _write_outputs(env, spec.bound_table, out.bound_rows, None, items)
        _write_manifest(env, job_id, op_id, items)
        logger.debug("job %d: temporal filter %s %d at epoch %d: %d rows in, %d in range, %d changes out", job_id,
                     spec.op, new_bound, env.epoch, rows.num_rows, in_range.num_rows, out.changes.num_rows)
        yield from out.changes.to_batches(max_chunksize=65536)

    return run


def dynamic_filter_task(env: TaskEnv, spec: DynamicFilterSpec, ssts: tuple[SstableInfo, ...],
                        bound_ssts: tuple[SstableInfo, ...], job_id: int, op_id: int) -> Task:
    """StreamDynamicFilter over its single partition (both inputs' changes, tagged ``_side``): reads
    the last bound and the state rows whose status may change, writes both tables (reported by
    manifest) and yields the filter's changes."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rows = _collect(batches)
        if rows is None:
            return
        side = rows.column(DYNAMIC_SIDE)
        left = rows.filter(pc.equal(side, 0))
        right = rows.filter(pc.equal(side, 1))
        reader = env.reader()
        old = last_dynamic_bound(reader.read(spec.bound_table, bound_ssts, env.prev_epoch))
        bound, changed = new_bound(spec, right, old)
        read, lo, hi = dynamic_range(spec, old, bound)
        in_range = reader.read_key_range(spec.state, ssts, env.prev_epoch, 0, lo, hi) if read \
            else read_schema(spec.state).empty_table()
        out = dynamic_filter_epoch(spec, left, in_range, old, bound, changed, env.epoch)
        items: list[tuple[str, dict]] = []
        _write_outputs(env, spec.state, out.state_rows, None, items)
        if out.bound_rows.num_rows:
            _write_outputs(env, spec.bound_table, out.bound_rows, None, items)
        _write_manifest(env, job_id, op_id, items)
        logger.debug("job %d: dynamic filter %s %r at epoch %d: %d rows in, %d in range, %d changes out", job_id,
                     spec.op, bound, env.epoch, left.num_rows, in_range.num_rows, out.changes.num_rows)
        yield from out.changes.to_batches(max_chunksize=65536)

    return run
