"""Resource groups other than the default one: the epoch rounds of their jobs.

As RisingWave, a database belongs to a resource group (``CREATE DATABASE d WITH (resource_group =
'rg')``) and its streaming jobs run on that group's compute nodes (``risingspark compute
--resource-group rg``). A query never reads across databases, so the jobs of a group read only
tables and MVs of the same group: a group's rounds need nothing from another group's round.

The default group's barrier manager stays the only committer: each other group runs its own rounds
(`GroupRounds`, one thread each) on the oldest live compute node of the group, and hands every result
to the barrier manager, which commits it with its next checkpoint (`BarrierManager.submit_external`),
in the same meta-store transaction as the default group's work. One round of a group is in flight at a
time; its DML batches are marked consumed by that commit. A failed round or commit (the group's node
died, or meta recovers) makes the group start its jobs again from the committed state, as a recovery.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future
from typing import TYPE_CHECKING

from meta.barrier.manager import pending_dml, topological
from meta.remote import RemoteComputeGroup, wait_for
from risingspark.barrier import AddJobs, Barrier, Mutation
from risingspark.catalog import DEFAULT_RESOURCE_GROUP, RelationCatalog
from risingspark.epoch import EpochPair
from risingspark.errors import ServiceUnavailable

if TYPE_CHECKING:
    from meta.catalog import CatalogSnapshot
    from meta.service import MetaService

logger = logging.getLogger(__name__)

RETRY_S = 1.0


def group_jobs(snapshot: CatalogSnapshot, group: str) -> list[RelationCatalog]:
    """The jobs a group's rounds run: those of its databases, not queued, not on a serverless
    backfiller, upstream first."""
    from meta.serverless import on_backfiller

    return topological([r for r in snapshot.relations.values()
                        if r.plan is not None and r.resource_group == group and not r.extra.get("queued")
                        and not on_backfiller(r)])


def jobs_of_other_groups(snapshot: CatalogSnapshot) -> set[int]:
    return {r.id for r in snapshot.relations.values() if r.resource_group != DEFAULT_RESOURCE_GROUP}


class GroupRounds:
    """The rounds of one resource group's jobs on its compute node."""

    def __init__(self, meta: MetaService, group: str, compute: RemoteComputeGroup) -> None:
        self.meta = meta
        self.group = group
        self.compute = compute
        self._lock = threading.Lock()
        self._mutations: list[Mutation] = []
        self._fresh = True  # (re)start every job from the committed state at the next round
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"resource-group-{group}", daemon=True)
        self._waiting_logged = False

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def add_mutation(self, mutation: Mutation) -> None:
        with self._lock:
            self._mutations.append(mutation)

    def request_recovery(self) -> None:
        with self._lock:
            self._fresh = True

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self._round()
            except _Stopped:
                return
            except Exception as e:  # noqa: BLE001 - any failure: start the group's jobs again
                with self._lock:
                    self._fresh = True
                message = e.message if isinstance(e, ServiceUnavailable) else f"{type(e).__name__}: {e}"
                logger.warning("resource group %s: round failed (%s); its jobs start again from the last "
                               "checkpoint", self.group, message)
                self._stop.wait(RETRY_S)
            interval = self.meta.params.barrier_interval_ms / 1000
            self._stop.wait(max(0.0, started + interval - time.monotonic()))

    def _round(self) -> None:
        meta = self.meta
        jobs = group_jobs(meta.catalog.snapshot, self.group)
        if not jobs:
            with self._lock:
                self._mutations.clear()
                self._fresh = True
            return
        if not self.compute._active_nodes():
            if not self._waiting_logged:
                logger.warning("resource group %s has %d job(s) but no live compute node: they wait for one "
                               "(risingspark compute --resource-group %s)", self.group, len(jobs), self.group)
                self._waiting_logged = True
            return
        self._waiting_logged = False
        with self._lock:
            fresh = self._fresh or self.compute.needs_recovery()
            mutations, self._mutations = self._mutations, []
            self._fresh = False
        if fresh:
            self.compute.reset()
            mutations = [AddJobs(tuple(meta.barriers.stream_job(r) for r in jobs)),
                         *[m for m in mutations if not isinstance(m, AddJobs)]]
            logger.info("resource group %s: starting %d job(s) from the committed state", self.group, len(jobs))
        ids = {r.id for r in jobs}
        dml, _ = pending_dml(meta.store, ids.__contains__)
        prev = meta.hummock.version.committed_epoch
        epoch = meta.barriers.next_epoch()
        done: Future[int] | None = None
        try:
            version = meta.hummock.pin()
            try:
                barrier = Barrier(EpochPair(epoch, prev), True, version, tuple(mutations), tuple(dml), fresh,
                                  tuple(meta.snapshots.log_batches(prev, only=ids)))
                result = self.compute.run_epoch(barrier)
            except BaseException:
                with self._lock:
                    self._fresh = True
                raise
            finally:
                meta.hummock.unpin(version)
            done = meta.barriers.submit_external(result, dml)  # (which releases the epoch when it is done)
            self._wait(done)
        finally:
            if done is None:  # the round never reached meta: its files are garbage
                meta.barriers.release_epoch(epoch)

    def _wait(self, done: Future[int]) -> None:
        def check() -> None:
            if self._stop.is_set():
                raise _Stopped

        wait_for(done, check)


class _Stopped(Exception):
    pass
