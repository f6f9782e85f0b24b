"""Epochs, as RisingWave: ``(unix_ms - 2021-01-01) << 16``, strictly increasing.

The low 16 bits order several epochs allocated in the same millisecond.

>>> e = Epoch.from_unix_ms(1_700_000_000_000)
>>> e.unix_ms
1700000000000
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from dataclasses import dataclass

EPOCH_BASE_MS = 1_609_459_200_000  # 2021-01-01T00:00:00Z
EPOCH_PHYSICAL_SHIFT = 16
INVALID_EPOCH = 0


@dataclass(frozen=True, order=True)
class Epoch:
    value: int

    @classmethod
    def from_unix_ms(cls, ms: int) -> Epoch:
        return cls((ms - EPOCH_BASE_MS) << EPOCH_PHYSICAL_SHIFT)

    @property
    def unix_ms(self) -> int:
        return (self.value >> EPOCH_PHYSICAL_SHIFT) + EPOCH_BASE_MS

    def as_datetime(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.unix_ms / 1000, tz=dt.UTC)

    def __int__(self) -> int:
        return self.value


@dataclass(frozen=True)
class EpochPair:
    """The epoch a barrier starts (`curr`) and the one it closes (`prev`)."""

    curr: int
    prev: int


class EpochGenerator:
    """Allocates strictly increasing epochs, never below the last one (also across restarts)."""

    def __init__(self, last: int = INVALID_EPOCH) -> None:
        self._last = last
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            now = Epoch.from_unix_ms(int(time.time() * 1000)).value
            self._last = max(now, self._last + 1)
            return self._last


def epoch_to_datetime(epoch: int) -> dt.datetime:
    return Epoch(epoch).as_datetime()
