"""A small in-memory stand-in for the meta service, with the plans the planner makes for a table and
for an aggregation over it, for the dashboard's unit tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

from meta.catalog import CatalogSnapshot
from meta.compaction.scheduler import CompactionScheduler
from meta.compaction.task import CompactionConfig
from meta.history import BarrierSample, RingBuffer
from meta.service import DdlProgress
from risingspark.catalog import BackfillType, CreateType, JobStatus, RelationCatalog, RelationKind
from risingspark.storage.desc import HummockVersion, SstableInfo, StateTableDesc, SubLevel, TableLevels
from risingspark.stream_plan import (
    AggCall,
    StreamDml,
    StreamExchange,
    StreamFilter,
    StreamHashAgg,
    StreamMaterialize,
    StreamProject,
    StreamTableScan,
    node_to_json,
    walk,
)
from risingspark.table_kind import ConflictBehavior
from risingspark.types import INT4, INT8, Field

TABLE_ID, MV_ID, STATE_ID, MV2_ID, MV2_STATE_ID = 1001, 1002, 1003, 1004, 1005
COLS = (Field("id", INT8), Field("k", INT4))


def table_plan() -> StreamMaterialize:
    desc = StateTableDesc(TABLE_ID, COLS, (0,), (0,))
    dml = StreamDml(fields=COLS, stream_key=(0,), table_id=TABLE_ID)
    return StreamMaterialize(fields=COLS, stream_key=(0,), table=desc, conflict=ConflictBehavior.OVERWRITE,
                             input=StreamExchange(fields=COLS, stream_key=(0,), input=dml, dist_key=(0,)))


def agg_plan(upstream_id: int = TABLE_ID, mv_id: int = MV_ID, state_id: int = STATE_ID) -> StreamMaterialize:
    """``SELECT k, count(*) AS c FROM t WHERE k > 0 GROUP BY k``, as the planner makes it."""
    scan = StreamTableScan(fields=COLS, stream_key=(0,), upstream_id=upstream_id, upstream_name="t",
                           upstream_desc=StateTableDesc(upstream_id, COLS, (0,), (0,)),
                           backfill_type="SNAPSHOT_BACKFILL")
    filt = StreamFilter(fields=COLS, stream_key=(0,), input=scan, predicate="k > 0", display="(k > 0)")
    proj = StreamProject(fields=(Field("_g0", INT4),), stream_key=(), input=filt, exprs=("`k`",), displays=("k",))
    exchange = StreamExchange(fields=proj.fields, stream_key=(), input=proj, dist_key=(0,))
    out = (Field("_g0", INT4), Field("_agg0", INT8))
    agg = StreamHashAgg(fields=out, stream_key=(0,), input=exchange, group_key=(0,),
                        aggs=(AggCall("count_star", None, INT8, "count(*)"),),
                        state_table=StateTableDesc(state_id, out, (0,), (0,)))
    mv_fields = (Field("k", INT4), Field("c", INT8))
    project = StreamProject(fields=mv_fields, stream_key=(0,), input=agg, exprs=("`_g0`", "`_agg0`"),
                            displays=("_g0", "_agg0"))
    return StreamMaterialize(fields=mv_fields, stream_key=(0,), input=project,
                             table=StateTableDesc(mv_id, mv_fields, (0,), (0,)))


def relation(rel_id: int, name: str, plan: StreamMaterialize, *, creating: bool = False,
             deps: tuple[int, ...] = (), parallelism: int = 0) -> RelationCatalog:
    kind = RelationKind.MATERIALIZED_VIEW if deps else RelationKind.TABLE
    states = tuple(n.state_table for n in walk(plan) if isinstance(n, StreamHashAgg) and n.state_table is not None)
    assert plan.table is not None
    return RelationCatalog(
        id=rel_id, database_id=1, schema_id=2, name=name, kind=kind, fields=plan.fields, pk=(0,), dist_key=(0,),
        definition=f"CREATE {kind.display.upper()} {name} ...", parallelism=parallelism,
        status=JobStatus.CREATING if creating else JobStatus.CREATED,
        create_type=CreateType.BACKGROUND if creating else CreateType.FOREGROUND,
        backfill_type=BackfillType.SNAPSHOT_BACKFILL if deps else None, plan=node_to_json(plan),
        state_tables=(plan.table, *states), dependencies=deps)


def progress(job_id: int, consumed: int, total: int) -> DdlProgress:
    return DdlProgress(job_id, "CREATE MATERIALIZED VIEW ...", "BACKGROUND", f"{consumed}/{total}", None, False,
                       "SNAPSHOT_BACKFILL", consumed, total, 1000.0, (total - consumed) / 1000)


def sst(table_id: int, epoch: int, size: int = 100) -> SstableInfo:
    return SstableInfo(f"hummock/{table_id}/{epoch}.parquet", table_id, 0, epoch, 0, 255, epoch, epoch, 10, 0, size)


@dataclass
class FakeMeta:
    relations: list[RelationCatalog]
    progress: list[DdlProgress] = field(default_factory=list)
    l0: dict[int, int] = field(default_factory=dict)  # table id -> L0 sub-levels
    default_parallelism: int | None = 2
    committed_epoch: int = 1 << 20

    def __post_init__(self) -> None:
        self.barriers = SimpleNamespace(history=RingBuffer[BarrierSample](100), last_error=None)
        self.params = SimpleNamespace(barrier_interval_ms=1000)
        self.hummock = SimpleNamespace(version=None)
        # the real scheduler over the fake's version: what the monitor reads of it (config, tasks in
        # flight, pending bytes) needs neither a meta store nor a catalog
        self.compaction = CompactionScheduler(None, None, self.hummock, CompactionConfig())  # type: ignore[arg-type]
        self._versions = 6
        self.refresh()

    def refresh(self) -> None:
        self.catalog = SimpleNamespace(snapshot=CatalogSnapshot(1, relations={r.id: r for r in self.relations}))
        tables = {t: TableLevels(t, tuple(SubLevel(e, (sst(t, e),)) for e in range(1, n + 1)))
                  for t, n in self.l0.items()}
        self._versions += 1
        self.hummock.version = HummockVersion(self._versions, self.committed_epoch, tables)

    def ddl_progress(self) -> list[DdlProgress]:
        return list(self.progress)

    def write_stalls(self) -> list:
        return []

    def row_count(self, table_id: int) -> int:
        return 10 * self.l0.get(table_id, 0)


def cluster(*, mv_creating: bool = True) -> FakeMeta:
    """A table ``t``, an aggregation ``mv`` over it (backfilling unless told), and ``mv2`` over ``mv``."""
    rels = [relation(TABLE_ID, "t", table_plan()),
            relation(MV_ID, "mv", agg_plan(), creating=mv_creating, deps=(TABLE_ID,), parallelism=4)]
    if not mv_creating:
        rels.append(relation(MV2_ID, "mv2", agg_plan(MV_ID, MV2_ID, MV2_STATE_ID), deps=(MV_ID,)))
    return FakeMeta(rels, [progress(MV_ID, 250, 1000)] if mv_creating else [], {TABLE_ID: 3, MV_ID: 1})
