"""Query blocks of a materialized view: FROM (relations, subqueries, CTEs, time windows, joins),
WHERE (with IN / EXISTS subqueries as semi / anti joins), the select list, GROUP BY, HAVING,
ORDER BY ... LIMIT, set operations."""

from __future__ import annotations

from typing import cast

import sqlglot
from sqlglot import exp

from frontend.binder.bound import (
    BoundFrom,
    BoundJoin,
    BoundQuery,
    BoundScan,
    BoundSetOp,
    BoundStreamSelect,
    BoundSubquery,
    FromItem,
    OrderItem,
    RowNumber,
    Scope,
    SelectItem,
)
from frontend.binder.coercion import coerce, common_type, numeric_result
from frontend.binder.expression import bind_expr, check_grouped, output_name, strip_cast
from frontend.binder.from_clause import FromBinder
from frontend.binder.grouping_sets import (
    distinct_on,
    expand_grouping_sets,
    has_grouping_sets,
    replace_grouping_calls,
)
from frontend.binder.normalize import factor_or
from frontend.binder.relation import CatalogReader, ident
from frontend.binder.set_operation import rewrite_set_operation
from frontend.binder.subquery import (
    having_subqueries,
    scalar_subqueries,
    singleton_dynamic_filter,
    unnest_scalars,
)
from frontend.binder.udf import resolve_udfs
from frontend.binder.window import OverWindow, WindowItem, bind_window_call, window_spec
from frontend.expr import (
    BinaryOp,
    BoundExpr,
    InputRef,
    Literal,
    UnaryOp,
    WindowBound,
    contains_agg,
)
from frontend.interval import fixed_interval_micros, is_interval_literal
from frontend.rw_clauses import CHANGELOG_FUNCTION
from frontend.temporal_filter import TemporalCond, match_temporal, split_between, unsupported_column
from risingspark.catalog import RelationKind
from risingspark.errors import (
    DatatypeMismatch,
    FeatureNotSupported,
    InvalidColumnReference,
    InvalidParameterValue,
    SyntaxError_,
    UndefinedColumn,
    UndefinedTable,
    WrongObjectType,
)
from risingspark.functions import FunctionCatalog
from risingspark.stream_plan import CHANGELOG_FIELDS
from risingspark.types import (
    BOOL,
    INT8,
    NUMERIC,
    Field,
    TypeName,
)


