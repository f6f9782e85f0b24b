"""The change log (log store) of a table: per checkpoint, the epoch's change stream as Parquet.

Layout of one file, rows in stream order (a U- row directly followed by its U+ row)::

    | _op int8 | _vnode int16 | value columns ... |

Snapshot backfill catch-up, consumers in another resource group and recovery replay read it, epoch by
epoch; meta truncates it once every consumer has passed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import pyarrow as pa

from risingspark.chunk import VNODE, op_field
from risingspark.errors import InternalError
from risingspark.storage.cache import BlockCache
from risingspark.storage.desc import StateTableDesc
from risingspark.storage.object_store import ObjectStore

logger = logging.getLogger(__name__)


def changelog_schema(desc: StateTableDesc) -> pa.Schema:
    return pa.schema([op_field(), pa.field(VNODE, pa.int16(), nullable=False), *desc.value_schema()])


def _conform(desc: StateTableDesc, chunk: pa.Table, what: str) -> pa.Table:
    schema = changelog_schema(desc)
    if chunk.schema.equals(schema):
        return chunk
    missing = [n for n in schema.names if n not in chunk.schema.names]
    if missing:
        raise InternalError(f"{what} of table {desc.table_id} lacks columns {missing}")
    try:
        return chunk.select(schema.names).cast(schema, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise InternalError(f"{what} of table {desc.table_id} does not fit its schema: {e}") from e


def write_changelog(store: ObjectStore, desc: StateTableDesc, chunk: pa.Table, path: str) -> int:
    """Write `chunk` (``_op``, ``_vnode`` and the value columns, any column order) at `path`.

    Returns:
        The number of rows written.
    """
    rows = _conform(desc, chunk, "change log chunk")
    size = store.write_parquet(path, rows, compression="zstd")
    logger.debug("table %d: wrote change log %s (%d rows, %d bytes)", desc.table_id, path,
                 rows.num_rows, size)
    return rows.num_rows


def read_changelog(store: ObjectStore, desc: StateTableDesc, paths: Iterable[str], *,
                   cache: BlockCache | None = None) -> pa.Table:
    """The change logs at `paths`, concatenated in the order given (oldest epoch first)."""

    def load(path: str) -> pa.Table:
        return _conform(desc, store.read_parquet(path), f"change log {path}")

    def cached(path: str) -> pa.Table:
        if cache is None:
            return load(path)
        return cache.get_or_load(f"{store.url}::{path}", lambda: load(path))

    parts = [cached(p) for p in paths]
    if not parts:
        return changelog_schema(desc).empty_table()
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]

