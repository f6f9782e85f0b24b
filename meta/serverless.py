"""The serverless backfill controller: a job created with ``enable_serverless_backfill`` backfills on a
dedicated, auto-provisioned backfiller, then moves to the default resource group.

RisingWave offers serverless backfill in its Cloud only: a controller provisions a temporary
resource group for the creating job, runs its (snapshot) backfill there, and once every backfill
fragment is done migrates the job to the database's resource group and releases the group. Here:

* **Provisioning** (`Provisioner`): a backfiller is a child process running ``risingspark compute
  --resource-group backfill-<n>-<job>`` with a SparkSession of its own, sized by the SKU in the
  server configuration (``[serverless_backfill]``: Spark cores and memory per replica, replicas).
  The ``local`` provisioner gives it ``local[cores × replicas]`` (optionally pinned to some CPUs);
  the ``spark`` provisioner makes it an application on the configured Spark master with
  ``spark.cores.max = cores × replicas``. It registers with meta like any compute node; one not
  ready within ``provision_timeout_s`` (or that exits first) fails the job with a clear error, never
  a job that waits forever.
* **Running** (`_JobDriver`): the job's epoch rounds run on the backfiller, decoupled from the
  default group's barriers, as RisingWave runs a creating snapshot-backfill job on barriers of its
  own: each round reads one split of the upstream snapshot (then the upstream's committed change
  log), and its result is committed with the default group's next checkpoint
  (`BarrierManager.submit_external`). The default group's existing jobs never wait for it.
* **Migration**: when the snapshot is read and the change log consumed up to the checkpoint the
  round started from, the job is marked migrated and added to the default group at its next
  barrier, which consumes the last few epochs of change log and joins the live stream; the
  backfiller is then destroyed.
* **Failure**: a backfiller that dies (or a round that fails) is replaced by a newly provisioned one
  (``backfill-<n+1>-<job>``), which resumes from the last committed split and change-log epoch; so
  does a whole-cluster restart. After `MAX_ATTEMPTS` backfillers the job fails. Cancelling or
  dropping the job destroys its backfiller.

A job's serverless state lives in its catalog entry (``extra["serverless_backfill"]``: the attempt
number, whether it has migrated, and the error that failed it).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from meta.child_process import free_port, start_child
from meta.cluster import ClusterManager, WorkerNode
from meta.dashboard.process import ProcessTreeSampler, ResourceSample, set_resource_gauges
from meta.metrics import METRICS
from meta.remote import call_while, wait_for
from risingspark.barrier import AddJobs, Barrier, Mutation, Throttle
from risingspark.catalog import SERVERLESS_BACKFILL, RelationCatalog
from risingspark.config import ServerlessBackfillConfig
from risingspark.epoch import EpochPair
from risingspark.errors import FeatureNotSupported, RisingSparkError
from risingspark.rpc import RpcClient

if TYPE_CHECKING:
    from meta.catalog import CatalogSnapshot
    from meta.service import MetaService

logger = logging.getLogger(__name__)

SERVERLESS = SERVERLESS_BACKFILL  # `RelationCatalog.extra` key: {"attempt", "group", "migrated", "error"}
MAX_ATTEMPTS = 5  # backfillers provisioned for one job before it fails
SAMPLE_INTERVAL_S = 2.0
SAMPLES_KEPT = 150  # five minutes of CPU and memory samples per backfiller, for the dashboard
NOT_ENABLED_HINT = ("The operator enables it in the server configuration: [serverless_backfill] enabled = true "
                    "(or --serverless-backfill-enabled).")


class ProvisionFailed(RisingSparkError):
    """A backfiller could not be provisioned."""

    sqlstate = "53000"  # insufficient_resources


class _BackfillerLost(Exception):
    """The backfiller died or a round on it failed: provision another and resume."""


class _Stopped(Exception):
    """The controller stops, or the job was dropped."""


def serverless_state(rel: RelationCatalog) -> dict[str, Any] | None:
    """The serverless backfill state of a job, None if it did not ask for one."""
    state = rel.extra.get(SERVERLESS)
    return state if isinstance(state, dict) else None


def on_backfiller(rel: RelationCatalog) -> bool:
    """Whether a creating job's rounds belong to its backfiller (not yet migrated, not failed)."""
    state = serverless_state(rel)
    return rel.is_creating and state is not None and not state.get("migrated")


