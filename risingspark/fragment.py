"""Fragments of a stream plan: chains of executors between exchanges, as RisingWave's fragmenter cuts
a streaming job.

A fragment runs as `parallelism` actors; each exchange of the plan becomes an edge that ships rows
from the fragment below it to the fragment above it (hash-partitioned by the exchange's
distribution key, or to a single actor when it has none). Fragment ids are stable for a job:
``job_id * FRAGMENTS_PER_JOB + index``, the root (materialize) fragment at index 0 and the others
numbered in pre-order from the root, so metrics and the dashboard name the same fragment.

>>> from risingspark.stream_plan import StreamDml, StreamMaterialize
>>> from risingspark.types import INT8, Field
>>> f = (Field("id", INT8),)
>>> plan = StreamMaterialize(fields=f, stream_key=(0,), input=StreamExchange(
...     fields=f, stream_key=(0,), input=StreamDml(fields=f, stream_key=(0,), table_id=3), dist_key=(0,)))
>>> graph = plan_fragments(3, plan)
>>> [(fr.fragment_id, [executor_name(n) for n in fr.nodes]) for fr in graph.fragments]
[(300, ['Materialize']), (301, ['Dml'])]
>>> [(e.upstream_fragment_id, e.downstream_fragment_id, e.dispatch) for e in graph.edges]
[(301, 300, 'HashShard(id)')]
"""

from __future__ import annotations

from dataclasses import dataclass

from risingspark.stream_plan import StreamExchange, StreamNode, StreamTableScan, explain

FRAGMENTS_PER_JOB = 100


@dataclass(frozen=True)
class Fragment:
    """A chain of executors between exchanges, downstream executor first.

    Attributes:
        fragment_id: ``job_id * FRAGMENTS_PER_JOB + index``.
        nodes: the plan nodes this fragment runs, from its output down to its input.
        scan: the `StreamTableScan` reading an upstream job (the backfill), if the fragment has one.
    """

    fragment_id: int
    nodes: tuple[StreamNode, ...]
    scan: StreamTableScan | None = None

    @property
    def is_backfill(self) -> bool:
        return self.scan is not None


@dataclass(frozen=True)
class FragmentEdge:
    """An exchange: rows flow from `upstream_fragment_id` into `downstream_fragment_id`."""

    upstream_fragment_id: int
    downstream_fragment_id: int
    exchange: StreamExchange

    @property
    def dispatch(self) -> str:
        """How rows are routed, as EXPLAIN prints the exchange's distribution."""
        text = explain(self.exchange)[0]
        return text.removeprefix("StreamExchange { dist: ").removesuffix(" }")


@dataclass(frozen=True)
class FragmentGraph:
    fragments: tuple[Fragment, ...]
    edges: tuple[FragmentEdge, ...]

    def fragment(self, fragment_id: int) -> Fragment | None:
        return next((f for f in self.fragments if f.fragment_id == fragment_id), None)


def plan_fragments(job_id: int, plan: StreamNode) -> FragmentGraph:
    """Cut a job's stream plan at its exchanges."""
    fragments: list[Fragment] = []
    edges: list[FragmentEdge] = []

    def cut(root: StreamNode) -> int:
        fragment_id = job_id * FRAGMENTS_PER_JOB + len(fragments)
        fragments.append(Fragment(fragment_id, ()))  # reserves the pre-order index
        nodes: list[StreamNode] = []
        scan: StreamTableScan | None = None
        below: list[StreamExchange] = []
        stack = [root]
        while stack:
            node = stack.pop()
            nodes.append(node)
            if isinstance(node, StreamTableScan):
                scan = node
            for child in node.inputs:
                if isinstance(child, StreamExchange):
                    below.append(child)
                else:
                    stack.append(child)
        index = fragment_id - job_id * FRAGMENTS_PER_JOB
        fragments[index] = Fragment(fragment_id, tuple(nodes), scan)
        for exchange in below:
            assert exchange.input is not None
            edges.append(FragmentEdge(cut(exchange.input), fragment_id, exchange))
        return fragment_id

    cut(plan)
    return FragmentGraph(tuple(fragments),
                         tuple(sorted(edges, key=lambda e: (e.downstream_fragment_id, e.upstream_fragment_id))))


def backfill_fragment_id(job_id: int, plan: StreamNode) -> int | None:
    """The fragment that reads the upstream job (and backfills it), if any."""
    return next((f.fragment_id for f in plan_fragments(job_id, plan).fragments if f.is_backfill), None)


def executor_name(node: StreamNode) -> str:
    """The executor a plan node runs as, RisingWave's name without the ``Stream`` prefix."""
    return type(node).__name__.removeprefix("Stream")


def executor_detail(node: StreamNode) -> str:
    """The node's line of EXPLAIN (its own line only, not its inputs)."""
    return explain(node)[0]
