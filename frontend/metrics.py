"""The frontend's Prometheus metrics: pgwire connections and statement latency (served by meta's
``/metrics`` in the playground)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

# The playground's one frontend node.
NODE = "frontend-1"

CONNECTIONS = Gauge("risingspark_frontend_pgwire_active_connections", "Open Postgres wire connections", ["node"])
CONNECTIONS_TOTAL = Counter("risingspark_frontend_pgwire_connections_total",
                            "Postgres wire connections accepted", ["node"])
QUERY_DURATION = Histogram(
    "risingspark_frontend_query_duration_seconds", "Time to run one statement, by kind of statement",
    ["node", "statement"], buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120))
# (the children of the statements the event loop answers, looked up once: `labels` takes a lock and a
# dict lookup per call)
SELECT_DURATION = QUERY_DURATION.labels(NODE, "select")
INSERT_DURATION = QUERY_DURATION.labels(NODE, "insert")
QUERY_ERRORS = Counter("risingspark_frontend_query_errors_total", "Statements that failed, by kind of statement",
                       ["node", "statement"])


def statement_kind(stmt: object) -> str:
    """A low-cardinality name for a parsed statement: ``select``, ``insert``, ``create``, ``flush``...

    >>> class FlushStmt: ...
    >>> statement_kind(FlushStmt())
    'flush'
    """
    ast = getattr(stmt, "ast", None)
    name = type(ast if ast is not None else stmt).__name__.removesuffix("Stmt").lower()
    return _SAME_AS.get(name, name) or "other"


_SAME_AS = {"fastinsert": "insert", "union": "select", "values": "select"}

KEY_QUERIES = Counter("risingspark_frontend_key_queries_total",
                      "Batch queries answered by a key lookup (local mode's point-query path)")
