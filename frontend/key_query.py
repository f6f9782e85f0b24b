"""Key queries: SELECTs that fix a prefix of a table's or MV's primary key, or of one of its indexes'
keys, answered by the storage's key lookup without DuckDB (the local execution mode's point-query
path).

RisingWave's local mode answers point queries with "simpler, heuristic-based passes" instead of the
full optimizer. Here the heuristic is one pattern, matched on the statement's parse tree once (the
plan cache keeps the match, `frontend.plan_cache`)::

    SELECT <columns | *> FROM <table or MV> [alias]
    WHERE k1 = <constant | $n> AND ... AND kn = <constant | $n>   [LIMIT <integer>]

where ``k1..kn`` are the first ``n`` columns of the relation's primary key, each named once, or of
the key of an index on it that holds every column (``CREATE INDEX i ON t (customer)`` is keyed by
``(customer, <t's key>)``: ``WHERE customer = $1`` is a prefix lookup in it). Per
execution, the parameters are converted to the key columns' types (an integer for an integer
column, within its range; a string for a varchar column); the lookup key gets its vnode from the
distribution key's values (`risingspark.vnode.vnode_of`) or, when the prefix does not hold every
distribution column, one key per vnode. `StateTableReader.lookup` then reads only the SST blocks
that can hold the keys and merges their versions at the pinned epoch: ``O(keys · log n)``, whatever
the relation holds, where the full path reads (and caches) the whole relation.

Anything else, including a parameter that does not convert exactly (a NULL, text that is no
integer for an integer column, an integer out of the column's range), returns None and the statement
takes the full path, which is the reference: a key query's rows, names and types are the full path's (the
tests compare both on random data).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import pyarrow as pa
from sqlglot import exp

from frontend.batch import normalize
from frontend.binder import CatalogReader, ident
from frontend.catalog.rewrite import is_user_word
from frontend.pgwire.api import ColumnDesc, StatementResult
from frontend.pgwire.datarows import per_value
from risingspark.catalog import RelationCatalog, RelationKind
from risingspark.chunk import VNODE
from risingspark.errors import RisingSparkError
from risingspark.storage.desc import StateTableDesc
from risingspark.storage.reader import StateTableReader, read_schema
from risingspark.types import DataType, TypeName
from risingspark.vnode import VNODE_COUNT, vnode_of

_INT_RANGE = {TypeName.SMALLINT: 1 << 15, TypeName.INT: 1 << 31, TypeName.BIGINT: 1 << 63}
KEY_TYPES = {*_INT_RANGE, TypeName.VARCHAR}  # the key column types a value converts to exactly (`convert`)
# parameter types whose values `convert` takes, by key column type (0: unspecified, sent as text)
PARAM_OIDS = {TypeName.SMALLINT: {0, 20, 21, 23}, TypeName.INT: {0, 20, 21, 23}, TypeName.BIGINT: {0, 20, 21, 23},
              TypeName.VARCHAR: {0, 25, 1043}}
_INT_TEXT = re.compile(r"\s*[+-]?\d+\s*")  # PostgreSQL's integer input (an unknown-typed value: '5', ' -7 ')


@dataclass(frozen=True)
class KeyValue:
    """Where a key column's value comes from: parameter `param` (0-based) or the constant `value`."""

    param: int | None
    value: object = None


