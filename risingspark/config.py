"""Settings: one dataclass per service, read once from flags, ``RISINGSPARK_*`` environment variables
and defaults, then passed down. Nothing deeper reads `os.environ`.

Every field has a default and a help line (the ``metadata["help"]``), which the CLI turns into flags.
System parameters that change at run time (``barrier_interval_ms``...) live in the meta store
(`meta.system_params`), not here.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def _f(default: Any, help: str) -> Any:  # noqa: A002 - "help" reads best at the call sites
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class PlaygroundConfig:
    """Everything in one process: meta + compute + compactor + frontend."""

    data_dir: str = _f("./risingspark-data", "directory holding the meta store and the object store")
    host: str = _f("127.0.0.1", "address every service binds")
    port: int = _f(4566, "frontend (Postgres wire protocol) port")
    meta_port: int = _f(5690, "meta HTTP API, dashboard and /metrics port")
    meta_store_url: str = _f("", "SQLAlchemy URL of the meta store (default: SQLite under data_dir)")
    object_store_url: str = _f("", "object store URL: a directory or s3://bucket/prefix (default: data_dir/objects)")
    spark_master: str = _f("local[*]", "Spark master URL for the compute node")
    spark_ui: bool = _f(False, "enable the Spark web UI")
    spark_driver_memory: str = _f("2g", "Spark driver memory")
    parallelism: int = _f(0, "default streaming parallelism (0: one actor per Spark core)")
    block_cache_mb: int = _f(512, "block cache of decoded SSTs per process, in MiB")
    log_level: str = _f("INFO", "logging level")
    auth_users: str = _f("", "users allowed to connect, as user:password[,user:password...]; when set, clients "
                             "must authenticate with a password (empty: trust every user)")
    auth_method: str = _f("scram-sha-256", "password authentication method: scram-sha-256 or md5")

    def resolved_meta_store_url(self) -> str:
        if self.meta_store_url:
            return self.meta_store_url
        return f"sqlite:///{Path(self.data_dir).resolve() / 'meta.db'}"

    def resolved_object_store_url(self) -> str:
        if self.object_store_url:
            return self.object_store_url
        return str(Path(self.data_dir).resolve() / "objects")


ENV_PREFIX = "RISINGSPARK_"


def from_env_and_args(cls: type, args: dict[str, Any] | None = None, env: dict[str, str] | None = None) -> Any:
    """Build `cls` from defaults, overridden by ``RISINGSPARK_<FIELD>`` variables, then by `args`
    (flag values that are not None)."""
    env = dict(os.environ) if env is None else env
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        raw = env.get(ENV_PREFIX + f.name.upper())
        if raw is not None:
            values[f.name] = _convert(f, raw)
        if args and args.get(f.name) is not None:
            values[f.name] = args[f.name]
    return cls(**values)


def _convert(f: dataclasses.Field, raw: str) -> Any:
    kind = type(f.default)
    if kind is bool:
        return raw.strip().lower() in ("1", "true", "yes", "on")
    if kind is int:
        return int(raw)
    return raw
