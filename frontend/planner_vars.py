"""RisingWave's planner and streaming session settings (its `SessionConfig`), with RisingWave's names,
aliases (``rw_*``), types and defaults, so scripts written for RisingWave run unchanged.

Each setting is either *honoured* — it names a plan choice RisingSpark has (the parallelism of new
jobs, by kind) — or *accepted*: validated and shown as RisingWave does, but RisingSpark's planner has
no such choice, so a SET of it answers with a NOTICE saying it has no effect (`notice_for`).

Types, as RisingWave parses them:

* booleans;
* integers (``i32`` / ``u32`` / ``u64``, some with a range);
* a *parallelism*: ``default``, ``adaptive`` (or ``auto``, or ``0``) or a positive number, shown
  as ``default``, ``adaptive`` or the number (`parallelism`);
* a *parallelism strategy*: ``default``, ``auto``, ``full``, ``bounded(n)`` or ``ratio(r)``;
* an enumeration, some optional (empty: not set).

>>> check_parallelism("streaming_parallelism")("AUTO"), check_parallelism("streaming_parallelism")("4")
('adaptive', '4')
>>> parallelism("default"), parallelism("adaptive"), parallelism("4")
(None, 0, 4)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from risingspark.errors import InvalidParameterValue

Check = Callable[[str], str]


def _invalid(name: str, value: str, hint: str | None = None) -> InvalidParameterValue:
    return InvalidParameterValue(f'invalid value for parameter "{name}": "{value}"', hint=hint)


def check_integer(name: str, low: int, high: int) -> Check:
    def check(v: str) -> str:
        try:
            n = int(v.strip())
        except ValueError:
            raise _invalid(name, v, "An integer is expected.") from None
        if not low <= n <= high:
            raise InvalidParameterValue(f'{n} is outside the valid range for parameter "{name}" ({low} .. {high})')
        return str(n)
    return check


def check_parallelism(name: str) -> Check:
    """RisingWave's `ConfigParallelism` (without its bounded and ratio forms)."""
    def check(v: str) -> str:
        s = v.strip().lower()
        if s == "default":
            return s
        if s in ("adaptive", "auto", "0"):
            return "adaptive"
        if s.isdigit():
            return str(int(s))
        raise _invalid(name, v, "Use default, adaptive or a positive number of actors.")
    return check


def parallelism(shown: str) -> int | None:
    """A parallelism setting as a job's parallelism: None for ``default`` (fall back), 0 for
    ``adaptive`` (one actor per Spark core), else the number."""
    if shown == "default":
        return None
    return 0 if shown == "adaptive" else int(shown)


_STRATEGY = re.compile(r"^(default|auto|full|bounded\((\d+)\)|ratio\((\d*\.?\d+)\))$")


def check_strategy(name: str) -> Check:
    """RisingWave's adaptive parallelism strategy: ``default``, ``auto``, ``full``, ``bounded(n)``
    (n > 0) or ``ratio(r)`` (0 < r <= 1)."""
    def check(v: str) -> str:
        s = v.strip().lower().replace(" ", "")
        m = _STRATEGY.match(s)
        if m is None or (m.group(2) is not None and int(m.group(2)) == 0) or \
                (m.group(3) is not None and not 0 < float(m.group(3)) <= 1):
            raise _invalid(name, v, "Use default, auto, full, bounded(n) or ratio(r).")
        return s
    return check


def check_choice(name: str, values: tuple[str, ...], optional: bool = False) -> Check:
    def check(v: str) -> str:
        s = v.strip().lower()
        if s in values or (optional and s == ""):
            return s
        raise _invalid(name, v, "Available values: " + ", ".join(values) + ".")
    return check


def optional_size(name: str) -> Check:
    """An optional non-negative integer (empty: not set)."""
    def check(v: str) -> str:
        return "" if v.strip() == "" else check_integer(name, 0, 2**64 - 1)(v)
    return check


