"""The pickers of L0: L0 -> base level, and intra-L0 (no I/O).

**L0 -> base.** The oldest sub-levels (all but the newest `l0_keep_sub_levels`, and no more than
`max_compaction_bytes` of them, at least one) with every SST of the base level that overlaps their
key range. When the oldest sub-level alone is bigger than `max_compaction_bytes` (one checkpoint
wrote a backfill's or a bulk load's rows: each task's rows cut into SSTs of 256K rows by
`write_ssts`, the tasks' SSTs side by side in key order), its SSTs in order of their first key go
down while they stay within the limit, and the rest stays in L0: the sub-level never holds a key
twice, so a key left behind has no version in what moves (its older versions the task reads from the
base are kept, under it), and every newer version of a key that moves is in a newer sub-level. (A state cache that missed the moved writes sees the oldest
sub-level left at or after them and starts over: `compute.cache.state_cache`.) Writes of random keys touch the whole key space, so the overlap is usually the whole base
level — which the level selector keeps near `max_bytes_for_level_base` whatever the table's size.
To bound the rewriting, the task goes ahead only when the picked L0 bytes are at least
`l0_to_base_size_ratio` of the base bytes it rewrites, or L0 has reached `l0_max_sub_levels` or the
write-stall threshold (`meta.compaction.write_stall`: writers wait on it).

**Intra-L0** (RisingWave's intra-L0 picker), when L0 -> base cannot go ahead (the ratio, or its
base files are busy with a compaction down) and L0 has `l0_intra_sub_levels` sub-levels: the newest
candidates, and older ones while each is at most twice the bytes gathered so far, merge into one
sub-level in their place (its id the newest merged one's, so L0 stays ordered by age). The merges
form tiers of doubling sizes: each write is merged again about log2(L0 / one epoch's bytes) times.
Tombstones stay (older versions live below).

The newest sub-levels stay in L0 (as RisingWave's L0 keeps recent sub-levels while older ones
compact): they are the writes of the last few epochs, which a worker's executor cache that missed
them reads to catch up (`compute.cache.state_cache`); once a write leaves L0, a lagging cache can no
longer find it and must start over. One L0 -> base task runs at a time per table; an intra-L0 merge
of newer sub-levels may run beside it (its output is newer than anything the other moves down).
"""

from __future__ import annotations

import logging

from meta.compaction.task import (
    CompactionConfig,
    CompactionTask,
    hull,
    overlapping,
    tombstones_droppable,
    total_bytes,
)
from risingspark.storage.desc import SstableInfo, SubLevel, TableLevels

logger = logging.getLogger(__name__)


def pick_l0(levels: TableLevels, config: CompactionConfig, base_level: int, *,
            busy: frozenset[str] = frozenset(), safe_epoch: int | None = None) -> CompactionTask | None:
    """The L0 -> base task, else the intra-L0 task, else None (see the module doc)."""
    if not levels.l0:
        return None
    depth = len(levels.l0)
    picked: list[SubLevel] = []
    gathered = 0
    for sub in levels.l0[:max(1, depth - config.l0_keep_sub_levels)]:  # oldest first
        size = total_bytes(sub.ssts)
        if picked and gathered + size > config.max_compaction_bytes:
            break
        picked.append(sub)
        gathered += size
    if any(s.path in busy for sub in picked for s in sub.ssts):
        # an L0 task is moving the oldest sub-levels down: newer ones may still merge among themselves
        return pick_intra_l0(levels, config, busy=busy, safe_epoch=safe_epoch) \
            if depth >= config.l0_intra_sub_levels else None
    l0_ssts = [s for sub in picked for s in sub.ssts]
    oldest = picked[0]
    if gathered > config.max_compaction_bytes and len(oldest.ssts) > 1:
        # one big sub-level (a backfill epoch, a bulk load): a run of its SSTs in key order
        l0_ssts = _key_run(oldest.ssts, config.max_compaction_bytes)
        gathered = total_bytes(l0_ssts)
        if len(l0_ssts) < len(oldest.ssts):
            picked = []  # the sub-level stays in L0 with the rest of its SSTs
    lo, hi = hull(l0_ssts)
    base_ssts = overlapping(levels.level(base_level), lo, hi)
    base_bytes = total_bytes(base_ssts)
    base_busy = any(s.path in busy for s in base_ssts)
    stalling = bool(config.l0_stop_write_sub_levels) and depth >= config.l0_stop_write_sub_levels
    worth_it = (gathered >= config.l0_to_base_size_ratio * base_bytes or depth >= config.l0_max_sub_levels
                or stalling)
    if base_busy or not worth_it:
        if depth >= config.l0_intra_sub_levels:
            return pick_intra_l0(levels, config, busy=busy, safe_epoch=safe_epoch)
        logger.debug("table %d: %d L0 sub-levels (%d bytes picked) vs %d bytes in L%d%s: not compacting yet",
                     levels.table_id, depth, gathered, base_bytes, base_level, " (busy)" if base_busy else "")
        return None
    inputs = l0_ssts + base_ssts
    task = CompactionTask(table_id=levels.table_id, input_ssts=tuple(inputs), target_level=base_level,
                          drop_tombstones=tombstones_droppable(levels, base_level, *hull(inputs)),
                          l0_sub_levels=tuple(sub.sub_level_id for sub in picked), safe_epoch=safe_epoch,
                          kind="l0")
    logger.info("table %d: picked compaction of %d of %d L0 sub-levels (%d SSTs, %d bytes) into L%d with %d of "
                "its %d SSTs (%d bytes)", levels.table_id, len(picked), depth, len(l0_ssts), gathered, base_level,
                len(base_ssts), len(levels.level(base_level)), base_bytes)
    return task


def _key_run(ssts: tuple[SstableInfo, ...], max_bytes: int) -> list[SstableInfo]:
    """The first SSTs in key order while they stay within `max_bytes` (at least one)."""
    run: list[SstableInfo] = []
    gathered = 0
    for sst in sorted(ssts, key=lambda s: s.key_range):
        if run and gathered + sst.size_bytes > max_bytes:
            break
        run.append(sst)
        gathered += sst.size_bytes
    return run


def pick_intra_l0(levels: TableLevels, config: CompactionConfig, *, busy: frozenset[str] = frozenset(),
                  safe_epoch: int | None = None) -> CompactionTask | None:
    """The intra-L0 task (see the module doc), or None when fewer than two sub-levels qualify."""
    candidates = levels.l0[:max(0, len(levels.l0) - config.l0_keep_sub_levels)]
    picked: list[SubLevel] = []
    gathered = 0
    for sub in reversed(candidates):  # newest first
        size = total_bytes(sub.ssts)
        if any(s.path in busy for s in sub.ssts):
            break  # a task in flight holds it (and the older ones an L0 task takes)
        if picked and (size > 2 * gathered or gathered + size > config.max_compaction_bytes):
            break
        picked.append(sub)
        gathered += size
    if len(picked) < 2:
        return None
    picked.reverse()  # oldest first, as the task lists its inputs
    task = CompactionTask(table_id=levels.table_id, input_ssts=tuple(s for sub in picked for s in sub.ssts),
                          target_level=0, drop_tombstones=False,
                          l0_sub_levels=tuple(sub.sub_level_id for sub in picked), safe_epoch=safe_epoch,
                          output_sub_level=picked[-1].sub_level_id, kind="intra_l0")
    logger.info("table %d: picked intra-L0 compaction of %d of %d L0 sub-levels (%d bytes)", levels.table_id,
                len(picked), len(levels.l0), gathered)
    return task
