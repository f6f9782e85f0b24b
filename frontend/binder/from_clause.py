"""FROM and the join conditions of WHERE: the join tree of a query block.

PostgreSQL's FROM is a list of items joined by commas, ``CROSS JOIN``, ``[INNER] JOIN ... ON`` /
``USING``, ``NATURAL JOIN`` and outer joins. A streaming join distributes rows by an equality
between its sides (a hash join), so the join order matters: ``FROM a, b, c WHERE a.x = c.x AND
b.y = c.y`` joined as written would start with ``a × b``. As RisingWave's optimizer does, inner joins
are reordered and their conditions pushed down:

1. **Groups.** The FROM list is cut at outer joins into groups of items joined by commas, CROSS or
   INNER joins. The tree of everything before an outer join is the first unit of the next group;
   the outer join itself is kept as written (its ON condition splits into key pairs, a LEFT join's
   conjuncts over its null-supplying side alone filter that side first, and the rest is tested while
   the join matches rows).
2. **Conditions.** A group's pool holds its inner joins' ON conditions and the WHERE conjuncts that
   may move there: those of the last group, and those of an earlier group over its own items while
   no RIGHT or FULL join follows it (a LEFT join keeps every left row, so filtering them commutes
   with it). A conjunct over one unit filters that unit before any join; one over several is
   applied (a join residual) where they meet; one over none, a subquery, a temporal filter, or a
   conjunct the group cannot bind stays in WHERE.
3. **Greedy order.** From the group's first unit, the next unit joined is the first in FROM order
   linked to the joined ones by ``a.x = b.y`` (or ``a.x IS NOT DISTINCT FROM b.y``, a NULL-safe
   key); when none is linked, the next unit in FROM order is cross-joined (a join on an empty key:
   all rows in one vnode, as RisingWave's joins with a singleton side).

Bound expressions refer to FROM columns by index; each item is bound once at a provisional offset
(FROM order) and every condition is moved to the item's final offset (join order) with
`frontend.expr.map_inputs`. The scope keeps the items in FROM order, so names resolve as written and
``SELECT *`` lists columns in FROM order (merged USING columns first) whatever the join order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot import exp

from frontend.binder.bound import BoundFrom, BoundJoin, FromItem, Scope
from frontend.binder.coercion import coerce, common_type
from frontend.binder.expression import bind_expr, strip_cast
from frontend.binder.relation import ident
from frontend.expr import BinaryOp, BoundExpr, InputRef, map_inputs, walk
from frontend.temporal_filter import match_temporal, split_between
from risingspark.errors import (
    AmbiguousColumn,
    DuplicateObject,
    FeatureNotSupported,
    UndefinedColumn,
    UndefinedTable,
)
from risingspark.types import BOOL

BindItem = Callable[[exp.Expression, int, bool], FromItem]

_OUTER = {"LEFT": "LEFT", "RIGHT": "RIGHT", "FULL": "FULL"}


@dataclass
class _Cond:
    """A condition of the pool: bound at provisional offsets, with the items it reads."""

    expr: BoundExpr
    items: frozenset[int]
    ast: exp.Expression | None = None  # a WHERE conjunct (None: from ON), kept if it stays in WHERE


@dataclass
class _Unit:
    """A unit of a group: one FROM item, or the tree of the groups before (`tree`)."""

    items: frozenset[int]
    tree: BoundFrom | None = None


@dataclass
class _Group:
    units: list[_Unit]
    conds: list[_Cond] = field(default_factory=list)


@dataclass
class FromResult:
    source: BoundFrom
    scope: Scope
    where: list[exp.Expression]  # the WHERE conjuncts left to the query block


class FromBinder:
    """Binds one query block's FROM (and moves WHERE's join conditions into it)."""

    def __init__(self, bind_item: BindItem, outer: Scope | None) -> None:
        self.bind_item = bind_item
        self.outer = outer
        self.items: list[FromItem] = []
        self.start: list[int] = []  # provisional offsets (FROM order)
        self.final: dict[int, int] = {}  # final offsets (join order), item -> offset
        self.merged: dict[str, tuple[int, int] | None] = {}
        self.merged_chain: dict[str, int] = {}  # merged name -> the first item of its comma-separated FROM item
        self.full: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {}  # a FULL join's merged name -> both sides
        self.chain_starts: set[int] = set()  # the first items of the comma-separated FROM items
        self.using_pairs: dict[int, list[tuple[tuple[int, int], int]]] = {}  # right item -> (left column, right column)
        self.star: list[tuple[int, int]] = []

    # ---- items and the provisional scope --------------------------------------------------------
    def _add_item(self, node: exp.Expression, qualified: bool) -> int:
        item = self.bind_item(node, 0, qualified)
        if any(s.alias == item.alias for s in self.items):
            raise DuplicateObject(f'table name "{item.alias}" specified more than once')
        offset = self.start[-1] + len(self.items[-1].fields) if self.items else 0
        self.items.append(dataclasses.replace(item, offset=offset))
        self.start.append(offset)
        return len(self.items) - 1

    def _scope(self, upto: int | None = None) -> Scope:
        items = self.items if upto is None else self.items[:upto + 1]
        merged = {k: v for k, v in self.merged.items() if v is None or v[0] < len(items)}
        full = {k: v for k, v in self.full.items() if v[1][0] < len(items)}
        return Scope(list(items), self.outer, merged, full=full, merged_from=self._merged_from())

    def _merged_from(self) -> dict[str, frozenset[int]]:
        """Each merged name's comma-separated FROM item (its items): an unqualified name that
        another item also has is ambiguous, as in PostgreSQL."""
        starts = sorted({0, *self.chain_starts})
        out = {}
        for name, chain in self.merged_chain.items():
            following = [s for s in starts if s > chain]
            end = following[0] if following else len(self.items)
            out[name] = frozenset(range(chain, end))
        return out

    def _item_of(self, index: int) -> int:
        return max(i for i, s in enumerate(self.start) if s <= index)

    def _items_of(self, e: BoundExpr) -> frozenset[int]:
        return frozenset(self._item_of(x.index) for x in walk(e) if isinstance(x, InputRef))

    # ---- the whole FROM -------------------------------------------------------------------------
    def bind(self, query: exp.Select, where: list[exp.Expression]) -> FromResult:
        from_ = query.args.get("from") or query.args.get("from_")
        if from_ is None:
            raise FeatureNotSupported("a materialized view without FROM is not supported yet")
        joins = query.args.get("joins") or []
        qualified = bool(joins)
        first = self._add_item(from_.this, qualified)
        self.star = [(first, c) for c in range(len(self.items[first].columns))]
        # Cut the FROM into groups at outer joins (bound as written, in order).
        steps: list[tuple[str, int, exp.Join]] = []
        for j in joins:
            kind = self._kind(j)
            steps.append((kind, self._add_item(j.this, qualified), j))
        chain_starts, start = [], first  # the item each step's comma-separated chain starts at
        for _, i, j in steps:
            start = i if _is_comma(j) else start
            chain_starts.append(start)
        self.chain_starts = set(chain_starts)
        usings = [self._using(j, i, s) for (_, i, j), s in zip(steps, chain_starts, strict=True)]  # (before WHERE)
        outer_kinds = [k for k, _, _ in steps if k in _OUTER]
        groups_items: list[frozenset[int]] = [frozenset({first})]
        for kind, i, _ in steps:
            if kind in _OUTER:
                groups_items.append(groups_items[-1] | {i})
            else:
                groups_items[-1] = groups_items[-1] | {i}
        if not steps:  # one item: WHERE stays whole (a TopN's ``rn <= n`` or a temporal filter reads it)
            self._place(first, 0, None)
            return FromResult(self.items[first], Scope(self._final_items(), self.outer), list(where))
        where_conds, left_in_where = self._where_conds(where, self._scope())
        pools: list[list[_Cond]] = [[] for _ in groups_items]
        for c in where_conds:
            g = next(g for g in range(len(groups_items)) if g == len(groups_items) - 1 or (
                c.items <= groups_items[g] and all(k not in ("RIGHT", "FULL") for k in outer_kinds[g:])))
            pools[g].append(c)
        group = _Group([_Unit(frozenset({first}))], pools[0])
        g = 0
        last_comma = 0  # the item after the latest comma: explicit joins bind tighter than commas
        for (kind, i, j), using in zip(steps, usings, strict=True):
            if _is_comma(j):
                last_comma = i
            if kind not in _OUTER:
                group.units.append(_Unit(frozenset({i})))
                group.conds += self._on_conds(j, i, using)
                continue
            if last_comma:
                self._check_after_comma(kind, i, j, using, last_comma)
            tree, leftover = self._join_group(group)
            left_in_where += leftover
            tree = self._outer_join(tree, kind, i, j, using)
            g += 1
            group = _Group([_Unit(groups_items[g - 1] | {i}, tree)], pools[g])
        source, leftover = self._join_group(group)
        left_in_where += leftover
        scope = Scope(self._final_items(), self.outer, self.merged, self.star, self.full, self._merged_from())
        return FromResult(source, scope, left_in_where)

    @staticmethod
    def _kind(j: exp.Join) -> str:
        side = (j.args.get("side") or "").upper()
        kind = (j.args.get("kind") or "").upper()
        if side in _OUTER:
            return side
        if side or kind not in ("", "INNER", "CROSS", "OUTER"):
            raise FeatureNotSupported(f"{side or kind} JOIN in a materialized view is not supported yet")
        if kind == "CROSS" and (j.args.get("on") is not None or j.args.get("using")):
            raise FeatureNotSupported("CROSS JOIN with a join condition")
        return "INNER"

    # ---- conditions -----------------------------------------------------------------------------
    def _where_conds(self, where: list[exp.Expression], scope: Scope) -> tuple[list[_Cond], list[exp.Expression]]:
        """The WHERE conjuncts that may join the pools (bound), and those that stay in WHERE."""
        pool, stay = [], []
        for c in where:
            if _stays_in_where(c):
                stay.append(c)
                continue
            try:
                e = coerce(bind_expr(c, scope, allow_agg=False), BOOL, "WHERE")
            except (UndefinedColumn, UndefinedTable):
                stay.append(c)  # (an outer reference: WHERE reports it)
                continue
            items = self._items_of(e)
            if not items:
                stay.append(c)
                continue
            pool.append(_Cond(e, items, c))
        return pool, stay

    def _using(self, j: exp.Join, right: int, chain: int) -> list[str] | None:
        """The column names of ``USING (...)`` or NATURAL (None for neither); records the merged
        columns and ``SELECT *``'s order. `chain` is the first item of the comma-separated FROM item
        the join is in: its left side starts there (``a, b JOIN c USING (k)`` joins ``b`` and ``c``,
        and lists ``a``'s columns first)."""
        kind = self._kind(j)
        before = [(i, c) for i, c in self.star if i < chain]
        left_star = [(i, c) for i, c in self.star if i >= chain]
        if (j.args.get("method") or "").upper() == "NATURAL":
            right_names = {f.name for f in self.items[right].columns if not f.hidden}
            names = [n for n in dict.fromkeys(self._column_name(i, c) for i, c in left_star if
                                              not self.items[i].columns[c].hidden) if n in right_names]
        elif j.args.get("using"):
            names = [ident(u) for u in j.args["using"]]
        else:
            self.star += [(right, c) for c in range(len(self.items[right].columns))]
            return None
        merged_first: list[tuple[int, int]] = []
        pairs = []
        for n in names:  # (the left columns before this join merges them)
            pairs.append((self._left_column(n, right, chain), self._column_of(right, n)))
        self.using_pairs[right] = pairs
        for n, (left, rc) in zip(names, pairs, strict=True):
            self.merged[n] = None if kind == "FULL" else (right, rc) if kind == "RIGHT" else left
            self.merged_chain[n] = chain
            if kind == "FULL":
                self.full[n] = (left, (right, rc))
            merged_first.append((right, rc) if kind == "RIGHT" else left)
        rest_left = [(i, c) for i, c in left_star if self._column_name(i, c) not in names]
        rest_right = [(right, c) for c in range(len(self.items[right].columns))
                      if self.items[right].columns[c].name not in names]
        self.star = before + merged_first + rest_left + rest_right
        return names

    def _column_name(self, item: int, column: int) -> str:
        return self.items[item].columns[column].name

    def _column_of(self, item: int, name: str) -> int:
        cols = [c for c, f in enumerate(self.items[item].columns) if f.name == name]
        if not cols:
            raise UndefinedColumn(f'column "{name}" specified in USING clause does not exist in right table')
        return cols[0]

    def _left_column(self, name: str, right: int, chain: int) -> tuple[int, int]:
        """The left side's column `name` of a USING join whose right item is `right`, in the
        comma-separated FROM item that starts at item `chain`."""
        if name in self.merged and self.merged_chain[name] == chain:
            where = self.merged[name]
            if where is None:
                raise FeatureNotSupported("a USING join on the merged column of a FULL JOIN USING")
            return where
        owners = [(i, c) for i in range(chain, right) for c, f in enumerate(self.items[i].columns) if f.name == name]
        if len(owners) != 1:
            raise AmbiguousColumn(f'common column name "{name}" appears more than once in left table') if owners \
                else UndefinedColumn(f'column "{name}" specified in USING clause does not exist in left table')
        return owners[0]

    def _on_conds(self, j: exp.Join, right: int, using: list[str] | None) -> list[_Cond]:
        """The conditions of an inner join's ON or USING, bound over the items up to it."""
        if using is not None:
            out = []
            scope = self._scope(right)
            for (li, lc), rc in self.using_pairs[right]:
                left, right_ref = scope._ref(li, lc), scope._ref(right, rc)
                a, b, _ = common_type(left, right_ref, "=")
                out.append(_Cond(BinaryOp("=", a, b, BOOL), frozenset({li, right})))
            return out
        on = j.args.get("on")
        if on is None:
            return []
        scope = self._scope(right)
        e = coerce(bind_expr(on, scope, allow_agg=False), BOOL, "JOIN/ON")
        conds = _flatten_and(e)
        if scope.full and not any(_column_equality(c) for c in conds):
            plain = self._scope(right)
            plain.full = {}  # (binds only if no FULL join's merged column is read)
            try:
                bind_expr(on, plain, allow_agg=False)
            except FeatureNotSupported:
                raise FeatureNotSupported(
                    "a join condition on the merged column of a FULL JOIN USING in a materialized view needs an "
                    "equality of two columns beside it (it would be a join on no key); qualify the column") from None
        return [_Cond(c, self._items_of(c)) for c in conds]

    # ---- joining ---------------------------------------------------------------------------------
    def _join_group(self, group: _Group) -> tuple[BoundFrom, list[exp.Expression]]:
        """The group's units joined in greedy order; returns the tree and the conditions that stay
        in WHERE."""
        unit_of = {i: n for n, u in enumerate(group.units) for i in u.items}
        filters: dict[int, list[BoundExpr]] = {}
        multi: list[_Cond] = []
        for c in group.conds:
            if any(i not in unit_of for i in c.items):
                raise AssertionError("a join condition over items outside its group")
            units = {unit_of[i] for i in c.items}
            if len(units) == 1 and group.units[next(iter(units))].tree is None:
                filters.setdefault(next(iter(units)), []).append(c.expr)
            else:
                multi.append(c)
        first = group.units[0]
        tree = first.tree if first.tree is not None else self._place(next(iter(first.items)), 0, filters.get(0))
        joined = {0}
        width = len(tree.fields)
        applied: set[int] = set()
        if len(group.units) == 1:
            assert all(c.ast is not None for c in multi), "an ON condition in a group of one unit"
            return tree, [c.ast for c in multi if c.ast is not None]
        while len(joined) < len(group.units):
            unjoined = [n for n in range(len(group.units)) if n not in joined]
            linked = [n for n in unjoined if any(
                _equi(c.expr) is not None and len(us := {unit_of[i] for i in c.items}) == 2 and n in us
                and len(us & joined) == 1 for c in multi)]
            nxt = (linked or unjoined)[0]
            unit = group.units[nxt]
            (item,) = unit.items
            right = self._place(item, width, filters.get(nxt))
            now = joined | {nxt}
            pairs: list[tuple[InputRef, InputRef, bool]] = []
            residual: list[BoundExpr] = []
            for ci, c in enumerate(multi):
                units = {unit_of[i] for i in c.items}
                if ci in applied or not units <= now or nxt not in units:
                    continue
                applied.add(ci)
                e = self._moved(c.expr)
                pair = _equi(e)
                if pair is not None and len(units) == 2:
                    a, b, null_safe = pair
                    if a.index >= width:
                        a, b = b, a
                    pairs.append((a, b, null_safe))
                else:
                    residual.append(e)
            tree = BoundJoin(tree, right, "INNER", tuple(a for a, _, _ in pairs), tuple(b for _, b, _ in pairs),
                             _conjunction(residual), tuple(ns for _, _, ns in pairs))
            joined = now
            width += len(right.fields)
        leftover = [c for ci, c in enumerate(multi) if ci not in applied]  # (over the first unit alone)
        if leftover:
            assert isinstance(tree, BoundJoin)
            extra = [self._moved(c.expr) for c in leftover]
            tree = dataclasses.replace(tree, residual=_conjunction(([tree.residual] if tree.residual else []) + extra))
        return tree, []

    def _place(self, item: int, offset: int, filters: list[BoundExpr] | None) -> FromItem:
        """Item `item` at its final offset, filtered by its own conditions."""
        self.final[item] = offset
        placed = dataclasses.replace(self.items[item], offset=offset)
        if filters:
            placed = dataclasses.replace(placed, filter=_conjunction([self._moved(f) for f in filters]))
        return placed

    def _moved(self, e: BoundExpr) -> BoundExpr:
        """`e`, bound at provisional offsets, over the items' final offsets."""
        def move(ref: InputRef) -> BoundExpr:
            item = self._item_of(ref.index)
            return dataclasses.replace(ref, index=ref.index - self.start[item] + self.final[item])
        return map_inputs(e, move)

    def _check_after_comma(self, kind: str, right: int, j: exp.Join, using: list[str] | None, first: int) -> None:
        """``FROM a, b LEFT JOIN c ON ...`` joins ``b`` and ``c`` before ``a``: for a LEFT join the
        result is the same as joining them in order (its ON may only read items from ``b`` on, as in
        PostgreSQL); for a RIGHT or FULL join it is not, and that order is not planned yet."""
        if kind != "LEFT":
            raise FeatureNotSupported(f"a {kind} JOIN after a comma-separated FROM item in a materialized view is "
                                      f"not supported yet; write the FROM with explicit JOINs or a subquery")
        for c in self._on_conds(j, right, using):
            early = sorted(i for i in c.items if i < first)
            if early:
                raise UndefinedTable(f'invalid reference to FROM-clause entry for table "{self.items[early[0]].alias}"',
                                     hint="There is an entry for this table, but it cannot be referenced from this "
                                          "part of the query.")

    def _outer_join(self, tree: BoundFrom, kind: str, right: int, j: exp.Join, using: list[str] | None) -> BoundFrom:
        width = len(tree.fields)
        conds = self._on_conds(j, right, using)
        if using is None and j.args.get("on") is None:
            raise FeatureNotSupported(f"{kind} JOIN without ON or USING")
        pairs: list[tuple[InputRef, InputRef, bool]] = []
        right_filters: list[BoundExpr] = []
        residual: list[BoundExpr] = []
        for c in conds:
            pair = _equi(c.expr)
            if pair is not None and len(c.items) == 2 and right in c.items:
                pairs.append(pair)
            elif kind == "LEFT" and c.items == {right}:
                right_filters.append(c.expr)  # the nullable side's own condition: it filters that side first
            else:
                residual.append(c.expr)  # tested while the join matches rows
        placed = self._place(right, width, right_filters)
        moved = []
        for a0, b0, null_safe in pairs:
            a, b = self._moved(a0), self._moved(b0)
            assert isinstance(a, InputRef) and isinstance(b, InputRef)
            if a.index >= width:
                a, b = b, a
            moved.append((a, b, null_safe))
        return BoundJoin(tree, placed, kind, tuple(a for a, _, _ in moved), tuple(b for _, b, _ in moved),
                         _conjunction([self._moved(r) for r in residual]), tuple(ns for _, _, ns in moved))

    def _final_items(self) -> list[FromItem]:
        return [dataclasses.replace(s, offset=self.final[i]) for i, s in enumerate(self.items)]


def _column_equality(e: BoundExpr) -> bool:
    """``a.x = b.y`` over two columns (a possible join key)."""
    return isinstance(e, BinaryOp) and e.op == "=" and all(
        isinstance(strip_cast(side), InputRef) for side in (e.left, e.right))


def _is_comma(j: exp.Join) -> bool:
    """``FROM a, b``: a join without kind, side, method or condition."""
    return not any(j.args.get(k) for k in ("side", "kind", "method", "on", "using"))


def _stays_in_where(c: exp.Expression) -> bool:
    """Subqueries, temporal filters: WHERE binds them (as joins or filters of their own)."""
    if c.find(exp.Subquery, exp.Exists, exp.Select) is not None:
        return True
    return any(match_temporal(part) is not None for part in split_between(c))


def _flatten_and(e: BoundExpr) -> list[BoundExpr]:
    if isinstance(e, BinaryOp) and e.op == "AND":
        return _flatten_and(e.left) + _flatten_and(e.right)
    return [e]


def _conjunction(parts: list[BoundExpr]) -> BoundExpr | None:
    out: BoundExpr | None = None
    for part in parts:
        out = part if out is None else BinaryOp("AND", out, part, BOOL)
    return out


def _equi(e: BoundExpr) -> tuple[InputRef, InputRef, bool] | None:
    """``a = b`` or ``a IS NOT DISTINCT FROM b`` between two columns of comparable types."""
    if not isinstance(e, BinaryOp) or e.op not in ("=", "IS NOT DISTINCT FROM"):
        return None
    a, b = strip_cast(e.left), strip_cast(e.right)
    if not isinstance(a, InputRef) or not isinstance(b, InputRef):
        return None
    if a.type.name is not b.type.name and not (a.type.is_numeric and b.type.is_numeric):
        return None
    return a, b, e.op != "="
