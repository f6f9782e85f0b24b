"""docker-compose.yml and the Dockerfile stay valid without a Docker engine: every RisingSpark
service's command is a real `risingspark` sub-command whose flags parse, every environment variable
names a setting of that service, the Spark daemons run real classes of the installed Spark, services
and volumes referenced exist, Prometheus scrapes every service's metrics port, and the Dockerfile
installs the way the README says."""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import tomllib
from pathlib import Path

import pyspark
import pytest
import yaml

from risingspark.cli import SERVICES, build_parser
from risingspark.config import ENV_PREFIX, PlaygroundConfig

ROOT = Path(__file__).resolve().parents[3]
SPARK_CLASSES = {"org.apache.spark.deploy.master.Master", "org.apache.spark.deploy.worker.Worker"}


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _risingspark_services(compose: dict) -> dict[str, dict]:
    return {name: svc for name, svc in compose["services"].items()
            if svc.get("image") == "risingspark:latest" and "entrypoint" not in svc}


def test_the_cluster_has_every_part(compose: dict) -> None:
    services = compose["services"]
    commands = {name: svc["command"][0] for name, svc in _risingspark_services(compose).items()}
    assert sorted(commands.values()) == ["compactor", "compute", "frontend", "meta", "meta"]  # meta + standby
    spark = {name: svc["command"][0] for name, svc in services.items() if svc.get("entrypoint") == ["spark-class"]}
    assert sorted(spark.values()) == sorted(["org.apache.spark.deploy.master.Master"]
                                            + ["org.apache.spark.deploy.worker.Worker"] * 2)
    assert services["postgres"]["image"].startswith("postgres:")
    assert services["prometheus"]["image"].startswith("prom/prometheus")
    frontend = next(n for n, c in commands.items() if c == "frontend")
    assert "4566:4566" in services[frontend]["ports"]


def test_service_commands_are_valid_cli_invocations(compose: dict) -> None:
    parser = build_parser()
    for name, svc in _risingspark_services(compose).items():
        command = svc["command"]
        assert command[0] in SERVICES, f"{name}: {command[0]} is not a risingspark service"
        try:
            args = parser.parse_args(command)
        except SystemExit:
            pytest.fail(f"{name}: `risingspark {shlex.join(command)}` does not parse")
        assert args.command == command[0]
        fields = {f.name for f in dataclasses.fields(SERVICES[command[0]][0])}
        for var in svc.get("environment", {}):
            assert var.startswith(ENV_PREFIX) and var[len(ENV_PREFIX):].lower() in fields, \
                f"{name}: {var} is not a setting of `risingspark {command[0]}`"


def test_the_image_defaults_are_settings() -> None:
    text = (ROOT / "Dockerfile").read_text()
    env_block = re.search(r"^ENV (.+?)(?:\n(?!\s)|\Z)", text, re.S | re.M)
    assert env_block
    names = re.findall(r"(RISINGSPARK_\w+)=", env_block.group(1))
    all_fields = {f.name for cls in [PlaygroundConfig, *(c for c, _ in SERVICES.values())]
                  for f in dataclasses.fields(cls)}
    assert names and all(n[len(ENV_PREFIX):].lower() in all_fields for n in names)


def test_spark_daemons_run_real_classes(compose: dict) -> None:
    spark_home = Path(pyspark.__file__).parent
    assert os.access(spark_home / "bin" / "spark-class", os.X_OK)
    jars = " ".join(p.name for p in (spark_home / "jars").glob("spark-core_*.jar"))
    assert jars, "the installed pyspark has no spark-core jar"
    for name, svc in compose["services"].items():
        if svc.get("entrypoint") == ["spark-class"]:
            assert svc["command"][0] in SPARK_CLASSES, name
            if svc["command"][0].endswith("Worker"):
                master = svc["command"][1]
                assert master == "spark://spark-master:7077", name


def test_references_resolve(compose: dict) -> None:
    services = compose["services"]
    volumes = set(compose.get("volumes", {}))
    for name, svc in services.items():
        deps = svc.get("depends_on", [])
        for dep in deps if isinstance(deps, list) else deps.keys():
            assert dep in services, f"{name} depends on unknown service {dep}"
        for vol in svc.get("volumes", []):
            source = vol.split(":")[0]
            if source.startswith("."):
                assert (ROOT / source).exists(), f"{name} mounts missing {source}"
            else:
                assert source in volumes, f"{name} mounts undeclared volume {source}"
    # every RisingSpark service and Spark daemon sees the same object store
    for name, svc in services.items():
        if svc.get("image") == "risingspark:latest":
            assert "objects:/data/objects" in svc["volumes"], name
    compute = next(s for s in _risingspark_services(compose).values() if s["command"][0] == "compute")
    assert "spark://spark-master:7077" in compute["command"]
    # workers know every meta (the active one and the standby)
    parser = build_parser()
    metas = {f"http://{n}:{parser.parse_args(s['command']).port}" for n, s in _risingspark_services(compose).items()
             if s["command"][0] == "meta"}
    for name, svc in _risingspark_services(compose).items():
        if svc["command"][0] != "meta":
            assert set(parser.parse_args(svc["command"]).meta_address.split(",")) == metas, name


def test_prometheus_scrapes_every_service(compose: dict) -> None:
    config = yaml.safe_load((ROOT / "deploy" / "prometheus.yml").read_text())
    targets = {t for job in config["scrape_configs"] for sc in job["static_configs"] for t in sc["targets"]}
    parser = build_parser()
    for name, svc in _risingspark_services(compose).items():
        args = parser.parse_args(svc["command"])
        port = args.metrics_port if svc["command"][0] == "frontend" else args.port
        assert f"{name}:{port}" in targets, f"Prometheus does not scrape {name}:{port}"


def test_dockerfile_installs_as_the_readme_says() -> None:
    docker = (ROOT / "Dockerfile").read_text()
    readme = (ROOT / "README.md").read_text()
    run = re.search(r"^RUN pip install (.+)$", docker, re.M)
    assert run, "the Dockerfile has no pip install step"
    docker_args = [a for a in shlex.split(run.group(1)) if a != "--no-cache-dir"]
    readme_install = re.search(r"pip install ([^&\n`]+)", readme)
    assert readme_install
    assert docker_args == shlex.split(readme_install.group(1).strip())
    # every package the project installs is copied into the image
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = [p.rstrip("*") for p in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]]
    copied = set(re.findall(r"^COPY (\S+) \./", docker, re.M))
    assert set(packages) <= copied, set(packages) - copied
    entry = re.search(r'^ENTRYPOINT \["(\w+)"\]', docker, re.M)
    assert entry and entry.group(1) in pyproject["project"]["scripts"]


def test_readme_documents_compose() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "docker compose up" in readme
    assert "psql -h localhost -p 4566 -d dev -U root" in readme