def jobs_on_backfillers(snapshot: CatalogSnapshot) -> set[int]:
    return {r.id for r in snapshot.relations.values() if on_backfiller(r)}


def backfiller_group(job_id: int, attempt: int) -> str:
    """The temporary resource group (and node name) of a job's `attempt`-th backfiller."""
    return f"backfill-{attempt}-{job_id}"


def check_request(enabled: bool, rel: RelationCatalog) -> None:
    """Refuse a serverless backfill the cluster cannot give (nothing is created then)."""
    if serverless_state(rel) is not None and not enabled:
        raise FeatureNotSupported("serverless backfill is not enabled on this cluster", hint=NOT_ENABLED_HINT)


# ---- provisioning -------------------------------------------------------------------------------
@dataclass
class Backfiller:
    """A provisioned backfiller: its process, and once registered, its compute node."""

    job_id: int
    name: str
    proc: subprocess.Popen
    log_path: Path
    node: WorkerNode | None = None
    client: RpcClient | None = None
    sampler: ProcessTreeSampler | None = None
    rounds: int = 0
    snapshot_rows: int = 0
    samples: deque[ResourceSample] = field(default_factory=lambda: deque(maxlen=SAMPLES_KEPT))

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None


class Provisioner:
    """Starts backfiller processes: ``risingspark compute`` in a temporary resource group."""

    def __init__(self, cfg: ServerlessBackfillConfig, *, meta_address: str, object_store_url: str,
                 log_dir: Path, host: str = "127.0.0.1") -> None:
        self.cfg = cfg
        self.meta_address = meta_address
        self.object_store_url = object_store_url
        self.log_dir = log_dir
        self.host = host

    @property
    def spark_cores(self) -> int:
        return self.cfg.cores * self.cfg.replicas

    def command(self, group: str, port: int) -> list[str]:
        cfg = self.cfg
        cmd = [sys.executable, "-m", "risingspark.cli", "compute", "--resource-group", group, "--node-name", group,
               "--host", self.host, "--port", str(port), "--meta-address", self.meta_address,
               "--object-store-url", self.object_store_url, "--parallelism", str(self.spark_cores)]
        if cfg.provisioner == "local":
            return [*cmd, "--spark-master", f"local[{self.spark_cores}]", "--spark-driver-memory", cfg.memory]
        return [*cmd, "--spark-master", cfg.spark_master, "--spark-conf",
                f"spark.cores.max={self.spark_cores},spark.executor.cores={cfg.cores},"
                f"spark.executor.memory={cfg.memory}"]

    def start(self, job_id: int, group: str) -> Backfiller:
        log_path = self.log_dir / f"{group}.log"
        cpus = self.cfg.cpus() if self.cfg.provisioner == "local" else None
        # A backfiller lives no longer than its meta: it is stopped when the thread that started it
        # (its job's driver) ends, even by a kill -9 of meta. Spark's JVM exits with it.
        proc = start_child(self.command(group, free_port(self.host)), log_path, cpus=cpus)
        logger.info("provisioning backfiller %s for job %d: pid %d, %s Spark core(s)%s, log %s", group, job_id,
                    proc.pid, self.spark_cores, f" on CPUs {sorted(cpus)}" if cpus else "", log_path)
        return Backfiller(job_id, group, proc, log_path)


def _log_tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text[-lines:])


def enable_serverless_backfill(meta: MetaService, cfg: ServerlessBackfillConfig, cluster: ClusterManager,
                               object_store_url: str, meta_address: str, log_dir: Path) -> None:
    """Give meta its serverless backfill controller when the configuration enables it. Backfillers
    register with meta (`cluster`) like compute nodes, at `meta_address`."""
    if not cfg.enabled:
        return
    provisioner = Provisioner(cfg, meta_address=meta_address, object_store_url=object_store_url, log_dir=log_dir)
    meta.serverless = ServerlessBackfillController(meta, cfg, cluster, provisioner)
    logger.info("serverless backfill enabled: %s provisioner, %d core(s) × %d replica(s), %s per replica",
                cfg.provisioner, cfg.cores, cfg.replicas, cfg.memory)


