"""Group commit (`frontend.dml_commit`): concurrent writers share commits to meta, each gets its own
receipt once its batch is recorded, errors reach every writer of the failed group, and a writer alone
commits at once."""

from __future__ import annotations

import threading
import time

import pytest

from frontend.dml_commit import GroupCommit
from risingspark.barrier import DmlReceipt


class SlowMeta:
    """Records batches like meta, taking `seconds` per call (a commit's fsync)."""

    def __init__(self, seconds: float = 0.05) -> None:
        self.seconds = seconds
        self.calls: list[list[tuple[int, str, int]]] = []
        self.fail_paths: set[str] = set()
        self._next = 1
        self._lock = threading.Lock()
        self.active = 0
        self.most_active = 0

    def submit_dml_batches(self, batches: list[tuple[int, str, int]]) -> list[DmlReceipt]:
        with self._lock:
            self.active += 1
            self.most_active = max(self.most_active, self.active)
        try:
            time.sleep(self.seconds)
            if any(path in self.fail_paths for _, path, _ in batches):
                raise OSError("disk full")
            with self._lock:
                self.calls.append(list(batches))
                first, self._next = self._next, self._next + len(batches)
            return [DmlReceipt(first + i, False) for i in range(len(batches))]
        finally:
            with self._lock:
                self.active -= 1


def test_concurrent_writers_share_commits_and_get_their_own_receipts():
    meta = SlowMeta()
    commit = GroupCommit(meta)
    receipts: dict[str, int] = {}

    def writer(i: int) -> None:
        for j in range(5):
            path = f"w{i}-{j}"
            receipts[path] = commit.submit(i, path, 1).batch_id

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    recorded = {path: n for n, (_, path, _) in enumerate((b for call in meta.calls for b in call), start=1)}
    assert receipts == recorded  # every writer got the id meta gave its batch
    assert len(receipts) == 80 and len(meta.calls) < 40  # shared commits
    assert meta.most_active == 1  # one commit at a time
    for call in meta.calls:  # a writer's batches in its order
        for i in range(16):
            mine = [p for _, p, _ in call if p.startswith(f"w{i}-")]
            assert mine == sorted(mine)


def test_a_writer_alone_commits_at_once():
    meta = SlowMeta(0)
    commit = GroupCommit(meta)
    assert [commit.submit(7, f"p{i}", 3).batch_id for i in range(3)] == [1, 2, 3]
    assert meta.calls == [[(7, "p0", 3)], [(7, "p1", 3)], [(7, "p2", 3)]]


def test_every_writer_of_a_failed_group_gets_the_error():
    meta = SlowMeta(0.2)
    meta.fail_paths.add("bad")
    commit = GroupCommit(meta)
    results: dict[str, object] = {}

    def writer(path: str) -> None:
        try:
            results[path] = commit.submit(1, path, 1).batch_id
        except OSError as e:
            results[path] = e

    first = threading.Thread(target=writer, args=("first",))
    first.start()
    time.sleep(0.05)  # "first" commits alone; these two wait, then go together
    others = [threading.Thread(target=writer, args=(p,)) for p in ("bad", "good")]
    for t in others:
        t.start()
    for t in [first, *others]:
        t.join()
    assert results["first"] == 1
    assert isinstance(results["bad"], OSError) and isinstance(results["good"], OSError)
    assert commit.submit(1, "after", 1).batch_id == 2  # the group commit goes on
    with pytest.raises(OSError, match="disk full"):
        commit.submit(1, "bad", 1)
