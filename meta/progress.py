"""Backfill progress as users see it in `rw_ddl_progress` and `SHOW JOBS`.

RisingWave prints ``format!("{:.2}% ({}/{})", pct, consumed, total)`` and clamps the percentage below
100 until the job is created, since the upstream keeps growing while it backfills. The rate is
measured over a sliding window of committed epochs, for rows/s and an ETA.

>>> format_progress(452_300, 1_000_000)
'45.23% (452300/1000000)'
>>> format_progress(1_000_050, 1_000_000)
'99.99% (1000050/1000000)'
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from risingspark.backfill_order import finished_relations, waiting_for
from risingspark.vnode import VNODE_COUNT

MAX_UNFINISHED_PCT = 99.99


def format_progress(consumed: int, total: int) -> str:
    pct = 100.0 * consumed / total if total > 0 else 0.0
    pct = min(pct, MAX_UNFINISHED_PCT)
    # Round down so 99.995% never prints as 100.00%.
    pct = int(pct * 100) / 100
    return f"{pct:.2f}% ({consumed}/{total})"


@dataclass(frozen=True)
class RateSample:
    at: float
    consumed: int


class ProgressRate:
    """Rows per second of a backfill over the last `window` seconds, and the time left."""

    def __init__(self, window: float = 30.0) -> None:
        self.window = window
        self._samples: deque[RateSample] = deque()

    def record(self, consumed: int, at: float | None = None) -> None:
        at = time.monotonic() if at is None else at
        self._samples.append(RateSample(at, consumed))
        while len(self._samples) > 2 and at - self._samples[0].at > self.window:
            self._samples.popleft()

    def rows_per_second(self) -> float | None:
        if len(self._samples) < 2:
            return None
        first, last = self._samples[0], self._samples[-1]
        if last.at <= first.at:
            return None
        return max(0.0, (last.consumed - first.consumed) / (last.at - first.at))

    def eta_seconds(self, total: int) -> float | None:
        rate = self.rows_per_second()
        if not rate or not self._samples:
            return None
        return max(0.0, (total - self._samples[-1].consumed) / rate)


@dataclass(frozen=True)
class UpstreamProgress:
    """The backfill of one upstream relation of a job (all its scans: a self-join has two), as
    `rw_fragment_backfill_progress` shows it. `waiting_for`: the relations the backfill order puts
    before it that have not finished (it has not started while there are some)."""

    upstream_id: int
    consumed_rows: int
    total_rows: int
    finished: bool
    waiting_for: tuple[int, ...] = ()

    @property
    def reading(self) -> bool:
        return not self.finished and not self.waiting_for

    def waiting_text(self, names: dict[int, str]) -> str:
        return "waiting for " + ", ".join(str(names.get(w, w)) for w in self.waiting_for)

    def text(self, names: dict[int, str]) -> str:
        """``45.23% (452300/1000000)``, ``100.00% (n/n)`` once finished, or ``0.00% (0/100000)
        waiting for car_info``."""
        if self.finished:
            return f"100.00% ({self.consumed_rows}/{self.consumed_rows})"
        out = format_progress(self.consumed_rows, self.total_rows)
        return f"{out} {self.waiting_text(names)}" if self.waiting_for else out


def upstream_progress(scanned: list[int], consumed: dict[tuple[int, int], int], finished: set[tuple[int, int]],
                      row_counts: dict[int, int], order: tuple[tuple[int, int], ...]) -> list[UpstreamProgress]:
    """Per upstream relation, in the order of their first scan: `scanned` is each scan's upstream,
    `consumed` and `finished` are keyed by ``(scan_id, vnode)``."""
    by_relation: dict[int, list[int]] = {}
    for scan_id, upstream in enumerate(scanned):
        by_relation.setdefault(upstream, []).append(scan_id)
    done = finished_relations({i: (r, all((i, v) in finished for v in range(VNODE_COUNT)))
                               for i, r in enumerate(scanned)})
    return [UpstreamProgress(r, sum(n for (i, _), n in consumed.items() if i in ids),
                             row_counts.get(r, 0) * len(ids), r in done,
                             tuple(waiting_for(order, r, done)) if r not in done else ())
            for r, ids in by_relation.items()]


def waiting_text(upstreams: list[UpstreamProgress], names: dict[int, str]) -> str:
    """``car_sales waiting for car_info, car_regions`` (empty when no scan waits)."""
    return "; ".join(f"{names.get(u.upstream_id, u.upstream_id)} {u.waiting_text(names)}"
                     for u in upstreams if u.waiting_for)
