"""What a compaction is asked to do (`CompactionTask`) and when and how big (`CompactionConfig`),
shared by meta's pickers and the compactors that run the tasks."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from risingspark.storage.desc import SstableInfo, TableLevels

MiB = 1 << 20


@dataclass(frozen=True)
class CompactionConfig:
    """When to compact and how big levels, files and tasks get (RisingWave's compaction config,
    scaled to Python compactors: a task here rewrites a few hundred MB, not several GB).

    Attributes:
        l0_trigger_sub_levels: L0 is due for compaction at this many sub-levels (also due once its
            bytes pass `max_bytes_for_level_base`).
        l0_to_base_size_ratio: L0 compacts into the base level when the picked sub-levels hold at
            least this ratio of the bytes they would rewrite there (else intra-L0 merges wait) ...
        l0_max_sub_levels: ... or once L0 is this deep, whatever the ratio.
        l0_keep_sub_levels: the newest sub-levels a compaction leaves in L0.
        l0_intra_sub_levels: from this depth, when L0 cannot compact into the base level (its files
            there are busy), sub-levels of L0 merge among themselves.
        max_level: the bottom level; levels are L1..L{max_level}.
        level_size_ratio: each level's target is this fraction of the next one's.
        max_bytes_for_level_base: the target size of the base level (the level L0 compacts into).
        target_file_bytes: output SSTs are cut at about this size (between keys).
        max_compaction_bytes: a task's input stays under this, except for one L0 sub-level or one
            file with its overlap, which is taken whole.
        target_file_rows: an upper bound on rows per output SST, whatever their size.
        l0_stop_write_sub_levels: the write-stall threshold (`meta.compaction.write_stall`; 0: none):
            an L0 this deep is due, and compacts into the base level whatever the size ratio.
    """

    l0_trigger_sub_levels: int = 8
    l0_to_base_size_ratio: float = 0.1
    l0_max_sub_levels: int = 64
    l0_keep_sub_levels: int = 3
    l0_intra_sub_levels: int = 16
    max_level: int = 6
    level_size_ratio: int = 10
    max_bytes_for_level_base: int = 64 * MiB
    target_file_bytes: int = 16 * MiB
    max_compaction_bytes: int = 256 * MiB
    target_file_rows: int = 1 << 20
    l0_stop_write_sub_levels: int = 0


@dataclass(frozen=True)
class CompactionTask:
    """SSTs of one table to merge into `target_level`.

    Attributes:
        input_ssts: the picked L0 SSTs oldest sub-level first (or the picked SSTs of the upper
            level), then the picked SSTs of the target level.
        target_level: the level the outputs go to (0: an intra-L0 merge).
        drop_tombstones: no SST outside the task can hold an older version of its keys
            (`meta.compaction.picker`).
        l0_sub_levels: ids of the L0 sub-levels the task consumes entirely.
        safe_epoch: keep every version newer than this epoch (None: keep only the newest version).
        output_sub_level: for an intra-L0 task, the id of the sub-level its output forms.
        task_id: assigned by the scheduler when it hands the task out.
        output_prefix: the path every output SST of the task starts with, given by the scheduler
            with the task id (the full GC keeps the files of tasks in flight: `meta.garbage`).
        kind: what picked it (``l0``, ``intra_l0``, ``level``), for logs and metrics.
    """

    table_id: int
    input_ssts: tuple[SstableInfo, ...]
    target_level: int = 1
    drop_tombstones: bool = True
    l0_sub_levels: tuple[int, ...] = ()
    safe_epoch: int | None = None
    output_sub_level: int = 0
    task_id: int = 0
    kind: str = "l0"
    output_prefix: str = ""

    @property
    def input_bytes(self) -> int:
        return sum(s.size_bytes for s in self.input_ssts)

    @property
    def input_rows(self) -> int:
        return sum(s.row_count for s in self.input_ssts)


def total_bytes(ssts: Iterable[SstableInfo]) -> int:
    return sum(s.size_bytes for s in ssts)


def hull(ssts: Iterable[SstableInfo]) -> tuple[bytes, bytes]:
    """The smallest key range holding every key of `ssts` (non-empty)."""
    ranges = [s.key_range for s in ssts]
    return min(lo for lo, _ in ranges), max(hi for _, hi in ranges)


def overlapping(level: Iterable[SstableInfo], lo: bytes, hi: bytes) -> list[SstableInfo]:
    """The SSTs of `level` whose key ranges meet ``[lo, hi]``."""
    return [s for s in level if s.overlaps(lo, hi)]


def tombstones_droppable(levels: TableLevels, target_level: int, lo: bytes, hi: bytes) -> bool:
    """Whether a task writing keys ``[lo, hi]`` into `target_level` may drop tombstones: no SST of a
    level below it overlaps the range. (Older versions of a key live only below the level a task
    writes: the L0 sub-levels it leaves are newer than those it takes, the levels above the base
    are empty, and a level's versions are older than those of the levels above it.)"""
    return not any(s.overlaps(lo, hi) for n in range(target_level + 1, len(levels.levels) + 1)
                   for s in levels.level(n))
