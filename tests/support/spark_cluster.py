"""A Spark standalone cluster (one master, one worker) started from the installed pyspark with
`spark-class`, bound to 127.0.0.1 on free ports, each daemon in its own process group."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pyspark

from support.cluster import free_port


def spark_home() -> str:
    return os.path.dirname(pyspark.__file__)


@dataclass
class SparkStandalone:
    base: Path
    worker_cores: int = 2
    worker_memory: str = "2g"
    port: int = field(default_factory=free_port)
    web_port: int = field(default_factory=free_port)
    worker_port: int = field(default_factory=free_port)
    worker_web_port: int = field(default_factory=free_port)
    procs: list[subprocess.Popen] = field(default_factory=list)

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _daemon(self, name: str, args: list[str]) -> subprocess.Popen:
        env = {**os.environ, "SPARK_HOME": spark_home(), "SPARK_LOCAL_IP": "127.0.0.1",
               "SPARK_LOG_DIR": str(self.base), "SPARK_WORKER_DIR": str(self.base / "work"),
               # no REST submission server: nothing to bind on 6066
               "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false"}
        log = open(self.base / f"spark-{name}.log", "ab")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen([os.path.join(spark_home(), "bin", "spark-class"), *args], stdout=log,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.procs.append(proc)
        return proc

    def start(self, timeout: float = 120) -> SparkStandalone:
        self.base.mkdir(parents=True, exist_ok=True)
        self._daemon("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                "--port", str(self.port), "--webui-port", str(self.web_port)])
        self._daemon("worker", ["org.apache.spark.deploy.worker.Worker", self.master_url, "--host", "127.0.0.1",
                                "--port", str(self.worker_port), "--webui-port", str(self.worker_web_port),
                                "--cores", str(self.worker_cores), "--memory", self.worker_memory])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                state = self.master_state()
                if any(w["state"] == "ALIVE" for w in state.get("workers", [])):
                    return self
            except (httpx.HTTPError, ValueError):  # not listening yet, or an empty page while it starts
                pass
            if any(p.poll() is not None for p in self.procs):
                break
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the Spark standalone cluster did not start; see {self.base}")

    def master_state(self) -> dict:
        """The master's status JSON (workers, applications)."""
        return httpx.get(f"http://127.0.0.1:{self.web_port}/json/", timeout=30).json()

    def worker_state(self) -> dict:
        """The worker's status JSON (its executors and their applications)."""
        return httpx.get(f"http://127.0.0.1:{self.worker_web_port}/json/", timeout=30).json()

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait(20)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    pass
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
