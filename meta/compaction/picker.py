"""The compaction picker: decides which SSTs of a table to compact (it does no I/O).

The rule (L0 -> L1, L1 being the bottom level):

- Trigger when L0 has at least `l0_trigger_sub_levels` sub-levels and either L0 holds at least
  ``l0_to_l1_size_ratio`` times L1's bytes (compacting then costs little rewriting of L1) or L0 has
  reached `l0_max_sub_levels` (reads merge too many files: compact whatever the cost).
- Short of that, once L0 has `l0_intra_sub_levels` sub-levels, merge sub-levels of L0 among
  themselves (**intra-L0**, as RisingWave's intra-L0 picker): the newest candidates, and older ones
  while each is at most twice the bytes gathered so far, into one sub-level in their place (its id
  the newest merged one's, so L0 stays ordered by age). Its cost is the sub-levels it merges, not
  L1: a big table no longer rewrites all of L1 every `l0_max_sub_levels` epochs, only once L0 has
  grown to its share of L1, and the merges form tiers of doubling sizes (each write is merged again
  about log2(L0 / one epoch's bytes) times). Tombstones stay (older versions live below).
- Pick the L0 sub-levels oldest to newest, all but the newest `l0_keep_sub_levels`, and every L1 SST
  whose vnode range overlaps a picked L0 SST. The output replaces them as L1 SSTs that share no vnode.
  The newest sub-levels stay in L0 (as RisingWave's L0 keeps recent sub-levels while older ones
  compact): they are the writes of the last few epochs, which a worker's executor cache that missed
  them reads to catch up (`compute.cache.state_cache`); once a write leaves L0 for a level that holds
  the whole table, a lagging cache can no longer find it and must start over.

Why dropping tombstones is safe: the versions of a key older than a picked one can only live in the
older L0 sub-levels (all picked) or in the one L1 SST covering its vnode (picked when that vnode appears
in a picked L0 SST; L1 SSTs never share a vnode). So the task sees every version of every key it touches
except newer ones in the sub-levels it leaves in L0; a tombstone that is the newest version in the task
hides nothing outside the task and can go (a newer version left in L0 still wins over the output). Readers that pinned an older version keep reading the files of that
version, which are deleted only once no reader pins them; `safe_epoch` (when set) also keeps every
version newer than it for readers at an older epoch of the new version.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from risingspark.storage.desc import HummockVersion, SstableInfo, TableLevels

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CompactionConfig:
    """When to compact and how big output files get.

    Attributes:
        l0_trigger_sub_levels: compact once L0 has this many sub-levels (and the size ratio holds).
        l0_max_sub_levels: compact regardless of the size ratio at this many sub-levels.
        l0_to_l1_size_ratio: compact when L0 bytes >= this ratio times L1 bytes.
        target_file_rows: rows per output SST (an SST holding one huge vnode may exceed it).
        l0_keep_sub_levels: the newest sub-levels a compaction leaves in L0.
        l0_intra_sub_levels: merge L0 sub-levels among themselves from this depth (while L0 is small
            next to L1).
    """

    l0_trigger_sub_levels: int = 8
    l0_max_sub_levels: int = 64
    l0_to_l1_size_ratio: float = 0.1
    target_file_rows: int = 262144
    l0_keep_sub_levels: int = 3
    l0_intra_sub_levels: int = 16


@dataclass(frozen=True)
class CompactionTask:
    """SSTs of one table to merge into `target_level`.

    Attributes:
        input_ssts: the picked L0 SSTs, oldest sub-level first, then the picked L1 SSTs.
        drop_tombstones: the inputs hold every older version of their keys (see the module doc).
        l0_sub_levels: ids of the L0 sub-levels the task consumes entirely.
        safe_epoch: keep every version newer than this epoch (None: keep only the newest version).
        output_sub_level: for an intra-L0 task (`target_level` 0), the id of the sub-level its
            output forms.
    """

    table_id: int
    input_ssts: tuple[SstableInfo, ...]
    target_level: int = 1
    drop_tombstones: bool = True
    l0_sub_levels: tuple[int, ...] = ()
    safe_epoch: int | None = None
    output_sub_level: int = 0

    @property
    def input_bytes(self) -> int:
        return sum(s.size_bytes for s in self.input_ssts)

    @property
    def input_rows(self) -> int:
        return sum(s.row_count for s in self.input_ssts)


def _overlaps_any(sst: SstableInfo, ranges: list[tuple[int, int]]) -> bool:
    return any(lo <= sst.max_vnode and sst.min_vnode <= hi for lo, hi in ranges)


def pick_compaction(levels: TableLevels, config: CompactionConfig, *,
                    safe_epoch: int | None = None) -> CompactionTask | None:
    """The L0 -> L1 compaction task for one table, or None when none is due (see the module doc)."""
    depth = len(levels.l0)
    if depth < config.l0_trigger_sub_levels:
        return None
    l0_bytes = sum(s.size_bytes for sub in levels.l0 for s in sub.ssts)
    l1_bytes = sum(s.size_bytes for s in levels.l1)
    if l0_bytes < config.l0_to_l1_size_ratio * l1_bytes and depth < config.l0_max_sub_levels:
        if depth >= config.l0_intra_sub_levels:
            return _pick_intra_l0(levels, config, safe_epoch)
        logger.debug("table %d: %d L0 sub-levels, %d bytes vs %d in L1: not compacting yet",
                     levels.table_id, depth, l0_bytes, l1_bytes)
        return None
    picked = levels.l0[:max(1, depth - config.l0_keep_sub_levels)]
    l0_ssts = [s for sub in picked for s in sub.ssts]
    ranges = [(s.min_vnode, s.max_vnode) for s in l0_ssts]
    l1_ssts = [s for s in levels.l1 if _overlaps_any(s, ranges)]
    task = CompactionTask(table_id=levels.table_id, input_ssts=tuple(l0_ssts + l1_ssts), target_level=1,
                          drop_tombstones=True, l0_sub_levels=tuple(sub.sub_level_id for sub in picked),
                          safe_epoch=safe_epoch)
    logger.info("table %d: picked compaction of %d of %d L0 sub-levels (%d SSTs, %d bytes) and %d of %d L1 "
                "SSTs (%d bytes)", levels.table_id, len(picked), depth, len(l0_ssts),
                sum(s.size_bytes for s in l0_ssts), len(l1_ssts), len(levels.l1),
                sum(s.size_bytes for s in l1_ssts))
    return task


def _pick_intra_l0(levels: TableLevels, config: CompactionConfig, safe_epoch: int | None) -> CompactionTask | None:
    """The intra-L0 task (see the module doc), or None when fewer than two sub-levels qualify."""
    candidates = levels.l0[:max(0, len(levels.l0) - config.l0_keep_sub_levels)]
    picked: list = []
    gathered = 0
    for sub in reversed(candidates):  # newest first
        size = sum(s.size_bytes for s in sub.ssts)
        if picked and size > 2 * gathered:
            break
        picked.append(sub)
        gathered += size
    if len(picked) < 2:
        return None
    picked.reverse()  # oldest first, as the task lists its inputs
    task = CompactionTask(table_id=levels.table_id, input_ssts=tuple(s for sub in picked for s in sub.ssts),
                          target_level=0, drop_tombstones=False,
                          l0_sub_levels=tuple(sub.sub_level_id for sub in picked), safe_epoch=safe_epoch,
                          output_sub_level=picked[-1].sub_level_id)
    logger.info("table %d: picked intra-L0 compaction of %d of %d L0 sub-levels (%d bytes)", levels.table_id,
                len(picked), len(levels.l0), gathered)
    return task


def pick_compactions(version: HummockVersion, config: CompactionConfig, *,
                     busy_tables: frozenset[int] = frozenset(),
                     safe_epoch: int | None = None) -> list[CompactionTask]:
    """One task for every table of `version` that is due and not already compacting."""
    tasks = []
    for table_id in sorted(version.tables):
        if table_id in busy_tables:
            continue
        task = pick_compaction(version.tables[table_id], config, safe_epoch=safe_epoch)
        if task is not None:
            tasks.append(task)
    return tasks
