"""Backfill order: which upstream relations a job's backfill reads before which (as RisingWave's
``WITH (backfill_order = NONE | AUTO | FIXED(a -> b, ...))``).

An order is a set of edges ``(before, after)`` between upstream relation ids: a scan of ``after``
reads nothing (no snapshot rows, and so, as a paused backfill, no upstream changes either) until
every scan of every ``before`` has finished. Scans of the same relation share one place in the
order (a self-join's two scans of ``t`` are both "t"); relations no edge names run unordered.

**AUTO** derives the order from the stream plan as RisingWave's `plan_auto_strategy` does: the plan
is folded into a tree of joins, unions and scans (other nodes are passed through); in a join, every
scan reachable on its right (the side it builds) comes before the leftmost scan of its left (the
side that probes it), and a union's branches are each a leftmost child. For a left-deep join of a
fact table with dimension tables, ``fact JOIN dim1 JOIN dim2``, that gives ``dim1 -> fact,
dim2 -> fact``. If the derived order has a cycle (a self-join: ``t -> t``), there is no order.

The order is persisted with the job (`RelationCatalog.extra`), and the stage a backfill is in is a
function of which scans have finished, which is persisted per vnode at every checkpoint: a restart
resumes in the stage it was in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from risingspark.stream_plan import StreamHashJoin, StreamNode, StreamTableScan, StreamUnion

BACKFILL_ORDER = "backfill_order"  # RelationCatalog.extra key: [[before, after], ...]

Order = tuple[tuple[int, int], ...]


def normalize(edges: Iterable[tuple[int, int]]) -> Order:
    return tuple(sorted(set((int(a), int(b)) for a, b in edges)))


def has_cycle(order: Order) -> bool:
    """Whether the edges have a cycle (a relation ordered before itself counts)."""
    successors: dict[int, set[int]] = {}
    for a, b in order:
        successors.setdefault(a, set()).add(b)
    visiting: set[int] = set()
    done: set[int] = set()

    def visit(node: int) -> bool:
        if node in visiting:
            return True
        if node in done:
            return False
        visiting.add(node)
        if any(visit(n) for n in successors.get(node, ())):
            return True
        visiting.discard(node)
        done.add(node)
        return False

    return any(visit(n) for n in list(successors))


def auto_order(plan: StreamNode) -> Order | None:
    """The order AUTO derives from `plan`; None when it would have a cycle (no order then)."""
    edges: set[tuple[int, int]] = set()

    def fold(node: StreamNode, leftmost: bool, prior: frozenset[int]) -> set[int]:
        """The subtree's terminal scans (a join's are those of its left side); a leftmost scan comes
        after every relation in `prior`."""
        if isinstance(node, StreamTableScan):
            if leftmost:
                edges.update((p, node.upstream_id) for p in prior)
            return {node.upstream_id}
        if isinstance(node, StreamHashJoin):
            assert node.left is not None and node.right is not None
            right = fold(node.right, False, frozenset())
            return fold(node.left, True, prior | right)
        if isinstance(node, StreamUnion):
            out: set[int] = set()
            for branch in node.branches:
                out |= fold(branch, leftmost, prior)
            return out
        out = set()
        for child in node.inputs:  # one input (a project, a filter, an aggregation...) or none
            out |= fold(child, leftmost, prior)
        return out

    fold(plan, False, frozenset())
    order = normalize(edges)
    return None if has_cycle(order) else order


def waiting_for(order: Order, relation_id: int, finished: Iterable[int]) -> list[int]:
    """The relations a scan of `relation_id` still waits for: those ordered before it that have not
    finished."""
    done = set(finished)
    return sorted(a for a, b in order if b == relation_id and a not in done)


def finished_relations(scans: Mapping[int, tuple[int, bool]]) -> set[int]:
    """The relations every scan of which has finished, from ``scan_id -> (relation id, finished)``."""
    relations: dict[int, bool] = {}
    for relation, finished in scans.values():
        relations[relation] = relations.get(relation, True) and finished
    return {r for r, finished in relations.items() if finished}
