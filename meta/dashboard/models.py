"""Response models of the dashboard's JSON endpoints (they document the API in OpenAPI)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class BackfillProgressModel(BaseModel):
    """Backfill progress of one fragment of a creating job."""

    fragment_id: int | None = Field(description="the fragment that scans the upstream")
    upstream_job_id: int | None
    upstream: str | None = Field(description="name of the upstream table or materialized view")
    progress: str = Field(description='as rw_ddl_progress: "45.23% (452300/1000000)"')
    consumed_rows: int
    total_rows: int
    rows_per_second: float | None
    eta_seconds: float | None
    queued: bool = Field(description="waiting for a slot (max_concurrent_creating_streaming_jobs)")
    rate_limit: str | None = Field(None, description='as rw_fragment_backfill_progress: "adaptive (120000 rows/s)", '
                                                     "a fixed limit, or null: unlimited")
    waiting_for: list[str] = Field(default_factory=list, description="upstreams the backfill order puts before this one that have "
                                                   "not finished (it has not started while there are some)")


class JobModel(BaseModel):
    """A streaming job: a table or a materialized view."""

    id: int
    name: str
    kind: str
    statement: str
    status: str = Field(description="Creating or Created")
    create_type: str = Field(description="FOREGROUND or BACKGROUND")
    backfill_type: str | None
    resource_group: str
    parallelism: int | None = Field(description="actors per fragment (the compute default when adaptive)")
    adaptive: bool = Field(description="no parallelism set: one actor per core of the compute node")
    backfill_rate_limit: int | None = Field(description="rows/s per parallelism; an adaptive rate's current limit")
    backfill_rate_adaptive: bool = Field(False, description="the limit follows the barrier latency")
    dependencies: list[int]
    created_at_epoch: int
    initialized_at_epoch: int | None
    fragments: int
    backfill: list[BackfillProgressModel] = Field(description="one entry per backfill fragment while creating")


class ExecutorModel(BaseModel):
    name: str
    detail: str


class FragmentModel(BaseModel):
    fragment_id: int
    executors: list[ExecutorModel] = Field(description="downstream executor first")
    parallelism: int | None
    node: str = Field(description="the compute node running its actors")
    upstream_job_id: int | None = Field(description="the job a backfill fragment scans")
    backfill: BackfillProgressModel | None


class ExchangeModel(BaseModel):
    upstream_fragment_id: int
    downstream_fragment_id: int
    dispatch: str = Field(description="HashShard(key columns), or Single")


class JobLinkModel(BaseModel):
    """A job this job reads (or that reads it), linked fragment to fragment."""

    job_id: int
    name: str
    fragment_id: int = Field(description="the linked job's fragment")
    local_fragment_id: int = Field(description="this job's fragment at the other end")


class FragmentGraphModel(BaseModel):
    job_id: int
    name: str
    status: str
    fragments: list[FragmentModel]
    exchanges: list[ExchangeModel]
    upstream_jobs: list[JobLinkModel]
    downstream_jobs: list[JobLinkModel]


class NodeModel(BaseModel):
    id: str
    role: str = Field(description="compute, compactor, meta or frontend")
    resource_group: str | None
    address: str | None
    process: str = Field(description="the process running the node (its resource series)")
    pid: int
    parallelism: int | None = Field(description="a compute node's default parallelism")
    state: str


class ResourceSampleModel(BaseModel):
    at: float = Field(description="unix time, seconds")
    cpu_cores: dict[str, float] = Field(description="CPU in cores per component")
    rss_bytes: dict[str, int] = Field(description="resident memory per component")


class ProcessModel(BaseModel):
    name: str
    pid: int
    nodes: list[str]
    cpu_count: int
    memory_total_bytes: int
    samples: list[ResourceSampleModel]


class NodesModel(BaseModel):
    nodes: list[NodeModel]
    processes: list[ProcessModel]


class BarrierSampleModel(BaseModel):
    at: float
    epoch: int
    duration_s: float
    commit_s: float
    spark_jobs: int
    cache_hits: int = 0
    cache_misses: int = 0


class LatencyBucketModel(BaseModel):
    start: float
    count: int
    p50: float
    p99: float
    max: float


class BarriersModel(BaseModel):
    committed_epoch: int
    committed_at_ms: int | None = Field(description="the committed epoch's physical time, unix ms")
    barrier_interval_ms: int
    window_s: float
    bucket_s: float
    count: int = Field(description="barriers committed in the window")
    p50: float
    p99: float
    series: list[LatencyBucketModel]
    recent: list[BarrierSampleModel] = Field(description="the newest barriers, oldest first")
    state_cache_hit_rate: float | None = Field(
        description="in the window, the share of keys stateful executors found in their state caches (None: no "
                    "lookups)")
    last_error: str | None


class LevelModel(BaseModel):
    """One level of a state table's LSM tree (0 is L0)."""

    level: int
    ssts: int
    size_bytes: int


class TableStorageModel(BaseModel):
    table_id: int
    job_id: int
    job: str
    l0_sub_levels: int
    l0_ssts: int
    levels: list[LevelModel]  # the non-empty levels, L0 first
    size_bytes: int
    rows: int


class StorageSampleModel(BaseModel):
    at: float
    max_l0_sub_levels: int
    total_l0_sub_levels: int
    compaction_tasks: int
    compaction_bytes: int


class WriteStallModel(BaseModel):
    """A table whose writes are held (`meta.compaction.write_stall`)."""

    table_id: int
    name: str
    state_table_id: int
    l0_sub_levels: int
    since: float


class StorageModel(BaseModel):
    committed_epoch: int
    version_id: int
    tables: list[TableStorageModel]
    compaction_tasks_total: int
    compaction_bytes_total: int
    samples: list[StorageSampleModel]
    write_stalls: list[WriteStallModel] = []
