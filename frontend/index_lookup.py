"""Point queries through indexes: a batch query whose WHERE fixes every distribution column of an
index on a relation it reads (``WHERE customer = 'ann'``) reads one vnode of the index instead of
the whole relation, as RisingWave's batch planner turns such a scan into an index lookup.

An index is distributed by its leading columns and stores every column of its relation (or the
ones it INCLUDEs), so the rows matching the predicate all live in the vnode the hash of the constants
gives (`risingspark.vnode.vnode_of`, Spark's hash computed in Python). The query itself is unchanged:
it reads that vnode's rows in place of the relation and still applies its WHERE, so the answer is the
same as a full scan's.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import logging
from decimal import Decimal, InvalidOperation

import pyarrow as pa
import pyarrow.compute as pc
from prometheus_client import Counter
from sqlglot import exp

from frontend.binder import ident
from risingspark.catalog import RelationCatalog, RelationKind
from risingspark.types import DataType, TypeName
from risingspark.vnode import vnode_of

logger = logging.getLogger(__name__)

INDEX_LOOKUPS = Counter("risingspark_frontend_index_lookups_total",
                        "Batch scans answered by reading one vnode of an index", ["index"])


def _literal(node: exp.Expression, t: DataType) -> object:
    """The constant as a value of the column's type; None when it is not a plain constant of it."""
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        value = _literal(node.this, t)
        return -value if isinstance(value, int | Decimal) else None
    if isinstance(node, exp.Cast):
        node = node.this
    if not isinstance(node, exp.Literal):
        return None
    text = node.this
    try:
        if t.name in (TypeName.SMALLINT, TypeName.INT, TypeName.BIGINT) and not node.is_string:
            return int(text)
        if t.name is TypeName.NUMERIC:
            return Decimal(text)
        if t.name is TypeName.VARCHAR and node.is_string:
            return text
        if t.name is TypeName.DATE and node.is_string:
            return dt.date.fromisoformat(text)
    except (ValueError, InvalidOperation):
        return None
    return None


def _equalities(select: exp.Select, table: exp.Table, only_table: bool) -> dict[str, exp.Expression]:
    """Column name -> constant, for the top-level ``column = constant`` conjuncts of the WHERE that
    name a column of `table`."""
    where = select.args.get("where")
    if where is None:
        return {}
    alias = ident(table.args["alias"].this) if table.args.get("alias") else ident(table.this)
    out: dict[str, exp.Expression] = {}
    for conj in where.this.flatten() if isinstance(where.this, exp.And) else [where.this]:
        if not isinstance(conj, exp.EQ):
            continue
        for col, value in ((conj.this, conj.expression), (conj.expression, conj.this)):
            if isinstance(col, exp.Column) and not isinstance(value, exp.Column) and \
                    (ident(col.args.get("table")) == alias if col.table else only_table):
                out.setdefault(ident(col.this), value)
    return out


def index_scan(engine, rel: RelationCatalog, table: exp.Table, snapshot, version) -> pa.Table | None:
    """The rows of `rel` a point predicate on `table` can match, read from one vnode of an index;
    None when no index answers it."""
    select = table.parent.parent if isinstance(table.parent, exp.From | exp.Join) else None
    if isinstance(table.parent, exp.From) and isinstance(select, exp.Select):
        only_table = not select.args.get("joins")
    elif isinstance(table.parent, exp.Join) and isinstance(select, exp.Select):
        only_table = False
    else:
        return None
    constants = _equalities(select, table, only_table)
    if not constants:
        return None
    visible = [f for f in rel.fields if not f.hidden]
    for index in snapshot.dependents(rel.id):
        if index.kind is not RelationKind.INDEX or index.is_creating or not index.dist_key:
            continue
        names = {f.name for f in index.fields}
        if any(f.name not in names for f in visible):
            continue  # the index does not hold every column of the relation
        dist = [index.fields[i] for i in index.dist_key]
        if any(f.name not in constants for f in dist):
            continue
        values = [_literal(constants[f.name], f.type) for f in dist]
        if any(v is None for v in values):
            continue
        vnode = vnode_of(values, [f.type.to_spark() for f in dist])
        desc = index.table_desc
        ssts = version.ssts(desc.table_id)
        # SSTs are immutable: one vnode's merged rows are cached per set of SSTs, as whole relations are
        key = hashlib.sha1("\n".join(sorted(f.path for f in ssts)).encode()).hexdigest()
        rows = engine._merged.get_or_load(f"{desc.table_id}:{key}:vnode{vnode}", functools.partial(
            engine.reader.read, desc, ssts, version.committed_epoch, vnodes=[vnode]))
        for f, v in zip(dist, values, strict=True):
            rows = rows.filter(pc.equal(rows.column(f.name), pa.scalar(v, f.type.to_arrow())))
        INDEX_LOOKUPS.labels(index.name).inc()
        logger.debug("scan of %s answered by index %s (vnode %d, %d rows)", rel.name, index.name, vnode,
                     rows.num_rows)
        return rows.select([f.name for f in visible])
    return None
