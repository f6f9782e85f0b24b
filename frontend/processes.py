"""`risingspark frontend --processes N`: N frontend processes on one port, and the one that watches them.

The supervisor (the process the command started) makes the group's directory (mode 0700: the
processes' Unix sockets and connection counts, `frontend.pgwire.process_group`), then forks the N
processes before it has started a thread or imported the frontend, so each child begins as a fresh
frontend: it registers with meta as a node of its own, binds the port with ``SO_REUSEPORT``, and
tells the supervisor it serves through a pipe. Once all N do, the supervisor prints the frontend's
ready line. It then waits:

- SIGINT or SIGTERM: passed on to every process, which shuts down as a single frontend does;
- a process that ends on its own (a crash, a failed start): the others are stopped, and the
  supervisor exits with that process's code, as PostgreSQL's postmaster ends every backend when one
  crashes (a service manager then restarts the whole frontend; a process restarted alone would
  replay its DML log while its siblings serve, which nothing here needs).

Each child gets SIGTERM if the supervisor dies, even by kill -9 (``PR_SET_PDEATHSIG``).

What each process has of its own, derived from the frontend's settings (`process_settings`): the
block cache is split evenly; process ``i`` serves ``/metrics`` on ``metrics_port + i``; the DML log of
process 0 is ``dml_log_dir`` itself (where a single-process frontend logs), of process ``i`` the
directory ``process-<i>`` in it. Logs of processes a frontend no longer has (it ran with more before)
are replayed by process 0 and removed (`replay_orphaned_logs`).
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import logging
import os
import shutil
import signal
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from frontend.pgwire.process_group import ProcessGroup
from risingspark.config import FrontendConfig

logger = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1  # prctl(2)
ORPHAN_PREFIX = "process-"


def log_dir(root: str, index: int) -> str:
    """Process `index`'s DML log in the frontend's `root` (empty: no log)."""
    if not root or index == 0:
        return root
    return str(Path(root) / f"{ORPHAN_PREFIX}{index}")


def process_settings(cfg: FrontendConfig, index: int) -> FrontendConfig:
    """The settings process `index` of ``cfg.processes`` runs with (see the module doc)."""
    return dataclasses.replace(
        cfg, block_cache_mb=max(1, cfg.block_cache_mb // cfg.processes),
        metrics_port=cfg.metrics_port + index if cfg.metrics_port else 0,
        dml_log_dir=log_dir(cfg.dml_log_dir, index))


def orphaned_logs(root: str, processes: int) -> list[Path]:
    """DML logs in `root` of processes beyond `processes` (left by a frontend that ran with more)."""
    if not root or not Path(root).is_dir():
        return []
    found = []
    for entry in Path(root).iterdir():
        suffix = entry.name.removeprefix(ORPHAN_PREFIX)
        if entry.is_dir() and entry.name.startswith(ORPHAN_PREFIX) and suffix.isdigit() and int(suffix) >= processes:
            found.append(entry)
    return sorted(found)


def replay_orphaned_logs(meta: Any, store: Any, root: str, processes: int) -> int:
    """Record in meta what the orphaned logs in `root` hold that meta has not, then remove them;
    returns the batches replayed. Each log's statements were acknowledged: they must not be lost
    because the frontend now runs fewer processes."""
    from frontend.dml_commit import GroupCommit
    from frontend.dml_log import DmlLog

    replayed = 0
    for path in orphaned_logs(root, processes):
        log = DmlLog(path)
        commit = GroupCommit(meta, store, log)
        try:
            replayed += commit.replay()
            commit.drain()
        finally:
            commit.close()  # (and the log)
        shutil.rmtree(path)
        logger.info("DML log %s of a process this frontend no longer runs: replayed and removed", path)
    return replayed


def run_processes(cfg: FrontendConfig, serve: Callable[[FrontendConfig, ProcessGroup, Callable[[], None]], int],
                  ready_line: Callable[[], str]) -> int:
    """Fork ``cfg.processes`` processes each running ``serve(settings, group, ready)`` (`ready` to be
    called once the process serves), print `ready_line()` once all are ready, and supervise them
    (see the module doc); returns the exit code."""
    directory = Path(tempfile.mkdtemp(prefix="risingspark-frontend-"))
    ready_r, ready_w = os.pipe()
    children: dict[int, int] = {}  # os pid -> process index
    supervisor = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    for index in range(cfg.processes):
        pid = os.fork()
        if pid == 0:
            os.close(ready_r)
            _child(cfg, ProcessGroup(index, cfg.processes, directory), ready_w, supervisor, serve)
        children[pid] = index
    os.close(ready_w)
    stopping = False
    code = 0

    def stop_all(*_: object) -> None:
        nonlocal stopping
        stopping = True
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    previous = {sig: signal.signal(sig, stop_all) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        ready = 0
        while ready < cfg.processes:
            data = os.read(ready_r, cfg.processes)  # (EOF once every child ended or closed it)
            if not data:
                break
            ready += len(data)
        if ready == cfg.processes:
            print(ready_line(), flush=True)
        while children:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                break
            index = children.pop(pid)
            exit_code = os.waitstatus_to_exitcode(status)
            if not stopping:
                logger.error("frontend process %d (pid %d) ended with %s: stopping the others", index, pid,
                             _describe(exit_code))
                code = exit_code if exit_code > 0 else 1
                stop_all()
            elif exit_code != 0 and code == 0 and exit_code != -signal.SIGTERM:
                code = exit_code if exit_code > 0 else 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        os.close(ready_r)
        shutil.rmtree(directory, ignore_errors=True)
    return code


def _child(cfg: FrontendConfig, group: ProcessGroup, ready_w: int, supervisor: int,
           serve: Callable[[FrontendConfig, ProcessGroup, Callable[[], None]], int]) -> None:
    """The forked process: serve, then exit without returning into the supervisor's stack."""
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != supervisor:  # (it died before the prctl)
            os._exit(1)

        def ready() -> None:
            os.write(ready_w, b"r")
            os.close(ready_w)

        code = serve(process_settings(cfg, group.index), group, ready)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _describe(exit_code: int) -> str:
    return f"signal {signal.Signals(-exit_code).name}" if exit_code < 0 else f"exit code {exit_code}"
