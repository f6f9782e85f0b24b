"""A table's kind, as RisingWave's: append only or not, and how an insert of an existing primary key
is handled (its *conflict behaviour*, RisingWave's `ConflictBehavior`):

* ``Overwrite`` (``ON CONFLICT OVERWRITE`` / ``DO UPDATE FULL``, the default of a table with a primary
  key): the new row replaces the old one;
* ``IgnoreConflict`` (``ON CONFLICT IGNORE`` / ``DO NOTHING``): the old row stays, the insert is
  dropped;
* ``DoUpdateIfNotNull`` (``ON CONFLICT DO UPDATE IF NOT NULL``): the new row's non-NULL columns
  replace the old row's, its NULL columns keep the old values;
* ``NoCheck``: no conflict can happen (an append-only table keyed by its hidden row id) or it need
  not be checked (a materialized view's input keeps its key unique).

A delete removes the key's row whatever the behaviour; an UPDATE is a delete then an insert of the
key, so it never conflicts with itself. As RisingWave (`EitherOnConflict::to_behavior`): an
append-only table without a primary key is ``NoCheck``; one with a primary key is ``IgnoreConflict``,
and its ON CONFLICT, if given, must be DO NOTHING (or IGNORE).

>>> conflict_behavior(append_only=False, has_pk=True, on_conflict=None)
<ConflictBehavior.OVERWRITE: 'Overwrite'>
>>> conflict_behavior(append_only=True, has_pk=False, on_conflict=None)
<ConflictBehavior.NO_CHECK: 'NoCheck'>
"""

from __future__ import annotations

import enum

from risingspark.errors import SyntaxError_

# `RelationCatalog.extra` keys of a table's kind
APPEND_ONLY = "append_only"
ON_CONFLICT = "on_conflict"


class ConflictBehavior(enum.StrEnum):
    NO_CHECK = "NoCheck"
    OVERWRITE = "Overwrite"
    IGNORE = "IgnoreConflict"
    DO_UPDATE_IF_NOT_NULL = "DoUpdateIfNotNull"

    @property
    def checks(self) -> bool:
        """Whether the materialize reads a key's stored row to resolve the epoch's DML."""
        return self is not ConflictBehavior.NO_CHECK


_BY_CLAUSE = {"OVERWRITE": ConflictBehavior.OVERWRITE, "IGNORE": ConflictBehavior.IGNORE,
              "DO UPDATE IF NOT NULL": ConflictBehavior.DO_UPDATE_IF_NOT_NULL}


def conflict_behavior(*, append_only: bool, has_pk: bool, on_conflict: str | None) -> ConflictBehavior:
    """The behaviour of a new table (`on_conflict`: the clause's behaviour as
    `frontend.rw_clauses.TableClauses` names it, or None)."""
    if append_only:
        if not has_pk:
            return ConflictBehavior.NO_CHECK
        if on_conflict is not None and on_conflict != "IGNORE":
            raise SyntaxError_("When PRIMARY KEY constraint applied to an APPEND ONLY table, the ON CONFLICT "
                               "behavior must be DO NOTHING.")
        return ConflictBehavior.IGNORE
    return _BY_CLAUSE[on_conflict or "OVERWRITE"]
