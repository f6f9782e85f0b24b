"""A point query's answer in the frontend: `KeyQuery.run` and the DataRow encoding of its row, with the
row as Python values (`StateTableReader.get_values`, the path a point query takes) against the same
query answered with a one-row Arrow table (the path before), alternated in one process. In-process,
no server; printed as JSON (microseconds per query, median of 10 rounds of 2,000 random keys of a
1K-row table, warm caches).

With ``--l0-ssts N`` the table is N overlapping L0 SSTs (row i in the (i % N)-th), as single-row
INSERTs leave a table between compactions: a lookup then asks each SST's bloom filter.

Usage: ``python bench/point_answer.py [--l0-ssts N]``
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from frontend.key_query import KeyQuery, KeyValue  # noqa: E402
from frontend.pgwire.datarows import encode_rows  # noqa: E402
from risingspark.storage.cache import BlockCache  # noqa: E402
from risingspark.storage.desc import HummockVersion, StateTableDesc, SubLevel, TableLevels  # noqa: E402
from risingspark.storage.object_store import ObjectStore  # noqa: E402
from risingspark.storage.reader import StateTableReader  # noqa: E402
from risingspark.storage.sst import write_sst  # noqa: E402
from risingspark.types import INT4, VARCHAR, Field  # noqa: E402
from risingspark.vnode import vnode_of  # noqa: E402

FIELDS = (Field("id", INT4), Field("v", INT4), Field("s", VARCHAR))
DESC = StateTableDesc(4001, FIELDS, (0,), (0,))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--l0-ssts", type=int, default=0, help="the table as this many overlapping L0 SSTs")
    args = parser.parse_args()
    store = ObjectStore(tempfile.mkdtemp(prefix="risingspark-bench-point-answer-"))
    rows = sorted((vnode_of([i], [INT4.to_spark()]), i, i * 7, f"name {i}", 1, False) for i in range(1000))
    schema = DESC.sst_schema()
    data = pa.table([pa.array(c, t) for c, t in zip(zip(*rows, strict=True), schema.types, strict=True)],
                    names=schema.names)
    if args.l0_ssts:
        n = args.l0_ssts
        part = pa.array([row[1] % n for row in rows])
        subs = tuple(SubLevel(j + 1, (write_sst(store, DESC, data.filter(pa.compute.equal(part, j)), f"t{j}.parquet",
                                                level=0, sub_level=j + 1),)) for j in range(n))
        levels = TableLevels(DESC.table_id, subs, ())
    else:
        levels = TableLevels(DESC.table_id, (), ((write_sst(store, DESC, data, "t.parquet", level=1, sub_level=0),),))
    version = HummockVersion(2, 5, {DESC.table_id: levels})
    reader = StateTableReader(store, BlockCache(1 << 26), metas=BlockCache(1 << 26))
    values = KeyQuery(DESC, (KeyValue(0),), (("v", "v"), ("s", "s")), None)
    table = KeyQuery(DESC, (KeyValue(0),), (("v", "v"), ("s", "s")), None)
    table.__dict__["_value_columns"] = None  # (its cached property off: the one-row table, as before)

    def answer(q: KeyQuery, key: int) -> bytes:
        result = q.run(reader, version, [key])
        assert result.columns is not None
        return encode_rows(result.columns, [0, 0], result.rows)

    keys = [random.randrange(1000) for _ in range(2000)]
    for k in keys:
        assert answer(values, k) == answer(table, k)
    rounds: dict[str, list[float]] = {"values": [], "table": []}
    for _ in range(10):
        for name, q in (("values", values), ("table", table)):
            started = time.perf_counter()
            for k in keys:
                answer(q, k)
            rounds[name].append((time.perf_counter() - started) / len(keys) * 1e6)
    median = {n: round(statistics.median(v), 1) for n, v in rounds.items()}
    print(json.dumps({"l0_ssts": args.l0_ssts, "us_per_query": median, "values_over_table": round(median["values"] / median["table"], 2)},
                     indent=2))


if __name__ == "__main__":
    main()