@dataclass(frozen=True)
class PlannerVar:
    """A RisingWave setting: `check` None for a boolean; `honoured`: RisingSpark's planner follows it
    (else a SET of it sends a NOTICE)."""

    name: str
    default: str
    help: str
    check: Check | None = None
    aliases: tuple[str, ...] = ()
    honoured: bool = False


_PARALLELISM_KINDS = ("table", "materialized_view", "index", "sink", "source", "backfill")
_I32 = (-(2**31), 2**31 - 1)
_U32 = (0, 2**32 - 1)
_U64 = (0, 2**64 - 1)

PLANNER_VARS: tuple[PlannerVar, ...] = (
    # honoured: the parallelism of new jobs, by kind (RisingSpark runs a job's whole plan at one parallelism)
    *(PlannerVar(f"streaming_parallelism_for_{kind}", "default",
                 f"Actors of new {kind.replace('_', ' ')} jobs (default: streaming_parallelism)",
                 check_parallelism(f"streaming_parallelism_for_{kind}"), honoured=kind in ("table", "materialized_view",
                                                                                           "index"))
      for kind in _PARALLELISM_KINDS),
    PlannerVar("streaming_parallelism_strategy", "default", "Adaptive parallelism strategy of new jobs",
               check_strategy("streaming_parallelism_strategy")),
    *(PlannerVar(f"streaming_parallelism_strategy_for_{kind}", "default",
                 f"Adaptive parallelism strategy of new {kind.replace('_', ' ')} jobs",
                 check_strategy(f"streaming_parallelism_strategy_for_{kind}"))
      for kind in _PARALLELISM_KINDS if kind != "backfill"),
    PlannerVar("streaming_max_parallelism", "256", "Most actors a streaming job may ever use (its vnode count)",
               check_integer("streaming_max_parallelism", 2, 32768)),
    # accepted: plan choices RisingSpark does not have
    PlannerVar("enable_two_phase_agg", "true", "Two-phase aggregation (RisingSpark always pre-aggregates in Spark)",
               aliases=("rw_enable_two_phase_agg",)),
    PlannerVar("force_two_phase_agg", "false", "Force two-phase aggregation; sets enable_two_phase_agg",
               aliases=("rw_force_two_phase_agg",)),
    PlannerVar("force_split_distinct_agg", "false", "Split DISTINCT aggregates into two phases",
               aliases=("rw_force_split_distinct_agg",)),
    PlannerVar("enable_share_plan", "true", "Share common sub-plans", aliases=("rw_enable_share_plan",)),
    PlannerVar("enable_join_ordering", "true", "Reorder joins", aliases=("rw_enable_join_ordering",)),
    PlannerVar("streaming_enable_delta_join", "false", "Delta joins over indexes",
               aliases=("rw_streaming_enable_delta_join",)),
    PlannerVar("streaming_enable_bushy_join", "true", "Bushy join trees", aliases=("rw_streaming_enable_bushy_join",)),
    PlannerVar("streaming_force_filter_inside_join", "false", "Evaluate filters inside joins",
               aliases=("rw_streaming_force_filter_inside_join",)),
    PlannerVar("streaming_allow_jsonb_in_stream_key", "false", "Allow jsonb in stream keys",
               aliases=("rw_streaming_allow_jsonb_in_stream_key",)),
    PlannerVar("streaming_unsafe_allow_unmaterialized_impure_expr", "false",
               "Allow impure expressions on retracting streams without materializing them"),
    PlannerVar("streaming_separate_consecutive_join", "false", "Separate consecutive joins by exchanges"),
    PlannerVar("streaming_separate_sink", "false", "Separate sinks by exchanges"),
    PlannerVar("streaming_enable_unaligned_join", "false", "Unaligned streaming joins"),
    PlannerVar("streaming_use_shared_source", "true", "Shared source jobs"),
    PlannerVar("streaming_join_encoding", "", "Encoding of join rows in the operator cache (memory_optimized, "
               "cpu_optimized; empty: the server's)",
               check_choice("streaming_join_encoding", ("memory_optimized", "cpu_optimized"), optional=True)),
    PlannerVar("streaming_over_window_cache_policy", "", "Partition cache policy of over-window operators",
               check_choice("streaming_over_window_cache_policy", ("full", "recent", "recent_first_n",
                                                                    "recent_last_n"), optional=True),
               aliases=("rw_streaming_over_window_cache_policy",)),
    PlannerVar("streaming_sync_log_store_pause_duration_ms", "", "Read timeout of the sync log store buffer",
               optional_size("streaming_sync_log_store_pause_duration_ms")),
    PlannerVar("streaming_sync_log_store_buffer_size", "", "Buffer size of the sync log store",
               optional_size("streaming_sync_log_store_buffer_size")),
    PlannerVar("create_compaction_group_for_mv", "false", "A compaction group per materialized view"),
    PlannerVar("enable_index_selection", "true", "Choose indexes for batch queries"),
    PlannerVar("enable_locality_backfill", "false", "Locality backfill"),
    PlannerVar("batch_enable_lookup_join", "true", "Lookup joins in local batch execution",
               aliases=("rw_batch_enable_lookup_join",)),
    PlannerVar("batch_enable_sort_agg", "true", "Sort aggregation when the input is ordered",
               aliases=("rw_batch_enable_sort_agg",)),
    PlannerVar("batch_enable_distributed_dml", "false", "Distributed DML"),
    PlannerVar("batch_expr_strict_mode", "true", "Expression errors fail batch queries"),
    PlannerVar("batch_parallelism", "0", "Parallelism of distributed batch queries (0: the cluster's)",
               check_integer("batch_parallelism", *_U64)),
    PlannerVar("batch_hnsw_ef_search", "40", "ef_search of HNSW vector index queries",
               check_integer("batch_hnsw_ef_search", *_U64)),
    PlannerVar("max_split_range_gap", "8", "Largest gap of a range scan turned into point lookups",
               check_integer("max_split_range_gap", *_I32)),
    PlannerVar("query_epoch", "0", "Read as of this epoch (0: the latest)", check_integer("query_epoch", *_U64)),
    PlannerVar("visibility_mode", "default", "Whether queries see uncheckpointed data",
               check_choice("visibility_mode", ("default", "all", "checkpoint"))),
    PlannerVar("sink_decouple", "default", "Decouple sinks from the streaming graph",
               check_choice("sink_decouple", ("default", "enable", "disable"))),
    PlannerVar("source_rate_limit", "-1", "Source rows per second per parallelism (-1: unlimited)",
               check_integer("source_rate_limit", -1, _I32[1])),
    PlannerVar("dml_rate_limit", "-1", "DML rows per second per parallelism (-1: unlimited)",
               check_integer("dml_rate_limit", -1, _I32[1])),
    PlannerVar("sink_rate_limit", "-1", "Sink rows per second per parallelism (-1: unlimited)",
               check_integer("sink_rate_limit", -1, _I32[1])),
    PlannerVar("cdc_source_wait_streaming_start_timeout", "60", "Seconds a shared CDC source waits to start",
               check_integer("cdc_source_wait_streaming_start_timeout", *_I32)),
    PlannerVar("slow_ddl_notification_secs", "30", "Seconds before a long DDL sends a notice",
               check_integer("slow_ddl_notification_secs", *_U32)),
    PlannerVar("bypass_cluster_limits", "false", "Bypass the cluster's limits on streaming jobs"),
    PlannerVar("synchronize_seqscans", "false", "Accepted for compatibility"),
    PlannerVar("upsert_dml", "false", "UPDATE and DELETE emit upserts"),
)

def notice_for(var: PlannerVar) -> str | None:
    """The NOTICE a SET of `var` answers with (None for a setting RisingSpark honours)."""
    if var.honoured:
        return None
    return f"{var.name} is accepted for compatibility with RisingWave but has no effect here: RisingSpark's " \
           f"planner has no such choice"
