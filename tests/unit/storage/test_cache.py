"""The block cache."""

from __future__ import annotations

import threading

import pyarrow as pa

from risingspark.storage import cache as cache_mod
from risingspark.storage.cache import BlockCache


def table(n: int) -> pa.Table:
    return pa.table({"x": pa.array(range(n), pa.int64())})  # 8 bytes a row


def test_lru_eviction_by_bytes():
    c = BlockCache(8 * 100)
    loads = []

    def loader(n):
        def load():
            loads.append(n)
            return table(n)
        return load

    c.get_or_load("a", loader(40))
    c.get_or_load("b", loader(40))
    c.get_or_load("a", loader(40))  # a is now the most recent
    c.get_or_load("c", loader(40))  # evicts b
    assert "a" in c and "c" in c and "b" not in c
    assert loads == [40, 40, 40]
    s = c.stats()
    assert (s.hits, s.misses, s.evictions, s.entries, s.bytes) == (1, 3, 1, 2, 640)
    big = c.get_or_load("huge", loader(1000))  # larger than the cache: returned, not kept
    assert big.num_rows == 1000 and "huge" not in c
    c.clear()
    assert len(c) == 0 and c.stats().bytes == 0


def test_concurrent_use_keeps_accounting_right():
    c = BlockCache(8 * 1000)

    def work(i):
        for j in range(200):
            c.get_or_load(f"p{(i * 7 + j) % 50}", lambda: table(50))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    s = c.stats()
    assert s.bytes == sum(c.get(f"p{i}").nbytes for i in range(50) if f"p{i}" in c) <= 8000
    assert s.hits + s.misses == 1600


def test_global_cache_reads_its_size_from_the_environment(monkeypatch):
    monkeypatch.setattr(cache_mod, "_GLOBAL", None)
    monkeypatch.setenv("RISINGSPARK_BLOCK_CACHE_MB", "3")
    c = cache_mod.block_cache()
    assert c.capacity_bytes == 3 * 1024 * 1024 and cache_mod.block_cache() is c
    monkeypatch.setattr(cache_mod, "_GLOBAL", None)
    monkeypatch.delenv("RISINGSPARK_BLOCK_CACHE_MB")
    assert cache_mod.block_cache().capacity_bytes == 512 * 1024 * 1024
