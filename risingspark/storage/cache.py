"""The block cache: decoded SST blocks (and whole small SSTs, and SST indexes) kept in memory, least
recently used evicted first.

SSTs are immutable (a path is never rewritten), so a cached block is always correct; nothing is ever
invalidated, entries only age out. One cache per process (`block_cache()`) serves every task a Spark
Python worker runs; the SST indexes have a cache of their own (`meta_cache()`, RisingWave's meta
cache), so big blocks do not push out the small indexes every lookup needs.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

logger = logging.getLogger(__name__)

DEFAULT_BLOCK_CACHE_MB = 512
BLOCK_CACHE_ENV = "RISINGSPARK_BLOCK_CACHE_MB"


@dataclass(frozen=True)
class CacheStats:
    hits: int
    misses: int
    evictions: int
    entries: int
    bytes: int
    capacity_bytes: int


class Sized(Protocol):
    @property
    def nbytes(self) -> int: ...


class BlockCache:
    """A thread-safe LRU of ``key -> value`` (an Arrow table, a decoded block, an SST index: anything
    with `nbytes`) bounded by the values' `nbytes`.

    A value larger than the whole capacity is returned but not kept. Loads run outside the lock, so
    two threads missing the same key at once may both load it (the second result is dropped).
    """

    def __init__(self, capacity_bytes: int) -> None:
        self._capacity = max(0, int(capacity_bytes))
        self._entries: OrderedDict[str, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._hits = 0
        self._misses = 0
        self._evictions = 0
        self._lock = threading.Lock()

    @property
    def capacity_bytes(self) -> int:
        return self._capacity

    def get(self, path: str, *, count_hit: bool = False) -> Any:
        """The cached value of `path`, or None; counted as a hit when found and `count_hit` (the
        caller counts the rest with `count`)."""
        with self._lock:
            entry = self._entries.get(path)
            if entry is None:
                return None
            self._entries.move_to_end(path)
            self._hits += count_hit
            return entry[0]

    def get_or_load(self, path: str, loader: Callable[[], Any]) -> Any:
        """The cached value of `path`, calling `loader()` on a miss."""
        with self._lock:
            entry = self._entries.get(path)
            if entry is not None:
                self._entries.move_to_end(path)
                self._hits += 1
                return entry[0]
            self._misses += 1
        table = loader()
        self.put(path, table)
        return table

    def count(self, *, hits: int, misses: int) -> None:
        """Record hits and misses of lookups made with `get` (which counts nothing itself)."""
        with self._lock:
            self._hits += hits
            self._misses += misses

    def put(self, path: str, table: Sized) -> None:
        size = int(table.nbytes)
        if size > self._capacity:
            return
        with self._lock:
            if path in self._entries:
                self._entries.move_to_end(path)
                return
            self._entries[path] = (table, size)
            self._bytes += size
            while self._bytes > self._capacity:
                _, (_, evicted) = self._entries.popitem(last=False)
                self._bytes -= evicted
                self._evictions += 1

    def resize(self, capacity_bytes: int) -> None:
        """A new capacity; the least recently used entries go until the rest fits."""
        with self._lock:
            self._capacity = max(0, int(capacity_bytes))
            while self._bytes > self._capacity and self._entries:
                _, (_, evicted) = self._entries.popitem(last=False)
                self._bytes -= evicted
                self._evictions += 1

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def __contains__(self, path: str) -> bool:
        with self._lock:
            return path in self._entries

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(self._hits, self._misses, self._evictions, len(self._entries), self._bytes,
                              self._capacity)


_GLOBAL: BlockCache | None = None
_META: BlockCache | None = None
_GLOBAL_LOCK = threading.Lock()
META_CACHE_SHARE = 0.5  # the meta cache's capacity, as a share of the block cache's


def block_cache(capacity_bytes: int | None = None) -> BlockCache:
    """The process-global cache, sized by `capacity_bytes` (a Spark task brings its compute node's
    budget; a change resizes it), else by ``RISINGSPARK_BLOCK_CACHE_MB`` (default 512) at first use."""
    global _GLOBAL
    with _GLOBAL_LOCK:
        if _GLOBAL is None:
            if capacity_bytes is None:
                raw = os.environ.get(BLOCK_CACHE_ENV, "")
                try:
                    mb = float(raw) if raw.strip() else DEFAULT_BLOCK_CACHE_MB
                except ValueError:
                    logger.warning("ignoring invalid %s=%r, using %d MB", BLOCK_CACHE_ENV, raw,
                                   DEFAULT_BLOCK_CACHE_MB)
                    mb = DEFAULT_BLOCK_CACHE_MB
                capacity_bytes = int(mb * 1024 * 1024)
            _GLOBAL = BlockCache(capacity_bytes)
            logger.info("block cache of %.0f MB", capacity_bytes / 2**20)
        elif capacity_bytes is not None and capacity_bytes != _GLOBAL.capacity_bytes:
            _GLOBAL.resize(capacity_bytes)
        return _GLOBAL


def meta_cache() -> BlockCache:
    """The process-global cache of SST indexes (`risingspark.storage.sst_meta`, RisingWave's meta
    cache), `META_CACHE_SHARE` of the block cache's capacity."""
    global _META
    blocks = block_cache()
    with _GLOBAL_LOCK:
        capacity = int(blocks.capacity_bytes * META_CACHE_SHARE)
        if _META is None:
            _META = BlockCache(capacity)
        elif _META.capacity_bytes != capacity:
            _META.resize(capacity)
        return _META
