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
