"""A frontend's DML log: the rows of an acknowledged small statement made durable on the frontend's
disk, one ``fdatasync`` for every statement waiting at once, before meta records them — as
PostgreSQL's WAL makes a commit durable before the data files are written.

Without it, a durable statement waits for meta to record its batch (`frontend.dml_commit`): a
Parquet file and a meta-store transaction per statement when it writes alone, ~4 ms in the playground
(`bench/serving.py`), where an append and an ``fdatasync`` take ~0.2 ms on the same disk.

The algorithm:

- **Append.** A record is ``[length u32][crc32 u32][seq u64][table id u32][rows]``, the rows an Arrow
  IPC stream or a single-row INSERT's tuples (`frontend.dml_rows`),
  the CRC over everything after it. Records get consecutive sequence numbers; the group commit
  writes each under its own lock, so the log's order is the order its batches are recorded in.
- **Sync.** A writer waits until an ``fdatasync`` that began after its record was written returns.
  The first waiter leads: it syncs everything written so far, and the writers that came meanwhile
  wait for it or lead the next one (PostgreSQL's WAL flush, and the leader/follower of
  `frontend.dml_commit`).
- **Recorded.** Meta records the log's newest recorded record in the transaction that records the
  batches (`meta.service.MetaService.submit_dml_batches` with ``log``), so the log and meta's batches
  cannot disagree. Segments every record of which is recorded are deleted.
- **Tied to a cluster.** A new log is registered with meta before its first record
  (`MetaService.dml_log_open`); a log with records that meta has never heard of was written for
  another cluster, or before its meta store was reset, and is refused: its records name tables by ids
  that mean other tables, or nothing, here.
- **Open.** The records after meta's recorded one are acknowledged statements meta may not have:
  the group commit records them again before the frontend serves (`GroupCommit.replay`). A record cut
  by a crash (short, or failing its CRC) ends the log: its statement was never acknowledged. Appends
  then go to a new segment, numbered on from both the records found and meta's recorded one (a record
  numbered at or below it would never be replayed).
- **Segments** roll at `SEGMENT_BYTES`; each is named by its first record's number. A new segment is
  written whole with zeros and synced before its first record (PostgreSQL's ``wal_init_zero``; by a
  thread of its own, ahead of the roll that takes it), so
  a record's ``fdatasync`` writes data only: appended to a growing file, it had to commit the new
  size to the file system's journal as well. The zeros after the last record end the log. The
  directory is locked (``flock``): one frontend process per log.

What it protects: an acknowledged statement survives a crash of the frontend process, and of the
machine as long as its disk survives — the same as PostgreSQL's. A frontend that never comes back
with its disk (a stateless container) loses the statements not yet recorded: give frontends a
persistent ``--dml-log-dir``, or none (then each durable statement waits for meta).

What it changes for readers: a logged statement's rows reach meta within the flush delay
(``--dml-flush-delay-ms``) after it returns, as an asynchronously committed one's. ``FLUSH`` on the
frontend that ran it records them first; a ``FLUSH`` on another frontend of the cluster does not
wait for them (it did when every durable statement waited for meta).
"""

from __future__ import annotations

import fcntl
import logging
import os
import struct
import threading
import uuid
import zlib
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from frontend import dml_rows
from frontend.dml_rows import Rows
from risingspark.errors import InternalError

logger = logging.getLogger(__name__)

SEGMENT_BYTES = 16 << 20
_HEAD = struct.Struct("<II")  # length of what follows the head, crc32 of it
_BODY = struct.Struct("<QI")  # seq, table id
_SUFFIX = ".seg"
_SPARE = "next.seg.tmp"  # the next segment, its zeros written ahead (`DmlLog._prepare_spare`)


@dataclass(frozen=True)
class LogRecord:
    seq: int
    table_id: int
    rows: pa.Table


def encode_rows(rows: pa.Table | Rows) -> bytes:
    """A record's payload: an Arrow IPC stream of `rows`, or a `Rows` batch's own encoding."""
    if isinstance(rows, Rows):
        return dml_rows.encode(rows)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, rows.schema) as writer:
        writer.write_table(rows)
    return sink.getvalue().to_pybytes()


