"""Which level of a table compacts next: dynamic level targets and scores (no I/O).

RisingWave's `DynamicLevelSelector` (itself RocksDB's ``level_compaction_dynamic_level_bytes``):
the bottom level ``L{max_level}`` holds the data, and each level above has a tenth
(`level_size_ratio`) of the target of the one below. A small table has only the bottom level: L0
compacts straight into it. As the table grows, the **base level** — the level L0 compacts into —
moves up, one level each time the base's target would pass `max_bytes_for_level_base`; levels above
the base stay empty. So L0 -> base rewrites at most about `max_bytes_for_level_base` of the base
whatever the table's size, and each level below is fed by partial compactions of one file at a time.

Targets (``calculate_level_base_size`` in RisingWave): with ``B`` = `max_bytes_for_level_base`,
``R`` the ratio, ``F`` the first non-empty level and ``S`` the largest level's bytes, start with
``size = S / R ** (max_level - F)`` at level F; while ``size > B`` and the base is below L1, move
the base up one level and divide ``size`` by R. The base's target is ``min(size, B)`` (at least B/R),
and each level below multiplies it by R; no level's target is below B.

Scores (a level is due at 1.0 or more): L0's is the larger of ``sub-levels / l0_trigger_sub_levels``
and ``L0 bytes / B`` (infinite at the write-stall threshold: its writers wait on it); level n's
(base <= n < max_level) is ``bytes not being compacted / target``. The bottom level never compacts
down.
"""

from __future__ import annotations

from dataclasses import dataclass

from meta.compaction.task import CompactionConfig, total_bytes
from risingspark.storage.desc import TableLevels


@dataclass(frozen=True)
class LevelTargets:
    base_level: int
    target_bytes: dict[int, int]  # level -> target bytes, for base_level..max_level


def level_targets(levels: TableLevels, config: CompactionConfig) -> LevelTargets:
    """The base level and the target size of every level from it down (see the module doc)."""
    max_level, ratio, base_bytes = config.max_level, config.level_size_ratio, config.max_bytes_for_level_base
    sizes = {n: total_bytes(levels.level(n)) for n in range(1, max_level + 1)}
    first = next((n for n in range(1, max_level + 1) if sizes[n] > 0), None)
    if first is None:
        return LevelTargets(max_level, {max_level: base_bytes})
    size = max(sizes.values()) / ratio ** (max_level - first)
    base = first
    while base > 1 and size > base_bytes:
        base -= 1
        size /= ratio
    level_size = max(min(size, base_bytes), base_bytes / ratio)
    targets = {}
    for n in range(base, max_level + 1):
        targets[n] = int(max(level_size, base_bytes))
        level_size *= ratio
    return LevelTargets(base, targets)


def level_scores(levels: TableLevels, config: CompactionConfig, targets: LevelTargets,
                 busy: frozenset[str] = frozenset()) -> list[tuple[float, int]]:
    """``(score, level)`` of every level that may compact (0 for L0), highest score first."""
    l0_ssts = [s for sub in levels.l0 for s in sub.ssts]
    depth = len(levels.l0)
    stalling = config.l0_stop_write_sub_levels and depth >= config.l0_stop_write_sub_levels
    scores = [(max(depth / config.l0_trigger_sub_levels, total_bytes(l0_ssts) / config.max_bytes_for_level_base,
                   float("inf") if stalling else 0.0), 0)]
    for n in range(1, config.max_level):
        ssts = levels.level(n)
        if not ssts:
            continue
        idle = total_bytes(s for s in ssts if s.path not in busy)
        scores.append((idle / targets.target_bytes[n], n))  # a non-empty level is at or below the base
    return sorted(scores, key=lambda sl: (-sl[0], sl[1]))


def pending_compaction_bytes(levels: TableLevels, config: CompactionConfig) -> int:
    """About how many bytes compaction must still move for the table to be in shape (RisingWave's
    ``compact_pending_bytes``): L0 when it is due, plus every level's bytes over its target."""
    targets = level_targets(levels, config)
    pending = 0
    l0_bytes = total_bytes(s for sub in levels.l0 for s in sub.ssts)
    if len(levels.l0) >= config.l0_trigger_sub_levels or l0_bytes >= config.max_bytes_for_level_base:
        pending += l0_bytes
    for n in range(1, config.max_level):
        size = total_bytes(levels.level(n))
        pending += max(0, size - targets.target_bytes.get(n, 0))
    return pending