class QueryBinder:
    """Binds a materialized view's query: query blocks, set operations, subqueries in FROM, CTEs
    (inlined at each reference, as RisingWave's binder does), and ``IN`` / ``EXISTS`` subqueries
    in WHERE as semi / anti joins."""

    def __init__(self, catalog: CatalogReader) -> None:
        self.catalog = catalog
        self.ctes: list[dict[str, exp.Expression]] = []
        self.unnamed = 0  # subqueries the binder names (`alias`)
        self.functions: dict[int, FunctionCatalog] = {}  # the user-defined functions the query calls

    def query(self, node: exp.Expression) -> BoundQuery:
        node, used = resolve_udfs(node, self.catalog)
        self.functions.update(used)
        with_ = node.args.get("with") or node.args.get("with_")
        self.ctes.append({})
        try:
            if with_ is not None and with_.args.get("recursive"):
                raise FeatureNotSupported("WITH RECURSIVE in a materialized view is not supported")
            for cte in with_.expressions if with_ is not None else []:
                name = ident(cte.args["alias"].this)
                body = cte.this
                self.query(body)  # bind now: errors point at the CTE, not at its use
                self.ctes[-1][name] = cte
            return self._query_body(node)
        finally:
            self.ctes.pop()

    def _query_body(self, node: exp.Expression) -> BoundQuery:
        if isinstance(node, exp.Subquery):
            return self.query(node.this)
        if isinstance(node, exp.SetOperation):
            rewritten = rewrite_set_operation(self, node)
            if rewritten is not None:
                return self.query(rewritten)
        if isinstance(node, exp.Union):
            for arg, feature in (("order", "ORDER BY"), ("limit", "LIMIT"), ("offset", "OFFSET")):
                if node.args.get(arg):
                    raise FeatureNotSupported(f"{feature} on a UNION in a materialized view is not supported yet; "
                                              f"put the UNION in a subquery")
            left, right = self.query(node.this), self.query(node.expression)
            if len(left.fields) != len(right.fields):
                raise SyntaxError_("each UNION query must have the same number of columns")
            fields = []
            for a, b in zip(left.fields, right.fields, strict=True):
                if a.type == b.type:
                    t = a.type
                elif a.type.is_numeric and b.type.is_numeric:
                    t = numeric_result(a.type, b.type)
                elif a.type.name is b.type.name:
                    t = a.type if a.type.name is not TypeName.NUMERIC else NUMERIC
                else:
                    raise DatatypeMismatch(f"UNION types {a.type.display()} and {b.type.display()} cannot be matched")
                fields.append(Field(a.name, t))
            return BoundSetOp(left, right, not node.args.get("distinct"), tuple(fields))
        if isinstance(node, exp.Select):
            if has_grouping_sets(node):
                _, scope, _ = self.from_(node, None)
                return self.query(expand_grouping_sets(node, scope))
            return self.select(node, None)
        raise FeatureNotSupported(f"{type(node).__name__.upper()} in a materialized view is not supported yet")

    def alias(self, prefix: str) -> str:
        """A name for a subquery the binder joins (unique in the statement)."""
        self.unnamed += 1
        return f"{prefix}{self.unnamed}"

    def cte(self, name: str) -> exp.Expression | None:
        for scope in reversed(self.ctes):
            if name in scope:
                return scope[name]
        return None

    # ---- FROM ---------------------------------------------------------------------------------
    def from_item(self, node: exp.Expression, offset: int, qualified: bool) -> FromItem:
        if isinstance(node, exp.Subquery):
            if node.args.get("alias"):
                alias = ident(node.args["alias"].this)
            else:  # (PostgreSQL 16 and RisingWave accept it; its columns are named by column only)
                alias = self.alias("_rw_subquery_")
            return self._subquery(self.query(node.this), alias, offset, qualified, node.args.get("alias"))
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Anonymous) \
                and node.this.name.lower() in ("tumble", "hop"):
            return self._time_window(node, node.this, offset, qualified)
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Anonymous) \
                and node.this.name.lower() == CHANGELOG_FUNCTION:
            return self._changelog(node, node.this, offset, qualified)
        if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Identifier):
            raise FeatureNotSupported(f"{node.sql(dialect='postgres')!r} in FROM of a materialized view is not "
                                      f"supported yet")
        name = ident(node.this)
        if not node.args.get("db") and (cte := self.cte(name)) is not None:
            alias = ident(node.args["alias"].this) if node.args.get("alias") else name
            if (log := _changelog_source(cte.this)) is not None:
                # a changelog CTE reads as the change log itself, its hidden columns selectable
                return self._changelog(log, log.this, offset, qualified, alias)
            q = self.query(cte.this)
            cte_alias = cte.args.get("alias")
            if cte_alias is not None and cte_alias.args.get("columns"):  # WITH w (x, y) AS (...)
                q = self._subquery(q, name, 0, False, cte_alias).query
            return self._subquery(q, alias, offset, qualified, node.args.get("alias"))
        rel = self.catalog.resolve_user(node)
        alias = ident(node.args["alias"].this) if node.args.get("alias") else rel.name
        if rel.kind is RelationKind.INDEX:
            raise WrongObjectType(f'"{rel.name}" is an index')
        if rel.kind is RelationKind.VIEW:  # a view reads as its (schema-qualified) query
            view = cast(exp.Expression, sqlglot.parse_one(rel.extra["query"], read="postgres"))
            alias_node = node.args.get("alias") or exp.TableAlias(
                this=exp.to_identifier(alias), columns=[exp.to_identifier(f.name, quoted=True) for f in rel.fields])
            return self._subquery(self.query(view), alias, offset, qualified, alias_node)
        fields = tuple(Field(f"{alias}.{f.name}" if qualified else f.name, f.type, f.hidden) for f in rel.fields)
        return BoundScan(rel, alias, offset, fields)

    def _changelog(self, node: exp.Table, func: exp.Anonymous, offset: int, qualified: bool,
                   alias: str | None = None) -> BoundScan:
        """``WITH c AS CHANGELOG FROM relation`` (`frontend.rw_clauses` rewrote it into this table
        function): the relation's columns, then its changes' ``changelog_op`` and hidden ids
        (`risingspark.stream_plan.StreamChangeLog`)."""
        (arg,) = func.expressions
        if not isinstance(arg, exp.Column) or not isinstance(arg.this, exp.Identifier):
            raise SyntaxError_("CHANGELOG FROM expects a table or materialized view name")
        parts = [p for p in (arg.args.get("catalog"), arg.args.get("db"), arg.args.get("table")) if p is not None]
        name = ident(arg.this)
        if not parts and self.cte(name) is not None:
            raise FeatureNotSupported("CHANGELOG FROM a CTE is not supported yet: name a table or materialized view")
        table = exp.Table(this=arg.this, db=parts[-1] if parts else None, catalog=parts[0] if len(parts) > 1 else None)
        rel = self.catalog.resolve_user(table)
        if rel.kind not in (RelationKind.TABLE, RelationKind.MATERIALIZED_VIEW):
            raise WrongObjectType(f'CHANGELOG FROM "{rel.name}": it is a {rel.kind.display}, not a table or '
                                  f"materialized view")
        if alias is None:
            alias = ident(node.args["alias"].this) if node.args.get("alias") else rel.name
        fields = tuple(Field(f"{alias}.{f.name}" if qualified else f.name, f.type, f.hidden)
                       for f in rel.fields + CHANGELOG_FIELDS)
        return BoundScan(rel, alias, offset, fields, changelog=True)

    def _time_window(self, node: exp.Table, func: exp.Anonymous, offset: int, qualified: bool) -> BoundSubquery:
        """``TUMBLE(t, ts, size)`` and ``HOP(t, ts, hop, size)`` in FROM, as RisingWave: the columns
        of `t`, then ``window_start`` and ``window_end`` of each window holding ``ts`` (windows
        aligned to the Unix epoch). A tumbling window is a projection; a hopping window, size / hop
        projections (one per window holding a row) under a UNION ALL, rows of NULL ``ts`` in none."""
        kind = func.name.lower()
        args = func.expressions
        want = 3 if kind == "tumble" else 4
        if len(args) != want:
            usage = "TUMBLE(table, time_column, window_size)" if kind == "tumble" else \
                "HOP(table, time_column, hop_size, window_size)"
            raise FeatureNotSupported(f"{kind.upper()} takes {want} arguments here: {usage}")
        if not isinstance(args[0], exp.Column) or args[0].args.get("table"):
            raise SyntaxError_(f"the first argument of {kind.upper()} must be a table or materialized view name")
        table = self.from_item(exp.Table(this=args[0].this), 0, False)
        scope = Scope([table])
        if not isinstance(args[1], exp.Column):
            raise SyntaxError_(f"the second argument of {kind.upper()} must be a column")
        ts = scope.column(args[1])
        if ts.type.name not in (TypeName.TIMESTAMP, TypeName.TIMESTAMPTZ):
            raise DatatypeMismatch(f"the time column of {kind.upper()} must be a timestamp or timestamptz, "
                                   f"not {ts.type.display()}")
        sizes = [_interval_micros(a, kind.upper()) for a in args[2:]]
        columns = scope.star(None)

        def window(unit: int, shift: int, size: int) -> BoundStreamSelect:
            items = [*columns, SelectItem(WindowBound(ts, unit, shift, ts.type), "window_start"),
                     SelectItem(WindowBound(ts, unit, shift + size, ts.type, "window_end"), "window_end")]
            where = UnaryOp("IS NOT NULL", ts, BOOL) if kind == "hop" else None
            return BoundStreamSelect(table, tuple(items), where, None)

        q: BoundQuery
        if kind == "tumble":
            q = window(sizes[0], 0, sizes[0])
        else:
            hop, size = sizes
            if size % hop:
                raise InvalidParameterValue("HOP's window size must be a multiple of its hop size")
            if size // hop > MAX_HOP_WINDOWS:
                raise FeatureNotSupported(f"HOP with more than {MAX_HOP_WINDOWS} windows per row (window size "
                                          f"/ hop size) is not supported yet")
            branches = [window(hop, -i * hop, size) for i in range(size // hop)]
            q = branches[0]
            for b in branches[1:]:
                q = BoundSetOp(q, b, True, q.fields)
        # unaliased, the window's columns are named by its table, as RisingWave (``bid.auction``)
        alias = ident(node.args["alias"].this) if node.args.get("alias") else ident(args[0].this)
        return self._subquery(q, alias, offset, qualified, node.args.get("alias"))

    def _subquery(self, q: BoundQuery, alias: str, offset: int, qualified: bool,
                  alias_node: exp.Expression | None) -> BoundSubquery:
        columns = list(q.fields)
        renames = [ident(c) for c in alias_node.args.get("columns") or []] if alias_node is not None else []
        if len(renames) > len(columns):
            raise SyntaxError_(f'table "{alias}" has {len(columns)} columns available but {len(renames)} '
                               f"columns specified")
        for i, r in enumerate(renames):
            columns[i] = Field(r, columns[i].type)
        if renames:
            q = _rename(q, tuple(columns))
        fields = tuple(Field(f"{alias}.{f.name}" if qualified else f.name, f.type, f.hidden) for f in columns)
        return BoundSubquery(q, alias, offset, fields)

    def from_(self, query: exp.Select, outer: Scope | None,
              where: list[exp.Expression] | None = None) -> tuple[BoundFrom, Scope, list[exp.Expression]]:
        """The FROM tree, with the join conditions of `where` (conjuncts) moved into it
        (`frontend.binder.from_clause`); returns the conjuncts left to WHERE."""
        result = FromBinder(self.from_item, outer).bind(query, where or [])
        return result.source, result.scope, result.where

    # ---- WHERE subqueries ---------------------------------------------------------------------
    def _where(self, where: list[exp.Expression], src: BoundFrom, scope: Scope
               ) -> tuple[BoundFrom, BoundExpr | None, tuple[TemporalCond, ...]]:
        """Binds WHERE's conjuncts (those FROM left); its top-level ``x IN (subquery)`` / ``[NOT]
        EXISTS (subquery)`` conjuncts become semi / anti joins of the FROM tree, its temporal filters
        (`frontend.temporal_filter`) are returned apart."""
        parts: list[BoundExpr] = []
        temporal: list[TemporalCond] = []
        for c in [part for conjunct in where for part in split_between(conjunct)]:
            match = match_temporal(c)
            if match is not None:
                column = bind_expr(match.column, scope, allow_agg=False)
                if not isinstance(column, InputRef) or column.type.name not in (TypeName.TIMESTAMP,
                                                                                 TypeName.TIMESTAMPTZ):
                    raise unsupported_column(match.column)
                temporal.append(TemporalCond(column, match.op, match.offset_us))
                continue
            negated = isinstance(c, exp.Not)
            inner = c.this if negated else c
            if isinstance(inner, exp.Paren):
                inner = inner.this
            if isinstance(inner, exp.Exists):
                src = self._exists(inner, src, scope, "ANTI" if negated else "SEMI")
            elif isinstance(inner, exp.In) and inner.args.get("query") is not None:
                if negated:
                    src, scope, cond = self._not_in(inner, src, scope)
                    parts.append(cond)
                else:
                    src = self._in(inner, src, scope)
            elif scalar_subqueries(c):
                unnested = unnest_scalars(self, c, src, scope)
                src, scope = unnested.source, unnested.scope
                if unnested.condition is not None:
                    parts.append(coerce(bind_expr(unnested.condition, scope, allow_agg=False), BOOL, "WHERE"))
            else:
                parts.append(coerce(bind_expr(c, scope, allow_agg=False), BOOL, "WHERE"))
        return src, conjunction(parts), tuple(temporal)

    def _in(self, node: exp.In, src: BoundFrom, scope: Scope, kind: str = "SEMI") -> BoundFrom:
        x = bind_expr(node.this, scope, allow_agg=False)
        if not isinstance(strip_cast(x), InputRef):
            raise FeatureNotSupported("IN (subquery) in a materialized view needs a column on its left side")
        q = self.query(_subquery_of(node))
        if len(q.fields) != 1:
            raise SyntaxError_("subquery has too many columns")
        right = self._subquery(q, self.alias("__in"), len(src.fields), True, None)
        key = InputRef(right.offset, right.fields[0].name, right.fields[0].type)
        left_key = strip_cast(x)
        assert isinstance(left_key, InputRef)
        common_type(left_key, key, "=")
        return BoundJoin(src, right, kind, (left_key,), (key,), None)

    def _not_in(self, node: exp.In, src: BoundFrom, scope: Scope) -> tuple[BoundFrom, Scope, BoundExpr]:
        """``x NOT IN (subquery)`` with its NULL semantics: true when the subquery has no row; else
        when x is not NULL, no row equals x and no row is NULL. The rows with no equal row (an anti
        join), then a condition over the subquery's row and NULL counts (one row, cross-joined)."""
        src = self._in(node, src, scope, "ANTI")
        value = exp.column("_rw_v", table="_rw_not_in")
        counts = exp.select(exp.alias_(exp.Count(this=exp.Star()), "_rw_rows"),
                            exp.alias_(exp.Filter(this=exp.Count(this=exp.Star()),
                                                  expression=exp.Where(this=exp.Is(this=value, expression=exp.Null()))),
                                       "_rw_nulls")) \
            .from_(exp.Subquery(this=_subquery_of(node).copy(), alias=exp.TableAlias(
                this=exp.to_identifier("_rw_not_in"), columns=[exp.to_identifier("_rw_v")])))
        alias = self.alias("__not_in")
        item = self._subquery(self.query(counts), alias, len(src.fields), True, None)
        src = BoundJoin(src, item, "INNER", (), (), None)
        scope = scope.with_item(item)
        cond = exp.or_(exp.EQ(this=exp.column("_rw_rows", table=alias), expression=exp.Literal.number(0)),
                       exp.and_(exp.Not(this=exp.Is(this=node.this.copy(), expression=exp.Null())),
                                exp.EQ(this=exp.column("_rw_nulls", table=alias), expression=exp.Literal.number(0))))
        return src, scope, coerce(bind_expr(cond, scope, allow_agg=False), BOOL, "WHERE")

    def _exists(self, node: exp.Exists, src: BoundFrom, outer: Scope, kind: str) -> BoundFrom:
        sub = node.this
        sub = sub.this if isinstance(sub, exp.Subquery) else sub
        if not isinstance(sub, exp.Select):
            raise FeatureNotSupported("EXISTS over a set operation is not supported in a materialized view yet")
        for arg in ("group", "having", "limit", "offset", "distinct", "with", "with_"):
            if sub.args.get(arg):
                raise FeatureNotSupported(f"EXISTS (subquery with {arg.upper()}) in a materialized view is not "
                                          f"supported yet")
        inner_src, inner, _ = self.from_(sub, None)
        local: list[BoundExpr] = []
        corr: list[tuple[InputRef, InputRef, bool]] = []  # (outer column, inner column, NULL-safe)
        others: list[exp.Expression] = []  # other conditions over both queries
        where = sub.args.get("where")
        for c in conjuncts(where.this) if where else []:
            try:
                local.append(coerce(bind_expr(c, inner, allow_agg=False), BOOL, "WHERE"))
                continue
            except (UndefinedColumn, UndefinedTable):
                pass
            pair = _correlation(c, inner, outer)
            if pair is not None:
                corr.append(pair)
            else:
                others.append(c)
        if not corr and not others:
            raise FeatureNotSupported("an uncorrelated EXISTS in a materialized view is not supported yet")
        alias = self.alias("__exists")
        # the inner columns the other conditions read come out of the subquery beside its keys
        carried: list[exp.Column] = []
        rewritten = []
        for c in others:
            c = c.copy()
            for col in list(c.find_all(exp.Column)):
                if _resolves(inner, col):
                    if col not in carried:
                        carried.append(col.copy())
                    col.replace(exp.column(f"c{carried.index(col)}", table=alias))
            rewritten.append(c)
        items = tuple(SelectItem(i, f"k{n}") for n, (_, i, _) in enumerate(corr)) + \
            tuple(SelectItem(inner.column(col), f"c{n}") for n, col in enumerate(carried))
        q = BoundStreamSelect(inner_src, items, conjunction(local), None)
        right = self._subquery(q, alias, len(src.fields), True, None)
        rkeys = tuple(InputRef(right.offset + n, right.fields[n].name, right.fields[n].type) for n in range(len(corr)))
        both = outer.with_item(right)
        residual = conjunction([coerce(bind_expr(c, both, allow_agg=False), BOOL, "WHERE") for c in rewritten])
        return BoundJoin(src, right, kind, tuple(o for o, _, _ in corr), rkeys, residual,
                         tuple(ns for _, _, ns in corr))

    # ---- SELECT -------------------------------------------------------------------------------
    def select(self, query: exp.Select, outer: Scope | None) -> BoundStreamSelect:
        for arg, feature in (("windows", "WINDOW"),):
            if query.args.get(arg):
                raise FeatureNotSupported(f"{feature} in a materialized view is not supported yet")
        distinct = query.args.get("distinct")
        if distinct is not None and distinct.args.get("on"):
            return self.select(distinct_on(self, query, outer), outer)
        query = replace_grouping_calls(query)
        split = having_subqueries(query)
        if split is not None:
            return self._having_wrapped(query, outer, *split)
        group = query.args.get("group")
        if group is not None and group.args.get("all"):
            raise FeatureNotSupported("GROUP BY ALL in a materialized view is not supported")
        where_node = query.args.get("where")
        source, scope, rest = self.from_(query, outer, factor_or(conjuncts(where_node.this)) if where_node else [])
        where = None
        temporal: tuple[TemporalCond, ...] = ()
        if rest:
            source, where, temporal = self._where(rest, source, scope)

        items: list[SelectItem] = []
        row_number: RowNumber | None = None
        windows = [e.this if isinstance(e, exp.Alias) else e for e in query.expressions]
        windows = [w for w in windows if isinstance(w, exp.Window)]
        # a lone ROW_NUMBER() is a group TopN; other window functions an over window
        lone_row_number = len(windows) == 1 and isinstance(windows[0].this, exp.RowNumber) \
            and windows[0].args.get("spec") is None
        spec = window_spec(windows[0], scope) if windows and not lone_row_number else None
        calls: list[WindowItem] = []
        for e in query.expressions:
            if isinstance(e, exp.Star):
                items += scope.star(None)
                continue
            if isinstance(e, exp.Column) and isinstance(e.this, exp.Star):
                items += scope.star(ident(e.args.get("table")) if e.args.get("table") else None)
                continue
            node = e.this if isinstance(e, exp.Alias) else e
            name = ident(e.args["alias"]) if isinstance(e, exp.Alias) else output_name(node)
            if isinstance(node, exp.Window):
                if lone_row_number:
                    row_number = self._row_number(node, len(items), scope)
                    items.append(SelectItem(Literal(None, INT8), name))
                    continue
                if window_spec(node, scope) != spec:
                    raise FeatureNotSupported("window functions over different windows (PARTITION BY / ORDER BY) "
                                              "in one query block of a materialized view are not supported yet; "
                                              "use a subquery")
                assert spec is not None
                call = bind_window_call(node, len(items), scope, bool(spec[1]))
                calls.append(call)
                items.append(SelectItem(Literal(None, call.type), name))
                continue
            bound = bind_expr(node, scope, allow_agg=True)
            items.append(SelectItem(bound, name))
        over_window = OverWindow(spec[0], spec[1], tuple(calls)) if spec is not None else None

        group = query.args.get("group")
        group_by: tuple[BoundExpr, ...] | None = None
        if group is not None:
            keys = []
            for g in group.expressions:
                if isinstance(g, exp.Literal) and not g.is_string:
                    pos = int(g.this)
                    if not 1 <= pos <= len(items):
                        raise InvalidColumnReference(f"GROUP BY position {pos} is not in select list")
                    keys.append(items[pos - 1].expr)
                elif isinstance(g, exp.Column) and not g.args.get("table") and \
                        not _resolves(scope, g) and (alias := _item_named(items, ident(g.this))) is not None:
                    keys.append(alias.expr)  # GROUP BY an output column name, as Postgres allows
                else:
                    keys.append(bind_expr(g, scope, allow_agg=False))
            group_by = tuple(keys)
        having = None
        if query.args.get("having"):
            having = coerce(bind_expr(query.args["having"].this, scope, allow_agg=True), BOOL, "HAVING")
        if group_by is None and (having is not None or any(contains_agg(i.expr) for i in items)):
            group_by = ()  # a global aggregate: one group
        if (row_number is not None or over_window is not None) and (group_by is not None or distinct is not None):
            raise FeatureNotSupported("window functions together with GROUP BY, aggregates or DISTINCT in one query "
                                      "block of a materialized view are not supported yet; use a subquery")
        if group_by is not None:
            for e, what in [(it.expr, it.name) for it in items] + ([(having, "HAVING")] if having is not None else []):
                check_grouped(e, group_by, what)

        order_by: list[OrderItem] = []
        hidden = 0
        order = query.args.get("order")
        for o in order.expressions if order else []:
            found = self._order_item(o.this, items, scope, group_by, bool(distinct))
            if found is not None:
                pos = found
            else:
                bound = bind_expr(o.this, scope, allow_agg=True)
                if group_by is not None:
                    check_grouped(bound, group_by, "ORDER BY")
                items.append(SelectItem(bound, f"_rw_order_{len(order_by)}"))
                hidden += 1
                pos = len(items) - 1
            desc = bool(o.args.get("desc"))
            nulls_first = o.args.get("nulls_first")
            order_by.append(OrderItem(pos, desc, bool(nulls_first) if nulls_first is not None else desc))
        limit = _count(query.args.get("limit"), "LIMIT")
        offset = _count(query.args.get("offset"), "OFFSET") or 0
        if limit is None and offset:
            raise FeatureNotSupported("OFFSET without LIMIT in a materialized view is not supported")
        if limit is not None and (row_number is not None or over_window is not None):
            raise FeatureNotSupported("window functions together with ORDER BY ... LIMIT in one query block of a "
                                      "materialized view are not supported yet; use a subquery")
        if limit is None:
            # An MV has no order: ORDER BY without LIMIT changes nothing (as RisingWave).
            items = items[:len(items) - hidden]
            order_by, hidden = [], 0
        used = [it.expr for it in items] + [e for e in (where, having) if e is not None] + list(group_by or ()) \
            + [c.column for c in temporal]
        if over_window is not None:
            used += [*over_window.partition_by, *(e for e, _, _ in over_window.order_by),
                     *(c.arg for c in over_window.calls if c.arg is not None)]
        if row_number is not None:
            used += [*row_number.partition_by, *(e for e, _, _ in row_number.order_by)]
        source = singleton_dynamic_filter(source, used)
        return BoundStreamSelect(source, tuple(items), where, group_by, having, distinct is not None,
                                 tuple(order_by), limit, offset, hidden, row_number, temporal, over_window)

    def _having_wrapped(self, query: exp.Select, outer: Scope | None, inner: exp.Select,
                        conditions: list[exp.Expression]) -> BoundStreamSelect:
        """A block whose HAVING compares with scalar subqueries (`frontend.binder.subquery`): the block
        without them as a subquery, the comparisons in a WHERE over it."""
        names = [f.name for f in self.select(inner, outer).fields]
        n = len(names) - len(conditions)
        columns = [f"_rw_c{i}" for i in range(n)] + names[n:]
        wrapped = exp.select(*[exp.alias_(exp.column(c), names[i], quoted=True) for i, c in enumerate(columns[:n])]) \
            .from_(exp.Subquery(this=inner, alias=exp.TableAlias(
                this=exp.to_identifier("_rw_having"), columns=[exp.to_identifier(c) for c in columns]))) \
            .where(exp.and_(*conditions))
        return self.select(wrapped, outer)

    def _row_number(self, node: exp.Window, index: int, scope: Scope) -> RowNumber:
        func = node.this
        if not isinstance(func, exp.RowNumber):
            fname = func.sql_name().lower() if isinstance(func, exp.Func) else type(func).__name__.lower()
            raise FeatureNotSupported(f"window function {fname}() in a materialized view is not supported yet "
                                      f"(ROW_NUMBER() is, for a group TopN)")
        if node.args.get("spec") is not None:
            raise FeatureNotSupported("a window frame in a materialized view is not supported yet")
        partition = tuple(bind_expr(p, scope, allow_agg=False) for p in node.args.get("partition_by") or [])
        order = node.args.get("order")
        if order is None or not order.expressions:
            raise FeatureNotSupported("ROW_NUMBER() without ORDER BY in a materialized view is not supported: "
                                      "its numbering would be arbitrary")
        keys = []
        for o in order.expressions:
            desc = bool(o.args.get("desc"))
            nulls_first = o.args.get("nulls_first")
            keys.append((bind_expr(o.this, scope, allow_agg=False), desc,
                         bool(nulls_first) if nulls_first is not None else desc))
        return RowNumber(index, partition, tuple(keys))

    def _order_item(self, node: exp.Expression, items: list[SelectItem], scope: Scope,
                    group_by: tuple[BoundExpr, ...] | None, distinct: bool) -> int | None:
        if isinstance(node, exp.Literal) and not node.is_string:
            pos = int(node.this)
            if not 1 <= pos <= len(items):
                raise InvalidColumnReference(f"ORDER BY position {pos} is not in select list")
            return pos - 1
        if isinstance(node, exp.Column) and not node.args.get("table"):
            named = [i for i, it in enumerate(items) if it.name == ident(node.this)]
            if len(named) == 1:
                return named[0]
        bound = bind_expr(node, scope, allow_agg=True)
        found = next((i for i, it in enumerate(items) if it.expr == bound), None)
        if found is None and distinct:
            raise InvalidColumnReference("for SELECT DISTINCT, ORDER BY expressions must appear in select list")
        return found


def bind_stream_select(catalog: CatalogReader, query: exp.Expression) -> BoundQuery:
    """Binds the query of a materialized view."""
    return QueryBinder(catalog).query(query)


def _rename(q: BoundQuery, fields: tuple[Field, ...]) -> BoundQuery:
    if isinstance(q, BoundSetOp):
        return BoundSetOp(q.left, q.right, q.all, fields)
    items = tuple(SelectItem(it.expr, fields[i].name) if i < len(fields) else it for i, it in enumerate(q.items))
    return BoundStreamSelect(q.source, items, q.where, q.group_by, q.having, q.distinct, q.order_by, q.limit,
                             q.offset, q.hidden, q.row_number, q.temporal, q.over_window)


MAX_HOP_WINDOWS = 16
def _changelog_source(body: exp.Expression) -> exp.Table | None:
    """The ``__rw_changelog(relation)`` a changelog CTE's body reads (``SELECT * FROM`` it, as
    `frontend.rw_clauses` writes it), or None for any other body."""
    if not isinstance(body, exp.Select) or len(body.expressions) != 1 or not isinstance(body.expressions[0], exp.Star):
        return None
    from_ = body.args.get("from") or body.args.get("from_")
    if from_ is None or body.args.get("joins") or body.args.get("where"):
        return None
    table = from_.this
    if isinstance(table, exp.Table) and isinstance(table.this, exp.Anonymous) \
            and table.this.name.lower() == CHANGELOG_FUNCTION:
        return table
    return None


def _interval_micros(node: exp.Expression, what: str) -> int:
    """A window size: a positive constant interval of fixed length, in microseconds."""
    if not is_interval_literal(node):
        raise FeatureNotSupported(f"the window sizes of {what} must be constant intervals, e.g. INTERVAL '5 minutes'")
    total = fixed_interval_micros(node, what, "windows need a fixed length (seconds to weeks)")
    if total <= 0:
        raise InvalidParameterValue(f"the window sizes of {what} must be positive")
    return total


def _subquery_of(node: exp.In) -> exp.Expression:
    query = node.args["query"]
    return query.this if isinstance(query, exp.Subquery) else query


def conjuncts(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.And):
        return conjuncts(node.this) + conjuncts(node.expression)
    if isinstance(node, exp.Paren) and isinstance(node.this, exp.And):
        return conjuncts(node.this)
    return [node]


def conjunction(parts: list[BoundExpr]) -> BoundExpr | None:
    out: BoundExpr | None = None
    for part in parts:
        out = part if out is None else BinaryOp("AND", out, part, BOOL)
    return out


def _correlation(c: exp.Expression, inner: Scope, outer: Scope) -> tuple[InputRef, InputRef, bool] | None:
    """``inner.col = outer.col`` or ``... IS NOT DISTINCT FROM ...`` (either way round) as (outer
    column, inner column, whether NULL matches NULL)."""
    if not isinstance(c, exp.EQ | exp.NullSafeEQ) or not isinstance(c.left, exp.Column) \
            or not isinstance(c.right, exp.Column):
        return None
    for a, b in ((c.left, c.right), (c.right, c.left)):
        try:
            i = inner.column(a)
        except (UndefinedColumn, UndefinedTable):
            continue
        try:
            o = outer.column(b)
        except (UndefinedColumn, UndefinedTable):
            return None
        if not isinstance(o, InputRef) or not isinstance(i, InputRef):
            return None  # (a FULL join's merged column is no column)
        common_type(o, i, "=")
        return o, i, isinstance(c, exp.NullSafeEQ)
    return None


def _resolves(scope: Scope, col: exp.Column) -> bool:
    try:
        scope.column(col)
        return True
    except (UndefinedColumn, UndefinedTable):
        return False


def _item_named(items: list[SelectItem], name: str) -> SelectItem | None:
    named = [it for it in items if it.name == name]
    return named[0] if len(named) == 1 else None


def _count(node: exp.Expression | None, what: str) -> int | None:
    if node is None:
        return None
    value = node.args.get("expression") or node.this
    if isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit():
        return int(value.this)
    raise FeatureNotSupported(f"{what} in a materialized view must be a non-negative integer constant")
