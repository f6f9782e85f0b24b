"""Distributed mode for a frontend in a process of its own (`risingspark frontend`): its queries run
on a compute node of the default resource group (`compute.server` serves ``run_batch_query``), found
through meta's list of live workers, one after the other for successive queries.

The rows come back as an Arrow IPC stream in the RPC's answer (results are not streamed yet: a
result must fit the frontend's and the node's memory). A cancel (the client's, or the statement
timeout) sends ``cancel_batch_query`` to the node, which cancels the query's Spark jobs.
"""

from __future__ import annotations

import itertools
import logging
import threading
import uuid
from typing import Any

import pyarrow as pa

from risingspark.batch_query import BatchRelation
from risingspark.errors import FeatureNotSupported, QueryCanceled
from risingspark.rpc import RpcClient

logger = logging.getLogger(__name__)

CANCEL_POLL_S = 0.05


class RemoteBatchRunner:
    """`frontend.distributed.DistributedRunner` over RPC to compute nodes."""

    def __init__(self, meta: Any) -> None:
        self._meta = meta
        self._turn = itertools.count()
        self._clients: dict[str, RpcClient] = {}
        self._lock = threading.Lock()

    def _node(self) -> RpcClient:
        addresses = self._meta.compute_nodes()
        if not addresses:
            raise FeatureNotSupported("distributed query mode needs a live compute node; none is registered")
        address = addresses[next(self._turn) % len(addresses)]
        with self._lock:
            client = self._clients.get(address)
            if client is None:
                client = self._clients[address] = RpcClient(address, service="compute", retry_s=0, timeout_s=None)
            return client

    def explain(self, sql: str, relations: list[BatchRelation]) -> str:
        return self._node().call("explain_batch_query", sql, relations)

    def run(self, sql: str, relations: list[BatchRelation], cancel: threading.Event | None = None,
            cancellable: bool = False, time_zone: str | None = None) -> pa.Table:
        node, query_id = self._node(), uuid.uuid4().hex
        done = threading.Event()

        def watch() -> None:
            while not done.wait(CANCEL_POLL_S):
                if cancel is not None and cancel.is_set():
                    try:  # (the node keeps a cancel that overtakes its query)
                        node.call("cancel_batch_query", query_id, timeout_s=10)
                    except Exception:  # noqa: BLE001 - the query's own call reports a dead node
                        logger.warning("could not cancel distributed query %s", query_id, exc_info=True)
                    return

        watcher = threading.Thread(target=watch, name="remote-batch-cancel", daemon=True)
        watcher.start()
        try:
            # (the flag and the zone only when set: a compute node older than them takes the call without)
            args = (query_id, sql, relations, *((cancellable,) if cancellable or time_zone else ()),
                    *((time_zone,) if time_zone else ()))
            data = node.call("run_batch_query", *args, timeout_s=None)
        finally:
            done.set()
            watcher.join()
        if cancel is not None and cancel.is_set():
            raise QueryCanceled("canceling statement due to user request")
        return pa.ipc.open_stream(pa.py_buffer(data)).read_all()
