"""A job's epoch as one Spark job: every stream plan node becomes a DataFrame of changes.

* sources — a table's DML batches, an upstream's change log, or a backfill — yield ``_op`` plus the
  node's columns;
* filters and projections are Spark SQL over those columns;
* an exchange computes ``_vnode`` of its distribution key in Spark and shuffles by it;
* a hash aggregation pre-aggregates in Spark (``groupBy`` of signed partial sums, and of signed
  value counts for calls with a materialized input state) and folds them into its state in a
  Python task, which emits the aggregate's change stream;
* the materialize at the root writes the job's table and change log in a Python task.

Python tasks in the middle of the graph cannot return their files with their rows: each writes a
manifest (`manifest_path`) that the driver reads once the job has run; the root returns its files
as rows. Rows flow between operators in Spark without being written anywhere.

A job's plan is built once per shape (which of its inputs have rows) and run again every round; its
tasks take what changes between rounds (the epoch, the SSTs, the files) from the round's arguments,
which travel as a Spark local property beside the plan (`compute.stream.round_args`).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from compute.executor.agg_input_state import INPUT_TAG, input_delta_column, value_columns
from compute.executor.dynamic_filter import SIDE as DYNAMIC_SIDE
from compute.executor.dynamic_filter import DynamicFilterSpec
from compute.executor.hash_agg import SPARK_SIGN, AggCallSpec, HashAggSpec, spark_partials
from compute.executor.hash_join import SIDE, JoinSpec
from compute.executor.over_window import OverWindowSpec
from compute.executor.temporal_filter import TemporalFilterSpec
from compute.executor.top_n import TopNSpec
from compute.js_udf import register_js_udfs
from compute.metrics import JOB_DURATION, PLANS_BUILT, SPARK_JOBS
from compute.stream.round_args import MAX_SHAPES, ArgsOf, CachedPlan, deferred, encode, round_property
from compute.stream.tasks import (
    META_SCHEMA,
    Task,
    TaskEnv,
    backfill_task,
    dynamic_filter_task,
    hash_agg_changes_task,
    hash_join_task,
    manifest_dir,
    materialize_task,
    over_window_task,
    read_files_task,
    temporal_filter_task,
    top_n_task,
)
from risingspark.aggregate import VALUE_COUNT, keeps_nulls
from risingspark.chunk import OP, SEQ, VNODE, Op
from risingspark.errors import FeatureNotSupported
from risingspark.storage.desc import SstableInfo
from risingspark.stream_plan import (
    CHANGELOG_EPOCH,
    CHANGELOG_OP,
    CHANGELOG_ROW_ID,
    StreamChangeLog,
    StreamDml,
    StreamDynamicFilter,
    StreamExchange,
    StreamFilter,
    StreamHashAgg,
    StreamHashJoin,
    StreamMaterialize,
    StreamNode,
    StreamOverWindow,
    StreamProject,
    StreamTableScan,
    StreamTemporalFilter,
    StreamTopN,
    StreamUnion,
    scans,
    walk,
)
from risingspark.types import Field, spark_ddl
from risingspark.vnode import vnode_expr

DYNAMIC_BOUND = "_rw_dynamic_bound"  # the right input's value, beside the left input's columns

if TYPE_CHECKING:
    from compute.stream.round import EpochRound, JobRuntime


def _dml_paths(rnd: EpochRound, rt: JobRuntime) -> tuple:
    return (tuple(rnd.dml.get(rt.job.job_id, ())),)


def agg_spec(node: StreamHashAgg) -> HashAggSpec:
    assert node.input is not None and node.state_table is not None
    in_fields: tuple[Field, ...] = node.input.fields
    states = node.input_states or (None,) * len(node.aggs)
    calls = tuple(
        AggCallSpec(c.kind, in_fields[c.arg].name if c.arg is not None else None,
                    in_fields[c.arg].type if c.arg is not None else None, c.return_type, out.name, c.distinct,
                    tuple((in_fields[o].name, desc, nf) for o, desc, nf in c.order), c.delimiter, state,
                    c.delimiter_in_order)
        for c, out, state in zip(node.aggs, node.fields[len(node.group_key):], states, strict=True))
    return HashAggSpec(tuple(in_fields[i].name for i in node.group_key), calls, node.state_table)


def map_in_arrow(df: DataFrame, task: Task, schema: str) -> DataFrame:
    """``df.mapInArrow(task, schema)`` for any column names: Spark resolves the input columns by
    name, which fails for names with dots (``alias.column``), so they cross under positional names
    and the task sees the real ones."""
    names = df.columns

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return task(b.rename_columns(names) for b in batches)

    return df.toDF(*[f"_c{i}" for i in range(len(names))]).mapInArrow(run, schema)


def _vnode_column(df: DataFrame, fields: tuple[Field, ...], key: tuple[int, ...]) -> DataFrame:
    dist = [fields[i] for i in key]
    return df.withColumn(VNODE, F.expr(vnode_expr([f.name for f in dist], [f.type.to_spark() for f in dist])))


def _state_args(*table_ids: int) -> ArgsOf:
    """A task's round arguments: the round's task environment and the committed SSTs of `table_ids`."""

    def args_of(rnd: EpochRound, rt: JobRuntime) -> tuple:
        version = rnd.barrier.version
        return (rnd.env, *(tuple(version.ssts(t)) for t in table_ids))

    return args_of


class Dataflow:
    """Builds and runs one job's epoch. `source` replaces the plan's scan (a snapshot split, a
    change-log batch); otherwise the round provides each leaf's input."""

    def __init__(self, rnd: EpochRound, rt: JobRuntime, source: DataFrame | None = None) -> None:
        self.rnd = rnd
        self.rt = rt
        self.source = source
        plan = rt.job.plan
        self.op_ids = {id(n): i for i, n in enumerate(walk(plan))}
        self.args_of: list[ArgsOf] = []
        self.has_stateful_middle = any(isinstance(n, StreamHashAgg | StreamHashJoin | StreamTopN | StreamTemporalFilter
                                                          | StreamDynamicFilter | StreamOverWindow)
                                       for n in walk(plan))

    def run(self) -> bool:
        """Run the epoch; False when no input reached the job (no Spark job ran). The job's plan of
        this round's shape is built once and kept (`compute.stream.round_args`); a plan fed from
        elsewhere (`source`) or holding the epoch as a constant (a change log's) is built each time."""
        plan = self.rt.job.plan
        if not isinstance(plan, StreamMaterialize) or plan.input is None or plan.table is None:
            raise FeatureNotSupported(f"a streaming job must end in StreamMaterialize, not {type(plan).__name__}")
        spark = self.rnd.spark
        register_js_udfs(spark, plan.functions)
        plans = self.rt.plans
        shape = None if self.source is not None else self.rnd.plan_shape(self.rt)
        cached = plans.get(shape) if shape is not None else None
        built: DataFrame | None = None  # (the plan built in this round, if it was)
        if shape is not None and cached is not None:
            plans.move_to_end(shape)
        else:
            cached, built = self._build(plan)
            if cached.logical is not None:  # (a shape without input has nothing to build)
                PLANS_BUILT.labels(job=self.rt.job.name).inc()
            # (a plan Spark calls nondeterministic, as ``rand()`` makes it, keeps the seeds it was
            # analyzed with: run again, it would give the same numbers every round)
            if shape is not None and (cached.logical is None or cached.logical.deterministic()):
                plans[shape] = cached
                while len(plans) > MAX_SHAPES:
                    plans.popitem(last=False)
        if cached.logical is None:
            return False
        started = time.monotonic()
        df = cached.dataframe(spark) if built is None else built
        job = self.rt.job
        store, spilled = self.rnd.store, f"rounds/{self.rnd.env.epoch}/{job.job_id}-{uuid.uuid4().hex}"
        args = encode([f(self.rnd, self.rt) for f in cached.args_of], store, spilled)
        prop = round_property(job.job_id)
        try:
            spark.sparkContext.setLocalProperty(prop, args)
            rows = df.collect()
        finally:
            spark.sparkContext.setLocalProperty(prop, None)  # type: ignore[arg-type]
            if args.startswith("file:"):
                store.delete([spilled])
        self.rnd.count_spark_job()
        SPARK_JOBS.labels(job=job.name).inc()
        JOB_DURATION.labels(job=job.name).observe(time.monotonic() - started)
        for r in rows:
            self.rnd.record(r.kind, json.loads(r.payload), job.job_id)
        if self.has_stateful_middle:
            self._collect_manifests()
        return True

    def _build(self, plan: StreamMaterialize) -> tuple[CachedPlan, DataFrame | None]:
        """The job's plan for this round's inputs, kept (`CachedPlan`) and as a DataFrame to run now."""
        assert plan.input is not None and plan.table is not None
        df = self.build(plan.input)
        if df is None:
            return CachedPlan(None, ()), None
        mv = plan.table
        if not isinstance(plan.input, StreamExchange):
            # Rows arrive partitioned by the key an aggregation grouped them by, which is the MV's
            # key: only the vnode column needs computing.
            df = _vnode_column(df, plan.fields, mv.dist_key)
        conflict = plan.conflict
        task = self._task(lambda env, ssts: materialize_task(env, mv, ssts, conflict), _state_args(mv.table_id))
        built = map_in_arrow(df, task, META_SCHEMA)
        return CachedPlan(built._jdf.queryExecution().analyzed(), tuple(self.args_of)), built

    def _task(self, make: Callable[..., Task], args_of: ArgsOf) -> Task:
        """A task of the plan that builds itself from the round's arguments, ``make(*args_of(round,
        job))`` (`round_args.deferred`). `make` is pickled with the plan: it must not hold the round."""
        self.args_of.append(args_of)
        return deferred(self.rt.job.job_id, len(self.args_of) - 1, make)

    def _collect_manifests(self) -> None:
        store = self.rnd.store
        prefix = manifest_dir(self.rnd.env.epoch, self.rt.job.job_id)
        files = store.list(prefix)
        for f in files:
            for kind, payload in json.loads(store.read_bytes(f.path)):
                self.rnd.record(kind, payload, self.rt.job.job_id)
        store.delete([f.path for f in files])

    # ---- nodes ----------------------------------------------------------------------------------
    def build(self, node: StreamNode) -> DataFrame | None:
        if isinstance(node, StreamDml):
            return self.source if self.source is not None else self._input(node)
        if isinstance(node, StreamTableScan):
            df = self.source if self.source is not None else self._input(node)
            assert node.upstream_desc is not None
            original = node.upstream_desc.names
            if df is None or original == node.names:
                return df
            # In a query over several relations, columns are named alias.column.
            return df.select(F.col(OP), *[F.col(f"`{a}`").alias(b) for a, b in zip(original, node.names, strict=True)])
        if isinstance(node, StreamFilter):
            assert node.input is not None
            df = self.build(node.input)
            return None if df is None else df.filter(F.expr(node.predicate))
        if isinstance(node, StreamProject):
            assert node.input is not None
            df = self.build(node.input)
            if df is None:
                return None
            keep = [F.col(OP)] + ([F.col(SEQ)] if SEQ in df.columns else [])
            return df.select(*keep, *[F.expr(f"TRY_CAST(({e}) AS {f.type.to_spark()})").alias(f.name)
                                      for e, f in zip(node.exprs, node.fields, strict=True)])
        if isinstance(node, StreamExchange):
            assert node.input is not None
            df = self.build(node.input)
            if df is None:
                return None
            df = _vnode_column(df, node.input.fields, node.dist_key)
            if self.rt.backfilling and self.rt.no_shuffle and node is getattr(self.rt.job.plan, "input", None) and all(
                    isinstance(n, StreamTableScan | StreamFilter | StreamProject) for n in walk(node.input)):
                # a no-shuffle backfill's actors already hold every row of their vnodes: the MV of a
                # plan without stateful operators keeps the upstream's key (an exchange elsewhere
                # regroups rows by another key)
                return df
            return df.repartition(self.rt.parallelism, VNODE)
        if isinstance(node, StreamChangeLog):
            return self._changelog(node)
        if isinstance(node, StreamUnion):
            built = [(b, df) for b in node.branches if (df := self.build(b)) is not None]
            if not built:
                return None
            cols = [OP, *node.names]
            out = built[0][1].select(*[F.col(f"`{c}`") for c in cols])
            for _, df in built[1:]:
                out = out.unionByName(df.select(*[F.col(f"`{c}`") for c in cols]))
            return out
        if isinstance(node, StreamHashAgg):
            return self._hash_agg(node)
        if isinstance(node, StreamHashJoin):
            return self._hash_join(node)
        if isinstance(node, StreamTopN):
            return self._top_n(node)
        if isinstance(node, StreamOverWindow):
            return self._over_window(node)
        if isinstance(node, StreamTemporalFilter):
            return self._temporal_filter(node)
        if isinstance(node, StreamDynamicFilter):
            return self._dynamic_filter(node)
        raise FeatureNotSupported(f"stream plan node {type(node).__name__} is not supported by the compute node")

    def _input(self, src: StreamDml | StreamTableScan) -> DataFrame | None:
        """A leaf's input this epoch: DML batches, the upstream's change log, or its backfill; None
        when it has none (`EpochRound.input_slices`)."""
        rt = self.rt
        slices = self.rnd.input_slices(rt, src)
        if not slices:
            return None
        if isinstance(src, StreamDml):
            schema = pa.schema([pa.field(OP, pa.int8()), pa.field(SEQ, pa.int64()),
                                *(pa.field(f.name, f.type.to_arrow()) for f in src.fields)])
            return self._read_files(_dml_paths, schema, f"`{OP}` TINYINT, `{SEQ}` BIGINT, {spark_ddl(src.fields)}",
                                    slices)
        upstream = src.upstream_desc
        assert upstream is not None
        if not rt.backfilling:
            schema = pa.schema([pa.field(OP, pa.int8()), pa.field(VNODE, pa.int16()),
                                *(pa.field(f.name, f.type.to_arrow()) for f in upstream.fields)])
            table_id = upstream.table_id
            return self._read_files(lambda rnd, rt: (tuple(rnd.changelogs.get(table_id, ())),), schema,
                                    f"`{OP}` TINYINT, `{VNODE}` SMALLINT, {spark_ddl(upstream.fields)}", slices)
        # by identity: two scans of one upstream with the same columns (the branches of a UNION) are
        # equal as values but backfill separately
        scan_id = next(i for i, s in enumerate(scans(rt.job.plan)) if s is src)
        job_id = rt.job.job_id
        task = self._task(lambda env, ssts, paths, actors, limit: backfill_task(env, job_id, scan_id, upstream, ssts,
                                                                               paths, actors, limit),
                          lambda rnd, rt: rnd.backfill_args(rt, scan_id, upstream))
        n = rt.parallelism
        return self.rnd.spark.range(0, n, 1, numPartitions=n).mapInArrow(
            task, f"`{OP}` TINYINT, {spark_ddl(upstream.fields)}")

    def _read_files(self, paths_of: ArgsOf, schema: pa.Schema, ddl: str, slices: int) -> DataFrame:
        """The rows of the files `paths_of` gives each round, read by `slices` tasks
        (`EpochRound.read_files`)."""
        url = self.rnd.store.url
        task = self._task(lambda paths: read_files_task(url, paths, schema, slices), paths_of)
        return self.rnd.spark.range(0, slices, 1, numPartitions=slices).mapInArrow(task, ddl)

    def _changelog(self, node: StreamChangeLog) -> DataFrame | None:
        """Every change of the input as an inserted row (`StreamChangeLog`): its op becomes
        ``changelog_op`` in RisingWave's numbering, the epoch and a row id are added."""
        assert node.input is not None
        df = self.build(node.input)
        if df is None:
            return None
        epoch = self.rnd.env.epoch
        op = F.col(OP)
        changelog_op = (F.when(op == int(Op.INSERT), 1).when(op == int(Op.DELETE), 2)
                        .when(op == int(Op.UPDATE_INSERT), 3).when(op == int(Op.UPDATE_DELETE), 4))
        # RisingWave's row id layout: milliseconds << 22 | partition << 12 | sequence, a sequence past
        # 4096 rows moving on to the next milliseconds
        seq = F.monotonically_increasing_id().bitwiseAND(F.lit((1 << 33) - 1))
        millis = F.lit(epoch >> 16).cast("bigint") + F.floor(seq / 4096).cast("bigint")
        row_id = F.shiftleft(millis, 22).bitwiseOR(F.shiftleft(F.spark_partition_id().cast("bigint") % 1024, 12)) \
            .bitwiseOR(seq % 4096)
        names = node.input.names
        return df.select(F.lit(int(Op.INSERT)).cast("tinyint").alias(OP), *[F.col(f"`{n}`") for n in names],
                         changelog_op.cast("smallint").alias(CHANGELOG_OP), row_id.alias(CHANGELOG_ROW_ID),
                         F.lit(epoch).cast("bigint").alias(CHANGELOG_EPOCH))

    def _hash_join(self, node: StreamHashJoin) -> DataFrame | None:
        lx, rx = node.left, node.right
        assert isinstance(lx, StreamExchange) and isinstance(rx, StreamExchange)
        assert lx.input is not None and rx.input is not None
        assert node.left_state is not None and node.right_state is not None
        left, right = self.build(lx.input), self.build(rx.input)
        if left is None and right is None:
            return None
        lf, rf = lx.input.fields, rx.input.fields
        spark_types = [t.to_spark() for t in node.key_types]

        def side(df: DataFrame | None, fields: tuple[Field, ...], key: tuple[int, ...], tag: int) -> DataFrame:
            if df is None:
                df = self.rnd.spark.createDataFrame([], f"`{OP}` TINYINT, {spark_ddl(fields)}")
            # Both sides hash their key cast to the common type, so equal keys meet in one task.
            df = df.withColumn(VNODE, F.expr(vnode_expr([fields[i].name for i in key], spark_types)))
            own = {f.name for f in fields}
            return df.select(F.lit(tag).cast("tinyint").alias(SIDE), F.col(OP), F.col(VNODE),
                             *[F.col(f"`{f.name}`") if f.name in own else F.lit(None).cast(f.type.to_spark()).alias(f.name)
                               for f in (*lf, *rf)])

        both = side(left, lf, node.left_key, 0).unionByName(side(right, rf, node.right_key, 1))
        both = both.repartition(self.rt.parallelism, VNODE)
        spec = JoinSpec(node.kind, node.left_state, node.right_state, tuple(lf[i].name for i in node.left_key),
                        tuple(rf[i].name for i in node.right_key), tuple(node.fields[i].name for i in node.stream_key),
                        node.null_safe, node.condition)
        job_id, op_id = self.rt.job.job_id, self.op_ids[id(node)]
        task = self._task(lambda env, left, right: hash_join_task(env, spec, left, right, job_id, op_id),
                          _state_args(node.left_state.table_id, node.right_state.table_id))
        return map_in_arrow(both, task, f"`{OP}` TINYINT, `{VNODE}` SMALLINT, {spark_ddl(node.fields)}")

    def _top_n(self, node: StreamTopN) -> DataFrame | None:
        exchange = node.input
        if not isinstance(exchange, StreamExchange) or exchange.input is None or node.state_table is None:
            raise FeatureNotSupported("a TopN must follow an exchange")
        df = self.build(exchange)
        if df is None:
            return None
        names = exchange.input.names
        spec = TopNSpec(node.state_table, tuple(names[i] for i in node.group_key),
                        tuple((names[i], desc, nf) for i, desc, nf in node.order), node.limit, node.offset,
                        tuple(names[i] for i in node.stream_key), node.fields[-1].name if node.rank else None)
        df = df.select(F.col(OP), F.col(VNODE), *[F.col(f"`{n}`") for n in names])
        job_id, op_id = self.rt.job.job_id, self.op_ids[id(node)]
        task = self._task(lambda env, ssts: top_n_task(env, spec, ssts, job_id, op_id),
                          _state_args(node.state_table.table_id))
        return map_in_arrow(df, task, f"`{OP}` TINYINT, `{VNODE}` SMALLINT, {spark_ddl(node.fields)}")

    def _over_window(self, node: StreamOverWindow) -> DataFrame | None:
        exchange = node.input
        if not isinstance(exchange, StreamExchange) or exchange.input is None or node.state_table is None:
            raise FeatureNotSupported("an over window must follow an exchange")
        df = self.build(exchange)
        if df is None:
            return None
        names = exchange.input.names
        outputs = tuple(f.name for f in node.fields[len(names):])
        spec = OverWindowSpec(node.state_table, tuple(names[i] for i in node.partition_key),
                              tuple((names[i], desc, nf) for i, desc, nf in node.order), node.calls,
                              tuple(names[c.arg] if c.arg is not None else None for c in node.calls), outputs,
                              tuple(names[i] for i in node.stream_key))
        df = df.select(F.col(OP), F.col(VNODE), *[F.col(f"`{n}`") for n in names])
        job_id, op_id = self.rt.job.job_id, self.op_ids[id(node)]
        task = self._task(lambda env, ssts: over_window_task(env, spec, ssts, job_id, op_id),
                          _state_args(node.state_table.table_id))
        return map_in_arrow(df, task, f"`{OP}` TINYINT, `{VNODE}` SMALLINT, {spark_ddl(node.fields)}")

    def _temporal_filter(self, node: StreamTemporalFilter) -> DataFrame:
        """Runs every epoch, input or not: its bound moves with time. A weightless row (op 0) joins
        the epoch's changes in the filter's single partition, so the job always has input; jobs
        without a temporal filter still run nothing in an epoch without input."""
        exchange = node.input
        if not isinstance(exchange, StreamExchange) or exchange.input is None or node.state_table is None \
                or node.bound_table is None:
            raise FeatureNotSupported("a temporal filter must follow an exchange")
        fields = exchange.input.fields
        df = self.build(exchange.input)
        seed = self.rnd.spark.range(1).select(F.lit(0).cast("tinyint").alias(OP),
                                              *[F.lit(None).cast(f.type.to_spark()).alias(f.name) for f in fields])
        if df is not None:
            seed = df.select(F.col(OP), *[F.col(f"`{f.name}`") for f in fields]).unionByName(seed)
        df = seed.withColumn(VNODE, F.lit(0).cast("smallint")).repartition(1)
        names = [f.name for f in fields]
        spec = TemporalFilterSpec(node.state_table, node.bound_table, names[node.column], node.op, node.offset_us,
                                  tuple(names[i] for i in node.stream_key))
        job_id, op_id = self.rt.job.job_id, self.op_ids[id(node)]
        task = self._task(lambda env, state, bound: temporal_filter_task(env, spec, state, bound, job_id, op_id),
                          _state_args(node.state_table.table_id, node.bound_table.table_id))
        df = df.select(F.col(OP), F.col(VNODE), *[F.col(f"`{n}`") for n in names])
        return map_in_arrow(df, task, f"`{OP}` TINYINT, `{VNODE}` SMALLINT, {spark_ddl(node.fields)}")

    def _dynamic_filter(self, node: StreamDynamicFilter) -> DataFrame | None:
        """Both inputs' changes, tagged by side, in one partition (`compute.executor.dynamic_filter`)."""
        lx, rx = node.left, node.right
        if not isinstance(lx, StreamExchange) or not isinstance(rx, StreamExchange) or lx.input is None \
                or rx.input is None or node.state_table is None or node.bound_table is None:
            raise FeatureNotSupported("a dynamic filter must follow two exchanges")
        left, right = self.build(lx.input), self.build(rx.input)
        if left is None and right is None:
            return None
        lf, rf = lx.input.fields, rx.input.fields
        bound = rf[node.bound]
        cols = [*lf, Field(DYNAMIC_BOUND, bound.type)]

        def side(df: DataFrame | None, fields: tuple[Field, ...], tag: int) -> DataFrame:
            if df is None:
                df = self.rnd.spark.createDataFrame([], f"`{OP}` TINYINT, {spark_ddl(fields)}")
            own = {f.name: f for f in fields}
            out = [F.col(f"`{f.name}`") if tag == 0 and f.name in own else
                   F.lit(None).cast(f.type.to_spark()).alias(f.name) for f in lf]
            value = F.col(f"`{bound.name}`") if tag == 1 else F.lit(None).cast(bound.type.to_spark())
            return df.select(F.lit(tag).cast("tinyint").alias(DYNAMIC_SIDE), F.col(OP),
                             F.lit(0).cast("smallint").alias(VNODE), *out, value.alias(DYNAMIC_BOUND))

        both = side(left, lf, 0).unionByName(side(right, rf, 1)).repartition(1)
        spec = DynamicFilterSpec(node.state_table, node.bound_table, lf[node.key].name, node.op, DYNAMIC_BOUND,
                                 tuple(lf[i].name for i in node.stream_key))
        job_id, op_id = self.rt.job.job_id, self.op_ids[id(node)]
        task = self._task(lambda env, state, bound: dynamic_filter_task(env, spec, state, bound, job_id, op_id),
                          _state_args(node.state_table.table_id, node.bound_table.table_id))
        both = both.select(F.col(DYNAMIC_SIDE), F.col(OP), F.col(VNODE), *[F.col(f"`{f.name}`") for f in cols])
        return map_in_arrow(both, task, f"`{OP}` TINYINT, `{VNODE}` SMALLINT, {spark_ddl(node.fields)}")

    def _hash_agg(self, node: StreamHashAgg) -> DataFrame | None:
        exchange = node.input
        if not isinstance(exchange, StreamExchange) or exchange.input is None:
            raise FeatureNotSupported("a hash aggregation must follow an exchange")
        df = self.build(exchange.input)
        if not node.group_key and self.rt.backfilling:
            # A global aggregate has one row even over nothing: while the job backfills, a row that
            # weighs nothing (op 0) makes its group exist (folding it again later changes nothing).
            seed = self.rnd.spark.range(1).select(
                F.lit(0).cast("tinyint").alias(OP),
                *[F.lit(None).cast(f.type.to_spark()).alias(f.name) for f in exchange.input.fields])
            df = seed if df is None else df.select(OP, *[f.name for f in exchange.input.fields]).unionByName(seed)
        if df is None:
            return None
        spec = agg_spec(node)
        df = _vnode_column(df, exchange.input.fields, exchange.dist_key)
        partials = [F.expr(e).alias(n) for n, e in spark_partials(spec)]
        if spec.input_calls:
            df = self._with_input_deltas(df, spec, partials)
        else:
            # Pre-aggregate in Spark: one row of signed partial sums per group reaches Python.
            df = df.groupBy(VNODE, *spec.group_key).agg(*partials)
        assert node.state_table is not None
        tables = tuple(d.table_id for d in (node.state_table,
                                            *(c.input_state for c in spec.calls if c.input_state is not None)))
        job_id, op_id = self.rt.job.job_id, self.op_ids[id(node)]

        def make(env: TaskEnv, *ssts: tuple[SstableInfo, ...]) -> Task:
            return hash_agg_changes_task(env, spec, dict(zip(tables, ssts, strict=True)), job_id, op_id)

        task = self._task(make, _state_args(*tables))
        return map_in_arrow(df, task, f"`{OP}` TINYINT, `{VNODE}` SMALLINT, {spark_ddl(node.fields)}")

    def _with_input_deltas(self, df: DataFrame, spec: HashAggSpec, partials: list) -> DataFrame:
        """Pre-aggregate in Spark both the group partials and, for every call with a materialized
        input state, the signed count per (group, value, order columns), in one pass over the input:
        each input row is expanded (`inline`) into one row tagged -1 for the partials and one row
        tagged ``i`` per such call, carrying that call's columns (`input_delta_column`). One
        ``groupBy`` then yields both; the rows of a group meet in one task (shuffled by vnode), which
        folds them all and emits the group's output as one row."""
        cols: list[tuple[int, str, str]] = []  # (call, input column, tagged column)
        for i in spec.input_calls:
            cols += [(i, name, input_delta_column(i, name)) for name in value_columns(spec.calls[i])]
        types = dict(df.dtypes)

        def element(tag: int) -> Column:
            return F.struct(F.lit(tag).alias(INPUT_TAG),
                            *[(F.col(f"`{name}`") if i == tag else F.lit(None).cast(types[name])).alias(alias)
                              for i, name, alias in cols])

        df = df.select("*", F.inline(F.array(element(-1), *[element(i) for i in spec.input_calls])))
        # NULL inputs are dropped, except array_agg's (a weightless seed row sums to a zero count)
        keep = " OR ".join(f"`{INPUT_TAG}` = {i}" if keeps_nulls(spec.calls[i].kind) else
                           f"(`{INPUT_TAG}` = {i} AND `{input_delta_column(i, spec.calls[i].arg or '')}` IS NOT NULL)"
                           for i in spec.input_calls)
        df = df.filter(F.expr(f"`{INPUT_TAG}` = -1 OR {keep}"))
        df = df.groupBy(VNODE, *spec.group_key, INPUT_TAG, *[alias for _, _, alias in cols]).agg(
            *partials, F.expr(f"sum({SPARK_SIGN})").alias(VALUE_COUNT))
        df = df.filter(F.expr(f"`{INPUT_TAG}` = -1 OR `{VALUE_COUNT}` <> 0"))
        return df.repartition(self.rt.parallelism, VNODE)
