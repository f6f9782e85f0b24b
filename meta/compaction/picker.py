"""The compaction picker: decides which SSTs of a table to compact next (it does no I/O).

Leveled compaction, as RisingWave's Hummock (and RocksDB with dynamic level bytes):

1. `level_selector` computes the base level and every level's target size, and scores L0 and each
   level above the bottom (due at 1.0).
2. The highest-scoring level that can compact gets a task from its picker: L0 -> base or intra-L0
   (`l0_picker`), or one SST of level n with its overlap in level n+1 (`level_picker`). SSTs that
   are inputs of a task in flight (`busy`) are never picked again, so tasks of one table run at once
   on disjoint key ranges.

Every task's output replaces its inputs in one version delta (`meta.hummock`); outputs of a level
task are cut between keys into SSTs of about `target_file_bytes`, so a level stays a sorted run of
disjoint key ranges.

Why no version is lost: a compaction keeps the newest version of every key it reads (or every
version newer than the safe epoch) with its original epoch, and readers merge versions by epoch. A
tombstone is dropped only when no SST below the task's target level overlaps the task's key range:
older versions of a key can only live there (`task.tombstones_droppable`). Readers that pinned an
older version keep reading the files of that version, which are deleted only once no reader pins
them.
"""

from __future__ import annotations

from meta.compaction.l0_picker import pick_l0
from meta.compaction.level_picker import pick_level
from meta.compaction.level_selector import level_scores, level_targets
from meta.compaction.task import CompactionConfig, CompactionTask
from risingspark.storage.desc import HummockVersion, TableLevels

__all__ = ["CompactionConfig", "CompactionTask", "pick_compaction", "pick_compactions"]


def pick_compaction(levels: TableLevels, config: CompactionConfig, *, busy: frozenset[str] = frozenset(),
                    safe_epoch: int | None = None) -> CompactionTask | None:
    """The next compaction task of one table, or None when none is due (see the module doc)."""
    targets = level_targets(levels, config)
    for score, level in level_scores(levels, config, targets, busy):
        if score < 1.0:
            break
        if level == 0:
            task = pick_l0(levels, config, targets.base_level, busy=busy, safe_epoch=safe_epoch)
        else:
            task = pick_level(levels, config, level, busy=busy, safe_epoch=safe_epoch)
        if task is not None:
            return task
    return None


def pick_compactions(version: HummockVersion, config: CompactionConfig, *, busy: frozenset[str] = frozenset(),
                     safe_epoch: int | None = None) -> list[CompactionTask]:
    """Tasks that can run at once: per table, tasks until none is due or every candidate is busy."""
    tasks = []
    taken = set(busy)
    for table_id in sorted(version.tables):
        while (task := pick_compaction(version.tables[table_id], config, busy=frozenset(taken),
                                       safe_epoch=safe_epoch)) is not None:
            tasks.append(task)
            taken.update(s.path for s in task.input_ssts)
    return tasks
