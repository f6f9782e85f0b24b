"""The splits of a snapshot backfill: vnode ranges planned when the job starts, merged at run time.

A snapshot backfill reads its upstream's snapshot one read per epoch round (`compute.stream.snapshot`).
Meta plans the splits once (`plan_splits`), when it fixes the snapshot:

- an unlimited job: equal vnode ranges of about `SPLIT_TARGET_ROWS` (an aggregation's
  `AGG_SPLIT_TARGET_ROWS`: its memory follows its groups, not its rows), at most `MAX_SPLITS`;
- a rate-limited job (a fixed or an adaptive `backfill_rate_limit`): one split per vnode.

Each round, the compute node reads the first unfinished split and as many of the following ones as
fit in the round's row budget (`take_splits`): the rows its rate limit allows now, or, unlimited,
the split target. So the limit sizes each read, not only how often one comes: when the adaptive
rate halves, the very next read is half as big, and a round that was slow because of its read gets
faster. Rows are estimated from the pinned SSTs (`estimate_rows`): each SST's row count spread
evenly over its vnodes (vnodes are hashes of the key, so rows spread evenly). Stored versions and
tombstones count as rows, so the estimate is an upper bound of the live rows.

Splits are finished together (`compute.executor.backfill.snapshot_backfill`), so the finished vnodes
are always a prefix of the planned splits, and a merged read is one contiguous vnode range.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from risingspark.storage.desc import SstableInfo
from risingspark.vnode import VNODE_COUNT

# Rows one split of an unlimited job should hold (at least one split; at most one per 8 vnodes). A
# split's rows reach the Python executors only where no aggregation reduces them in Spark first:
# those splits stay small; an aggregation's memory follows its groups, not its rows, so its splits
# can be large.
SPLIT_TARGET_ROWS = 4_000_000
AGG_SPLIT_TARGET_ROWS = 32_000_000
MAX_SPLITS = VNODE_COUNT // 8


def plan_splits(total_rows: int, target_rows: int = SPLIT_TARGET_ROWS,
                max_splits: int = MAX_SPLITS) -> tuple[tuple[int, int], ...]:
    """Equal vnode ranges, as many as the snapshot's size asks for (at most `max_splits`).

    >>> plan_splits(10)
    ((0, 255),)
    >>> plan_splits(10_000_000)
    ((0, 84), (85, 169), (170, 255))
    >>> len(plan_splits(100_000_000, 200_000)), len(plan_splits(100_000_000, 200_000, VNODE_COUNT))
    (32, 256)
    """
    n = min(max_splits, VNODE_COUNT, max(1, math.ceil(total_rows / max(1, target_rows))))
    bounds = [i * VNODE_COUNT // n for i in range(n + 1)]
    return tuple((bounds[i], bounds[i + 1] - 1) for i in range(n))


def estimate_rows(ssts: Iterable[SstableInfo], lo: int, hi: int) -> float:
    """Rows of vnodes ``lo..hi`` in `ssts`, each SST's rows spread evenly over its vnode range.

    >>> from risingspark.storage.desc import SstableInfo
    >>> sst = SstableInfo("a", 1, 0, 0, 0, 255, 1, 1, 2560, 0, 0)
    >>> estimate_rows([sst], 0, 9), estimate_rows([sst], 250, 255)
    (100.0, 60.0)
    """
    rows = 0.0
    for s in ssts:
        overlap = min(hi, s.max_vnode) - max(lo, s.min_vnode) + 1
        if overlap > 0:
            rows += s.row_count * overlap / (s.max_vnode - s.min_vnode + 1)
    return rows


def take_splits(splits: Sequence[tuple[int, int]], estimates: Sequence[float],
                budget_rows: float) -> tuple[int, int]:
    """The vnode range of the next read: the first of the (unfinished, in order) `splits` and as many
    of the following as fit, with their `estimates`, in `budget_rows`.

    >>> take_splits([(0, 0), (1, 1), (2, 2)], [10, 10, 10], 25)
    (0, 1)
    >>> take_splits([(0, 0), (1, 1)], [10, 10], 5)  # the first split is read whatever its size
    (0, 0)
    """
    assert splits, "no split left to read"
    lo, hi = splits[0]
    total = estimates[0]
    for (_, h), rows in zip(splits[1:], estimates[1:], strict=True):
        if total + rows > budget_rows:
            break
        hi, total = h, total + rows
    return lo, hi
