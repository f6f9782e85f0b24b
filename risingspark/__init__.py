"""RisingSpark: a streaming database whose materialized views run and backfill on Apache Spark."""

__version__ = "0.1.0"
