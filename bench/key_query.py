"""The key lookup a point query costs (`frontend.key_query`), at several table sizes, against reading
the whole table (what a point query cost through DuckDB whenever the relation had changed since it
was last merged). In-process, no server; printed as JSON.

Per size: level-1 SSTs of ``rows`` rows and ``--l0`` L0 SSTs of 10 new keys each (as a table
taking inserts has between compactions), read through a reader with block and meta caches, as the
frontend's. Reported: microseconds per key query (warm caches, random existing keys), and seconds
for one full read of the same SSTs; the ratio shows what the lookup saves and that its cost stays
flat as the table grows.

Usage: ``python bench/key_query.py [--sizes 1000,1000000,10000000] [--l0 10] [--out result.json]``
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from frontend.key_query import KeyQuery, KeyValue  # noqa: E402
from frontend.pgwire.datarows import row_count  # noqa: E402
from risingspark.storage.cache import BlockCache  # noqa: E402
from risingspark.storage.desc import HummockVersion, StateTableDesc, SubLevel, TableLevels  # noqa: E402
from risingspark.storage.object_store import ObjectStore  # noqa: E402
from risingspark.storage.reader import StateTableReader  # noqa: E402
from risingspark.storage.sst import write_ssts  # noqa: E402
from risingspark.types import INT4, Field  # noqa: E402

# a singleton table (every row in vnode 0): the lookup's work is the same, and the rows need no hash
DESC = StateTableDesc(8, (Field("id", INT4), Field("v", INT4)), pk=(0,), dist_key=())


def rows(ids: np.ndarray, epoch: int) -> pa.Table:
    n = len(ids)
    return pa.table({"_vnode": pa.array(np.zeros(n, np.int16)), "id": pa.array(ids, pa.int32()),
                     "v": pa.array(ids * 7, pa.int32()), "_epoch": pa.array(np.full(n, epoch), pa.int64()),
                     "_tombstone": pa.array(np.zeros(n, bool))})


def measure(rows_n: int, l0: int, queries: int) -> dict:
    work = Path(tempfile.mkdtemp(prefix="risingspark-bench-point-"))
    try:
        store = ObjectStore(str(work))
        base = write_ssts(store, DESC, rows(np.arange(1, rows_n + 1), 1), "base.parquet", level=1, sub_level=0)
        subs = []
        for e in range(2, 2 + l0):
            new = np.arange(rows_n + 1 + (e - 2) * 10, rows_n + 1 + (e - 1) * 10)
            subs.append(SubLevel(e, tuple(write_ssts(store, DESC, rows(new, e), f"l0-{e}.parquet", level=0,
                                                     sub_level=e))))
        version = HummockVersion(1, 100, {DESC.table_id: TableLevels(DESC.table_id, tuple(subs), (tuple(base),))})
        reader = StateTableReader(store, BlockCache(256 << 20), metas=BlockCache(256 << 20))
        query = KeyQuery(DESC, (KeyValue(0),), (("v", "v"),), None)
        rng = random.Random(0)
        for _ in range(200):  # warm the caches
            query.run(reader, version, [rng.randint(1, rows_n)])
        started = time.perf_counter()
        for _ in range(queries):
            assert row_count(query.run(reader, version, [rng.randint(1, rows_n)]).rows) == 1
        lookup_s = (time.perf_counter() - started) / queries
        started = time.perf_counter()
        full = StateTableReader(store, BlockCache(0)).read(DESC, version.ssts(DESC.table_id), 100)
        full_s = time.perf_counter() - started
        assert full.num_rows == rows_n + 10 * l0
        return {"rows": rows_n, "ssts": len(version.ssts(DESC.table_id)), "key_query_us": round(lookup_s * 1e6),
                "full_read_s": round(full_s, 3), "full_read_over_key_query": round(full_s / lookup_s)}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,1000000,10000000")
    parser.add_argument("--l0", type=int, default=10)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    result = {"l0_ssts": args.l0, "sizes": [measure(int(n), args.l0, args.queries) for n in args.sizes.split(",")]}
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