# ---- the controller ---------------------------------------------------------------------------
class ServerlessBackfillController:
    def __init__(self, meta: MetaService, cfg: ServerlessBackfillConfig, cluster: ClusterManager | None,
                 provisioner: Provisioner | None) -> None:
        self.meta = meta
        self.cfg = cfg
        self.cluster = cluster
        self.provisioner = provisioner
        self._lock = threading.Lock()
        self._drivers: dict[int, _JobDriver] = {}
        self._stop = threading.Event()
        self._sampler: threading.Thread | None = None

    @property
    def enabled(self) -> bool:
        return self.cfg.enabled and self.cluster is not None and self.provisioner is not None

    def start(self) -> None:
        """Resume every job that was backfilling on a backfiller when the cluster stopped."""
        self._sampler = threading.Thread(target=self._sample_loop, name="serverless-backfill-monitor", daemon=True)
        self._sampler.start()
        for rel in sorted(self.meta.catalog.snapshot.relations.values(), key=lambda r: r.id):
            if on_backfiller(rel) and not rel.extra.get("queued") and not (serverless_state(rel) or {}).get("error"):
                if self.enabled:
                    logger.info("job %d (%s) resumes its serverless backfill", rel.id, rel.name)
                    self.start_job(rel.id)
                else:
                    self._fail(rel.id, "serverless backfill is not enabled on this cluster any more")

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            drivers = list(self._drivers.values())
        for d in drivers:
            d.stop()
        for d in drivers:
            d.join()
        if self._sampler is not None:
            self._sampler.join(timeout=5)

    def start_job(self, job_id: int) -> None:
        with self._lock:
            if job_id in self._drivers or self._stop.is_set():
                return
            driver = self._drivers[job_id] = _JobDriver(self, job_id)
        driver.start()

    def cancel(self, job_ids: list[int]) -> None:
        """The jobs were dropped or cancelled: destroy their backfillers."""
        with self._lock:
            drivers = [self._drivers[j] for j in job_ids if j in self._drivers]
        for d in drivers:
            d.stop()
        for d in drivers:
            d.join()

    def backfillers(self) -> list[Backfiller]:
        with self._lock:
            return [d.backfiller for d in self._drivers.values() if d.backfiller is not None]

    def _finished(self, driver: _JobDriver) -> None:
        with self._lock:
            if self._drivers.get(driver.job_id) is driver:
                del self._drivers[driver.job_id]

    def _fail(self, job_id: int, error: str) -> None:
        """Fail a job: it stays in SHOW JOBS with the error until it is cancelled or dropped."""
        rel = self.meta.catalog.snapshot.relations.get(job_id)
        if rel is None:
            return
        state = {**(serverless_state(rel) or {}), "error": error}
        with self.meta.store.transaction() as tx:
            self.meta.catalog.set_extra(tx, job_id, {**rel.extra, SERVERLESS: state})
        logger.error("job %d (%s) failed: %s", job_id, rel.name, error)

    # ---- CPU and memory of every backfiller, as gauges labelled with its node name ---------------
    def _sample_loop(self) -> None:
        shown: set[str] = set()
        while not self._stop.wait(SAMPLE_INTERVAL_S):
            live: set[str] = set()
            for bf in self.backfillers():
                if not bf.alive:
                    continue
                try:
                    if bf.sampler is None:
                        bf.sampler = ProcessTreeSampler(bf.pid)
                    res = bf.sampler.sample()
                except Exception:  # noqa: BLE001 - the process may be gone between two checks
                    continue
                bf.samples.append(res)
                set_resource_gauges(METRICS.process_cpu, METRICS.process_memory, bf.name, res)
                live.add(bf.name)
            for name in shown - live:
                remove_node_series(name)
            shown = live


