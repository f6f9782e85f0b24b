"""Meta's side of remote compute nodes: a `ComputeClient` that sends barriers over HTTP.

A resource group's epoch rounds run on one compute node, the Spark driver of that group: the
oldest live compute node registered for the group (more nodes of a group are warm spares; Spark
spreads the work over the cluster's executors). Recovery binds the group to its active node
(`reset`); a round fails, and meta recovers, when that node died or another one became active, as
RisingWave re-schedules actors after a worker is lost.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

from meta.cluster import ClusterManager, WorkerNode
from risingspark.barrier import Barrier, EpochResult
from risingspark.catalog import DEFAULT_RESOURCE_GROUP
from risingspark.errors import ServiceUnavailable
from risingspark.rpc import RpcClient

logger = logging.getLogger(__name__)
T = TypeVar("T")


def call_while(fn: Callable[[], T], check: Callable[[], None], name: str, poll_s: float = 0.5) -> T:
    """Run `fn` (a remote call that may take long) in a thread of its own and wait for its answer,
    running `check` every `poll_s` meanwhile: `check` raising (the peer died, the caller stops) ends
    the wait with that error; the call's own error is raised as is."""
    done: Future[T] = Future()

    def call() -> None:
        try:
            done.set_result(fn())
        except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
            done.set_exception(e)

    threading.Thread(target=call, name=name, daemon=True).start()
    return wait_for(done, check, poll_s)


def wait_for(done: Future[T], check: Callable[[], None], poll_s: float = 0.5) -> T:
    """The future's result, running `check` every `poll_s` while it is not there (`check` raising
    ends the wait with that error)."""
    while True:
        try:
            return done.result(timeout=poll_s)
        except TimeoutError:
            check()


class RemoteComputeGroup:
    """The compute nodes of one resource group, reached through the cluster manager."""

    def __init__(self, cluster: ClusterManager, resource_group: str = DEFAULT_RESOURCE_GROUP) -> None:
        self._cluster = cluster
        self.resource_group = resource_group
        self._bound: WorkerNode | None = None
        self._clients: dict[int, RpcClient] = {}
        self._lock = threading.Lock()

    @property
    def bound_node(self) -> WorkerNode | None:
        """The compute node the running jobs live on (None until the first recovery)."""
        return self._bound

    @property
    def default_parallelism(self) -> int | None:
        node = self._bound or next(iter(self._active_nodes()), None)
        return node.parallelism if node is not None and node.parallelism else None

    def needs_recovery(self) -> bool:
        """Whether the jobs are not running on the active node (no node bound, or it died)."""
        nodes = self._active_nodes()
        return bool(nodes) and (self._bound is None or self._bound.id != nodes[0].id)

    def reset(self) -> None:
        node = self._active()
        self._client(node).call("reset")
        self._bound = node
        logger.info("resource group %s runs on compute node %d at %s", self.resource_group, node.id, node.address)

    def run_epoch(self, barrier: Barrier) -> EpochResult:
        node = self._active()
        if self._bound is None or node.id != self._bound.id:
            raise ServiceUnavailable(f"compute node {node.id} is now active in resource group "
                                     f"{self.resource_group}: its jobs must be recovered")
        # Wait for the answer while the node is alive: a node declared dead fails the round at once.
        def check() -> None:
            if not self._cluster.is_alive(node.id):
                raise ServiceUnavailable(f"compute node {node.id} at {node.address} died during epoch "
                                         f"{barrier.epoch.curr}")

        return call_while(lambda: self._client(node).call("run_epoch", barrier, timeout_s=None), check,
                          f"barrier-{barrier.epoch.curr}")

    def forget(self, node: WorkerNode) -> None:
        with self._lock:
            client = self._clients.pop(node.id, None)
        if client is not None:
            client.close()

    def _active_nodes(self) -> list[WorkerNode]:
        return self._cluster.workers("compute", self.resource_group)

    def _active(self) -> WorkerNode:
        nodes = self._active_nodes()
        if not nodes:
            raise ServiceUnavailable(f"no compute node of resource group {self.resource_group} is alive")
        return nodes[0]

    def _client(self, node: WorkerNode) -> RpcClient:
        with self._lock:
            client = self._clients.get(node.id)
            if client is None:
                client = self._clients[node.id] = RpcClient(node.address, service=f"compute node {node.id}",
                                                            retry_s=0, timeout_s=None)
            return client
