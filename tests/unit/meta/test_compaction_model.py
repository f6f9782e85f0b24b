"""Property test of leveled compaction over a model of a table: random writes arrive as L0 sub-levels
(some of them big, of many key-disjoint SSTs, moved down a run at a time) while tasks picked from older versions run concurrently and commit in random order. After every
commit, every key's newest version is the last write to it (so no version is lost and no tombstone
was dropped while an older version lived below), and every level is a sorted run of disjoint key
ranges whose versions are older than those of the levels above."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

from meta.compaction.picker import CompactionConfig, CompactionTask, pick_compactions
from meta.hummock import replace_ssts
from risingspark.storage.desc import HummockVersion, SstableInfo, SubLevel, TableLevels

ROW_BYTES = 100
CONFIG = CompactionConfig(l0_trigger_sub_levels=4, l0_keep_sub_levels=1, l0_intra_sub_levels=6, l0_max_sub_levels=12,
                          l0_to_base_size_ratio=0.3, max_level=4, level_size_ratio=4,
                          max_bytes_for_level_base=3000, target_file_bytes=1500, max_compaction_bytes=20000)


def key(k: int) -> bytes:
    return k.to_bytes(4, "big")


@dataclass
class Model:
    """SST contents by path (key -> (epoch, tombstone), the newest version only), and the truth."""

    rng: random.Random
    contents: dict[str, dict[int, tuple[int, bool]]] = field(default_factory=dict)
    truth: dict[int, tuple[int, bool]] = field(default_factory=dict)
    levels: TableLevels = field(default_factory=lambda: TableLevels(1))
    next_id: int = 1

    def sst(self, rows: dict[int, tuple[int, bool]], level: int, sub_level: int) -> SstableInfo:
        path = f"sst-{self.next_id}"
        epochs = [e for e, _ in rows.values()]
        info = SstableInfo(path=path, table_id=1, level=level, sub_level=sub_level, min_vnode=0, max_vnode=255,
                           min_epoch=min(epochs), max_epoch=max(epochs), row_count=len(rows),
                           tombstone_count=sum(t for _, t in rows.values()), size_bytes=ROW_BYTES * len(rows),
                           sst_id=self.next_id, min_key=key(min(rows)), max_key=key(max(rows)))
        self.next_id += 1
        self.contents[path] = dict(rows)
        return info

    def write_epoch(self, epoch: int, keys: int) -> None:
        """One checkpoint: random puts and deletes written by one to three tasks, each task's keys
        (a hash partition: they spread over the whole key space) cut into SSTs of disjoint key bands;
        now and then a big one (a backfill epoch, a bulk load) of many SSTs."""
        bulk = self.rng.random() < 0.1
        n = self.rng.randrange(300, 600) if bulk else self.rng.randrange(3, 60)
        touched = sorted(self.rng.sample(range(keys), n))
        rows = {k: (epoch, self.rng.random() < 0.3) for k in touched}
        self.truth.update(rows)
        tasks = self.rng.randrange(1, 4)
        ssts: list[SstableInfo] = []
        for t in range(tasks):
            mine = [k for k in touched if k % tasks == t]
            if not mine:
                continue
            files = self.rng.randrange(3, 8) if bulk else self.rng.randrange(2)
            cuts = sorted(self.rng.sample(range(1, len(mine)), min(len(mine) - 1, files)))
            parts = [mine[a:b] for a, b in zip([0, *cuts], [*cuts, len(mine)], strict=True)]
            ssts += [self.sst({k: rows[k] for k in part}, 0, epoch) for part in parts]
        self.levels = TableLevels(1, self.levels.l0 + (SubLevel(epoch, tuple(ssts)),), self.levels.levels)

    def run(self, task: CompactionTask, target_rows: int) -> list[SstableInfo]:
        """The compactor: the newest version of each key; tombstones go when the task allows it."""
        merged: dict[int, tuple[int, bool]] = {}
        for s in task.input_ssts:
            for k, v in self.contents[s.path].items():
                if k not in merged or v[0] > merged[k][0]:
                    merged[k] = v
        if task.drop_tombstones:
            merged = {k: v for k, v in merged.items() if not v[1]}
        items = sorted(merged.items())
        sub_level = task.output_sub_level if task.target_level == 0 else 0
        return [self.sst(dict(items[i:i + target_rows]), task.target_level, sub_level)
                for i in range(0, len(items), target_rows)]

    def commit(self, task: CompactionTask, outputs: list[SstableInfo]) -> None:
        live = {s.path for s in self.levels.all_ssts()}
        assert all(s.path in live for s in task.input_ssts), "a task's inputs were compacted twice"
        self.levels = replace_ssts(self.levels, [s.path for s in task.input_ssts], outputs)

    def check(self) -> None:
        newest: dict[int, tuple[int, bool]] = {}
        for s in self.levels.all_ssts():
            for k, v in self.contents[s.path].items():
                if k not in newest or v[0] > newest[k][0]:
                    newest[k] = v
        for k, (epoch, dead) in self.truth.items():
            got = newest.get(k)
            if dead:
                assert got is None or got == (epoch, True), (k, got, epoch)
            else:
                assert got == (epoch, False), (k, got, epoch)
        older_than: dict[int, int] = {}  # key -> oldest epoch seen in the levels above
        for sub in reversed(self.levels.l0):
            for s in sub.ssts:
                for k, (e, _) in self.contents[s.path].items():
                    older_than[k] = min(older_than.get(k, e), e)
        for n, level in enumerate(self.levels.levels, start=1):
            for a, b in zip(level, level[1:], strict=False):
                assert a.max_key < b.min_key, f"L{n} SSTs overlap: {a.path} {b.path}"
            below: dict[int, int] = {}
            for s in level:
                for k, (e, _) in self.contents[s.path].items():
                    assert k not in older_than or e < older_than[k], f"L{n} holds a version newer than above: {k}"
                    below[k] = e
            for k, e in below.items():
                older_than[k] = min(older_than.get(k, e), e)


@pytest.mark.parametrize("seed", range(4))
def test_leveled_compaction_loses_no_version(seed: int) -> None:
    rng = random.Random(seed)
    model = Model(rng)
    keys = rng.choice([1000, 3000])
    in_flight: list[tuple[CompactionTask, list[SstableInfo]]] = []
    kinds: set[str] = set()
    partial_l0 = 0
    for epoch in range(1, 201):
        model.write_epoch(epoch, keys)
        busy = frozenset(s.path for t, _ in in_flight for s in t.input_ssts)
        version = HummockVersion(epoch, epoch, {1: model.levels})
        for task in pick_compactions(version, CONFIG, busy=busy):
            kinds.add(task.kind)
            partial_l0 += task.kind == "l0" and not task.l0_sub_levels
            # the task runs on the files it was given; its result commits later, in any order
            in_flight.append((task, model.run(task, target_rows=rng.choice([5, 15, 40]))))
        rng.shuffle(in_flight)
        for _ in range(rng.randrange(len(in_flight) + 1)):
            task, outputs = in_flight.pop()
            model.commit(task, outputs)
        model.check()
    for task, outputs in in_flight:
        model.commit(task, outputs)
    model.check()
    assert kinds == {"l0", "intra_l0", "level"}, kinds
    assert partial_l0, "no task took part of a big sub-level"
    # with the writes stopped, compaction catches up: L0 drains below its trigger
    for _ in range(1000):
        tasks = pick_compactions(HummockVersion(1, 1, {1: model.levels}), CONFIG)
        if not tasks:
            break
        for task in tasks:
            model.commit(task, model.run(task, target_rows=15))
        model.check()
    assert len(model.levels.l0) < CONFIG.l0_trigger_sub_levels, len(model.levels.l0)
    assert sum(1 for lv in model.levels.levels if lv) >= 2  # the table grew past one level
