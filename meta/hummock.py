"""The Hummock manager: the current version (every live SST by table and level), epoch commits,
compaction commits, version pinning and the deletion of replaced files.

A commit and a compaction are both version deltas applied inside one meta-store transaction. Replaced
files are queued in ``objects_to_delete`` with the version that removed them and deleted only once no
reader pins an older version (`vacuum`).
"""

from __future__ import annotations

import logging
import threading
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import replace

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from meta.metrics import METRICS
from meta.store.schema import change_logs, hummock_version, objects_to_delete, sstables
from meta.store.store import MetaStore, Txn, next_ids
from risingspark.barrier import ChangeLogInfo
from risingspark.storage.desc import HummockVersion, SstableInfo, SubLevel, TableLevels
from risingspark.storage.object_store import ObjectStore

logger = logging.getLogger(__name__)


class HummockManager:
    def __init__(self, store: MetaStore, object_store: ObjectStore) -> None:
        self._store = store
        self._objects = object_store
        self._lock = threading.RLock()
        self._pins: Counter[int] = Counter()
        # State tables dropped while this meta runs: a round in flight at the drop (a cancelled
        # backfill's) may still commit files for them, which go to the deletion queue instead of
        # bringing the table back. (Ids are never reused; a restarted meta has no such rounds.)
        self._dropped: set[int] = set()
        self._listeners: list[Callable[[], None]] = []
        self._version = self._load()

    # ---- reading ------------------------------------------------------------------------------
    @property
    def version(self) -> HummockVersion:
        return self._version

    def pin(self) -> HummockVersion:
        """The current version, protected from vacuum until `unpin`."""
        with self._lock:
            v = self._version
            self._pins[v.id] += 1
            return v

    def pin_again(self, version: HummockVersion) -> None:
        """One more pin of a version the caller holds pinned (a round's, for a snapshot read that
        outlives the round): protected until as many `unpin`s."""
        with self._lock:
            assert self._pins[version.id] > 0, "pin_again of a version nobody pins"
            self._pins[version.id] += 1

    def pin_at(self, version_id: int) -> None:
        """Pin by id a version the caller read before (a frontend's oldest version in use, which
        meta pins for it: `meta.rpc.MetaRpc.watch`). Files replaced after `version_id` are kept
        until as many `unpin`s."""
        with self._lock:
            self._pins[version_id] += 1

    def on_change(self, listener: Callable[[], None]) -> None:
        """Call `listener` (without locks held) after each new version is installed."""
        self._listeners.append(listener)

    def unpin(self, version: HummockVersion) -> None:
        with self._lock:
            self._pins[version.id] -= 1
            if self._pins[version.id] <= 0:
                del self._pins[version.id]

    def _load(self) -> HummockVersion:
        with self._store.begin() as conn:
            row = conn.execute(sa.select(hummock_version)).first()
            if row is None:
                conn.execute(hummock_version.insert().values(id=1, version_id=1, committed_epoch=0))
                version_id, committed = 1, 0
            else:
                version_id, committed = int(row.version_id), int(row.committed_epoch)
            by_table: dict[int, list[SstableInfo]] = defaultdict(list)
            for r in conn.execute(sa.select(sstables)):
                by_table[r.table_id].append(_sst_from_row(r))
        tables = {tid: _build_levels(tid, ssts) for tid, ssts in by_table.items()}
        return HummockVersion(version_id, committed, tables)

    # ---- writing (inside a `MetaStore.transaction()`) ------------------------------------------
    def _base(self, tx: Txn) -> HummockVersion:
        return tx.staged.get("hummock", self._version)

    def _stage(self, tx: Txn, version: HummockVersion) -> HummockVersion:
        if "hummock" not in tx.staged:
            tx.on_commit(lambda: self._install(tx.staged["hummock"]))
        tx.staged["hummock"] = version
        return version

    def _install(self, version: HummockVersion) -> None:
        with self._lock:
            self._version = version
        for listener in self._listeners:
            listener()

    def commit_epoch(self, tx: Txn, epoch: int, new_ssts: list[SstableInfo],
                     new_change_logs: list[ChangeLogInfo]) -> HummockVersion:
        """Add one L0 sub-level per table that got SSTs, record change logs and the committed epoch.
        """
        base = self._base(tx)
        conn = tx.conn
        with self._lock:
            dropped = set(self._dropped)
        if dropped:
            late = [s.path for s in new_ssts if s.table_id in dropped]
            late += [c.path for c in new_change_logs if c.table_id in dropped]
            self._queue_deletion(conn, late, base.id + 1)
            new_ssts = [s for s in new_ssts if s.table_id not in dropped]
            new_change_logs = [c for c in new_change_logs if c.table_id not in dropped]
        assigned: list[SstableInfo] = []
        if new_ssts:
            first = next_ids(conn, "sst", len(new_ssts))
            for i, s in enumerate(new_ssts):
                s = replace(s, sst_id=first + i, level=0, sub_level=epoch)
                assigned.append(s)
            conn.execute(sstables.insert(), [_sst_to_row(s) for s in assigned])
            flushed = sum(s.size_bytes for s in assigned)
            tx.on_commit(lambda: METRICS.flush_bytes.inc(flushed))
        if new_change_logs:
            first = next_ids(conn, "change_log", len(new_change_logs))
            conn.execute(change_logs.insert(), [
                {"id": first + i, "table_id": c.table_id, "epoch": c.epoch, "path": c.path,
                 "row_count": c.row_count} for i, c in enumerate(new_change_logs)])
        version_id = base.id + 1
        conn.execute(hummock_version.update().where(hummock_version.c.id == 1)
                     .values(version_id=version_id, committed_epoch=epoch))
        tables = dict(base.tables)
        by_table: dict[int, list[SstableInfo]] = defaultdict(list)
        for s in assigned:
            by_table[s.table_id].append(s)
        for tid, ssts in by_table.items():
            old = tables.get(tid) or TableLevels(tid)
            tables[tid] = TableLevels(tid, old.l0 + (SubLevel(epoch, tuple(ssts)),), old.levels, old.l0_compacted_epoch)
        return self._stage(tx, HummockVersion(version_id, epoch, tables))

    def commit_compaction(self, tx: Txn, table_id: int, inputs: list[SstableInfo], outputs: list[SstableInfo],
                          target_level: int) -> HummockVersion | None:
        """Replace `inputs` by `outputs` (SSTs of the task's `target_level`, or one L0 sub-level of an
        intra-L0 compaction, as the outputs say). Returns None, changing nothing, when an input is no
        longer live (its table was dropped meanwhile). L0 inputs of a task that writes below L0 advance
        the table's `l0_compacted_epoch`, outputs or not."""
        base = self._base(tx)
        conn = tx.conn
        levels = base.tables.get(table_id)
        live = {s.path for s in levels.all_ssts()} if levels else set()
        if not levels or any(s.path not in live for s in inputs):
            return None
        version_id = base.id + 1
        input_paths = [s.path for s in inputs]
        conn.execute(sstables.delete().where(sstables.c.path.in_(input_paths)))
        self._queue_deletion(conn, input_paths, version_id)
        assigned: list[SstableInfo] = []
        if outputs:
            first = next_ids(conn, "sst", len(outputs))
            assigned = [replace(s, sst_id=first + i, sub_level=s.sub_level if s.level == 0 else 0)
                        for i, s in enumerate(outputs)]
            conn.execute(sstables.insert(), [_sst_to_row(s) for s in assigned])
        conn.execute(hummock_version.update().where(hummock_version.c.id == 1).values(version_id=version_id))
        tables = dict(base.tables)
        rebuilt = replace_ssts(levels, input_paths, assigned)
        moved = [s.sub_level for s in inputs if s.level == 0] if target_level != 0 else []
        tables[table_id] = replace(rebuilt, l0_compacted_epoch=max([levels.l0_compacted_epoch, *moved]))
        return self._stage(tx, HummockVersion(version_id, base.committed_epoch, tables))

    def drop_tables(self, tx: Txn, table_ids: list[int]) -> HummockVersion:
        """Remove every SST and change log of the given state tables."""
        base = self._base(tx)
        conn = tx.conn
        version_id = base.id + 1
        paths = [s.path for tid in table_ids for s in base.ssts(tid)]
        paths += [r.path for r in conn.execute(
            sa.select(change_logs.c.path).where(change_logs.c.table_id.in_(table_ids)))]
        conn.execute(sstables.delete().where(sstables.c.table_id.in_(table_ids)))
        conn.execute(change_logs.delete().where(change_logs.c.table_id.in_(table_ids)))
        self._queue_deletion(conn, paths, version_id)
        conn.execute(hummock_version.update().where(hummock_version.c.id == 1).values(version_id=version_id))
        tables = {tid: lv for tid, lv in base.tables.items() if tid not in set(table_ids)}

        def forget() -> None:
            with self._lock:
                self._dropped.update(table_ids)
        tx.on_commit(forget)
        return self._stage(tx, HummockVersion(version_id, base.committed_epoch, tables))

    def truncate_change_logs(self, tx: Txn, before_epoch: int) -> int:
        """Drop change logs of epochs older than `before_epoch` (no consumer needs them)."""
        conn = tx.conn
        rows = conn.execute(sa.select(change_logs.c.path).where(change_logs.c.epoch < before_epoch)).all()
        if not rows:
            return 0
        conn.execute(change_logs.delete().where(change_logs.c.epoch < before_epoch))
        self._queue_deletion(conn, [r.path for r in rows], self._base(tx).id)
        return len(rows)

    def _queue_deletion(self, conn: Connection, paths: list[str], after_version: int) -> None:
        if paths:
            conn.execute(objects_to_delete.insert(), [{"path": p, "after_version": after_version}
                                                      for p in dict.fromkeys(paths)])

    # ---- vacuum -------------------------------------------------------------------------------
    def vacuum(self, protected: set[str] | frozenset[str] = frozenset()) -> int:
        """Delete replaced files that no pinned version can still read, except `protected` ones
        (snapshot reads in progress). Returns how many."""
        with self._lock:
            oldest = min([self._version.id, *self._pins.keys()])
        with self._store.begin() as conn:
            rows = conn.execute(sa.select(objects_to_delete.c.path)
                                .where(objects_to_delete.c.after_version <= oldest)).all()
            paths = [r.path for r in rows if r.path not in protected]
            if not paths:
                return 0
            self._objects.delete(paths)
            conn.execute(objects_to_delete.delete().where(objects_to_delete.c.path.in_(paths)))
        logger.debug("vacuumed %d objects", len(paths))
        return len(paths)

    def referenced_paths(self, conn: Connection) -> set[str]:
        paths = {r.path for r in conn.execute(sa.select(sstables.c.path))}
        paths |= {r.path for r in conn.execute(sa.select(change_logs.c.path))}
        paths |= {r.path for r in conn.execute(sa.select(objects_to_delete.c.path))}
        return paths


