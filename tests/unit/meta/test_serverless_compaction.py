"""The serverless compaction controller's decisions (`meta.serverless_compaction`), step by step with a
pending-bytes signal and a clock of the test's, over real child processes (which stand in for
``risingspark compactor`` only in what they run: ``sleep``; they register through a fake cluster)."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import pytest

from meta.cluster import WorkerNode
from meta.serverless_compaction import (
    REGISTER_TIMEOUT_S,
    ServerlessCompactionConfig,
    ServerlessCompactionController,
)

MB = 1 << 20


@dataclass
class FakeCluster:
    registered: set[int]

    def workers(self, kind=None, resource_group=None):
        return [WorkerNode(id=1000 + pid, kind="compactor", address="", pid=pid) for pid in sorted(self.registered)]


class Controller(ServerlessCompactionController):
    def __init__(self, tmp_path, **cfg) -> None:
        self.cluster_fake = FakeCluster(set())
        super().__init__(None, ServerlessCompactionConfig(enabled=True, **cfg), self.cluster_fake,  # type: ignore[arg-type]
                         meta_address="http://127.0.0.1:1", object_store_url=str(tmp_path), log_dir=tmp_path)
        self.pending = 0

    def _pending_bytes(self) -> int:
        return self.pending

    def command(self, port: int) -> list[str]:
        return [sys.executable, "-c", "import time; time.sleep(120)"]

    def register_all(self) -> None:
        self.cluster_fake.registered |= {c.pid for c in self.compactors()}

    def live(self) -> list:
        return [c for c in self.compactors() if c.retiring_since is None]


@pytest.fixture
def controller(tmp_path):
    c = Controller(tmp_path, max_compactors=2, pending_mb=100, idle_s=30)
    yield c
    c.stop()


def test_scales_up_one_registered_compactor_at_a_time_within_the_bound(controller):
    c = controller
    c.check(now=0)
    assert c.wanted == 0 and c.compactors() == []
    c.pending = 350 * MB  # four compactors' worth; at most two
    c.check(now=1)
    assert c.wanted == 2 and len(c.compactors()) == 1
    c.check(now=2)  # the first has not registered: no second yet
    assert len(c.compactors()) == 1
    c.register_all()
    c.check(now=3)
    assert len(c.compactors()) == 2
    c.register_all()
    c.check(now=4)
    assert len(c.compactors()) == 2 and all(x.node_id is not None for x in c.compactors())


def test_retires_the_youngest_after_idle_then_the_next(controller):
    c = controller
    c.pending = 150 * MB
    c.check(now=0)
    c.register_all()
    c.check(now=1)
    c.register_all()
    first, second = sorted(c.compactors(), key=lambda x: x.started_at)
    c.pending = 50 * MB  # one is enough now
    c.check(now=10)
    c.check(now=39)
    assert len(c.live()) == 2  # not idle long enough
    c.check(now=41)
    assert c.live() == [first] and second.retiring_since == 41
    second.proc.wait(10)  # SIGTERM ends it
    c.pending = 0
    c.check(now=42)
    assert c.compactors() == [first]
    c.check(now=72)
    assert c.live() == []
    first.proc.wait(10)
    c.check(now=73)
    assert c.compactors() == []


def test_the_backlog_coming_back_cancels_the_retirement(controller):
    c = controller
    c.pending = 150 * MB
    for now in range(3):
        c.check(now=now)
        c.register_all()
    c.pending = 10 * MB
    c.check(now=10)
    c.pending = 150 * MB
    c.check(now=20)
    c.pending = 10 * MB
    c.check(now=45)  # under the threshold again only since 45
    assert len(c.live()) == 2
    c.check(now=76)
    assert len(c.live()) == 1


def test_a_compactor_still_starting_is_not_retired_for_idleness(controller):
    """On a loaded machine a start can outlast `idle_s`: the compactor registers first."""
    c = controller
    c.pending = 50 * MB
    c.check(now=0)
    (starting,) = c.compactors()
    c.pending = 0
    c.check(now=1)
    c.check(now=100)
    assert c.live() == [starting]
    c.register_all()
    c.check(now=101)  # idle since 1, and now registered
    assert c.live() == [] and starting.retiring_since == 101


def test_a_compactor_that_never_registers_is_stopped_wanted_or_not(controller):
    c = controller
    c.pending = 50 * MB
    c.check(now=0)
    (stuck,) = c.compactors()
    c.pending = 0  # no longer wanted: it is still stopped once its start has taken too long
    c.check(now=100)
    assert c.live() == [stuck]
    c.check(now=REGISTER_TIMEOUT_S + 1)
    assert c.live() == [] and stuck.retiring_since == REGISTER_TIMEOUT_S + 1


def test_a_compactor_that_died_is_replaced(controller):
    c = controller
    c.pending = 50 * MB
    c.check(now=0)
    c.register_all()
    (dead,) = c.compactors()
    dead.proc.kill()
    dead.proc.wait(10)
    c.check(now=1)  # forgotten, and another started in its place
    (fresh,) = c.compactors()
    assert fresh.pid != dead.pid and fresh.name != dead.name


def test_stop_ends_every_compactor(tmp_path):
    c = Controller(tmp_path, max_compactors=1, pending_mb=1, idle_s=30)
    c.pending = 5 * MB
    c.check(now=0)
    (proc,) = [x.proc for x in c.compactors()]
    start = time.monotonic()
    c.stop()
    assert proc.poll() is not None and time.monotonic() - start < 30


def test_settings_are_checked():
    @dataclass
    class Settings:
        serverless_compaction_enabled: bool = True
        serverless_compaction_max_compactors: int = 0
        serverless_compaction_pending_mb: int = 256
        serverless_compaction_idle_s: float = 60
        serverless_compaction_spark_master: str = ""

    with pytest.raises(ValueError, match="max_compactors"):
        ServerlessCompactionConfig.of(Settings())
    assert ServerlessCompactionConfig.of(Settings(serverless_compaction_max_compactors=3)).max_compactors == 3
