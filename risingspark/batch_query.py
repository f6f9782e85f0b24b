"""What a distributed batch query sends to the compute node that runs it (`compute.batch_query`):
the query in Spark SQL and, per relation it reads, where the relation's rows are at the frontend's
pinned version. Shared by the frontend, which builds it, and compute, which runs it (and by the RPC
between them)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from risingspark.errors import FeatureNotSupported
from risingspark.storage.desc import SstableInfo, StateTableDesc


@dataclass(frozen=True)
class BatchRelation:
    """One relation of a distributed query.

    Attributes:
        view: the name the query's SQL reads it by (a temporary view of the query's Spark session).
        desc: the layout of the relation's state table.
        ssts: its SSTs in the pinned version.
        epoch: the pinned version's committed epoch: the rows as of it are read.
        columns: the columns the view has (the relation's visible columns), in order.
    """

    view: str
    desc: StateTableDesc
    ssts: tuple[SstableInfo, ...]
    epoch: int
    columns: tuple[str, ...]


# Spark's physical operators whose task loops check no interruption: a cancelled job's tasks in them
# run to their end (SPARK-33409 proposed the check for the nested-loop join and was not merged). Auto
# mode runs a query whose plan has one locally (`compute.batch_query.uncancellable_operator`).
UNCANCELLABLE_OPERATORS = ("BroadcastNestedLoopJoin", "CartesianProduct")


_PLAN_NODE = re.compile(r"^[\s:+|\-]*(?:\*\(\d+\)\s*)?(\w+)")  # a plan line's operator: "+- *(2) Name ..."


def uncancellable_in(plan: str) -> str | None:
    r"""The first such operator of a Spark physical plan's text (the operator each line starts
    with: a literal or a column of that name does not count), or None.

    >>> uncancellable_in("*(2) HashAggregate(keys=[])\n+- BroadcastNestedLoopJoin BuildRight, Inner")
    'BroadcastNestedLoopJoin'
    >>> uncancellable_in("Project [CartesianProduct#1]\n+- Scan ExistingRDD[CartesianProduct#1]") is None
    True
    """
    for line in plan.splitlines():
        m = _PLAN_NODE.match(line)
        if m and m.group(1) in UNCANCELLABLE_OPERATORS:
            return m.group(1)
    return None


class NotDistributable(FeatureNotSupported):
    """The query cannot run in distributed mode: it reads something Spark is not given (a system
    table, a view) or uses a form Spark cannot analyze (the message says which)."""
