"""`risingspark frontend --processes N`: N frontend processes on one port, and the one that watches them.

The supervisor (the process the command started) takes a lock on the host and port (a second group
on the same port would bind it too, with ``SO_REUSEPORT``, and split the connections between two
groups that know nothing of each other), makes the group's directory (mode 0700: the processes'
Unix sockets and connection counts, `frontend.pgwire.process_group`), and forks the N processes
before it has started a thread or imported the wire server, so each child begins as a fresh
frontend: it registers with meta as a node of its own. Each tells the supervisor, through a pipe,
the two steps of its start (`Startup`):

1. **replayed**: its DML log is replayed (process 0 first replays the logs of processes the
   frontend no longer runs, `replay_orphaned_logs`). It then waits until every process has: a
   process serving while another still replays would run statements before statements
   acknowledged earlier are recorded (an UPDATE missing their rows, an older upsert winning);
2. **ready**: it binds the port with ``SO_REUSEPORT`` and serves. Once all N do, the supervisor
   prints the frontend's ready line.

Meanwhile and after, the supervisor waits:

- SIGINT or SIGTERM: passed on to every process, which shuts down as a single frontend does;
- a process that ends on its own (a crash, a failed start, also while the others start): the others
  are stopped, and the supervisor exits with that process's code, as PostgreSQL's postmaster ends
  every backend when one crashes (a service manager then restarts the whole frontend; a process
  restarted alone would replay its DML log while its siblings serve).

Each child gets SIGTERM if the supervisor dies, even by kill -9 (``PR_SET_PDEATHSIG``).

What each process has of its own, derived from the frontend's settings (`process_settings`): the
block cache is split evenly; process ``i`` serves ``/metrics`` on ``metrics_port + i``; the DML log of
process 0 is ``dml_log_dir`` itself (where a single-process frontend logs), of process ``i`` the
directory ``process-<i>`` in it. Logs of processes a frontend no longer has (it ran with more before,
or it runs as one process now) are replayed and removed by process 0 (`replay_orphaned_logs`).
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import fcntl
import logging
import os
import select
import shutil
import signal
import sys
import tempfile
import traceback
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from risingspark.config import FrontendConfig
from risingspark.errors import InternalError, RisingSparkError

if TYPE_CHECKING:
    from frontend.pgwire.process_group import ProcessGroup

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
        # renamed first: a log removed part way (its id first) would be replayed anew, and twice
        gone = path.with_name(f"replayed-{path.name}-{uuid.uuid4().hex[:8]}")
        os.rename(path, gone)
        shutil.rmtree(gone)
        logger.info("DML log %s of a process this frontend no longer runs: replayed and removed", path)
    for leftover in Path(root).glob("replayed-*") if root and Path(root).is_dir() else []:
        shutil.rmtree(leftover, ignore_errors=True)  # (a removal cut short)
    return replayed


class Startup:
    """A forked process's two steps of starting, told to the supervisor through a pipe: `replayed`
    (its DML log is replayed; blocks until every process of the group has replayed its own, so no
    process serves a statement before the statements acknowledged before the start are recorded)
    and `ready` (it serves)."""

    def __init__(self, report_w: int, go_r: int) -> None:
        self._report_w, self._go_r = report_w, go_r

    def replayed(self) -> None:
        os.write(self._report_w, _REPLAYED)
        if os.read(self._go_r, 1) != _GO:  # (EOF: the supervisor ended)
            raise SystemExit(1)
        os.close(self._go_r)

    def ready(self) -> None:
        os.write(self._report_w, _READY)
        os.close(self._report_w)


_REPLAYED, _READY, _GO = b"p", b"r", b"g"
STARTUP_POLL_S = 0.2


def run_processes(cfg: FrontendConfig, serve: Callable[[FrontendConfig, ProcessGroup, Startup], int],
                  ready_line: Callable[[], str]) -> int:
    """Fork ``cfg.processes`` processes each running ``serve(settings, group, startup)``, print
    `ready_line()` once all serve, and supervise them (see the module doc); returns the exit code.

    Raises:
        InternalError: another frontend's processes serve the port already.
    """
    lock = _port_lock(cfg.host, cfg.port)
    directory = Path(tempfile.mkdtemp(prefix="risingspark-frontend-"))
    report_r, report_w = os.pipe()
    go_r, go_w = os.pipe()
    children: dict[int, int] = {}  # os pid -> process index
    supervisor = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    for index in range(cfg.processes):
        pid = os.fork()
        if pid == 0:
            os.close(report_r)
            os.close(go_w)
            os.close(lock)
            _child(cfg, index, directory, Startup(report_w, go_r), supervisor, serve)
        children[pid] = index
    os.close(report_w)
    os.close(go_r)
    stopping = False
    code = 0

    def stop_all(*_: object) -> None:
        nonlocal stopping
        stopping = True
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    def reaped(pid: int, status: int) -> None:
        nonlocal code
        index = children.pop(pid)
        exit_code = os.waitstatus_to_exitcode(status)
        if not stopping:  # (exit code 0: it was stopped, as when a service manager signals every process)
            logger.log(logging.INFO if exit_code == 0 else logging.ERROR, "frontend process %d (pid %d) ended "
                       "with %s: stopping the others", index, pid, _describe(exit_code))
            code = exit_code if exit_code >= 0 else 1
            stop_all()
        elif exit_code != 0 and code == 0 and exit_code != -signal.SIGTERM:
            code = exit_code if exit_code > 0 else 1

    previous = {sig: signal.signal(sig, stop_all) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        reports = b""
        while not stopping and reports.count(_READY) < cfg.processes:  # starting: a child may end meanwhile
            if select.select([report_r], [], [], STARTUP_POLL_S)[0]:
                reports += os.read(report_r, 64)
            if reports.count(_REPLAYED) == cfg.processes and go_w >= 0:
                os.write(go_w, _GO * cfg.processes)
                os.close(go_w)
                go_w = -1
            while children and (ended := os.waitpid(-1, os.WNOHANG))[0]:
                reaped(*ended)
        if not stopping:
            sys.stdout.write(ready_line() + "\n")  # (one write: the processes' lines may come between two)
            sys.stdout.flush()
        while children:
            try:
                reaped(*os.wait())
            except ChildProcessError:
                break
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        os.close(report_r)
        if go_w >= 0:
            os.close(go_w)
        shutil.rmtree(directory, ignore_errors=True)
        os.close(lock)
    return code


def _port_lock(host: str, port: int) -> int:
    """A lock held while a group serves `host`:`port`: ``SO_REUSEPORT`` would let a second group bind
    the same port (a frontend started twice) and split the connections between two groups that know
    nothing of each other."""
    path = Path(tempfile.gettempdir()) / f"risingspark-frontend-{host}-{port}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise InternalError(f"another frontend serves {host}:{port} with processes of its own ({path} is "
                            "locked)") from None
    return fd


def _child(cfg: FrontendConfig, index: int, directory: Path, startup: Startup, supervisor: int,
           serve: Callable[[FrontendConfig, ProcessGroup, Startup], int]) -> None:
    """The forked process: serve, then exit without returning into the supervisor's stack."""
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != supervisor:  # (it died before the prctl)
            os._exit(1)
        from frontend.pgwire.process_group import ProcessGroup  # (after the fork: see the module doc)

        code = serve(process_settings(cfg, index), ProcessGroup(index, cfg.processes, directory), startup)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except KeyboardInterrupt:  # (a Ctrl-C while it started: the terminal's SIGINT reaches every process)
        code = 0
    except Exception as e:  # (a clear line for the operator, as `risingspark.cli` prints one)
        message = e.message if isinstance(e, RisingSparkError) else f"{type(e).__name__}: {e}"
        logger.debug("fatal error", exc_info=True)
        print(f"risingspark frontend (process {index}): {message}", file=sys.stderr, flush=True)
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _describe(exit_code: int) -> str:
    if exit_code >= 0:
        return f"exit code {exit_code}"
    try:
        return f"signal {signal.Signals(-exit_code).name}"
    except ValueError:
        return f"signal {-exit_code}"
