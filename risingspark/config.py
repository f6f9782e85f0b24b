"""Settings: one dataclass per service, read once from flags, ``RISINGSPARK_*`` environment variables
and defaults, then passed down. Nothing deeper reads `os.environ`.

Every field has a default and a help line (the ``metadata["help"]``), which the CLI turns into flags.
System parameters that change at run time (``barrier_interval_ms``...) live in the meta store
(`meta.system_params`), not here.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def _f(default: Any, help: str) -> Any:  # noqa: A002 - "help" reads best at the call sites
    return field(default=default, metadata={"help": help})


_STATE_CACHE_HELP = ("memory of the stateful executors' caches of state rows on the compute node, in MiB, shared "
                     "by its Spark cores")
_MAX_CONNECTIONS_HELP = ("client connections the frontend serves at once; one more gets PostgreSQL's FATAL 53300 "
                         "(0: no limit)")
_DML_FLUSH_DELAY_HELP = ("milliseconds the frontend gathers logged and asynchronously committed statements "
                         "before it records them in meta in one commit (as PostgreSQL's wal_writer_delay); "
                         "FLUSH does not wait for it")
_SWITCH_INTERVAL_HELP = ("how long, in ms, a Python thread runs before another waiting for the interpreter may take "
                         "over (sys.setswitchinterval): the latency a client's statement waits behind streaming "
                         "work in the same process")
_EVENT_LOOP_HELP = ("the frontend's event loop, which reads every client message and answers point queries, constant "
                    "SELECTs and single-row INSERTs itself: uvloop (libuv's, in C) or asyncio (the standard "
                    "library's, in Python)")
_BLOCK_CACHE_HELP = "block cache of decoded SST blocks on the compute node, in MiB, shared by its Spark cores"


@dataclass(frozen=True)
class ServerlessBackfillSettings:
    """Settings of meta's serverless backfill controller, shared by the playground and `risingspark
    meta` (a configuration file's ``[serverless_backfill]`` section sets them)."""

    config: str = _f("", "TOML file of settings; a [serverless_backfill] section sets the serverless_backfill_* "
                         "settings (flags and RISINGSPARK_* variables win over it)")
    serverless_backfill_enabled: bool = _f(False, "run the serverless backfill controller: a job created with "
                                                  "enable_serverless_backfill backfills on a backfiller of its own")
    serverless_backfill_provisioner: str = _f("local", "how backfillers are provisioned: local (a child compute "
                                                       "process with a local Spark) or spark (a child compute "
                                                       "process whose Spark application runs on "
                                                       "serverless_backfill_spark_master)")
    serverless_backfill_cores: int = _f(1, "Spark cores of one backfiller replica (the SKU)")
    serverless_backfill_memory: str = _f("2g", "Spark memory of one backfiller replica (the SKU)")
    serverless_backfill_replicas: int = _f(1, "replicas per backfiller: cores × replicas Spark cores in all")
    serverless_backfill_spark_master: str = _f("", "Spark master URL of the spark provisioner (spark://host:7077)")
    serverless_backfill_cpu_affinity: str = _f("", "CPUs a local backfiller is pinned to, e.g. 1 or 2-3 (empty: any)")
    serverless_backfill_provision_timeout_s: float = _f(180.0, "a backfiller not ready this long after it was "
                                                               "requested fails its job")


@dataclass(frozen=True)
class ServerlessCompactionSettings:
    """Settings of meta's serverless compaction controller (`meta.serverless_compaction`), shared by
    the playground and `risingspark meta` (a configuration file's ``[serverless_compaction]`` section
    sets them)."""

    serverless_compaction_enabled: bool = _f(False, "start extra compactors while compaction falls behind, and "
                                                    "retire them when it has caught up")
    serverless_compaction_max_compactors: int = _f(2, "at most this many extra compactors at once")
    serverless_compaction_pending_mb: int = _f(256, "one more compactor per this many MiB of pending compaction "
                                                    "bytes (all tables)")
    serverless_compaction_idle_s: float = _f(60.0, "an extra compactor is retired after compaction has been "
                                                   "under the threshold this long")
    serverless_compaction_spark_master: str = _f("", "Spark master of the extra compactors: their big tasks run "
                                                     "there as Spark jobs (empty: in their own process)")


@dataclass(frozen=True)
class GarbageCollectionSettings:
    """Meta's full GC of the object store (`meta.garbage`), shared by the playground and `risingspark
    meta` (RisingWave's ``full_gc_interval_sec`` and ``min_sst_retention_time_sec``)."""

    full_gc_interval_s: float = _f(600.0, "seconds between full GCs of the object store (deleting files nothing "
                                          "references, written by work that never committed); 0: only at start")
    min_sst_retention_s: float = _f(300.0, "the full GC deletes only unreferenced files older than this")


@dataclass(frozen=True)
class PlaygroundConfig(ServerlessBackfillSettings, ServerlessCompactionSettings, GarbageCollectionSettings):
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
    spark_conf: str = _f("", "extra Spark settings, comma-separated key=value (e.g. spark.cores.max=2)")
    parallelism: int = _f(0, "default streaming parallelism (0: one actor per Spark core)")
    block_cache_mb: int = _f(512, "block cache of decoded SSTs per process (the frontend's and, shared by its "
                                  "Spark cores, the compute node's), in MiB")
    state_cache_mb: int = _f(512, _STATE_CACHE_HELP)
    log_level: str = _f("INFO", "logging level")
    auth_users: str = _f("", "users allowed to connect, as user:password[,user:password...]; when set, clients "
                             "must authenticate with a password (empty: trust every user)")
    auth_method: str = _f("scram-sha-256", "password authentication method: scram-sha-256 or md5")
    max_connections: int = _f(100, _MAX_CONNECTIONS_HELP)
    switch_interval_ms: float = _f(5.0, _SWITCH_INTERVAL_HELP)
    dml_flush_delay_ms: float = _f(50.0, _DML_FLUSH_DELAY_HELP)
    event_loop: str = _f("uvloop", _EVENT_LOOP_HELP)


    def resolved_meta_store_url(self) -> str:
        if self.meta_store_url:
            return self.meta_store_url
        return f"sqlite:///{Path(self.data_dir).resolve() / 'meta.db'}"

    def resolved_object_store_url(self) -> str:
        if self.object_store_url:
            return self.object_store_url
        return str(Path(self.data_dir).resolve() / "objects")


_META_ADDRESS_HELP = ("meta HTTP address(es), comma-separated: the active meta and its standbys "
                      "(http://host:5690[,http://host2:5690])")
_ADVERTISE_HELP = "address other services use to reach this one (default: http://host:port)"
_OBJECT_STORE_HELP = ("object store URL: a directory shared with every service and Spark executor, or "
                      "s3://bucket/prefix?endpoint_override=... (default: the one meta announces)")


@dataclass(frozen=True)
class MetaConfig(ServerlessBackfillSettings, ServerlessCompactionSettings, GarbageCollectionSettings):
    """`risingspark meta`: the catalog, barriers, checkpoints and compaction scheduling. One meta is
    active; others started on the same meta store wait as standbys and take over when it dies."""

    host: str = _f("127.0.0.1", "address the meta HTTP API binds")
    port: int = _f(5690, "meta HTTP API, RPC, dashboard and /metrics port")
    data_dir: str = _f("./risingspark-data", "directory of the default meta store and object store")
    meta_store_url: str = _f("", "SQLAlchemy URL of the meta store: sqlite:///path or "
                                 "postgresql+psycopg://user:pass@host/db (default: SQLite under data_dir)")
    object_store_url: str = _f("", "object store URL every service uses: a shared directory or s3://bucket/prefix"
                                   "?endpoint_override=... (default: data_dir/objects)")
    heartbeat_timeout_s: float = _f(30.0, "a compute node, compactor or frontend silent this long is declared dead")
    log_level: str = _f("INFO", "logging level")
    advertise_address: str = _f("", "address backfillers use to reach this meta (default: http://host:port)")


    def resolved_meta_store_url(self) -> str:
        if self.meta_store_url:
            return self.meta_store_url
        return f"sqlite:///{Path(self.data_dir).resolve() / 'meta.db'}"

    def resolved_object_store_url(self) -> str:
        if self.object_store_url:
            return self.object_store_url
        return str(Path(self.data_dir).resolve() / "objects")


@dataclass(frozen=True)
class ComputeConfig:
    """`risingspark compute`: runs the epoch rounds of one resource group on its Spark application."""

    host: str = _f("127.0.0.1", "address the compute node's HTTP API binds")
    port: int = _f(5688, "compute node HTTP API (barriers from meta) and /metrics port")
    advertise_address: str = _f("", _ADVERTISE_HELP)
    meta_address: str = _f("http://127.0.0.1:5690", _META_ADDRESS_HELP)
    object_store_url: str = _f("", _OBJECT_STORE_HELP)
    resource_group: str = _f("default", "resource group whose streaming jobs this node runs")
    node_name: str = _f("", "name of this node in metrics and logs (default: compute-<resource group>-<node id>)")
    spark_master: str = _f("local[*]", "Spark master URL: local[N] or spark://host:7077 for a standalone cluster")
    spark_ui: bool = _f(False, "enable the Spark web UI")
    spark_driver_memory: str = _f("2g", "Spark driver memory")
    spark_conf: str = _f("", "extra Spark settings, comma-separated key=value (e.g. spark.cores.max=2)")
    parallelism: int = _f(0, "default streaming parallelism (0: one actor per Spark core)")
    state_cache_mb: int = _f(512, _STATE_CACHE_HELP)
    block_cache_mb: int = _f(512, _BLOCK_CACHE_HELP)
    heartbeat_interval_s: float = _f(1.0, "seconds between heartbeats to meta")
    log_level: str = _f("INFO", "logging level")


@dataclass(frozen=True)
class CompactorConfig:
    """`risingspark compactor`: runs the compaction tasks meta schedules."""

    host: str = _f("127.0.0.1", "address the compactor's HTTP API (/metrics) binds")
    port: int = _f(6660, "compactor HTTP port (/api/health, /metrics)")
    advertise_address: str = _f("", _ADVERTISE_HELP)
    meta_address: str = _f("http://127.0.0.1:5690", _META_ADDRESS_HELP)
    object_store_url: str = _f("", _OBJECT_STORE_HELP)
    heartbeat_interval_s: float = _f(1.0, "seconds between heartbeats to meta")
    poll_interval_s: float = _f(1.0, "seconds between asking meta for a task when there was none")
    spark_master: str = _f("", "Spark master URL (spark://host:7077 or local[N]): big compaction tasks run as Spark "
                               "jobs on it, split by key range; empty: every task runs in this process")
    spark_conf: str = _f("", "extra Spark settings, comma-separated key=value (e.g. spark.cores.max=2)")
    spark_min_task_mb: int = _f(64, "a compaction task reading at least this many MiB runs on Spark (with "
                                    "--spark-master); smaller ones run in this process")
    failpoints: str = _f("", "test hook: pause at named points, name=seconds[,...] (`risingspark.failpoint`)")
    log_level: str = _f("INFO", "logging level")


@dataclass(frozen=True)
class FrontendConfig:
    """`risingspark frontend`: the Postgres wire server. Several frontends may serve the same cluster."""

    host: str = _f("127.0.0.1", "address the frontend binds")
    port: int = _f(4566, "frontend (Postgres wire protocol) port")
    metrics_port: int = _f(2222, "frontend HTTP port (/api/health, /metrics); 0 turns it off")
    advertise_address: str = _f("", _ADVERTISE_HELP)
    meta_address: str = _f("http://127.0.0.1:5690", _META_ADDRESS_HELP)
    object_store_url: str = _f("", _OBJECT_STORE_HELP)
    block_cache_mb: int = _f(512, "block cache of decoded SSTs, in MiB")
    heartbeat_interval_s: float = _f(1.0, "seconds between heartbeats to meta")
    auth_users: str = _f("", "users allowed to connect, as user:password[,user:password...] (empty: trust every user)")
    auth_method: str = _f("scram-sha-256", "password authentication method: scram-sha-256 or md5")
    max_connections: int = _f(100, _MAX_CONNECTIONS_HELP)
    switch_interval_ms: float = _f(5.0, _SWITCH_INTERVAL_HELP)
    dml_flush_delay_ms: float = _f(50.0, _DML_FLUSH_DELAY_HELP)
    event_loop: str = _f("uvloop", _EVENT_LOOP_HELP)
    dml_log_dir: str = _f("", "directory of the frontend's DML log on a disk that outlives the process: a small "
                              "durable statement is acknowledged once logged there, not once meta records it "
                              "(empty: no log)")
    processes: int = _f(1, "processes serving the port, each on a core of its own (Linux's SO_REUSEPORT spreads "
                           "connections over them); max_connections counts them all, the block cache is split "
                           "between them, process i serves metrics on metrics_port + i")
    log_level: str = _f("INFO", "logging level")


@dataclass(frozen=True)
class ServerlessBackfillConfig:
    """The serverless backfill controller's settings (`meta.serverless`): whether it runs, and the SKU
    of a backfiller (Spark cores and memory per replica, replicas) and how it is provisioned."""

    enabled: bool = False
    provisioner: str = "local"
    cores: int = 1
    memory: str = "2g"
    replicas: int = 1
    spark_master: str = ""
    cpu_affinity: str = ""
    provision_timeout_s: float = 180.0

    @classmethod
    def of(cls, cfg: PlaygroundConfig | MetaConfig) -> ServerlessBackfillConfig:
        """The ``serverless_backfill_*`` settings of a playground or meta."""
        prefix = "serverless_backfill_"
        out = cls(**{f.name: getattr(cfg, prefix + f.name) for f in dataclasses.fields(cls)})
        out.validate()
        return out

    def validate(self) -> None:
        if self.provisioner not in ("local", "spark"):
            raise ValueError(f"serverless_backfill_provisioner must be local or spark, not {self.provisioner!r}")
        if self.provisioner == "spark" and self.enabled and not self.spark_master:
            raise ValueError("the spark provisioner of serverless backfill needs serverless_backfill_spark_master")
        if self.cores < 1 or self.replicas < 1:
            raise ValueError("serverless_backfill_cores and serverless_backfill_replicas must be at least 1")
        self.cpus()

    def cpus(self) -> set[int] | None:
        """The CPUs of `cpu_affinity` ("1", "0,2", "2-3"), or None for any.

        >>> sorted(ServerlessBackfillConfig(cpu_affinity="0, 2-3").cpus())
        [0, 2, 3]
        """
        if not self.cpu_affinity.strip():
            return None
        out: set[int] = set()
        for part in self.cpu_affinity.split(","):
            lo, _, hi = part.strip().partition("-")
            try:
                out.update(range(int(lo), int(hi or lo) + 1))
            except ValueError:
                raise ValueError(f"invalid serverless_backfill_cpu_affinity {self.cpu_affinity!r}: "
                                 "expected CPUs like 1 or 0,2-3") from None
        return out


def advertised(cfg: ComputeConfig | CompactorConfig | FrontendConfig | MetaConfig, port: int) -> str:
    """The address a service registers with meta."""
    if cfg.advertise_address:
        return cfg.advertise_address if "://" in cfg.advertise_address else f"http://{cfg.advertise_address}"
    host = "127.0.0.1" if cfg.host in ("0.0.0.0", "") else cfg.host
    return f"http://{host}:{port}"


ENV_PREFIX = "RISINGSPARK_"


def from_env_and_args(cls: type, args: dict[str, Any] | None = None, env: dict[str, str] | None = None) -> Any:
    """Build `cls` from defaults, overridden by ``RISINGSPARK_<FIELD>`` variables, then by `args`
    (flag values that are not None)."""
    env = dict(os.environ) if env is None else env
    values: dict[str, Any] = {}
    names = {f.name for f in dataclasses.fields(cls)}
    config_file = (args or {}).get("config") or env.get(ENV_PREFIX + "CONFIG")
    if config_file and "config" in names:
        values.update(_from_file(cls, config_file))
    for f in dataclasses.fields(cls):
        raw = env.get(ENV_PREFIX + f.name.upper())
        if raw is not None:
            values[f.name] = _convert(f, raw)
        if args and args.get(f.name) is not None:
            values[f.name] = args[f.name]
    return cls(**values)


def _from_file(cls: type, path: str) -> dict[str, Any]:
    """Settings of a TOML file: top-level keys name fields; ``[section] key`` names ``section_key``."""
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except OSError as e:
        raise ValueError(f"cannot read the configuration file {path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"invalid configuration file {path}: {e}") from None
    fields = {f.name: f for f in dataclasses.fields(cls)}
    out: dict[str, Any] = {}
    for key, value in doc.items():
        items = [(f"{key}_{k}", v) for k, v in value.items()] if isinstance(value, dict) else [(key, value)]
        for name, v in items:
            if name not in fields:
                raise ValueError(f"unknown setting {name!r} in the configuration file {path}")
            kind = type(fields[name].default)
            if kind is float and isinstance(v, int) and not isinstance(v, bool):
                v = float(v)
            if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
                raise ValueError(f"setting {name!r} in {path} must be a {kind.__name__}, not {v!r}")
            out[name] = v
    return out


def _convert(f: dataclasses.Field, raw: str) -> Any:
    kind = type(f.default)
    if kind is bool:
        return raw.strip().lower() in ("1", "true", "yes", "on")
    try:
        if kind is int:
            return int(raw)
        if kind is float:
            return float(raw)
    except ValueError:
        raise ValueError(f"{ENV_PREFIX}{f.name.upper()}={raw!r} is not a valid {kind.__name__}") from None
    return raw
