"""A result whose rows are produced while they are sent: a ``SELECT`` of a big relation holds one
batch in the frontend, not the whole result (PostgreSQL's executor sends rows as it makes them).

The producer is an iterator of Arrow batches that blocks (a DuckDB streaming result reading the
relation's SSTs as it goes). The wire server takes rows from it in a thread, a batch at a time, and
writes each batch to the socket before it takes the next: a slow client slows the producer down, no
rows pile up. A portal's Execute with a row limit takes at most that many and keeps the rest for the
next Execute, and so the stream keeps what it read ahead. Whoever holds the result closes it (at the
end of its rows, on an error, when the portal or the connection goes): closing lets the producer go
(its cursor, its pinned version).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

import pyarrow as pa

logger = logging.getLogger(__name__)
T = TypeVar("T")


class RowStream:
    """Rows taken a bounded batch at a time from `batches` (each of `schema`); `on_close` runs once.

    `take` and `more` block and run in a thread; one call at a time (a connection sends one result at
    a time). `close` may come from any thread: during a `take` it only marks the stream, and the
    `take` closes it when it returns.
    """

    def __init__(self, schema: pa.Schema, batches: Iterator[pa.Table], on_close: Callable[[], object], *,
                 interrupt: Callable[[], None] | None = None) -> None:
        self.schema = schema
        self.taken = 0  # rows taken so far
        self._batches = batches
        self._on_close: list[Callable[[], object]] = [on_close]
        self._on_suspend: list[Callable[[], None]] = []
        self._interrupt = interrupt
        self.cancel_event: threading.Event | None = None  # what stops its producer (the statement's cancel)
        self._pending: pa.Table | None = None  # rows read ahead, not taken yet
        self._done = False  # the producer has no more rows
        self._lock = threading.Lock()  # held by a take in progress
        self._closing = False
        self._closed = False
        # the error to report for one raised while producing rows (the session's: a cancel that was
        # its statement timeout)
        self.translate: Callable[[BaseException], BaseException] = lambda e: e

    def take(self, max_rows: int) -> pa.Table | None:
        """Up to `max_rows` rows (fewer only at the end, gathered over the producer's batches); None
        when none is left."""
        return self._locked(lambda: self._take(max_rows))

    def more(self) -> bool:
        """Whether a row is left (reads the next batch ahead when none is pending)."""
        return self._locked(self._fill)

    def _take(self, max_rows: int) -> pa.Table | None:
        parts: list[pa.Table] = []
        want = max_rows
        while want > 0 and self._fill():
            assert self._pending is not None
            part = self._pending.slice(0, want)
            rest = self._pending.slice(want)
            self._pending = rest if rest.num_rows else None
            parts.append(part)
            want -= part.num_rows
        if not parts:
            return None
        rows = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
        self.taken += rows.num_rows
        return rows

    def _locked(self, read: Callable[[], T]) -> T:
        """`read` under the lock: an error of the producer closes the stream (reported as `translate`
        says), and a close that came meanwhile is done once the lock is let go."""
        try:
            with self._lock:
                try:
                    return read()
                except Exception as e:
                    self._close_now()
                    raise self.translate(e) from None
                except BaseException:
                    self._close_now()
                    raise
        finally:
            self._closed_meanwhile()

    def on_close(self, fn: Callable[[], None]) -> None:
        """Run `fn` too when the stream closes (after what was given before); at once if it has."""
        if self._closed:
            fn()
        else:
            self._on_close.append(fn)

    def on_suspend(self, fn: Callable[[], None]) -> None:
        """Run `fn` when a portal's row limit leaves rows for a later Execute (`suspended`)."""
        self._on_suspend.append(fn)

    def suspended(self) -> None:
        """A portal sent what its Execute asked and waits for the next (the statement is idle)."""
        for fn in self._on_suspend:
            fn()
        self._on_suspend.clear()

    def close(self) -> None:
        self._closing = True
        if self._lock.acquire(blocking=False):
            try:
                self._close_now()
            finally:
                self._lock.release()
        elif self._interrupt is not None:
            self._interrupt()  # (a take is reading: stop the producer; the take closes when it returns)

    def _closed_meanwhile(self) -> None:
        """After a take or a look ahead let the lock go: a close that came meanwhile and could not
        take the lock is done now (checked after the release, so that no close is lost)."""
        if self._closing and not self._closed:
            self.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def _fill(self) -> bool:
        if self._closed:
            return False
        while self._pending is None and not self._done:
            batch = next(self._batches, None)
            if batch is None:
                self._done = True
                self._close_now()
            elif batch.num_rows:
                self._pending = batch
        return self._pending is not None

    def _close_now(self) -> None:
        if not self._closed:
            self._closed = True
            self._pending = None
            close = getattr(self._batches, "close", None)
            for fn in ([close] if close is not None else []) + self._on_close:
                try:  # (a generator's cleanup runs now, not when it is collected)
                    fn()
                except Exception:  # noqa: BLE001 - every producer's resource must still be let go
                    logger.exception("closing a row stream failed")
