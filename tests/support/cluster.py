"""A RisingSpark cluster of separate local processes (`risingspark meta | compute | compactor |
frontend`), each in its own process group, on free ports, for end-to-end and fault tests."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg

from meta.child_process import free_port as child_free_port

READY = {"meta": "RisingSpark meta is ready", "compute": "RisingSpark compute node is ready",
         "compactor": "RisingSpark compactor is ready", "frontend": "RisingSpark frontend is ready"}


def free_port() -> int:
    """A free port of 127.0.0.1 for a service a test starts, drawn below the kernel's ephemeral range
    as meta draws its children's (`meta.child_process.free_port`)."""
    return child_free_port("127.0.0.1")


@dataclass
class ServiceProcess:
    kind: str
    args: list[str]
    log_path: Path
    port: int
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen | None = None

    def start(self, timeout: float = 180, wait_ready: bool = True) -> ServiceProcess:
        log = open(self.log_path, "ab")  # noqa: SIM115 - closed with the process
        env = {**os.environ, "RISINGSPARK_LOG_LEVEL": "INFO", "PYTHONUNBUFFERED": "1", **self.env}
        self.proc = subprocess.Popen([sys.executable, "-m", "risingspark.cli", self.kind, *self.args],
                                     stdout=subprocess.PIPE, stderr=log, env=env, start_new_session=True)
        if wait_ready:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 180) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline().decode()
            if READY[self.kind] in line:
                return
            if not line and self.proc.poll() is not None:
                break
        raise RuntimeError(f"{self.kind} did not start; log:\n{self.log_tail()}")

    def log_tail(self, lines: int = 60) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 60) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._reap_group()
        return self.proc.returncode

    def kill(self) -> None:
        """kill -9 of the service's whole process group (its Spark JVM and Python workers too)."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)
        self._reap_group()

    def _reap_group(self) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                os.killpg(self.proc.pid, 0)
            except ProcessLookupError:
                return
            if time.monotonic() > deadline - 25:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    return
            time.sleep(0.1)


@dataclass
class LocalCluster:
    """Services of one cluster under `base`: meta's SQLite store and the shared object-store
    directory live there unless a meta store URL or an object store URL is given."""

    base: Path
    meta_store_url: str = ""
    object_store_url: str = ""
    heartbeat_timeout_s: float = 5.0
    services: list[ServiceProcess] = field(default_factory=list)
    meta_ports: list[int] = field(default_factory=list)

    def _service(self, kind: str, args: list[str], port: int, env: dict[str, str] | None = None) -> ServiceProcess:
        n = sum(1 for s in self.services if s.kind == kind)
        svc = ServiceProcess(kind, args, self.base / f"{kind}-{n}.log", port, env or {})
        self.services.append(svc)
        return svc

    @property
    def meta_address(self) -> str:
        return ",".join(f"http://127.0.0.1:{p}" for p in self.meta_ports)

    def meta(self, *, wait_ready: bool = True, extra_args: tuple[str, ...] = ()) -> ServiceProcess:
        port = free_port()
        self.meta_ports.append(port)
        args = ["--port", str(port), "--data-dir", str(self.base / "data"),
                "--heartbeat-timeout-s", str(self.heartbeat_timeout_s)]
        if self.meta_store_url:
            args += ["--meta-store-url", self.meta_store_url]
        if self.object_store_url:
            args += ["--object-store-url", self.object_store_url]
        return self._service("meta", [*args, *extra_args], port).start(wait_ready=wait_ready)

    def compute(self, *, spark_master: str = "local[2]", spark_conf: str = "", parallelism: int = 2,
                env: dict[str, str] | None = None) -> ServiceProcess:
        port = free_port()
        args = ["--port", str(port), "--meta-address", self.meta_address, "--spark-master", spark_master,
                "--parallelism", str(parallelism), "--spark-driver-memory", "2g"]
        if spark_conf:
            args += ["--spark-conf", spark_conf]
        return self._service("compute", args, port, env).start()

    def compactor(self, env: dict[str, str] | None = None, extra_args: tuple[str, ...] = ()) -> ServiceProcess:
        port = free_port()
        return self._service("compactor", ["--port", str(port), "--meta-address", self.meta_address,
                                           "--poll-interval-s", "0.5", *extra_args], port, env).start()

    def frontend(self, extra_args: tuple[str, ...] = ()) -> ServiceProcess:
        port = free_port()
        return self._service("frontend", ["--port", str(port), "--metrics-port", str(free_port()),
                                          "--meta-address", self.meta_address, *extra_args], port).start()

    def connect(self, frontend: ServiceProcess, **kwargs) -> psycopg.Connection:
        return psycopg.connect(self.dsn(frontend), autocommit=True, **kwargs)

    @staticmethod
    def dsn(frontend: ServiceProcess) -> str:
        return f"host=127.0.0.1 port={frontend.port} user=root dbname=dev"

    def active_meta_port(self) -> int:
        for svc in self.services:
            if svc.kind == "meta" and svc.alive:
                try:
                    httpx.get(f"http://127.0.0.1:{svc.port}/api/health", timeout=2).raise_for_status()
                    return svc.port
                except httpx.HTTPError:
                    continue
        raise RuntimeError("no meta is serving")

    def nodes(self) -> list[dict]:
        return httpx.get(f"http://127.0.0.1:{self.active_meta_port()}/api/cluster/nodes", timeout=10).json()

    def logs(self) -> str:
        return "\n".join(f"--- {s.log_path.name}\n{s.log_tail(40)}" for s in self.services)

    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        """Stop the cluster; the services' logs are printed first when its block failed (a service
        that did not start)."""
        if exc_type is not None and issubclass(exc_type, Exception):
            print(self.logs())
        self.stop()

    def stop(self) -> None:
        """Stop every service, frontends first, meta last; anything still running is killed."""
        order = {"frontend": 0, "compactor": 1, "compute": 2, "meta": 3}
        for svc in sorted(self.services, key=lambda s: order[s.kind]):
            svc.stop()
