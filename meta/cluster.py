"""The cluster manager: which compute nodes, compactors and frontends are alive.

As RisingWave's `ClusterManager`: a worker registers with meta at start and gets an id (from the
meta store, so ids are never reused, even across a meta failover), then heartbeats. A worker silent
for longer than the heartbeat timeout is declared dead and removed; meta then reacts (recovery when
it was the compute node of a resource group, its pinned versions and compaction tasks released). A
worker that heartbeats to a meta that does not know it (a new meta took over) registers again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from meta.store.store import MetaStore, next_ids
from risingspark.catalog import DEFAULT_RESOURCE_GROUP
from risingspark.errors import ServiceUnavailable
from risingspark.sequence import NODE_BITS, node_slot

logger = logging.getLogger(__name__)

WORKER_KINDS = ("compute", "compactor", "frontend")


@dataclass(frozen=True)
class WorkerNode:
    """A registered worker: `address` is its HTTP base URL; `parallelism` a compute node's cores;
    `pid` its process id on its host."""

    id: int
    kind: str
    address: str
    resource_group: str = DEFAULT_RESOURCE_GROUP
    parallelism: int = 0
    registered_at: float = 0.0
    pid: int = 0
    id_slot: int = 0  # a frontend's row id slot (`ClusterManager.register`); 0 for other kinds


class ClusterManager:
    def __init__(self, store: MetaStore, *, heartbeat_timeout_s: float = 30.0) -> None:
        self._store = store
        self.heartbeat_timeout_s = heartbeat_timeout_s
        self._lock = threading.Lock()
        self._nodes: dict[int, WorkerNode] = {}
        self._last_seen: dict[int, float] = {}
        self._on_join: list[Callable[[WorkerNode], None]] = []
        self._on_leave: list[Callable[[WorkerNode], None]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def on_join(self, fn: Callable[[WorkerNode], None]) -> None:
        self._on_join.append(fn)

    def on_leave(self, fn: Callable[[WorkerNode], None]) -> None:
        """`fn` runs when a worker is declared dead or unregisters."""
        self._on_leave.append(fn)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._expire_loop, name="cluster-manager", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=10)

    # ---- workers ------------------------------------------------------------------------------
    def register(self, kind: str, address: str, resource_group: str = DEFAULT_RESOURCE_GROUP,
                 parallelism: int = 0, pid: int = 0, id_slot: int = 0) -> WorkerNode:
        """A new worker. A frontend that registers again asks for the row id slot it had
        (`id_slot`), which it keeps when no live frontend holds it (after a new meta took over,
        frontends keep their slots whatever order they come back in)."""
        if kind not in WORKER_KINDS:
            raise ValueError(f"unknown worker kind {kind!r}")
        with self._store.transaction() as tx:
            node_id = next_ids(tx.conn, "worker_node")
        with self._lock:
            slot = self._free_id_slot(node_id, id_slot) if kind == "frontend" else 0
            node = WorkerNode(node_id, kind, address, resource_group or DEFAULT_RESOURCE_GROUP, parallelism,
                              time.time(), pid, slot)
            self._nodes[node_id] = node
            self._last_seen[node_id] = time.monotonic()
        logger.info("%s node %d registered at %s (resource group %s, parallelism %d)", kind, node_id, address,
                    node.resource_group, parallelism)
        for fn in self._on_join:
            fn(node)
        return node

    def _free_id_slot(self, node_id: int, wanted: int = 0) -> int:
        """The row id slot of a new frontend (`risingspark.sequence`: ids carry it in their low
        bits, 1..1023; 0 is the playground's, which does not register): no live frontend holds it.
        The search starts at the slot the node id points at, cyclically, so a slot freed by a
        frontend that left (or that meta declared dead while it may still be running) comes back
        last, after every slot freed before it. A frontend registering again gets the slot it had
        (`wanted`) when no live frontend holds it. Called under the lock."""
        slots = (1 << NODE_BITS) - 1
        held = {n.id_slot for n in self._nodes.values() if n.kind == "frontend"}
        if 1 <= wanted <= slots and wanted not in held:
            return wanted
        first = node_slot(node_id)
        for step in range(slots):
            slot = 1 + (first - 1 + step) % slots
            if slot not in held:
                return slot
        raise ServiceUnavailable(f"{slots} frontends are registered: a frontend's row ids need a slot of their own, "
                                 "and none is free")

    def heartbeat(self, node_id: int) -> bool:
        """Record a heartbeat; False when the worker is unknown (it must register again)."""
        with self._lock:
            if node_id not in self._nodes:
                return False
            self._last_seen[node_id] = time.monotonic()
            return True

    def unregister(self, node_id: int) -> None:
        """A worker that stops cleanly says so instead of waiting for the timeout."""
        self._remove(node_id, "unregistered")

    def is_alive(self, node_id: int) -> bool:
        with self._lock:
            return node_id in self._nodes

    def workers(self, kind: str | None = None, resource_group: str | None = None) -> list[WorkerNode]:
        """Live workers, oldest registration first."""
        with self._lock:
            nodes = sorted(self._nodes.values(), key=lambda n: n.id)
        return [n for n in nodes if (kind is None or n.kind == kind)
                and (resource_group is None or n.resource_group == resource_group)]

    def expire(self, now: float | None = None) -> list[WorkerNode]:
        """Declare dead every worker whose last heartbeat is older than the timeout."""
        now = time.monotonic() if now is None else now
        with self._lock:
            late = [i for i, seen in self._last_seen.items() if now - seen > self.heartbeat_timeout_s]
        return [n for n in (self._remove(i, f"declared dead: no heartbeat for {self.heartbeat_timeout_s:g}s")
                            for i in late) if n is not None]

    def _remove(self, node_id: int, why: str) -> WorkerNode | None:
        with self._lock:
            node = self._nodes.pop(node_id, None)
            self._last_seen.pop(node_id, None)
        if node is None:
            return None
        logger.warning("%s node %d at %s %s", node.kind, node.id, node.address, why)
        for fn in self._on_leave:
            try:
                fn(node)
            except Exception:
                logger.exception("handling the departure of %s node %d failed", node.kind, node.id)
        return node

    def _expire_loop(self) -> None:
        period = max(0.2, min(1.0, self.heartbeat_timeout_s / 4))
        while not self._stop.wait(period):
            self.expire()
