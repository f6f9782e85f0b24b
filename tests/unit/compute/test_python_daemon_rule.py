"""When the compute node's worker daemon (`compute.python_daemon`) makes a full collection after a
task: on memory growth by half, or after `FULL_GC_EVERY_S`, never sooner than `FULL_GC_COST_RATIO`
times the last one's duration; otherwise the young generations only. A fake clock and resident
size; the collections are the interpreter's, counted by `gc.get_stats()`."""

from __future__ import annotations

import gc

from compute.python_daemon import FULL_GC_COST_RATIO, FULL_GC_EVERY_S, FULL_GC_GROWTH, _YoungGenerationsGc

MB = 1 << 20


class World:
    def __init__(self) -> None:
        self.now = 1000.0
        self.rss = 100 * MB

    def clock(self) -> float:
        return self.now

    def resident(self) -> int:
        return self.rss


def _full_collections() -> int:
    return gc.get_stats()[2]["collections"]


def _after_task(daemon_gc: _YoungGenerationsGc, world: World, seconds: float = 1.0) -> bool:
    """One task of `seconds`, then the daemon's collect(); whether it was a full collection."""
    world.now += seconds
    before = _full_collections()
    daemon_gc.collect()
    return _full_collections() > before


def test_young_generations_after_a_task_and_a_full_collection_when_memory_grew_by_half() -> None:
    world = World()
    g = _YoungGenerationsGc(world.clock, world.resident)
    assert _after_task(g, world)  # a worker's first task
    assert not any(_after_task(g, world) for _ in range(20))  # no growth: young generations only
    world.rss = int(100 * MB * FULL_GC_GROWTH) - 1
    assert not _after_task(g, world)
    world.rss = int(100 * MB * FULL_GC_GROWTH)
    assert _after_task(g, world)
    assert not _after_task(g, world)  # the baseline is now the grown memory


def test_the_baseline_follows_memory_down() -> None:
    world = World()
    g = _YoungGenerationsGc(world.clock, world.resident)
    world.rss = 1000 * MB
    assert _after_task(g, world)
    world.rss = 100 * MB  # a big task's buffers freed
    assert not _after_task(g, world)
    world.rss = 160 * MB  # half again the current heap, far below the peak
    assert _after_task(g, world)


def test_a_full_collection_at_least_every_few_minutes() -> None:
    world = World()
    g = _YoungGenerationsGc(world.clock, world.resident)
    assert _after_task(g, world)
    assert not _after_task(g, world, FULL_GC_EVERY_S / 2)
    assert _after_task(g, world, FULL_GC_EVERY_S / 2)


def test_full_collections_take_a_bounded_share_of_the_time(monkeypatch) -> None:
    world = World()
    g = _YoungGenerationsGc(world.clock, world.resident)
    real_collect = gc.collect

    def collect(generation: int = 2) -> int:  # a full collection that takes 2 s
        if generation == 2:
            world.now += 2.0
        return real_collect(generation)

    monkeypatch.setattr(gc, "collect", collect)
    assert _after_task(g, world)
    quiet = FULL_GC_COST_RATIO * 2.0
    fulls = 0
    for _ in range(int(quiet) - 1):  # memory doubles after every 1-s task
        world.rss *= 2
        fulls += _after_task(g, world)
    assert fulls == 0  # none within 50x the last one's 2 s
    world.rss *= 2
    assert _after_task(g, world, 1.0)
