"""Cost of the jsonb operators' vectorized functions (what each Spark Arrow UDF and DuckDB UDF runs
per batch), per row, on small documents. Prints JSON."""

from __future__ import annotations

import json
import time

import pyarrow as pa

from risingspark import jsonb

N = 100_000


def main() -> None:
    docs = pa.array([jsonb.canonical(json.dumps({"name": f"n{i}", "tags": ["x", i % 7], "nested": {"deep": i}}))
                     for i in range(N)])
    keys = pa.array(["name"] * N)
    out = {}
    for name, run in {"->": lambda: jsonb.op_get(docs, keys), "->>": lambda: jsonb.op_get_text(docs, keys),
                      "@>": lambda: jsonb.op_contains(docs, pa.array(['{"tags": ["x"]}'] * N)),
                      "::jsonb": lambda: jsonb.op_in(docs)}.items():
        start = time.perf_counter()
        run()
        out[name] = round((time.perf_counter() - start) / N * 1e6, 2)
    print(json.dumps({"rows": N, "us_per_row": out}))


if __name__ == "__main__":
    main()