def remove_node_series(node: str) -> None:
    """Drop a node's CPU and memory series (it no longer exists)."""
    for gauge in (METRICS.process_cpu, METRICS.process_memory):
        for labels in [s.labels for m in gauge.collect() for s in m.samples if s.labels.get("node") == node]:
            with contextlib.suppress(KeyError):
                gauge.remove(labels["node"], labels["component"])


class _JobDriver:
    """Provisions backfillers for one job and runs its rounds on them until it migrates."""

    def __init__(self, controller: ServerlessBackfillController, job_id: int) -> None:
        self.controller = controller
        self.meta = controller.meta
        self.job_id = job_id
        self.backfiller: Backfiller | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"serverless-backfill-{job_id}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def join(self) -> None:
        self._thread.join(timeout=60)

    def _rel(self) -> RelationCatalog:
        rel = self.meta.catalog.snapshot.relations.get(self.job_id)
        if rel is None or not on_backfiller(rel):
            raise _Stopped
        return rel

    def _run(self) -> None:
        try:
            while True:
                rel = self._rel()
                state = serverless_state(rel) or {}
                attempt = int(state.get("attempt", 0))
                if attempt >= MAX_ATTEMPTS:
                    self.controller._fail(self.job_id, f"{MAX_ATTEMPTS} backfillers were lost or failed; "
                                                       f"the last: {state.get('last_error', 'unknown')}")
                    return
                try:
                    self.backfiller = self._provision(rel, backfiller_group(self.job_id, attempt))
                except ProvisionFailed as e:
                    self.controller._fail(self.job_id, e.message)
                    return
                try:
                    self._drive(self.backfiller)
                    return  # migrated
                except _BackfillerLost as e:
                    logger.warning("job %d: backfiller %s lost (%s); provisioning another, which resumes from the "
                                   "last checkpoint", self.job_id, self.backfiller.name, e)
                    self._set_state(attempt=attempt + 1, last_error=str(e))
                finally:
                    self._destroy(self.backfiller)
                    self.backfiller = None
        except _Stopped:
            pass
        except Exception:
            logger.exception("serverless backfill of job %d stopped", self.job_id)
        finally:
            self.controller._finished(self)

    def _set_state(self, **changes: Any) -> None:
        rel = self._rel()
        state = {**(serverless_state(rel) or {}), **changes}
        with self.meta.store.transaction() as tx:
            self.meta.catalog.set_extra(tx, self.job_id, {**rel.extra, SERVERLESS: state})

    # ---- provision and destroy ------------------------------------------------------------------
    def _provision(self, rel: RelationCatalog, group: str) -> Backfiller:
        controller = self.controller
        assert controller.provisioner is not None and controller.cluster is not None
        self._set_state(group=group)
        bf = controller.provisioner.start(rel.id, group)
        timeout = controller.cfg.provision_timeout_s
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                node = next(iter(controller.cluster.workers("compute", group)), None)
                if node is not None:
                    bf.node = node
                    bf.client = RpcClient(node.address, service=f"backfiller {group}", retry_s=0, timeout_s=None)
                    logger.info("backfiller %s is ready: compute node %d at %s (pid %d) runs job %d (%s)", group,
                                node.id, node.address, bf.pid, rel.id, rel.name)
                    return bf
                if not bf.alive:
                    raise ProvisionFailed(f"backfiller {group} exited with code {bf.proc.returncode} before it was "
                                          f"ready: {_log_tail(bf.log_path)} (log: {bf.log_path})")
                if self._stop.wait(0.2):
                    raise _Stopped
            raise ProvisionFailed(f"backfiller {group} was not ready {timeout:g} s after it was requested "
                                  f"(log: {bf.log_path})")
        except BaseException:
            self._destroy(bf)
            raise

    def _destroy(self, bf: Backfiller) -> None:
        if bf.client is not None:
            bf.client.close()
        if bf.alive:
            bf.proc.terminate()  # the compute node stops its SparkSession, then exits
            try:
                bf.proc.wait(20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(bf.proc.pid, signal.SIGKILL)
                bf.proc.wait(10)
        with contextlib.suppress(ProcessLookupError):  # Spark's JVM and workers, if they outlived it
            os.killpg(bf.proc.pid, signal.SIGKILL)
        if bf.node is not None and self.controller.cluster is not None:
            self.controller.cluster.unregister(bf.node.id)
        remove_node_series(bf.name)
        logger.info("backfiller %s destroyed (%d rounds, %d snapshot rows)", bf.name, bf.rounds, bf.snapshot_rows)

    # ---- rounds on the backfiller ---------------------------------------------------------------
    def _drive(self, bf: Backfiller) -> None:
        meta = self.meta
        fresh = True  # the backfiller does not run the job yet (or must start it again)
        sent_rate: object = None
        while True:
            rel = self._rel()
            prev = meta.hummock.version.committed_epoch
            epoch = meta.barriers.next_epoch()
            done: Future[int] | None = None
            try:
                rate = rel.extra.get("backfill_rate_limit")
                mutations: list[Mutation] = []
                if fresh:
                    self._call(bf, "reset")
                    mutations.append(AddJobs((meta.barriers.stream_job(rel),)))
                elif rate != sent_rate:
                    mutations.append(Throttle(((self.job_id, rate),)))
                logs = meta.snapshots.log_batches(prev, only={self.job_id}, final=False)
                version = meta.hummock.pin()
                try:
                    barrier = Barrier(EpochPair(epoch, prev), True, version, tuple(mutations), (), fresh,
                                      tuple(logs))
                    result = self._call(bf, "run_epoch", barrier)
                finally:
                    meta.hummock.unpin(version)
                sent_rate = rate
                bf.rounds += 1
                done = meta.barriers.submit_external(result)  # (which releases the epoch when it is done)
                try:
                    self._wait_committed(done)
                except _BackfillerLost:
                    fresh = True  # the checkpoint failed: the backfiller's state is ahead of the committed one
                    continue
            finally:
                if done is None:  # the round never reached meta: its files are garbage
                    meta.barriers.release_epoch(epoch)
            fresh = False
            bf.snapshot_rows += sum(r.rows_read for r in result.backfill)
            state = meta.snapshots.load(self.job_id)
            if state is None:
                raise _Stopped
            if state.snapshot_done and state.consumed_epoch >= prev:
                self._migrate()
                return

    def _migrate(self) -> None:
        """Hand the job to the default resource group at its next barrier."""
        self._set_state(migrated=True)
        rel = self.meta.catalog.snapshot.relations[self.job_id]
        self.meta.barriers.add_mutation(AddJobs((self.meta.barriers.stream_job(rel),)))
        logger.info("job %d (%s): backfill done on %s; migrating to resource group default at the next barrier",
                    self.job_id, rel.name, self.backfiller.name if self.backfiller else "its backfiller")

    def _call(self, bf: Backfiller, method: str, *args: Any) -> Any:
        """Call the backfiller while it lives; its death (or any failure of the call) loses it."""
        client = bf.client
        assert client is not None

        def check() -> None:
            if not bf.alive:
                raise _BackfillerLost(f"process {bf.pid} exited with code {bf.proc.returncode}")
            if self._stop.is_set():
                raise _Stopped

        try:
            return call_while(lambda: client.call(method, *args, timeout_s=None), check, f"{bf.name}-{method}")
        except (_BackfillerLost, _Stopped):
            raise
        except RisingSparkError as e:
            raise _BackfillerLost(e.message) from e
        except Exception as e:  # noqa: BLE001 - any failure of the call loses the backfiller
            raise _BackfillerLost(f"{type(e).__name__}: {e}") from e

    def _wait_committed(self, done: Future[int]) -> int:
        def check() -> None:
            if self._stop.is_set():
                raise _Stopped

        try:
            return wait_for(done, check)
        except _Stopped:
            raise
        except Exception as e:  # noqa: BLE001 - the checkpoint failed; meta recovers
            raise _BackfillerLost(f"the checkpoint failed: {e}") from e
