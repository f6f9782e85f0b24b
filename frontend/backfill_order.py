"""``CREATE MATERIALIZED VIEW m WITH (backfill_order = NONE | AUTO | FIXED(a -> b, ...)) AS ...``:
the option read into an order of upstream relation ids (`risingspark.backfill_order`).

As RisingWave's `plan_backfill_order`: FIXED binds each name as a relation (search path, or a
schema-qualified name) and fails with "Backfill order strategy has a cycle" when the edges have one;
AUTO derives the order from the plan and, when that order has a cycle, says so in a NOTICE and
orders nothing. Beyond RisingWave, a FIXED name the query does not scan fails CREATE (RisingWave
accepts it and the edge never matters), and ``a -> b -> c`` is read as ``a -> b, b -> c``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from frontend.binder import ident
from risingspark.backfill_order import Order, auto_order, has_cycle, normalize
from risingspark.errors import InvalidParameterValue, SyntaxError_, UndefinedTable
from risingspark.stream_plan import StreamNode, scans

OPTION = "backfill_order"
_FORMS = "backfill_order must be NONE, AUTO or FIXED(relation -> relation, ...)"


@dataclass
class PlannedOrder:
    order: Order = ()
    notices: list[str] = field(default_factory=list)


def plan_backfill_order(session, value: exp.Expression | None, plan: StreamNode) -> PlannedOrder:
    """The order a CREATE's ``backfill_order`` option asks for (None: the option is absent)."""
    if value is None:
        return PlannedOrder()
    if isinstance(value, exp.Var | exp.Column | exp.Identifier | exp.Null) and value.name.upper() in ("NONE", "",
                                                                                                        "DEFAULT"):
        return PlannedOrder()
    if isinstance(value, exp.Var | exp.Column | exp.Identifier) and value.name.upper() == "AUTO":
        order = auto_order(plan)
        if order is None:
            return PlannedOrder((), ["Backfill order strategy has a cycle"])
        return PlannedOrder(order)
    if isinstance(value, exp.Anonymous) and value.name.upper() == "FIXED":
        return PlannedOrder(_fixed(session, value.expressions, plan))
    raise SyntaxError_(f"{_FORMS}, not {value.sql(dialect='postgres')}")


def _fixed(session, args: list[exp.Expression], plan: StreamNode) -> Order:
    if not args:
        raise SyntaxError_(f"{_FORMS}: FIXED() names no relations")
    scanned = {s.upstream_id for s in scans(plan)}
    edges: list[tuple[int, int]] = []
    for arg in args:
        names = _chain(arg)
        if len(names) < 2:
            raise SyntaxError_(f"{_FORMS}: {arg.sql(dialect='postgres')} is not of the form a -> b")
        ids = [_bind(session, schema, name, scanned) for schema, name in names]
        edges += zip(ids, ids[1:], strict=False)
    order = normalize(edges)
    if has_cycle(order):
        raise InvalidParameterValue("Backfill order strategy has a cycle")
    return order


def _chain(e: exp.Expression) -> list[tuple[str | None, str]]:
    """The names of ``a -> b [-> c ...]``, which sqlglot reads as a lambda (``a -> ...``) or a JSON
    extraction (``s.a -> ...``)."""
    if isinstance(e, exp.Lambda):
        if len(e.expressions) != 1:
            raise SyntaxError_(f"{_FORMS}: {e.sql(dialect='postgres')} is not of the form a -> b")
        return [(None, ident(e.expressions[0])), *_chain(e.this)]
    if isinstance(e, exp.JSONExtract):
        return [*_chain(e.this), *_chain(e.expression)]
    if isinstance(e, exp.Column) and not e.args.get("catalog"):
        return [(ident(e.args.get("table")) or None, ident(e.this))]
    if isinstance(e, exp.Identifier):
        return [(None, ident(e))]
    raise SyntaxError_(f"{_FORMS}: {e.sql(dialect='postgres')} is not a relation name")


def _bind(session, schema: str | None, name: str, scanned: set[int]) -> int:
    ref = session.catalog_reader().lookup(name, schema)
    shown = f"{schema}.{name}" if schema else name
    if ref is None or ref.relation is None:
        raise UndefinedTable(f'relation "{shown}" does not exist')
    if ref.relation.id not in scanned:
        raise InvalidParameterValue(f'backfill_order names relation "{shown}", which the query does not scan')
    return ref.relation.id


def explain_lines(order: Order, names: dict[int, str]) -> list[str]:
    """EXPLAIN's lines for an order: ``Backfill order: a -> c, b -> c`` (or ``none``)."""
    if not order:
        return ["Backfill order: none (every upstream at once)"]
    return ["Backfill order: " + ", ".join(f"{names.get(a, a)} -> {names.get(b, b)}" for a, b in order)]
