"""Batch queries whose rows flow through the frontend instead of being held by it.

A client's ``SELECT * FROM big_mv`` used to read the whole relation into the frontend (the MVCC
merge of its SSTs, cached), let DuckDB copy it into its result, and send that: frontend memory grew
with the relation (3.9 GB for a 30M-row join, `bench/query_modes.py`). Here both ends stream:

- **Input**: a relation whose SSTs hold at least ``rw_batch_stream_min_bytes`` (a session variable,
  `STREAM_MIN_BYTES` by default) is given to DuckDB as an Arrow
  stream read while DuckDB pulls it (`StateTableReader.batches`: groups of vnodes merged a batch at a
  time; its blocks go through a small cache of its own, not the block cache, whose point queries they
  would push out), not as a merged table. Smaller relations keep the merged-table cache, which makes repeated
  queries of a dashboard cheap. A stream can be scanned once: only a relation the query names once
  is streamed, and a query DuckDB still scans twice (it errs, never answers from half the rows) runs
  again with tables.
- **Output**: DuckDB's result is read as a stream of record batches (`RowStream`), which the wire
  server sends batch by batch. A result of at most `BATCH_ROWS` rows comes back as a table, as
  before.

Memory then holds a few batches per query (and at most `STREAM_BUFFER` of rows DuckDB made ahead of
the client, or DuckDB's default 10 MB when no input streams), whatever the relation holds, for queries DuckDB runs as a pipeline (scans, filters, projections, aggregations with few groups); a sort or a join still
builds what DuckDB's operator needs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import duckdb
import pyarrow as pa

from frontend.pgwire.row_stream import RowStream
from risingspark.catalog import RelationCatalog
from risingspark.chunk import VNODE
from risingspark.errors import QueryCanceled
from risingspark.interval import duckdb_ready
from risingspark.storage.desc import HummockVersion
from risingspark.storage.reader import StateTableReader, read_schema
from risingspark.types import Field

STREAM_MIN_BYTES = 64 << 20  # SST bytes from which a relation is streamed to DuckDB, not merged whole (by default)
BATCH_ROWS = 65_536  # rows per batch read from storage, and at most per batch of a result
PRIVATE_CACHE_BYTES = 4 << 20  # a streamed relation's own block cache (the blocks its reads share)
# how far DuckDB may run ahead of the client in a query reading a streamed relation (DuckDB's
# `streaming_buffer_size`, a setting of each cursor; other queries keep DuckDB's default, 10 MB)
STREAM_BUFFER = "1MB"


def stream_input(rel: RelationCatalog, version: HummockVersion, min_bytes: int) -> bool:
    """Whether a relation is big enough to be read as a stream."""
    return sum(s.size_bytes for s in version.ssts(rel.table_desc.table_id)) >= min_bytes


def relation_stream(reader: StateTableReader, rel: RelationCatalog, version: HummockVersion, *, hidden: bool,
                    convert: Callable[[pa.Table, tuple[Field, ...]], pa.Table]) -> pa.RecordBatchReader:
    """The rows of a table or MV at the version's committed epoch as an Arrow stream for DuckDB:
    the value columns (hidden ones with `hidden`), each batch passed through `convert` as a merged
    table is (`jsonb_as_json` after `duckdb_ready`)."""
    desc = rel.table_desc
    names = [f.name for f in rel.fields if hidden or not f.hidden]

    def shape(table: pa.Table) -> pa.Table:
        return convert(duckdb_ready(table.drop_columns([VNODE]).select(names)), rel.fields)

    schema = shape(read_schema(desc).empty_table()).schema

    def batches() -> Iterator[pa.RecordBatch]:
        for table in reader.batches(desc, version.ssts(desc.table_id), version.committed_epoch,
                                    rows_per_batch=BATCH_ROWS, private_cache_bytes=PRIVATE_CACHE_BYTES):
            yield from shape(table).cast(schema).to_batches()

    return pa.RecordBatchReader.from_batches(schema, batches())


def consumed_twice(e: duckdb.Error) -> bool:
    """DuckDB's error for a second scan of an Arrow stream."""
    return "already been consumed" in str(e)


def stream_result(rel: duckdb.DuckDBPyRelation, normalize: Callable[[pa.Table], pa.Table],
                  fail: Callable[[duckdb.Error], BaseException], close: Callable[[], object],
                  cancel: threading.Event | None = None, interrupt: Callable[[], None] | None = None
                  ) -> pa.Table | RowStream:
    """A DuckDB result read batch by batch: a table when it has at most `BATCH_ROWS` rows (`close`
    then called at once), else a `RowStream` that calls `close` when it closes. `normalize` gives a
    batch the wire's types; `fail` turns an error raised while reading into the one to report. A set
    `cancel` stops the stream at its next batch (what DuckDB made ahead is not sent); `interrupt`
    stops DuckDB when the stream is closed while it reads."""
    reader = rel.to_arrow_reader(BATCH_ROWS)
    head: list[pa.Table] = []
    rows = 0
    while rows < BATCH_ROWS:
        batch = _next(reader, normalize)
        if batch is None:
            close()
            return pa.concat_tables(head) if head else normalize(reader.schema.empty_table())
        head.append(batch)
        rows += batch.num_rows

    def batches() -> Iterator[pa.Table]:
        try:
            while True:
                # (before reading: a cancel interrupts DuckDB, whose next chunk then fails)
                if cancel is not None and cancel.is_set():
                    raise QueryCanceled("canceling statement due to user request")
                batch = head.pop(0) if head else _next(reader, normalize)
                if batch is None:
                    return
                yield batch
        except duckdb.Error as e:
            raise fail(e) from None

    return RowStream(head[0].schema, batches(), close, interrupt=interrupt)


# DuckDB's error of a chunk after the first comes through the Arrow stream as an OSError (or an Arrow
# error) with DuckDB's message: its class again, by the message's prefix, for `translate_duckdb_error`
_DUCKDB_ERRORS: tuple[tuple[str, type[duckdb.Error]], ...] = (
    ("Conversion Error", duckdb.ConversionException), ("Out of Range Error", duckdb.OutOfRangeException),
    ("Invalid Input Error", duckdb.InvalidInputException), ("INTERRUPT Error", duckdb.InterruptException),
    ("Binder Error", duckdb.BinderException), ("Not implemented Error", duckdb.NotImplementedException),
)


def _next(reader: pa.RecordBatchReader, normalize: Callable[[pa.Table], pa.Table]) -> pa.Table | None:
    try:
        batch = reader.read_next_batch()
    except StopIteration:
        return None
    except (OSError, pa.ArrowException) as e:
        message = str(e)
        cls = next((c for prefix, c in _DUCKDB_ERRORS if message.startswith(prefix)), duckdb.Error)
        raise cls(message) from None
    return normalize(pa.Table.from_batches([batch]))
