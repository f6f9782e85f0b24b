"""Group commit of DML batches: the batches that concurrent statements wrote are recorded in meta
by one transaction (one commit, one fsync of the meta store), as PostgreSQL's WAL writer flushes the
commit records of every backend waiting at once.

A statement's rows are durable, and the statement acknowledged, once meta recorded its batch
(`meta.service.MetaService.submit_dml_batches`); the contract is unchanged. The algorithm (leader
and followers, no timer): a writer appends its batch to the pending list; if no commit is running it
becomes the leader: it takes every pending batch, records them in one call, hands each writer its
receipt (or the error: a failed commit fails every statement of its group) and wakes them. Writers that arrive while a commit runs wait for it to end;
then one of them leads the next commit, for all of them. One writer alone waits for no one: its
commit starts at once, as before.
"""

from __future__ import annotations

import copy
import threading
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import Histogram

from risingspark.barrier import DmlReceipt

GROUP_SIZE = Histogram("risingspark_frontend_dml_group_commit_batches", "DML batches recorded by one commit to meta",
                       buckets=(1, 2, 4, 8, 16, 32, 64, 128))


@dataclass(eq=False)
class _Batch:
    table_id: int
    path: str
    rows: int
    receipt: DmlReceipt | None = None
    error: BaseException | None = None
    done: bool = field(default=False)


class GroupCommit:
    """Records DML batches in meta, concurrent ones in one call (see the module doc)."""

    def __init__(self, meta: Any) -> None:
        self._meta = meta
        self._cond = threading.Condition()
        self._pending: list[_Batch] = []
        self._committing = False

    def submit(self, table_id: int, path: str, rows: int) -> DmlReceipt:
        """Record one batch (already in the object store); returns once it is durable."""
        mine = _Batch(table_id, path, rows)
        group: list[_Batch] = []
        with self._cond:
            self._pending.append(mine)
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

    def _commit(self, group: list[_Batch]) -> None:
        try:
            receipts = self._meta.submit_dml_batches([(b.table_id, b.path, b.rows) for b in group])
            for b, r in zip(group, receipts, strict=True):
                b.receipt = r
        except BaseException as e:  # every writer of the group gets the error
            for b in group:
                b.error = e
        GROUP_SIZE.observe(len(group))
        with self._cond:
            for b in group:
                b.done = True
            self._committing = False
            self._cond.notify_all()