class DmlLog:
    """The DML log in `directory` (see the module doc)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock_fd = os.open(self.directory / "LOCK", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            raise InternalError(f"the DML log {self.directory} is in use by another process") from None
        self.log_id = self._read_log_id()
        self._cond = threading.Condition()
        self._segments: list[tuple[int, int, Path]] = []  # (first seq, last seq, path), oldest first
        self._found: list[LogRecord] = []
        self._read_segments()
        self._seq = self._found[-1].seq if self._found else 0
        self._fd: int | None = None  # the segment appends go to (none before the first append)
        self._fd_bytes = 0
        self._written = 0  # the newest record written
        self._synced = 0  # the newest record an fdatasync has covered
        self._syncing = False
        self._broken: BaseException | None = None  # a write or sync failed (see `append`)
        self._spare_ready = False  # the next segment's zeros are written (`_SPARE`)
        self._preparing: threading.Thread | None = None
        self._closed = False
        (self.directory / _SPARE).unlink(missing_ok=True)  # (cut by a crash while it was written?)
        with self._cond:
            self._prepare_spare()

    # ---- opening ------------------------------------------------------------------------------
    def _read_log_id(self) -> str:
        path = self.directory / "log-id"
        if path.exists():
            return path.read_text().strip()
        log_id = uuid.uuid4().hex
        tmp = self.directory / "log-id.tmp"
        with open(tmp, "w") as f:
            f.write(log_id)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        self._sync_directory()
        return log_id

    def _read_segments(self) -> None:
        paths = sorted(self.directory.glob(f"*{_SUFFIX}"), key=lambda p: int(p.stem))
        for i, path in enumerate(paths):
            data = path.read_bytes()
            records, whole = _read_records(data)
            if whole < len(data):
                if data.count(0, whole) < len(data) - whole:  # (zeros: the preallocated rest)
                    if i < len(paths) - 1:  # only the newest segment can end in a cut record
                        raise InternalError(f"the DML log segment {path} is damaged before its end")
                    logger.warning("DML log %s: the last record of %s was cut by a crash (never acknowledged)",
                                   self.directory, path.name)
                with open(path, "r+b") as f:  # (appends go to a new segment, after it)
                    f.truncate(whole)
                    os.fsync(f.fileno())
            if not records:  # (the newest, cut or never written: its name is the next record's)
                path.unlink()
                self._sync_directory()
                continue
            self._found.extend(records)
            self._segments.append((int(path.stem), records[-1].seq, path))

    @property
    def found(self) -> int:
        """Records found at open (before `unrecorded`)."""
        return len(self._found)

    def unrecorded(self, recorded: int) -> list[LogRecord]:
        """The records found at open that come after meta's `recorded` one; appends are numbered on
        from the newest of them and `recorded`, into a segment started here. Call once, before the
        first append."""
        self._seq = max(self._seq, recorded)
        found, self._found = [r for r in self._found if r.seq > recorded], []
        self.recorded(recorded)
        with self._cond:  # the segment appends go to, now (the event loop appends only where no roll is due)
            try:
                self._roll(self._seq + 1)
            except OSError as e:
                self._break(e)
        return found

    # ---- appending ----------------------------------------------------------------------------
    def append(self, table_id: int, payload: bytes) -> int:
        """Append a record of rows encoded by `encode_rows` (not yet synced: `sync` its number);
        returns its number. Callers serialize their appends with the order they record batches in.

        A failed write or sync breaks the log: every later call raises, and the group commit goes back
        to recording each durable statement in meta before acknowledging it. (A failed ``fdatasync``
        may have dropped the pages it failed on, and a later one can succeed without writing them:
        PostgreSQL stops the server then.)"""
        with self._cond:
            self._check()
            self._seq += 1
            seq = self._seq
            body = _BODY.pack(seq, table_id) + payload
            record = memoryview(_HEAD.pack(len(body), zlib.crc32(body)) + body)
            try:
                if self._fd is None or self._fd_bytes + len(record) > SEGMENT_BYTES and self._fd_bytes:
                    self._roll(seq)
                assert self._fd is not None
                at = self._fd_bytes
                while record:  # (a short write: the disk is full)
                    n = os.pwrite(self._fd, record, at)
                    record, at = record[n:], at + n
            except BaseException as e:
                self._break(e)
                raise
            self._fd_bytes += len(body) + _HEAD.size
            self._written = seq
            first, _, path = self._segments[-1]
            self._segments[-1] = (first, seq, path)
        return seq

    def sync(self, seq: int) -> None:
        """Return once record `seq` is on disk."""
        with self._cond:
            while self._synced < seq:
                self._check()
                if self._syncing:
                    self._cond.wait()
                    continue
                self._syncing = True
                fd, target = self._fd, self._written
                self._cond.release()
                failed: BaseException | None = None
                try:
                    assert fd is not None
                    os.fdatasync(fd)
                except BaseException as e:  # noqa: BLE001 - raised below, with the lock held
                    failed = e
                finally:
                    self._cond.acquire()
                    self._syncing = False
                    self._cond.notify_all()
                if failed is not None:
                    self._break(failed)
                    raise failed
                self._synced = max(self._synced, target)

    @property
    def written(self) -> int:
        """The newest record written (synced or not)."""
        return self._written

    @property
    def syncing(self) -> bool:
        """Whether a sync runs now."""
        return self._syncing

    def fits(self, payload_bytes: int) -> bool:
        """Whether a record of `payload_bytes` goes in the current segment (no roll)."""
        return self._fd is not None and self._fd_bytes + _HEAD.size + _BODY.size + payload_bytes <= SEGMENT_BYTES

    def synced(self, seq: int) -> bool:
        """Whether record `seq` is on disk already."""
        return self._synced >= seq

    @property
    def broken(self) -> bool:
        return self._broken is not None

    def _check(self) -> None:
        if self._broken is not None:
            raise InternalError(f"the DML log {self.directory} failed: {self._broken}")

    def _break(self, e: BaseException) -> None:
        if self._broken is None:
            logger.error("DML log %s failed (durable statements now wait for meta): %s", self.directory, e)
            self._broken = e
            self._cond.notify_all()

    def _roll(self, seq: int) -> None:
        """Start segment `seq` (under the lock): the current one is synced and closed first."""
        while self._syncing:  # (a leader syncs the current segment outside the lock)
            self._cond.wait()
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.fdatasync(fd)
            finally:
                os.close(fd)
            self._synced = self._written
        path = self.directory / f"{seq}{_SUFFIX}"
        self._segments = [s for s in self._segments if s[2] != path]
        self._segments.append((seq, seq - 1, path))
        if self._spare_ready:  # (written off the lock: see `_prepare_spare`)
            self._spare_ready = False
            os.replace(self.directory / _SPARE, path)
            fd = os.open(path, os.O_WRONLY)
        else:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                _fill_with_zeros(fd, SEGMENT_BYTES)
            except BaseException:
                os.close(fd)
                raise
        self._fd, self._fd_bytes = fd, 0
        self._sync_directory()
        self._prepare_spare()

    def _prepare_spare(self) -> None:
        """Write the next segment's zeros on a thread of its own (under the lock): a roll then only
        renames it. Filling 16 MB took 11–12 ms here, under the lock every writer — and the event loop
        (`frontend.loop_insert`) — appends under."""
        if self._preparing is not None or self._spare_ready or self._closed:
            return

        def prepare() -> None:
            ready = False
            try:
                fd = os.open(self.directory / _SPARE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                try:
                    _fill_with_zeros(fd, SEGMENT_BYTES)
                finally:
                    os.close(fd)
                ready = True
            except OSError as e:  # (the next roll writes the zeros itself, and tries again after)
                logger.warning("DML log %s: could not prepare the next segment: %s", self.directory, e)
            with self._cond:
                self._spare_ready, self._preparing = ready, None
                self._cond.notify_all()

        self._preparing = threading.Thread(target=prepare, name="dml-log-spare", daemon=True)
        self._preparing.start()

    def recorded(self, seq: int) -> None:
        """Meta recorded every record up to `seq`: delete the segments that hold nothing newer (but
        the one appends go to)."""
        with self._cond:
            keep = []
            for first, last, path in self._segments:
                current = self._fd is not None and path == self._segments[-1][2]
                if last <= seq and not current:
                    path.unlink(missing_ok=True)
                else:
                    keep.append((first, last, path))
            self._segments = keep

    def close(self) -> None:
        """Sync what was written (a writer may still wait for it), then let the log go."""
        with self._cond:
            self._closed = True
            while self._syncing or self._preparing is not None:
                self._cond.wait()
            if self._fd is not None:
                fd, self._fd = self._fd, None
                try:
                    if self._broken is None and self._synced < self._written:
                        os.fdatasync(fd)
                        self._synced = self._written
                except OSError as e:
                    self._break(e)
                finally:
                    os.close(fd)
            self._cond.notify_all()
        os.close(self._lock_fd)

    def _sync_directory(self) -> None:
        fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _fill_with_zeros(fd: int, size: int) -> None:
    """Write `size` zero bytes to the new segment `fd` and sync them (`fallocate` would leave
    unwritten extents, whose conversion is again a metadata change at each sync)."""
    chunk = bytes(min(size, 1 << 20))
    at = 0
    while at < size:
        at += os.pwrite(fd, memoryview(chunk)[:size - at], at)
    os.fsync(fd)


def _read_records(data: bytes) -> tuple[list[LogRecord], int]:
    """The whole records of a segment, and the bytes they take (less than the segment's when it
    ends in a record cut by a crash)."""
    out: list[LogRecord] = []
    pos = 0
    while pos + _HEAD.size <= len(data):
        length, crc = _HEAD.unpack_from(data, pos)
        body = data[pos + _HEAD.size:pos + _HEAD.size + length]
        if len(body) < length or length < _BODY.size or zlib.crc32(body) != crc:
            break
        seq, table_id = _BODY.unpack_from(body)
        out.append(LogRecord(seq, table_id, dml_rows.decode(body[_BODY.size:])))
        pos += _HEAD.size + length
    return out, pos