@dataclass(frozen=True)
class KeyQuery:
    """A matched key query: look up `keys` (values of the first ``len(keys)`` key columns) in the
    state table `desc` (the relation's own, or an index's), project `outputs` (``(output name,
    column name)``), keep at most `limit` rows."""

    desc: StateTableDesc
    keys: tuple[KeyValue, ...]
    outputs: tuple[tuple[str, str], ...]
    limit: int | None

    @property
    def key_types(self) -> list[DataType]:
        return [self.desc.fields[i].type for i in self.desc.pk[:len(self.keys)]]

    def takes(self, param_oids: Sequence[int]) -> bool:
        """Whether parameters of these types can convert to the key's columns (else every execution
        would take the full path: the statement is no key query)."""
        for key, t in zip(self.keys, self.key_types, strict=True):
            if key.param is not None and (key.param >= len(param_oids) or param_oids[key.param] not in PARAM_OIDS[t.name]):
                return False
        return True

    def key_values(self, params: Sequence[object]) -> list[object] | None:
        """The key's values for these parameters, each of its column's type; None when one does not
        convert exactly (the full path then answers)."""
        out = []
        for key, t in zip(self.keys, self.key_types, strict=True):
            value = key.value if key.param is None else (params[key.param] if 0 <= key.param < len(params) else None)
            value = convert(value, t)
            if value is None:
                return None
            out.append(value)
        return out

    def run(self, reader: StateTableReader, version, values: list[object]) -> StatementResult:
        """The query's rows at the pinned `version`'s committed epoch."""
        desc = self.desc
        names = desc.pk_names[:len(values)]
        dist = self._distribution
        if dist is not None and len(values) == len(self.keys):
            positions, spark_types = dist
            vnodes = [vnode_of([values[i] for i in positions], spark_types) if positions else 0]
        else:
            vnodes = list(range(VNODE_COUNT))
        epoch = version.committed_epoch
        point = len(vnodes) == 1 and len(names) == len(desc.pk)
        if point and self._value_columns is not None and self.limit != 0:
            try:  # (one row at most: as Python values, encoded value by value, no Arrow table made)
                found = reader.get_values(desc, version.levels(desc.table_id), epoch, vnodes[0], values,
                                          self._output_columns)
            except (OverflowError, ValueError):  # a date Python cannot hold ('infinity'): the Arrow path
                pass
            else:
                if found is not None:
                    return StatementResult(f"SELECT {len(found)}", list(self._value_columns), found)
                point = False  # (a key type without a scalar encoding: `get` would say so again)
        rows = reader.get(desc, version.levels(desc.table_id), epoch, vnodes[0], values) if point else None
        if rows is None:  # (a prefix, or a key type without a scalar encoding)
            schema = desc.sst_schema()
            keys = pa.table({VNODE: pa.array(vnodes, pa.int16()),
                             **{n: pa.array([v] * len(vnodes), schema.field(n).type)
                                for n, v in zip(names, values, strict=True)}})
            rows = reader.lookup(desc, version.ssts(desc.table_id), epoch, keys,
                                 columns=None if len(names) == len(desc.pk) else names)
        if self.limit is not None:
            rows = rows.slice(0, self.limit)
        table = pa.Table.from_arrays([rows.column(c) for _, c in self.outputs], names=[o for o, _ in self.outputs])
        raw, columns = self._result_shape
        if columns is None or not table.schema.equals(raw):
            from frontend.session import columns_of  # (the session module imports this one)

            table = normalize(table)
            columns = columns_of(table)
        return StatementResult(f"SELECT {table.num_rows}", list(columns), table)

    @cached_property
    def _distribution(self) -> tuple[tuple[int, ...], tuple[str, ...]] | None:
        """Where the distribution key's values are among the looked-up key's (positions) and their
        Spark types, computed once per plan; None when the key does not hold every distribution
        column (the lookup then asks every vnode)."""
        names = self.desc.pk_names[:len(self.keys)]
        dist = [self.desc.fields[i] for i in self.desc.dist_key]
        if not all(f.name in names for f in dist):
            return None
        return tuple(names.index(f.name) for f in dist), tuple(f.type.to_spark() for f in dist)

    @cached_property
    def _output_columns(self) -> list[str]:
        return [c for _, c in self.outputs]

    @cached_property
    def _value_columns(self) -> list[ColumnDesc] | None:
        """The result's columns when its rows may go as Python values (every type encodes value by
        value as the Arrow path does: `frontend.pgwire.datarows.per_value`, and needs no `normalize`)."""
        raw, columns = self._result_shape
        return columns if columns is not None and all(per_value(t) for t in raw.types) else None

    @cached_property
    def _result_shape(self) -> tuple[pa.Schema, list[ColumnDesc] | None]:
        """The projected rows' schema, and the result's columns when that schema is already as the
        wire sends it (`normalize` would keep it), computed once per plan: None when each result
        must be normalized."""
        from frontend.session import columns_of

        schema = read_schema(self.desc)
        empty = pa.Table.from_arrays([pa.array([], schema.field(c).type) for _, c in self.outputs],
                                     names=[o for o, _ in self.outputs])
        wire = normalize(empty)
        return empty.schema, columns_of(wire) if wire.schema.equals(empty.schema) else None


def convert(value: object, t: DataType) -> object | None:
    """`value` as a value of a key column of type `t`, when it is exactly one; else None.

    >>> [convert(v, DataType(TypeName.INT)) for v in (5, 1 << 31, " -5 ", "5.0", "abc", True)]
    [5, None, -5, None, None, None]
    """
    if t.name in _INT_RANGE:
        if isinstance(value, str) and _INT_TEXT.fullmatch(value):  # (an unknown-typed parameter or literal)
            value = int(value)
        bound = _INT_RANGE[t.name]
        return value if isinstance(value, int) and not isinstance(value, bool) and -bound <= value < bound else None
    if t.name is TypeName.VARCHAR:
        return value if isinstance(value, str) else None
    return None


