"""Serverless compaction: extra compactors while compaction falls behind, retired once it has caught
up.

RisingWave's serverless backfill docs warn that a large backfill's writes overload compaction
(compaction back pressure, write stalls) and point to serverless compaction, which scales compactor
nodes with the compaction load (RisingWave Cloud's controller watches ``compact_pending_bytes``).
Here meta's controller, every `CHECK_INTERVAL_S`:

* sums every table's pending compaction bytes (`level_selector.pending_compaction_bytes`, what
  ``risingspark_compaction_pending_bytes`` exports) and wants ``ceil(pending / pending_mb)``
  compactors, at most `max_compactors`;
* **scales up** one compactor at a time while it runs fewer than it wants: a child process
  ``risingspark compactor --meta-address <meta>`` that registers with meta and takes tasks like any
  other (with ``--spark-master`` when `spark_master` is set: its big tasks then run as Spark jobs on
  that cluster, whose dynamic allocation gives them executors). The next start waits until the last
  one has registered;
* **scales down** when it wants fewer than it runs and has for `idle_s`: the youngest registered
  one is stopped with SIGTERM (it finishes the task in hand first; meta gives up a task only if it
  dies). One still starting is left to register first: stopped mid-start, its start was wasted, and
  on a loaded machine a start can take longer than `idle_s`;
* forgets a compactor that died (meta gives its task up, as any dead compactor's); the next check
  starts another if still needed.

Compactors die with meta (``PR_SET_PDEATHSIG``). The dashboard lists them (``compactor
(serverless)``) and ``/api/serverless_compaction`` shows the controller's state.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from meta.child_process import free_port, start_child

if TYPE_CHECKING:
    from meta.cluster import ClusterManager
    from meta.service import MetaService

logger = logging.getLogger(__name__)

CHECK_INTERVAL_S = 2.0
REGISTER_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 120.0  # a retiring compactor's task in hand has this long to finish


@dataclass(frozen=True)
class ServerlessCompactionConfig:
    enabled: bool = False
    max_compactors: int = 2
    pending_mb: int = 256
    idle_s: float = 60.0
    spark_master: str = ""

    @classmethod
    def of(cls, cfg) -> ServerlessCompactionConfig:
        """The ``serverless_compaction_*`` settings of a playground or meta."""
        out = cls(enabled=cfg.serverless_compaction_enabled, max_compactors=cfg.serverless_compaction_max_compactors,
                  pending_mb=cfg.serverless_compaction_pending_mb, idle_s=cfg.serverless_compaction_idle_s,
                  spark_master=cfg.serverless_compaction_spark_master)
        if out.max_compactors < 1 or out.pending_mb < 0 or out.idle_s < 0:
            raise ValueError("serverless_compaction_max_compactors must be at least 1, and "
                             "serverless_compaction_pending_mb and serverless_compaction_idle_s not negative")
        return out


@dataclass
class ExtraCompactor:
    """A compactor the controller started: its process and, once registered, its node id."""

    name: str
    proc: subprocess.Popen
    log_path: Path
    started_at: float = field(default_factory=time.time)
    node_id: int | None = None
    retiring_since: float | None = None  # when it was asked to stop

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None


class ServerlessCompactionController:
    def __init__(self, meta: MetaService, cfg: ServerlessCompactionConfig, cluster: ClusterManager, *,
                 meta_address: str, object_store_url: str, log_dir: Path, host: str = "127.0.0.1") -> None:
        self.meta = meta
        self.cfg = cfg
        self.cluster = cluster
        self.meta_address = meta_address
        self.object_store_url = object_store_url
        self.log_dir = log_dir
        self.host = host
        self._lock = threading.Lock()
        self._compactors: list[ExtraCompactor] = []
        self._started = 0
        self._below_since: float | None = None  # since when fewer compactors are wanted than run
        self.pending_bytes = 0
        self.wanted = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ---- lifecycle --------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="serverless-compaction", daemon=True)
        self._thread.start()
        logger.info("serverless compaction enabled: up to %d extra compactor(s), one per %d MiB pending",
                    self.cfg.max_compactors, self.cfg.pending_mb)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        compactors = self.compactors()  # (after the loop: it starts no compactor once stopping)
        for c in compactors:
            self._retire(c, time.time())
        for c in compactors:
            try:
                c.proc.wait(30)
            except subprocess.TimeoutExpired:
                _kill(c)

    def compactors(self) -> list[ExtraCompactor]:
        with self._lock:
            return list(self._compactors)

    # ---- the control loop -----------------------------------------------------------------------
    def _loop(self) -> None:
        while not self._stop.wait(CHECK_INTERVAL_S):
            try:
                self.check()
            except Exception:
                logger.exception("serverless compaction check failed")

    def check(self, now: float | None = None) -> None:
        """One step: measure the backlog, then start or retire at most one compactor."""
        now = time.time() if now is None else now
        self.pending_bytes = self._pending_bytes()
        per = max(1, self.cfg.pending_mb) << 20
        self.wanted = min(self.cfg.max_compactors, math.ceil(self.pending_bytes / per)) if self.pending_bytes else 0
        running = [c for c in self._reap(now) if c.retiring_since is None]
        stuck = [c for c in running if c.node_id is None and now - c.started_at > REGISTER_TIMEOUT_S]
        for c in stuck:  # (wanted or not: an idle one is not retired before it registers)
            logger.warning("extra compactor %s did not register in %.0f s: stopping it", c.name, REGISTER_TIMEOUT_S)
            self._retire(c, now)
        if stuck:
            return
        if self.wanted > len(running):
            self._below_since = None
            if all(c.node_id is not None for c in running) and not self._stop.is_set():
                self._launch(now)  # (the last one started has registered)
        elif self.wanted < len(running):
            if self._below_since is None:
                self._below_since = now
            elif now - self._below_since >= self.cfg.idle_s and (registered := [
                    c for c in running if c.node_id is not None]):
                youngest = max(registered, key=lambda c: c.started_at)
                logger.info("compaction caught up (%d bytes pending): retiring extra compactor %s",
                            self.pending_bytes, youngest.name)
                self._retire(youngest, now)
                self._below_since = now
        else:
            self._below_since = None

    def _pending_bytes(self) -> int:
        return sum(self.meta.compaction.pending_bytes().values())

    def _reap(self, now: float) -> list[ExtraCompactor]:
        """The live compactors, each with its node id once registered; the dead ones forgotten, and
        one that ignored SIGTERM for `STOP_TIMEOUT_S` killed."""
        nodes = {n.pid: n.id for n in self.cluster.workers("compactor")}
        with self._lock:
            for c in self._compactors:
                if c.node_id is None:
                    c.node_id = nodes.get(c.pid)
                if not c.alive and c.retiring_since is None:
                    logger.warning("extra compactor %s exited (code %s); its log: %s", c.name, c.proc.returncode,
                                   c.log_path)
                elif c.alive and c.retiring_since is not None and now - c.retiring_since > STOP_TIMEOUT_S:
                    _kill(c)
            self._compactors = [c for c in self._compactors if c.alive]
            return list(self._compactors)

    def command(self, port: int) -> list[str]:
        """The command line of an extra compactor."""
        cmd = [sys.executable, "-m", "risingspark.cli", "compactor", "--host", self.host, "--port", str(port),
               "--meta-address", self.meta_address, "--object-store-url", self.object_store_url,
               "--poll-interval-s", "0.5"]
        return [*cmd, "--spark-master", self.cfg.spark_master] if self.cfg.spark_master else cmd

    def _launch(self, now: float) -> None:
        self._started += 1
        name = f"compactor-serverless-{self._started}"
        log_path = self.log_dir / f"{name}.log"
        proc = start_child(self.command(free_port(self.host)), log_path)  # it ends with meta
        with self._lock:
            self._compactors.append(ExtraCompactor(name, proc, log_path, started_at=now))
        logger.info("compaction is behind (%d bytes pending, %d compactor(s) wanted): started %s, pid %d, log %s",
                    self.pending_bytes, self.wanted, name, proc.pid, log_path)

    def _retire(self, c: ExtraCompactor, now: float) -> None:
        """Ask a compactor to stop: it finishes the task in hand, unregisters and exits."""
        with self._lock:
            c.retiring_since = now
        with contextlib.suppress(ProcessLookupError):
            c.proc.send_signal(signal.SIGTERM)


def enable_serverless_compaction(meta: MetaService, cfg: ServerlessCompactionConfig, cluster: ClusterManager,
                                 object_store_url: str, meta_address: str, log_dir: Path) -> None:
    """Give meta its serverless compaction controller when the configuration enables it; it starts
    with meta (`MetaService.start`)."""
    if cfg.enabled:
        meta.serverless_compaction = ServerlessCompactionController(
            meta, cfg, cluster, meta_address=meta_address, object_store_url=object_store_url, log_dir=log_dir)


def _kill(c: ExtraCompactor) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(c.proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        c.proc.wait(10)
