"""The plan cache: what a statement's text compiled to, so that a repeated or prepared statement
skips parsing, binding and planning (the local execution mode's first step).

An entry is keyed by everything the compilation read besides the catalog: the statement's text (with
its ``$n`` placeholders, so every execution of a prepared statement shares one entry), its parameter
types, the database, the user (by name and id) and the search path. An entry that resolved names holds the catalog
version it was compiled at and is used only at that version: any DDL (a new, dropped, renamed or
altered relation) bumps the version, and the statement is compiled again. Four kinds of entries:

* `ConstantPlan`: a SELECT of literals without FROM (``SELECT 1``, what drivers and pools ping with):
  its result, computed once by the full path; served on the event loop, without a thread or a parse.
  It reads no catalog and no session value, so it has no version.
* `KeyPlan`: a key query (`frontend.key_query`), run by the storage's key lookup.
* `RowInsertPlan`: a single-row INSERT of literals and parameters (`frontend.row_insert`), made on
  the event loop (`frontend.loop_insert`).
* `FullPlan`: none of these; the statement takes the full path (parse, bind, DuckDB) on each execution,
  without trying to match the text again.

At most `capacity` entries, least recently used first out; a lock makes it safe from the event loop
and the session threads alike.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from frontend.key_query import KeyQuery
from frontend.pgwire.api import ColumnDesc, StatementResult
from frontend.row_insert import RowInsertPlan


@dataclass(frozen=True)
class PlanKey:
    text: str
    param_oids: tuple[int, ...]
    database: str
    user: str
    search_path: tuple[str, ...]
    user_id: int = 0  # (a user dropped and made again under its name is another user: its own plans)
    time_zone: str | None = None  # (a constant's value may follow it: ``'2024-01-15 12:00'::timestamptz``)


@dataclass(frozen=True)
class ConstantPlan:
    tag: str
    columns: list[ColumnDesc] | None
    rows: object

    def result(self) -> StatementResult:
        return StatementResult(self.tag, self.columns, self.rows)  # type: ignore[arg-type]


@dataclass(frozen=True)
class KeyPlan:
    query: KeyQuery
    catalog_version: int


@dataclass(frozen=True)
class FullPlan:
    catalog_version: int


Plan = ConstantPlan | KeyPlan | FullPlan | RowInsertPlan


class PlanCache:
    """Plans by `PlanKey`, least recently used out past `capacity`."""

    def __init__(self, capacity: int = 1024) -> None:
        self.capacity = capacity
        self._plans: OrderedDict[PlanKey, Plan] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: PlanKey, catalog_version: int | None = None) -> Plan | None:
        """The plan of `key`; with `catalog_version`, None for a plan compiled at another version."""
        with self._lock:
            plan = self._plans.get(key)
            if plan is not None and catalog_version is not None and not isinstance(plan, ConstantPlan) \
                    and plan.catalog_version != catalog_version:
                plan = None
            if plan is None:
                self.misses += 1
                return None
            self._plans.move_to_end(key)
            self.hits += 1
            return plan

    def last(self, key: PlanKey) -> Plan | None:
        """What `key` last compiled to, whatever the catalog version since (for the event loop, which
        asks no catalog before it knows the plan is one it answers itself: a constant, a key query)."""
        with self._lock:
            plan = self._plans.get(key)
            if plan is not None:
                self._plans.move_to_end(key)
            return plan

    def put(self, key: PlanKey, plan: Plan) -> None:
        with self._lock:
            self._plans[key] = plan
            self._plans.move_to_end(key)
            while len(self._plans) > self.capacity:
                self._plans.popitem(last=False)

    def __len__(self) -> int:
        return len(self._plans)
