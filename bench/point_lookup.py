"""What a random point lookup costs by SST block size, without Spark. Printed as JSON.

Writes one table of ``--rows`` rows shaped like ``big (id BIGINT PRIMARY KEY, g INT, payload
VARCHAR)`` as SSTs of about 16 MiB (as compaction cuts them) once per block size of ``--block-rows``,
then looks up ``--keys`` random existing keys through `StateTableReader.lookup` with a cold block
cache, three times, and reports the best time per key and the ratio to the first block size. A
random key of a big table lands in a block nothing else in the epoch touches, so its lookup decodes a
whole block per SST it may be in: the cost of an epoch of random upserts over a table much bigger
than the caches is about ``keys x levels x block decode``.

Usage: ``python bench/point_lookup.py [--rows 3000000] [--keys 20000] [--block-rows 1024,256,64]``
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from risingspark.storage.cache import BlockCache  # noqa: E402
from risingspark.storage.desc import StateTableDesc  # noqa: E402
from risingspark.storage.object_store import ObjectStore  # noqa: E402
from risingspark.storage.reader import StateTableReader  # noqa: E402
from risingspark.storage.sst import write_sst  # noqa: E402
from risingspark.types import INT4, INT8, VARCHAR, Field  # noqa: E402

DESC = StateTableDesc(1, (Field("id", INT8), Field("g", INT4), Field("payload", VARCHAR)), pk=(0,), dist_key=(0,))
FILE_ROWS = 400_000  # about 16 MiB of these rows


def table(ids: np.ndarray) -> pa.Table:
    n = len(ids)
    id_col = pa.array(ids, pa.int64())
    # (storage takes a row's vnode as given: any spread over the 256 vnodes reads the same)
    return pa.table({"_vnode": pa.array(ids % 256, pa.int16()), "id": id_col, "g": pa.array(ids % 1000, pa.int32()),
                     "payload": pa.array([f"payload-{i:012d}" for i in ids]), "_epoch": pa.array([1] * n, pa.int64()),
                     "_tombstone": pa.array([False] * n)})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=3_000_000)
    parser.add_argument("--keys", type=int, default=20_000)
    parser.add_argument("--block-rows", default="1024,256,64")
    args = parser.parse_args()
    rng = random.Random(1)
    rows = table(np.arange(args.rows, dtype=np.int64))
    wanted = table(np.array(rng.sample(range(args.rows), args.keys), dtype=np.int64)).select(["_vnode", "id"])
    out: dict = {"rows": args.rows, "keys": args.keys, "block_rows": {}}
    with tempfile.TemporaryDirectory(prefix="point-lookup-") as tmp:
        for block_rows in [int(b) for b in args.block_rows.split(",")]:
            store = ObjectStore(str(Path(tmp) / str(block_rows)))
            ssts = [write_sst(store, DESC, rows.slice(i, FILE_ROWS), f"h/{i}.parquet", level=6, sub_level=0,
                              row_group_size=block_rows)
                    for i in range(0, args.rows, FILE_ROWS)]
            best = float("inf")
            for _ in range(3):
                reader = StateTableReader(store, BlockCache(256 << 20), metas=BlockCache(64 << 20))
                started = time.perf_counter()
                found = reader.lookup(DESC, ssts, None, wanted)
                best = min(best, time.perf_counter() - started)
            assert found.num_rows == args.keys, (found.num_rows, args.keys)
            out["block_rows"][block_rows] = {"us_per_key": round(best / args.keys * 1e6, 1),
                                             "bytes": sum(s.size_bytes for s in ssts)}
    first = next(iter(out["block_rows"].values()))["us_per_key"]
    for v in out["block_rows"].values():
        v["ratio_vs_first"] = round(v["us_per_key"] / first, 3)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
