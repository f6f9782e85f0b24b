"""Unique, increasing 64-bit ids without a round trip: hidden ``_row_id`` values and the order of DML
operations, as RisingWave's row id generator.

An id is ``(ticks << 10) | slot``: ticks start at the milliseconds since 2021-01-01 times 4096 and
advance by one per id (running ahead of the clock under bursts), so ids stay increasing across
restarts and unique across frontends with distinct slots: meta gives each live frontend (each process
of one) a slot of its own, 1..1023 (`meta.cluster.ClusterManager._free_id_slot`); 0 is the
playground's.

>>> g = IdGenerator(node_id=3)
>>> ids = g.next_block(3)
>>> bool(ids[0] < ids[1] < ids[2]) and all(int(i) & 1023 == 3 for i in ids)
True
"""

from __future__ import annotations

import threading
import time

import numpy as np

from risingspark.epoch import EPOCH_BASE_MS

NODE_BITS = 10
TICKS_PER_MS = 4096


def node_slot(node_id: int) -> int:
    """The slot (1..1023) a node id points at: where meta's search for a free one starts, and a
    frontend's slot under a meta that hands out none."""
    return 1 + (node_id - 1) % ((1 << NODE_BITS) - 1)


class IdGenerator:
    def __init__(self, node_id: int = 0) -> None:
        if not 0 <= node_id < (1 << NODE_BITS):
            raise ValueError(f"node id must be below {1 << NODE_BITS}")
        self._node = node_id
        self._next_tick = 0
        self._lock = threading.Lock()

    def set_node(self, node_id: int) -> None:
        """Make ids with slot `node_id` from now on (a frontend learns its slot from meta when it
        registers)."""
        if not 0 <= node_id < (1 << NODE_BITS):
            raise ValueError(f"node id must be below {1 << NODE_BITS}")
        self._node = node_id

    def next_id(self) -> int:
        """One id, as a Python int (`next_block(1)`, without the array)."""
        with self._lock:
            now = (int(time.time() * 1000) - EPOCH_BASE_MS) * TICKS_PER_MS
            first = max(now, self._next_tick)
            self._next_tick = first + 1
        return (first << NODE_BITS) | self._node

    def next_block(self, n: int) -> np.ndarray:
        """`n` consecutive ids as an int64 array."""
        with self._lock:
            now = (int(time.time() * 1000) - EPOCH_BASE_MS) * TICKS_PER_MS
            first = max(now, self._next_tick)
            self._next_tick = first + n
        ticks = np.arange(first, first + n, dtype=np.int64)
        return (ticks << NODE_BITS) | self._node
