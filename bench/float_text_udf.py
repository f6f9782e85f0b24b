"""A double's text in a materialized view: the UDF ``rs_float8_text`` (`compute.float_text_udf`,
PostgreSQL's text) against Spark's own cast (Java's text), in one local Spark session. A Parquet
file of ``--rows`` doubles is written once; then ``SELECT max(length(<text of d>))`` over it runs
twice each way, alternating. Prints JSON: the seconds of each run, the best UDF run over the best
cast run, and the difference per row.

Usage: ``PYTHONPATH=<checkout> python bench/float_text_udf.py [--rows 10000000]``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from compute.float_text_udf import register_float_text_udfs

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register_float_text_udfs(spark)
    path = os.path.join(tempfile.mkdtemp(prefix="float-text-"), "d.parquet")
    spark.range(args.rows).selectExpr("CAST(id AS DOUBLE) / 7 AS d").write.parquet(path)
    spark.read.parquet(path).createOrReplaceTempView("t")
    runs: dict[str, list[float]] = {"cast": [], "udf": []}
    for _ in range(2):
        for name, text in (("cast", "CAST(d AS STRING)"), ("udf", "rs_float8_text(d)")):
            start = time.perf_counter()
            spark.sql(f"SELECT max(length({text})) FROM t").collect()
            runs[name].append(round(time.perf_counter() - start, 2))
    print(json.dumps({"rows": args.rows, "seconds": runs,
                      "udf_over_cast": round(min(runs["udf"]) / min(runs["cast"]), 1),
                      "udf_us_per_row": round((min(runs["udf"]) - min(runs["cast"])) / args.rows * 1e6, 2)}))


if __name__ == "__main__":
    main()
