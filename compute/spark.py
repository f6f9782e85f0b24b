"""The SparkSession of a compute node: the only place that configures Spark.

Settings follow what was measured on this kind of machine (see the developers' notes on Spark):
Python workers must run this interpreter (``PYSPARK_PYTHON``), are reused between tasks, shuffles
use one partition per core, AQE is off for tiny per-epoch jobs, and timestamps are UTC. The workers'
daemon is `compute.python_daemon` (no full garbage collection after every task).
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass

logger = logging.getLogger(__name__)


EXCLUDED_RULES = "spark.sql.optimizer.excludedRules"
PRUNE_FILTERS = "org.apache.spark.sql.catalyst.optimizer.PruneFilters"


@dataclass(frozen=True)
class SparkSettings:
    master: str = "local[*]"
    app_name: str = "risingspark-compute"
    ui: bool = False
    driver_memory: str = "2g"
    host: str = "127.0.0.1"
    parallelism: int = 0  # 0: the number of cores Spark reports
    extra: tuple[tuple[str, str], ...] = ()


def extra_conf(extra: tuple[tuple[str, str], ...]) -> list[tuple[str, str]]:
    """The settings a user adds (`SparkSettings.extra`), where optimizer rules a user excludes come
    on top of ours (`PruneFilters` must stay excluded: see `create_spark_session`).

    >>> extra_conf((("spark.sql.optimizer.excludedRules", "a.B, c.D"), ("spark.x", "1")))
    [('spark.sql.optimizer.excludedRules', 'org.apache.spark.sql.catalyst.optimizer.PruneFilters,a.B,c.D'), ('spark.x', '1')]
    """
    out = []
    for k, v in extra:
        if k == EXCLUDED_RULES:
            v = ",".join(dict.fromkeys([PRUNE_FILTERS, *(r.strip() for r in v.split(",") if r.strip())]))
        out.append((k, v))
    return out


def create_spark_session(settings: SparkSettings):
    """Start (or reuse) the process' SparkSession."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", settings.host)
    from pyspark.sql import SparkSession

    cores = _cores(settings.master)
    shuffle_partitions = settings.parallelism or cores
    builder = (
        SparkSession.builder.master(settings.master)
        .appName(settings.app_name)
        .config("spark.ui.enabled", str(settings.ui).lower())
        .config("spark.driver.host", settings.host)
        .config("spark.driver.bindAddress", settings.host)
        .config("spark.driver.memory", settings.driver_memory)
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.default.parallelism", str(shuffle_partitions))
        .config("spark.sql.adaptive.enabled", "false")
        # Pools share the cores fairly: a snapshot read off the barrier's path runs in a pool of its own
        # (`compute.stream.snapshot`); every other job is in the default pool, first come first served.
        .config("spark.scheduler.mode", "FAIR")
        .config("spark.python.worker.reuse", "true")
        # PySpark's daemon, but a reused worker does not traverse its whole heap after each task
        .config("spark.python.daemon.module", "compute.python_daemon")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100000")
        .config("spark.sql.parquet.enableVectorizedReader", "true")
        .config("spark.sql.sources.ignoreMissingFiles", "false")
        .config("spark.sql.legacy.timeParserPolicy", "CORRECTED")
        # Snapshot reads pass dozens of SST paths: list them in the driver, not with a Spark job
        # (a listing job cost ~0.5 s per snapshot split).
        .config("spark.sql.sources.parallelPartitionDiscovery.threshold", "100000")
        .config("spark.ui.showConsoleProgress", "false")
        # Keep every filter, even one that can never pass (`WHERE false`): the operators under it write
        # state and progress as they run (a backfill's progress files, a snapshot read's row count),
        # and a filter Spark turned into an empty relation took its input's operators along, so the
        # backfill of `... WHERE false` never finished. (A filter the optimizer proves always true
        # stays too, at the cost of evaluating it.) RisingWave's optimizer turns a constant false
        # filter into empty `Values` instead; ours keeps the scan, whose rows the filter drops.
        .config(EXCLUDED_RULES, PRUNE_FILTERS)
        .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
    )
    for k, v in extra_conf(settings.extra):
        builder = builder.config(k, v)
    logger.info("starting Spark (master %s)", settings.master)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    from compute.float_text_udf import register_float_text_udfs
    from compute.jsonb_udf import register_jsonb_udfs

    register_jsonb_udfs(spark)
    register_float_text_udfs(spark)
    logger.info("Spark %s ready: %d cores, default parallelism %d", spark.version,
                spark.sparkContext.defaultParallelism, shuffle_partitions)
    return spark


def _cores(master: str) -> int:
    if master.startswith("local[") and master.endswith("]"):
        inner = master[6:-1].split(",")[0]
        return os.cpu_count() or 2 if inner == "*" else max(1, int(inner))
    if master == "local":
        return 1
    return os.cpu_count() or 2
