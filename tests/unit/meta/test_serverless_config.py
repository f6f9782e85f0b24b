"""The serverless backfill settings (a configuration file's [serverless_backfill] section, flags and
environment), the backfiller command lines of both provisioners, and the merge of a backfiller's
round into the default group's checkpoint."""

from __future__ import annotations

from pathlib import Path

import pytest

from meta.barrier.manager import merge_results
from meta.serverless import Provisioner
from risingspark.barrier import BackfillReport, ChangeLogInfo, EpochResult
from risingspark.cli import build_parser
from risingspark.config import MetaConfig, PlaygroundConfig, ServerlessBackfillConfig, from_env_and_args


def _file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "risingspark.toml"
    path.write_text(text)
    return str(path)


def test_config_file_section_then_environment_then_flags(tmp_path: Path) -> None:
    config = _file(tmp_path, "port = 5000\n[serverless_backfill]\nenabled = true\ncores = 2\nreplicas = 3\n"
                             "memory = \"3g\"\nprovision_timeout_s = 30\n")
    cfg = from_env_and_args(PlaygroundConfig, {"config": config}, env={})
    sb = ServerlessBackfillConfig.of(cfg)
    assert (cfg.port, sb.enabled, sb.cores, sb.replicas, sb.memory, sb.provision_timeout_s) == \
        (5000, True, 2, 3, "3g", 30.0)
    # the environment wins over the file, a flag over both
    cfg = from_env_and_args(PlaygroundConfig, {"config": config, "serverless_backfill_cores": 4},
                            env={"RISINGSPARK_SERVERLESS_BACKFILL_REPLICAS": "1", "RISINGSPARK_PORT": "6000"})
    assert (cfg.port, cfg.serverless_backfill_cores, cfg.serverless_backfill_replicas) == (6000, 4, 1)
    # the file can also be named by the environment; meta reads the same section
    cfg = from_env_and_args(MetaConfig, {}, env={"RISINGSPARK_CONFIG": config})
    assert ServerlessBackfillConfig.of(cfg).cores == 2


@pytest.mark.parametrize(("text", "error"), [
    ("[serverless_backfill]\nenable = true\n", "unknown setting 'serverless_backfill_enable'"),
    ("[serverless_backfill]\ncores = \"two\"\n", "must be a int"),
    ("[serverless_backfill]\nenabled = 1\n", "must be a bool"),
    ("[serverless_backfill\n", "invalid configuration file"),
])
def test_config_file_errors_name_the_setting(tmp_path: Path, text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        from_env_and_args(PlaygroundConfig, {"config": _file(tmp_path, text)}, env={})


def test_missing_config_file() -> None:
    with pytest.raises(ValueError, match="cannot read the configuration file"):
        from_env_and_args(PlaygroundConfig, {"config": "/nonexistent/risingspark.toml"}, env={})


@pytest.mark.parametrize(("changes", "error"), [
    ({"provisioner": "k8s"}, "local or spark"),
    ({"provisioner": "spark", "enabled": True}, "needs serverless_backfill_spark_master"),
    ({"cores": 0}, "at least 1"),
    ({"cpu_affinity": "one"}, "invalid serverless_backfill_cpu_affinity"),
])
def test_invalid_settings(changes: dict, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        ServerlessBackfillConfig(**changes).validate()


def test_cpu_affinity_ranges() -> None:
    assert ServerlessBackfillConfig(cpu_affinity="0, 2-3").cpus() == {0, 2, 3}
    assert ServerlessBackfillConfig().cpus() is None


def test_backfiller_commands_are_valid_compute_command_lines(tmp_path: Path) -> None:
    parser = build_parser()
    local = Provisioner(ServerlessBackfillConfig(enabled=True, cores=2, replicas=2, memory="3g"),
                        meta_address="http://127.0.0.1:5690", object_store_url="/data/objects", log_dir=tmp_path)
    args = parser.parse_args(local.command("backfill-0-1003", 7000)[3:])
    assert (args.command, args.resource_group, args.node_name, args.spark_master, args.spark_driver_memory,
            args.parallelism, args.port) == ("compute", "backfill-0-1003", "backfill-0-1003", "local[4]", "3g", 4, 7000)
    spark = Provisioner(ServerlessBackfillConfig(enabled=True, provisioner="spark", cores=2, replicas=3, memory="4g",
                                                 spark_master="spark://10.0.0.1:7077"),
                        meta_address="http://meta:5690", object_store_url="s3://b/p", log_dir=tmp_path)
    args = parser.parse_args(spark.command("backfill-1-7", 7001)[3:])
    assert args.spark_master == "spark://10.0.0.1:7077"
    assert args.spark_conf == "spark.cores.max=6,spark.executor.cores=2,spark.executor.memory=4g"
    assert args.object_store_url == "s3://b/p"


def test_a_backfillers_round_merges_into_the_checkpoint() -> None:
    default = EpochResult(20, change_logs=(ChangeLogInfo(1, 20, "a", 3),), row_count_deltas={1: 3, 2: 1},
                          consumed_dml=(5,), spark_jobs=2, rows_in={1: 3})
    backfiller = EpochResult(15, change_logs=(ChangeLogInfo(9, 15, "b", 7),), row_count_deltas={2: 4, 9: 7},
                             backfill=(BackfillReport(9, 1, (), 7),), spark_jobs=1, rows_in={9: 7})
    merged = merge_results(default, backfiller)
    assert merged.epoch == 20  # committed as the default group's checkpoint
    assert [c.path for c in merged.change_logs] == ["a", "b"]
    assert merged.row_count_deltas == {1: 3, 2: 5, 9: 7}
    assert merged.consumed_dml == (5,) and merged.spark_jobs == 3 and merged.rows_in == {1: 3, 9: 7}
    assert [r.job_id for r in merged.backfill] == [9]
