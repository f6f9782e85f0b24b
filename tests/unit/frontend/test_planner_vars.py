"""RisingWave's planner settings (`frontend.planner_vars`): accepted under RisingWave's names and
``rw_*`` aliases, typed and validated as RisingWave does (22023 otherwise), listed by SHOW ALL; the
parallelism of new jobs follows its kind's setting, and SET of a setting without a plan choice here
answers with a NOTICE."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from frontend.handlers.commands import set_var, show
from frontend.parser import SetStmt, ShowStmt
from frontend.planner_vars import PLANNER_VARS
from frontend.session_vars import SessionVars
from risingspark.errors import InvalidParameterValue, UndefinedParameter

SETTINGS = [  # (name as set, value, shown)
    ("enable_two_phase_agg", "false", "false"),
    ("rw_enable_two_phase_agg", "off", "false"),
    ("rw_streaming_enable_delta_join", "true", "true"),
    ("streaming_join_encoding", "CPU_OPTIMIZED", "cpu_optimized"),
    ("streaming_join_encoding", "", ""),
    ("streaming_parallelism_for_table", "4", "4"),
    ("streaming_parallelism_for_table", "auto", "adaptive"),
    ("streaming_parallelism", "0", "adaptive"),
    ("streaming_parallelism", "Default", "default"),
    ("rw_force_two_phase_agg", "true", "true"),
    ("rw_force_split_distinct_agg", "true", "true"),
    ("streaming_enable_bushy_join", "false", "false"),
    ("rw_enable_join_ordering", "false", "false"),
    ("streaming_use_shared_source", "false", "false"),
    ("rw_batch_enable_sort_agg", "false", "false"),
    ("batch_parallelism", "8", "8"),
    ("streaming_parallelism_strategy", "Bounded(4)", "bounded(4)"),
    ("streaming_parallelism_strategy_for_table", "ratio(0.5)", "ratio(0.5)"),
    ("streaming_max_parallelism", "1024", "1024"),
    ("visibility_mode", "ALL", "all"),
    ("streaming_sync_log_store_buffer_size", "2048", "2048"),
]
INVALID = [
    ("enable_two_phase_agg", "maybe"),
    ("streaming_join_encoding", "fast"),
    ("streaming_parallelism", "-1"),
    ("streaming_parallelism_for_table", "lots"),
    ("batch_parallelism", "-2"),
    ("streaming_parallelism_strategy", "bounded(0)"),
    ("streaming_parallelism_strategy", "ratio(1.5)"),
    ("streaming_max_parallelism", "1"),
    ("max_split_range_gap", "2147483648"),
    ("source_rate_limit", "-2"),
    ("sink_decouple", "sometimes"),
]


def session() -> SimpleNamespace:
    """What SET and SHOW of a setting ask of a session."""
    meta = SimpleNamespace(catalog_snapshot=lambda: None)
    return SimpleNamespace(vars=SessionVars(), frontend=SimpleNamespace(meta=meta), catalog_reader=lambda: None)


@pytest.mark.parametrize(("name", "value", "shown"), SETTINGS)
def test_settings_take_risingwave_values(name: str, value: str, shown: str) -> None:
    s = session()
    set_var(s, SetStmt(name, value))  # type: ignore[arg-type]
    assert s.vars.get(name) == shown
    assert show(s, ShowStmt((name,))).rows == [(shown,)]  # type: ignore[arg-type]


@pytest.mark.parametrize(("name", "value"), INVALID)
def test_invalid_values_are_22023(name: str, value: str) -> None:
    s = session()
    before = s.vars.get(name)
    with pytest.raises(InvalidParameterValue) as e:
        set_var(s, SetStmt(name, value))  # type: ignore[arg-type]
    assert e.value.sqlstate == "22023" and s.vars.get(name) == before


def test_unknown_settings_stay_unknown() -> None:
    with pytest.raises(UndefinedParameter):
        set_var(session(), SetStmt("rw_enable_time_travel_magic", "true"))  # type: ignore[arg-type]


def test_show_all_lists_every_setting_once_by_its_name() -> None:
    rows = session().vars.all()
    names = [n for n, _, _ in rows]
    assert len(names) == len(set(names))
    for v in PLANNER_VARS:
        assert (v.name, v.default) in [(n, value) for n, value, _ in rows]
        assert not any(a in names for a in v.aliases)


def test_a_setting_without_a_plan_choice_sends_a_notice() -> None:
    result = set_var(session(), SetStmt("rw_streaming_enable_delta_join", "true"))  # type: ignore[arg-type]
    assert len(result.notices) == 1 and "streaming_enable_delta_join" in result.notices[0] \
        and "no effect" in result.notices[0]
    for honoured in ("streaming_parallelism_for_table", "streaming_parallelism", "streaming_use_snapshot_backfill"):
        assert set_var(session(), SetStmt(honoured, "2" if "parallelism" in honoured else "false")  # type: ignore[arg-type]
                       ).notices == []


def test_job_parallelism_falls_back_to_streaming_parallelism() -> None:
    v = SessionVars()
    assert v.job_parallelism("table") == 0
    v.set("streaming_parallelism", "3")
    assert (v.job_parallelism("table"), v.job_parallelism("materialized_view")) == (3, 3)
    v.set("streaming_parallelism_for_table", "5")
    v.set("streaming_parallelism_for_index", "adaptive")
    assert (v.job_parallelism("table"), v.job_parallelism("materialized_view"), v.job_parallelism("index")) == (5, 3, 0)
    v.set("streaming_parallelism_for_table", None)
    assert v.job_parallelism("table") == 3


def test_forcing_two_phase_agg_enables_it_as_risingwave() -> None:
    v = SessionVars()
    v.set("enable_two_phase_agg", "false")
    v.set("rw_force_two_phase_agg", "true")
    assert (v.get("enable_two_phase_agg"), v.get("force_two_phase_agg")) == ("true", "true")
