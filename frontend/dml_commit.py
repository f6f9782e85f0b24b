"""Group commit of DML batches: the batches that concurrent statements wrote are recorded in meta
by one transaction (one commit, one fsync of the meta store), as PostgreSQL's WAL writer flushes the
commit records of every backend waiting at once.

A statement's rows are durable, and the statement acknowledged, once meta recorded its batch
(`meta.service.MetaService.submit_dml_batches`). The algorithm (leader and followers, no timer): a
writer appends its batch to the pending list; if no commit is running it becomes the leader: it takes
every pending batch, records them in one call, hands each writer its receipt (or the error: a failed
commit fails every statement of its group) and wakes them. Writers that arrive while a commit runs
wait for it to end; then one of them leads the next commit, for all of them. One writer alone waits
for no one: its commit starts at once.

A batch is a file the statement wrote (`submit`: a big statement writes its own files, in parallel
with others') or rows held in memory (`submit_rows`: a small statement's, at most `MEMORY_ROWS`),
which the commit writes: each run of consecutive in-memory batches of one table becomes one file, so
a group of single-row INSERTs costs one file and one meta transaction, not one of each per statement.

**Asynchronous commit** (``SET synchronous_commit = off``, PostgreSQL's setting with PostgreSQL's
meaning): the statement returns once its rows are queued; a flusher thread commits the queue as a
leader would, `ASYNC_COMMIT_DELAY_S` (50 ms) after the first queued batch arrived (as PostgreSQL's
WAL writer flushes asynchronous commits every ``wal_writer_delay``, 200 ms by default): statements
arriving meanwhile share the commit. ``FLUSH`` (`drain`) and `close` cut the wait short. 50 ms, not
10: a commit (a Parquet file, meta's transaction) costs the frontend's interpreter ~1.6 ms, and with
one connection inserting single rows into the playground a 10-ms delay spent 162 µs of it per
statement, 50 ms 55 µs (1,027 → 1,189–1,216 durable INSERTs/s; ad hoc loop, per-thread CPU). The
rows then reach meta at most 50 ms later, against a 1-s barrier interval. Measured with one connection inserting single rows (py-spy ``--gil`` on the
playground): with a commit per statement the flusher's Python (SQLAlchemy) held the interpreter
lock in 315 of the 820 samples that found it held, and the statements waited for it. The rows become
visible at the first checkpoint after that commit, as every write's. What a crash of the frontend can lose is
what was queued and not yet committed (one commit's worth of acknowledged statements; each whole or
not at all), exactly the risk PostgreSQL documents for the setting. A failed commit is retried (the
queued rows stay queued, in order, and the error is logged); its files are written once, and meta
records a path it already has only once, so a commit that failed after meta recorded it (a lost
reply) does not record the rows twice (left: a batch a barrier consumed, and meta deleted, between
the lost reply and the retry is recorded again); ``FLUSH`` and ``rw_implicit_flush`` first
wait for the queue (`drain`), and fail with the commit's error when one fails meanwhile. The queue is
bounded (`MAX_QUEUED_ROWS`): past it a writer waits for the flusher, so a stalled meta store slows
the writers down rather than filling the frontend's memory (a cancel or the statement timeout ends
the wait, with nothing written). Order is kept: every batch, synchronous or
not, goes through the one pending list, and a commit takes it whole.

**With a DML log** (`frontend.dml_log`, the playground's default, ``--dml-log-dir`` of a frontend) a
durable small statement is acknowledged once its rows are in the log and the log is synced (one
``fdatasync`` for every statement waiting at once), then queued as an asynchronous one: the flusher
records it in meta with the number of the newest log record its commit holds, in the same
transaction. A crash loses nothing acknowledged: at start the frontend queues the log's records meta
has not recorded (`replay`) before it serves. Each record is written under the lock that appends its
batch to the pending list, so the log's order is the order commits take batches in. Every file of a
commit holding logged batches carries the commit's newest record number, and meta leaves out, in the
recording transaction, a file at or below its watermark: a commit retried after a lost reply records
nothing twice, even when a barrier consumed the first one meanwhile (asynchronous rows that shared
the commit included); and a retry writes such a file anew (`_files`), since an unrecorded file is
protected by its age only (`meta.garbage`). Left: a commit of asynchronous batches alone (no log
record) is retried by path, as before the log.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from prometheus_client import Gauge, Histogram

from frontend import dml_rows
from frontend.dml_log import DmlLog, encode_rows
from frontend.dml_rows import Rows
from risingspark.barrier import DmlReceipt
from risingspark.errors import InternalError, QueryCanceled
from risingspark.storage.object_store import ObjectStore

logger = logging.getLogger(__name__)

GROUP_SIZE = Histogram("risingspark_frontend_dml_group_commit_batches", "DML batches recorded by one commit to meta",
                       buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 1024))
QUEUED_ROWS = Gauge("risingspark_frontend_dml_queued_rows",
                    "Rows of acknowledged statements (asynchronously committed, or in the DML log) not yet recorded by meta")

MEMORY_ROWS = 4096  # a statement of at most this many rows hands them to the commit, which writes the file
MAX_QUEUED_ROWS = 1 << 20  # asynchronous commit: writers wait past this many queued rows
ASYNC_COMMIT_DELAY_S = 0.05  # asynchronous commit: the flusher gathers for this long before a commit
RETRY_S = (0.05, 2.0)  # asynchronous commit: first and longest wait before retrying a failed commit
LOCK_WAIT_S = 0.002  # `queue_rows` without waiting: the longest it waits for the commit lock
FULL_QUEUE_POLL_S = 0.1  # a writer waiting for room in the queue looks at its cancel this often


@dataclass(eq=False)
class _Batch:
    table_id: int
    rows: int
    path: str | None = None  # the file holding the rows (the statement's, or the commit's once written)
    data: pa.Table | Rows | None = None  # rows the commit has to write (a logged batch's: until recorded)
    waits: bool = True  # a statement waits for the commit (False: asynchronous commit)
    file_rows: int = 0  # rows of the file at `path` (a commit's file holds a run of batches)
    seq: int = 0  # order of arrival
    log_seq: int = 0  # its record in the DML log (0: none)
    file_tag: int = 0  # the newest log record of the group that first wrote its file (0: none; see `_files`)
    tried: bool = False  # in a commit that failed (its file may be recorded: the reply was lost)
    receipt: DmlReceipt | None = None
    error: BaseException | None = None
    done: bool = field(default=False)


class GroupCommit:
    """Records DML batches in meta, concurrent ones in one call (see the module doc)."""

    def __init__(self, meta: Any, store: ObjectStore | None = None, log: DmlLog | None = None,
                 flush_delay_s: float | None = None) -> None:
        if flush_delay_s is not None and not flush_delay_s >= 0:  # (the flusher would die on its first sleep)
            raise ValueError(f"dml_flush_delay_ms must be at least 0, not {flush_delay_s * 1000:g}")
        self._meta, self._store, self._log = meta, store, log
        self._flush_delay_s = flush_delay_s  # None: `ASYNC_COMMIT_DELAY_S`
        self._cond = threading.Condition()
        self._pending: list[_Batch] = []
        self._committing = False
        self._appended = 0  # batches ever appended to the pending list (the last one's `seq`)
        self._unfinished: dict[int, _Batch] = {}  # by seq, in order: appended, not recorded nor failed
        self._queued_rows = 0  # rows of asynchronous batches not yet recorded
        self._stalled: dict[int, bool] = {}  # by table: the last commit's write-stall flag
        self._failures = 0  # failed commits of asynchronous batches
        self._last_error: BaseException | None = None  # the last one's error
        self._flusher: threading.Thread | None = None
        self._flusher_idle = False  # the flusher waits for batches (not for a commit, nor gathering)
        self._closing = False  # `close` began: asynchronous writes wait for their commit
        self._hurry = False  # a `drain` waits: the flusher commits without gathering first
        self._closed = False

    def submit(self, table_id: int, path: str, rows: int) -> DmlReceipt:
        """Record one batch (already in the object store); returns once it is durable."""
        return self._wait_for(_Batch(table_id, rows, path=path, file_rows=rows))

    def queue_rows(self, table_id: int, data: pa.Table | Rows, durable: bool, wait: bool = True) -> int | None:
        """`submit_rows` for a caller that must not wait for meta (the event loop): queues the rows
        and returns the DML log record to sync before acknowledging them (0: none, an asynchronous
        statement's); None, having queued nothing, where `submit_rows` would wait: a durable statement
        without a usable log, a full queue, a closing frontend. Not `wait`: None too where the lock is
        held for more than a moment (a writer rolling the log's segment) or the append would roll."""
        log = self._log if durable and self._log is not None and not self._log.broken else None
        if durable and log is None:
            return None
        payload = encode_rows(data) if log is not None else b""
        batch = _Batch(table_id, data.num_rows, data=data, waits=False)
        if not self._cond.acquire(timeout=-1 if wait else LOCK_WAIT_S):
            return None
        try:
            if self._queued_rows >= MAX_QUEUED_ROWS or self._closing:
                return None
            if log is not None and not wait and not log.fits(len(payload)):
                return None
            if log is not None:
                try:
                    batch.log_seq = log.append(table_id, payload)
                except (InternalError, OSError):  # broken: the caller takes the waiting path
                    return None
            self._enqueue(batch)
        finally:
            self._cond.release()
        return batch.log_seq

    def submit_rows(self, table_id: int, data: pa.Table, durable: bool = True,
                    cancel: threading.Event | None = None) -> DmlReceipt | None:
        """Record the rows `data` (at most `MEMORY_ROWS`), written by the commit. Durable: returns
        the receipt once they are (None when the DML log made them durable: meta records them
        later). Not: returns None once they are queued (asynchronous commit).

        While the queue is full (meta has not recorded `MAX_QUEUED_ROWS` rows: it is down or slow)
        the statement waits, before it queues anything; `cancel` set (a CancelRequest, the statement
        timeout) ends that wait with 57014 and nothing written."""
        batch = _Batch(table_id, data.num_rows, data=data, waits=durable)
        log = self._log if durable and self._log is not None and not self._log.broken else None
        payload = encode_rows(data) if log is not None else b""
        with self._cond:
            while self._queued_rows >= MAX_QUEUED_ROWS and not self._closing:
                if cancel is not None and cancel.is_set():
                    raise QueryCanceled("canceling statement due to user request")
                self._cond.wait(FULL_QUEUE_POLL_S if cancel is not None else None)
            if not self._closing and (not durable or log is not None):
                if log is not None:
                    try:
                        batch.log_seq = log.append(table_id, payload)
                    except (InternalError, OSError):  # broken (by this write or another): meta records this one
                        log = None
                if not durable or log is not None:
                    batch.waits = False
                    self._enqueue(batch)
        if batch.seq:
            if log is not None:
                try:
                    log.sync(batch.log_seq)
                except BaseException as e:  # (queued: meta may record the rows all the same)
                    raise InternalError(f"could not sync the DML log ({e}); the statement's rows may still "
                                        "be recorded") from e
            return None
        batch.waits = True  # (durable without a usable log, or the frontend is closing: recorded first)
        return self._wait_for(batch)

    def _enqueue(self, batch: _Batch) -> None:
        """Queue `batch` for the flusher (under the lock)."""
        self._append(batch)
        self._queued_rows += batch.rows
        QUEUED_ROWS.set(self._queued_rows)
        if self._flusher is None:
            self._flusher = threading.Thread(target=self._flush_queue, name="dml-flusher", daemon=True)
            self._flusher.start()
        if self._flusher_idle:  # (gathering, it waits for the delay to pass: waking it for every statement
            self._cond.notify_all()  # cost ~80 µs of CPU a single-row INSERT, 515 → 432 µs in-process)

    def replay(self) -> int:
        """Queue the DML log's records meta has not recorded — statements acknowledged before a crash
        — ahead of any statement; returns how many. Records of tables dropped since are left out."""
        if self._log is None:
            return 0
        recorded = self._meta.dml_log_open(self._log.log_id, self._log.found == 0)
        if recorded < 0:
            raise InternalError(
                f"the DML log in {self._log.directory} holds {self._log.found} statements this cluster has never "
                "recorded from it: it was written for another cluster, or before this cluster's meta store was "
                "reset, and its rows name tables by ids that mean other tables here. Move the directory away (its "
                "statements are lost to this cluster) or give the frontend another --dml-log-dir")
        records = self._log.unrecorded(recorded)
        tables = self._meta.catalog_snapshot().relations
        kept = [r for r in records if r.table_id in tables]
        if len(kept) < len(records):
            logger.warning("DML log: %d acknowledged batches of dropped tables left out of the replay",
                           len(records) - len(kept))
        with self._cond:
            for r in kept:
                self._enqueue(_Batch(r.table_id, r.rows.num_rows, data=r.rows, waits=False, log_seq=r.seq))
        if kept:
            logger.info("DML log: %d acknowledged batches (%d rows) not recorded before the last stop queued "
                        "again", len(kept), sum(r.rows.num_rows for r in kept))
        return len(kept)

    def stalled(self, table_id: int) -> bool:
        """Whether the last commit of a batch of `table_id` found its writes held (a write stall):
        an asynchronously committed statement, which gets no receipt, waits on this."""
        return self._stalled.get(table_id, False)

    def drain(self, timeout: float | None = None) -> None:
        """Wait until every batch appended before the call is recorded (``FLUSH``). Raises the error
        of a commit of queued batches that fails meanwhile (the flusher retries it within
        `RETRY_S[1]`), TimeoutError past `timeout`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            target, failures = self._appended, self._failures
            if self._pending:  # (a flag left set would skip the next gathering)
                self._hurry = True
                self._cond.notify_all()
            while self._unfinished and next(iter(self._unfinished)) <= target:
                if self._failures > failures:  # a commit tried since the call failed (not an older one)
                    assert self._last_error is not None
                    raise copy.copy(self._last_error)
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise TimeoutError("queued DML batches were not recorded in time")
                self._cond.wait(left)

    def close(self, timeout: float = 10.0) -> None:
        """Record what is queued, retrying failed commits for at most `timeout` seconds, then stop
        the flusher. From the start of the call, asynchronous writes wait for their commit."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        while True:
            try:
                self.drain(max(deadline - time.monotonic(), 0.0))
                break
            except TimeoutError:
                break
            except Exception:  # noqa: BLE001 - the flusher retries; so does closing, until the deadline
                if time.monotonic() >= deadline:
                    break
                time.sleep(RETRY_S[0])
        with self._cond:
            self._closed = True
            lost = self._queued_rows
            self._cond.notify_all()
        if lost:
            logged = sum(b.rows for b in self._unfinished.values() if b.log_seq)
            if lost > logged:
                logger.error("closing with %d asynchronously committed rows not recorded in meta", lost - logged)
            if logged:
                logger.warning("closing with %d rows of the DML log not recorded in meta: the next start records "
                               "them", logged)
        if self._log is not None:
            self._log.close()

    # ---- the commit --------------------------------------------------------------------------------
    def _append(self, batch: _Batch) -> None:
        self._appended += 1
        batch.seq = self._appended
        self._pending.append(batch)
        self._unfinished[batch.seq] = batch

    def _wait_for(self, mine: _Batch) -> DmlReceipt:
        group: list[_Batch] = []
        with self._cond:
            self._append(mine)
            while not mine.done and self._committing:
                self._cond.wait()
            if not mine.done:  # lead: commit everything pending, this batch included
                self._committing = True
                group, self._pending = self._pending, []
        if group:
            self._commit(group)
        if mine.error is not None:  # a copy each: a session sets its error's position on it
            raise copy.copy(mine.error)
        assert mine.receipt is not None
        return mine.receipt

    def _flush_queue(self) -> None:
        """The flusher of asynchronously committed batches: leads a commit whenever batches are
        pending and none runs; after a failed one, waits (doubling, up to `RETRY_S[1]`) and retries."""
        backoff = RETRY_S[0]
        while True:
            with self._cond:
                self._flusher_idle = True
                while not self._closed and (self._committing or not self._pending):
                    self._cond.wait()
                self._flusher_idle = False
                if self._closed:
                    return
            delay = ASYNC_COMMIT_DELAY_S if self._flush_delay_s is None else self._flush_delay_s
            with self._cond:  # gather: statements arriving meanwhile share the commit
                self._cond.wait_for(lambda: self._hurry or self._closing, delay)
                self._hurry = False
                if self._committing or not self._pending:  # a durable writer's commit took them
                    continue
                self._committing = True
                group, self._pending = self._pending, []
            if self._commit(group):
                backoff = RETRY_S[0]
            else:
                time.sleep(backoff)
                backoff = min(2 * backoff, RETRY_S[1])

    def _commit(self, group: list[_Batch]) -> bool:
        """Record `group` in one meta transaction; False when it failed (its asynchronous batches
        are pending again, at the head, for the next commit)."""
        try:
            files, of_batch = self._files(group)
            log_seq = max((b.log_seq for b in group), default=0)
            if log_seq:
                assert self._log is not None
                receipts = self._meta.submit_dml_batches(files, any(b.tried for b in group),
                                                         (self._log.log_id, log_seq))
            else:
                receipts = self._meta.submit_dml_batches(files, any(b.tried for b in group)) if files else []
        except BaseException as e:  # every waiting writer of the group gets the error
            retry = [b for b in group if not b.waits]
            for b in retry:
                b.tried = True
            if retry:
                logger.warning("recording %d asynchronously committed DML batches failed (retrying): %s",
                               len(retry), e)
            with self._cond:
                for b in group:
                    if b.waits:
                        b.error, b.done = e, True
                        del self._unfinished[b.seq]
                self._pending[:0] = retry
                if retry:
                    self._failures += 1
                    self._last_error = e
                self._committing = False
                self._cond.notify_all()
            return False
        if log_seq:
            assert self._log is not None
            self._log.recorded(log_seq)
        for b, k in zip(group, of_batch, strict=True):
            b.receipt = receipts[k]
            self._stalled[b.table_id] = receipts[k].stalled
        GROUP_SIZE.observe(len(group))
        with self._cond:
            for b in group:
                b.done = True
                del self._unfinished[b.seq]
                if not b.waits:
                    self._queued_rows -= b.rows
            QUEUED_ROWS.set(self._queued_rows)
            self._committing = False
            self._cond.notify_all()
        return True

    def _files(self, group: list[_Batch]) -> tuple[list[tuple[int, str, int, int]], list[int]]:
        """The files to record for `group` ``(table id, path, rows, newest log record)`` — each run of
        consecutive in-memory batches of one table (with one schema) written as one file — and, per
        batch, the index of its file.

        A batch a failed commit wrote goes in that commit's file again, with the same batches. Each
        file is tagged with the newest log record of the group that first wrote it: meta records a
        group in one transaction with the log's watermark, so a file whose tag is at or below the
        watermark was recorded (`MetaService.submit_dml_batches`), whatever its path and whether or
        not it holds logged rows itself. A tagged file is written anew by a retry — it must be, as
        nothing protects a file meta has not recorded but its age (`meta.garbage`): a commit retried
        after minutes of meta's absence would record a file the full GC had deleted. A file of a group
        without logged batches (tag 0) is recorded by its path (meta records a path it has once)."""
        files: list[tuple[int, str, int, int]] = []
        of_batch: list[int] = []
        run: list[_Batch] = []  # in-memory batches of one table and schema

        group_tag = max((b.log_seq for b in group), default=0)

        def write(batches: list[_Batch], tag: int) -> None:
            data = dml_rows.concat([b.data for b in batches if b.data is not None])
            table_id = batches[0].table_id
            path = f"dml/{table_id}/{uuid.uuid4().hex}.parquet"
            assert self._store is not None, "in-memory DML batches need the object store"
            self._store.write_parquet(path, data)
            for b in batches:
                b.path, b.file_rows, b.file_tag = path, data.num_rows, tag
                if not tag:  # (written once: a retry records the same path)
                    b.data = None
            files.append((table_id, path, data.num_rows, tag))

        def write_run() -> None:
            if run:
                write(run[:], group_tag)
                run.clear()

        i = 0
        while i < len(group):
            b = group[i]
            if b.path is None:
                if run and (run[0].table_id != b.table_id or not _same_schema(run[0].data, b.data)):
                    write_run()
                run.append(b)
                of_batch.append(len(files))
                i += 1
                continue
            write_run()
            same = [b]  # the batches of the failed commit's file
            while i + len(same) < len(group) and group[i + len(same)].path == b.path:
                same.append(group[i + len(same)])
            if b.data is not None:
                write(same, b.file_tag)
            else:
                files.append((b.table_id, b.path, b.file_rows, 0))
            of_batch.extend([len(files) - 1] * len(same))
            i += len(same)
        write_run()
        return files, of_batch


def _same_schema(a: pa.Table | Rows | None, b: pa.Table | Rows | None) -> bool:
    assert a is not None and b is not None
    return a.schema is b.schema or a.schema.equals(b.schema)  # (the same plan's rows: one object)
