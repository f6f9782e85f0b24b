"""Write stall: when compaction falls behind, a table's writers wait instead of burying its L0.

As RisingWave's ``level0_stop_write_threshold_sub_level_number``: when a state table's L0 reaches
that many sub-levels, every read of it merges that many files and each new checkpoint adds one more.
Here a DML table is **stalled** while any state table it feeds — its own, and those of every
materialized view downstream of it — has at least the threshold's sub-levels (the system parameter
``level0_stop_write_threshold_sub_level_number``). While it is stalled:

- barriers leave its DML batches queued (they are durable already; nothing is dropped), so its
  writes stop adding L0 sub-levels;
- a DML statement into it is acknowledged only once the stall is released (or after
  `MAX_WAIT_S`: its rows are durable either way), so writers slow down to what compaction absorbs
  (the frontend waits, polling `MetaService.is_write_stalled`: meta's request threads stay free for
  heartbeats and compactors);
- the picker treats an L0 at the threshold as due (`meta.compaction.l0_picker`), so compaction
  always has the work that releases the stall.

The stall is released as soon as every such table is below the threshold again, with a log line
for each change, the ``risingspark_storage_write_stall{job}`` gauge, the dashboard's storage panel
and ``rw_catalog.rw_write_stalls``.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from meta.metrics import METRICS
from risingspark.catalog import RelationCatalog, RelationKind
from risingspark.storage.desc import HummockVersion

logger = logging.getLogger(__name__)

PARAM = "level0_stop_write_threshold_sub_level_number"
MAX_WAIT_S = 30.0


@dataclass(frozen=True)
class WriteStall:
    """A stalled DML table: the deepest L0 among the state tables it feeds, and since when."""

    table_id: int
    name: str
    state_table_id: int
    l0_sub_levels: int
    since: float


def stalled_tables(version: HummockVersion, relations: Iterable[RelationCatalog],
                   threshold: int) -> dict[int, tuple[int, int]]:
    """``{dml table id: (state table id, L0 sub-levels)}`` of the DML tables that are stalled: some
    state table they feed (their own or a downstream view's) has `threshold` L0 sub-levels or more."""
    rels = {r.id: r for r in relations}
    downstream: dict[int, list[int]] = defaultdict(list)
    for r in rels.values():
        for up in r.dependencies:
            downstream[up].append(r.id)
    out: dict[int, tuple[int, int]] = {}
    for r in rels.values():
        if r.kind is not RelationKind.TABLE:
            continue
        seen, todo = {r.id}, [r.id]
        deepest = (0, -1)
        while todo:
            rel = rels.get(todo.pop())
            if rel is None:
                continue
            for d in rel.state_tables:
                depth = len(version.levels(d.table_id).l0)
                if depth > deepest[1]:
                    deepest = (d.table_id, depth)
            for down in downstream[rel.id]:
                if down not in seen:
                    seen.add(down)
                    todo.append(down)
        if deepest[1] >= threshold:
            out[r.id] = deepest
    return out


class WriteStallController:
    """Tracks which DML tables are stalled (`update`, once per barrier)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stalls: dict[int, WriteStall] = {}

    @property
    def stalls(self) -> list[WriteStall]:
        with self._lock:
            return sorted(self._stalls.values(), key=lambda s: s.table_id)

    def is_stalled(self, table_id: int) -> bool:
        with self._lock:
            return table_id in self._stalls

    def update(self, version: HummockVersion, relations: Iterable[RelationCatalog], threshold: int) -> set[int]:
        """Recompute the stalls from `version`; returns the stalled DML tables."""
        rels = list(relations)
        names = {r.id: r.name for r in rels}
        now = stalled_tables(version, rels, threshold) if threshold > 0 else {}
        with self._lock:
            before = self._stalls
            after: dict[int, WriteStall] = {}
            for table_id, (state_table, depth) in now.items():
                old = before.get(table_id)
                after[table_id] = WriteStall(table_id, names[table_id], state_table, depth,
                                             old.since if old else time.time())
                if old is None:
                    METRICS.write_stalls.labels(names[table_id]).inc()
                    logger.warning("write stall: table %s (id %d) holds its writes: state table %d has %d L0 "
                                   "sub-levels (threshold %d)", names[table_id], table_id, state_table, depth,
                                   threshold)
            for table_id, old in before.items():
                if table_id not in after:
                    logger.warning("write stall released: table %s (id %d) after %.1f s", old.name, table_id,
                                   time.time() - old.since)
                    with contextlib.suppress(KeyError):  # a stall of another table of that name
                        METRICS.write_stall.remove(old.name)
            for stall in after.values():
                METRICS.write_stall.labels(stall.name).set(1)
            self._stalls = after
            return set(after)