def replace_ssts(levels: TableLevels, removed: list[str], added: list[SstableInfo]) -> TableLevels:
    """`levels` with the SSTs at paths `removed` replaced by `added` (each in the level and L0
    sub-level it names)."""
    gone = set(removed)
    rebuilt = _build_levels(levels.table_id, [s for s in levels.all_ssts() if s.path not in gone] + added)
    return replace(rebuilt, l0_compacted_epoch=levels.l0_compacted_epoch)


def _build_levels(table_id: int, ssts: list[SstableInfo]) -> TableLevels:
    l0: dict[int, list[SstableInfo]] = defaultdict(list)
    below: dict[int, list[SstableInfo]] = defaultdict(list)
    for s in ssts:
        if s.level == 0:
            l0[s.sub_level].append(s)
        else:
            below[s.level].append(s)
    sub_levels = tuple(SubLevel(k, tuple(sorted(v, key=lambda s: s.sst_id))) for k, v in sorted(l0.items()))
    depth = max(below, default=0)
    levels = tuple(tuple(sorted(below.get(n, ()), key=lambda s: s.key_range)) for n in range(1, depth + 1))
    return TableLevels(table_id, sub_levels, levels)


def _sst_to_row(s: SstableInfo) -> dict:
    return {"id": s.sst_id, "table_id": s.table_id, "path": s.path, "level": s.level, "sub_level": s.sub_level,
            "min_vnode": s.min_vnode, "max_vnode": s.max_vnode, "min_epoch": s.min_epoch,
            "max_epoch": s.max_epoch, "row_count": s.row_count, "tombstone_count": s.tombstone_count,
            "size_bytes": s.size_bytes, "min_key": s.min_key, "max_key": s.max_key}


def _sst_from_row(r) -> SstableInfo:
    return SstableInfo(path=r.path, table_id=r.table_id, level=r.level, sub_level=r.sub_level,
                       min_vnode=r.min_vnode, max_vnode=r.max_vnode, min_epoch=r.min_epoch,
                       max_epoch=r.max_epoch, row_count=r.row_count, tombstone_count=r.tombstone_count,
                       size_bytes=r.size_bytes, sst_id=r.id, min_key=bytes(r.min_key or b""),
                       max_key=bytes(r.max_key or b""))