def match_key_query(ast: exp.Expression, catalog: CatalogReader) -> KeyQuery | None:
    """The key query `ast` is, resolved against `catalog`; None when it is not one."""
    if not isinstance(ast, exp.Select) or not _plain_select(ast):
        return None
    table = ast.args["from_"].this if ast.args.get("from_") else None
    if not isinstance(table, exp.Table) or not isinstance(table.this, exp.Identifier) or \
            any(v for k, v in table.args.items() if k not in ("this", "db", "catalog", "alias")):
        return None  # a table function, ONLY, TABLESAMPLE, a time-travel clause...
    if table.args.get("alias") and table.args["alias"].args.get("columns"):
        return None
    try:
        ref = catalog.resolve(table)
    except RisingSparkError:
        return None  # the full path reports the error
    rel = ref.relation
    if rel is None or rel.kind not in (RelationKind.TABLE, RelationKind.MATERIALIZED_VIEW) or rel.is_creating:
        return None
    alias = ident(table.args["alias"].this) if table.args.get("alias") else ident(table.this)
    visible = [f.name for f in rel.fields if not f.hidden]
    outputs = _outputs(ast.expressions, alias, visible)
    conditions = _conditions(ast.args.get("where"), alias, visible)
    limit = _limit(ast.args.get("limit"))
    if outputs is None or conditions is None or limit is False:
        return None
    if not conditions:
        return None
    for desc in _key_tables(rel, catalog):
        pk = desc.pk_names
        n = len(conditions)
        if n <= len(pk) and set(conditions) == set(pk[:n]) and \
                all(desc.fields[i].type.name in KEY_TYPES for i in desc.pk[:n]):
            return KeyQuery(desc, tuple(conditions[name] for name in pk[:n]), tuple(outputs),
                            limit if isinstance(limit, int) else None)
    return None


def _key_tables(rel: RelationCatalog, catalog: CatalogReader) -> list[StateTableDesc]:
    """The state tables that hold every column of `rel` by a key: its own, then its indexes' (an
    index is keyed by its columns, then the relation's key, `frontend.handlers.indexes`) that hold
    them all."""
    out = [rel.table_desc]
    visible = [f.name for f in rel.fields if not f.hidden]
    for index in catalog.snapshot.dependents(rel.id):
        if index.kind is RelationKind.INDEX and not index.is_creating:
            names = {f.name for f in index.table_desc.fields}
            if all(n in names for n in visible):
                out.append(index.table_desc)
    return out


_SELECT_ARGS = {"expressions", "from_", "where", "limit"}


def _plain_select(ast: exp.Select) -> bool:
    """No clause but the select list, one FROM item, a WHERE and a LIMIT."""
    return all(k in _SELECT_ARGS or not v for k, v in ast.args.items())


def _column_name(col: exp.Column, alias: str, visible: list[str]) -> str | None:
    if col.args.get("db") or col.args.get("catalog") or is_user_word(col):  # (`user`: the current user)
        return None
    if col.table and ident(col.args.get("table")) != alias:
        return None
    name = ident(col.this)
    return name if name in visible else None


def _outputs(items: list[exp.Expression], alias: str, visible: list[str]) -> list[tuple[str, str]] | None:
    out: list[tuple[str, str]] = []
    for item in items:
        if isinstance(item, exp.Star):
            out.extend((n, n) for n in visible)
            continue
        if isinstance(item, exp.Column) and isinstance(item.this, exp.Star):
            if ident(item.args.get("table")) != alias or item.args.get("db"):
                return None
            out.extend((n, n) for n in visible)
            continue
        node, name = (item.this, ident(item.args["alias"])) if isinstance(item, exp.Alias) else (item, None)
        if not isinstance(node, exp.Column) or not isinstance(node.this, exp.Identifier):
            return None
        column = _column_name(node, alias, visible)
        if column is None:
            return None
        out.append((name or column, column))
    return out


def _conditions(where: exp.Where | None, alias: str, visible: list[str]) -> dict[str, KeyValue] | None:
    """Column -> value of a WHERE that is a conjunction of ``column = constant | $n``."""
    if where is None:
        return {}
    conjuncts = list(where.this.flatten()) if isinstance(where.this, exp.And) else [where.this]
    out: dict[str, KeyValue] = {}
    for conj in conjuncts:
        if not isinstance(conj, exp.EQ):
            return None
        col, other = conj.this, conj.expression
        if not _is_column(col):
            col, other = other, col
        if not _is_column(col):
            return None
        name = _column_name(col, alias, visible)
        value = _value(other)
        if name is None or value is None or name in out:
            return None
        out[name] = value
    return out


def _is_column(node: exp.Expression) -> bool:
    return isinstance(node, exp.Column) and isinstance(node.this, exp.Identifier)


def _value(node: exp.Expression) -> KeyValue | None:
    """A parameter ``$n`` or a plain literal (an integer or a string)."""
    if isinstance(node, exp.Parameter) and isinstance(node.this, exp.Literal) and node.this.this.isdigit():
        n = int(node.this.this)
        return KeyValue(n - 1) if n >= 1 else None  # ($0: the full path reports the syntax error)
    negative = isinstance(node, exp.Neg)
    if negative:
        node = node.this
    if not isinstance(node, exp.Literal):
        return None
    if node.is_string:
        return None if negative else KeyValue(None, node.this)
    if node.this.isdigit():
        return KeyValue(None, -int(node.this) if negative else int(node.this))
    return None


def _limit(limit: exp.Limit | None) -> int | None | bool:
    """The LIMIT's row count; None without one; False when it is not a plain integer."""
    if limit is None:
        return None
    count = limit.expression
    if isinstance(count, exp.Literal) and not count.is_string and count.this.isdigit():
        return int(count.this)
    return False
