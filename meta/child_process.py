"""Service processes meta starts itself (serverless backfillers, serverless compaction's extra
compactors): each on a free port, logging to a file of its own, and ending with meta."""

from __future__ import annotations

import contextlib
import ctypes
import os
import random
import signal
import socket
import subprocess
from pathlib import Path

PR_SET_PDEATHSIG = 1  # prctl(2)


LOWEST_PORT = 20000
_PORTS = random.Random()  # (seeded by the OS in each process)


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # (Linux's default)


def free_port(host: str) -> int:
    """A port of `host` nothing listens on, for a child service to bind: drawn at random below the
    kernel's ephemeral range when it can. A port from ``bind(0)`` is one the kernel also gives to
    outgoing connections, and one of those can take it before the child binds it ("address already
    in use": seen in the test suite, where many processes connect at once)."""
    high = _ephemeral_low() - 1
    for _ in range(200 if high > LOWEST_PORT else 0):
        with socket.socket() as s:
            try:
                s.bind((host, _PORTS.randint(LOWEST_PORT, high)))
            except OSError:
                continue
            return s.getsockname()[1]
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def start_child(cmd: list[str], log_path: Path, *, cpus: set[int] | None = None) -> subprocess.Popen:
    """Start `cmd` in a session of its own, stdout and stderr appended to `log_path`. The child gets
    SIGTERM when the thread that started it ends, even by a kill -9 of meta (``PR_SET_PDEATHSIG``);
    with `cpus` it runs on those CPUs only."""

    def in_child() -> None:
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if cpus:
            os.sched_setaffinity(0, cpus)

    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True,
                                preexec_fn=in_child)  # noqa: PLW1509
