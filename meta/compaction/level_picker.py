"""The picker of level n -> level n+1 (n >= 1): a partial compaction by key range (no I/O).

As RocksDB's and RisingWave's leveled compaction: one SST of level n and the SSTs of level n+1 that
overlap its key range; among the SSTs of level n that are not being compacted, the one whose overlap
in level n+1 is smallest for its size (RocksDB's ``kMinOverlappingRatio``: the least rewriting per
byte moved down). A task's size is one file plus about `level_size_ratio` files of the level below,
whatever the table's size, and tasks of disjoint ranges run at once: a candidate whose overlap holds
a busy SST is skipped. (Its output lands in ``[lo, hi]`` of its inputs; an SST of level n+1 not in
the task lies outside that range, and another task's output range cannot meet it: any SST it would
need is busy.)
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
from risingspark.storage.desc import TableLevels

logger = logging.getLogger(__name__)


def pick_level(levels: TableLevels, config: CompactionConfig, level: int, *,
               busy: frozenset[str] = frozenset(), safe_epoch: int | None = None) -> CompactionTask | None:
    """The task moving one SST of `level` into ``level + 1``, or None when every candidate is busy."""
    if not 1 <= level < config.max_level:
        return None
    lower = levels.level(level + 1)
    best = None
    for sst in levels.level(level):
        if sst.path in busy:
            continue
        below = overlapping(lower, *sst.key_range)
        if any(s.path in busy for s in below):
            continue
        ratio = total_bytes(below) / max(1, sst.size_bytes)
        if best is None or ratio < best[0]:
            best = (ratio, sst, below)
    if best is None:
        return None
    _, sst, below = best
    inputs = [sst, *below]
    task = CompactionTask(table_id=levels.table_id, input_ssts=tuple(inputs), target_level=level + 1,
                          drop_tombstones=tombstones_droppable(levels, level + 1, *hull(inputs)),
                          safe_epoch=safe_epoch, kind="level")
    logger.info("table %d: picked compaction of 1 of %d L%d SSTs (%d bytes) into L%d with %d SSTs (%d bytes)",
                levels.table_id, len(levels.level(level)), level, sst.size_bytes, level + 1, len(below),
                total_bytes(below))
    return task
