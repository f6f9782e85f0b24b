"""Service processes meta starts itself (serverless backfillers, serverless compaction's extra
compactors): each on a free port, logging to a file of its own, and ending with meta."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
from pathlib import Path

PR_SET_PDEATHSIG = 1  # prctl(2)


def free_port(host: str) -> int:
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
