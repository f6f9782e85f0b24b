"""`frontend.processes`: the supervisor forks the processes, prints the ready line once all serve,
stops them all on SIGTERM, and stops the rest when one dies; each process's settings. The processes
here serve fake sessions (`tests/unit/pgwire/fakes.py`) on one port, in a supervisor started as a
process of its own (it forks and handles signals)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from frontend.processes import process_settings
from meta.child_process import free_port
from risingspark.config import FrontendConfig

SUPERVISOR = """
import asyncio, os, sys, time
sys.path.insert(0, sys.argv[2])
from pgwire.fakes import FakeSession, FakeState
from frontend.pgwire.server import SHUTDOWN_SIGNALS, PgServer, run_server
from frontend.processes import run_processes
from risingspark.config import FrontendConfig

def say(line):  # (one write: a print of two would let the other process's line come between)
    sys.stdout.write(line + "\\n")
    sys.stdout.flush()

def serve(cfg, group, startup):
    if group.index == int(os.environ.get("FAIL_PROCESS", "-1")):
        raise RuntimeError("cannot start")
    time.sleep(1.0 if group.index == 0 else 0)  # (process 0 replays its log for a second)
    say(f"process {group.index} replayed")
    startup.replayed()
    async def main():
        state = FakeState()
        server = PgServer(cfg.host, cfg.port, lambda: FakeSession(state), group=group)
        await server.start()
        stop = asyncio.Event()
        for sig in SHUTDOWN_SIGNALS:
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        say(f"process {group.index} serves, pid {os.getpid()}, cache {cfg.block_cache_mb}")
        startup.ready()
        await stop.wait()
        await server.stop()
    run_server(main(), "asyncio")
    say(f"process {group.index} stopped")
    return 0

cfg = FrontendConfig(port=int(sys.argv[1]), processes=2, metrics_port=0, block_cache_mb=64)
sys.exit(run_processes(cfg, serve, lambda: "READY"))
"""
FAKES = str(Path(__file__).parents[1])  # (tests/unit: `pgwire.fakes`)


class Supervisor:
    def __init__(self, env: dict[str, str] | None = None, port: int = 0) -> None:
        self.port = port or free_port("127.0.0.1")
        self.proc = subprocess.Popen([sys.executable, "-c", SUPERVISOR, str(self.port), FAKES], text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
        self.lines: list[str] = []

    def wait_for(self, text: str, timeout: float = 60) -> bool:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                return False
            self.lines.append(line)
            if text in line:
                return True
        return False

    def children(self) -> dict[int, int]:
        """The processes' os pids, by index."""
        return {int(line.split()[1]): int(line.split("pid ")[1].split(",")[0]) for line in self.lines
                if " serves, pid " in line}

    def finish(self, timeout: float = 30) -> int:
        out, _ = self.proc.communicate(timeout=timeout)
        self.lines += out.splitlines(keepends=True)
        return self.proc.returncode


@pytest.fixture
def supervisor() -> Iterator[Supervisor]:
    s = Supervisor()
    yield s
    if s.proc.poll() is None:
        s.proc.kill()
        s.proc.wait()
    for pid in s.children().values():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _gone(pid: int, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_the_processes_serve_one_port_and_stop_on_sigterm(supervisor: Supervisor) -> None:
    assert supervisor.wait_for("READY"), "".join(supervisor.lines)
    children = supervisor.children()
    assert len(children) == 2, supervisor.lines
    # no process serves before every process replayed its DML log (process 0 took a second)
    steps = [line.split()[2] for line in supervisor.lines if line.startswith("process ")]
    assert steps == ["replayed", "replayed", "serves,", "serves,"], supervisor.lines
    second = Supervisor(port=supervisor.port)  # (another frontend of processes on the same port)
    assert second.finish() == 1 and "another frontend serves 127.0.0.1:" in "".join(second.lines)
    assert all("cache 32" in line for line in supervisor.lines if "serves" in line)
    conns = [psycopg.connect(f"host=127.0.0.1 port={supervisor.port} user=root dbname=dev", autocommit=True)
             for _ in range(24)]
    try:
        assert {(c.info.backend_pid - 1) % 2 for c in conns} == {0, 1}  # (24 on one process: odds 2^-23)
    finally:
        for c in conns:
            c.close()
    supervisor.proc.send_signal(signal.SIGTERM)
    assert supervisor.finish() == 0
    text = "".join(supervisor.lines)
    assert "process 0 stopped" in text and "process 1 stopped" in text
    assert all(_gone(pid) for pid in children.values())


def test_when_a_process_dies_the_others_stop_and_the_frontend_fails(supervisor: Supervisor) -> None:
    assert supervisor.wait_for("READY"), "".join(supervisor.lines)
    children = supervisor.children()
    os.kill(children[1], signal.SIGKILL)
    assert supervisor.finish() == 1
    assert _gone(children[0])
    assert "frontend process 1 (pid" in "".join(supervisor.lines)
    assert "process 0 stopped" in "".join(supervisor.lines)
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(f"host=127.0.0.1 port={supervisor.port} user=root dbname=dev connect_timeout=5")


def test_a_process_that_fails_to_start_fails_the_frontend() -> None:
    s = Supervisor({"FAIL_PROCESS": "1"})
    try:
        assert not s.wait_for("READY")
        assert s.finish() == 1
        assert "risingspark frontend (process 1): RuntimeError: cannot start" in "".join(s.lines)
    finally:
        if s.proc.poll() is None:
            s.proc.kill()


def test_each_process_has_its_share_of_the_settings() -> None:
    cfg = FrontendConfig(processes=3, block_cache_mb=512, metrics_port=2222, dml_log_dir="/data/log")
    settings = [process_settings(cfg, i) for i in range(3)]
    assert [s.block_cache_mb for s in settings] == [170, 170, 170]
    assert [s.metrics_port for s in settings] == [2222, 2223, 2224]
    assert [s.dml_log_dir for s in settings] == ["/data/log", "/data/log/process-1", "/data/log/process-2"]
    no_extras = process_settings(FrontendConfig(processes=2, metrics_port=0, dml_log_dir=""), 1)
    assert no_extras.metrics_port == 0 and no_extras.dml_log_dir == ""
