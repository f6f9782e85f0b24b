"""CPU and memory of a RisingSpark process tree, by component.

A RisingSpark service process starts Spark's JVM as a child, and the JVM starts Spark's Python
workers; their CPU and memory count towards the node that process runs. Components:

* ``main``: the RisingSpark Python process itself (meta, frontend, the compute driver);
* ``spark_jvm``: Spark's JVM;
* ``spark_python_workers``: Spark's Python worker processes (their resident memory includes pages
  shared with the worker daemon they were forked from, so the sum overstates it a little);
* ``other``: any other child process.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field

import psutil

logger = logging.getLogger(__name__)

COMPONENTS = ("main", "spark_jvm", "spark_python_workers", "other")


@dataclass(frozen=True)
class ResourceSample:
    """CPU (in cores, averaged since the previous sample) and resident memory per component."""

    at: float
    cpu_cores: dict[str, float] = field(default_factory=dict)
    rss_bytes: dict[str, int] = field(default_factory=dict)

    @property
    def total_cpu_cores(self) -> float:
        return sum(self.cpu_cores.values())

    @property
    def total_rss_bytes(self) -> int:
        return sum(self.rss_bytes.values())


def component_of(name: str, *, is_root: bool) -> str:
    """The component a process of the tree belongs to, by its executable name.

    >>> component_of("java", is_root=False), component_of("python3.11", is_root=False)
    ('spark_jvm', 'spark_python_workers')
    >>> component_of("python", is_root=True), component_of("bash", is_root=False)
    ('main', 'other')
    """
    if is_root:
        return "main"
    lowered = name.lower()
    if lowered.startswith("java"):
        return "spark_jvm"
    if lowered.startswith("python") or lowered.startswith("pyspark"):
        return "spark_python_workers"
    return "other"


class ProcessTreeSampler:
    """Samples a process and all its descendants. CPU is measured between two calls of `sample`
    (a process seen for the first time counts from its next sample on)."""

    def __init__(self, pid: int | None = None) -> None:
        self.root = psutil.Process(pid or os.getpid())
        self._known: dict[int, psutil.Process] = {}

    def sample(self) -> ResourceSample:
        cpu = dict.fromkeys(COMPONENTS, 0.0)
        rss = dict.fromkeys(COMPONENTS, 0)
        try:
            tree = [self.root, *self.root.children(recursive=True)]
        except psutil.Error:
            tree = [self.root]
        known: dict[int, psutil.Process] = {}
        for proc in tree:
            cached = self._known.get(proc.pid)
            if cached is None or cached != proc:  # new, or a reused pid
                cached = proc
            try:
                with cached.oneshot():
                    component = component_of(cached.name(), is_root=cached.pid == self.root.pid)
                    cpu[component] += cached.cpu_percent(None) / 100.0
                    rss[component] += cached.memory_info().rss
            except psutil.Error:  # exited meanwhile
                continue
            known[cached.pid] = cached
        self._known = known
        return ResourceSample(time.time(), {k: round(v, 3) for k, v in cpu.items()}, rss)


def set_resource_gauges(cpu, memory, node: str, res: ResourceSample) -> None:
    """One sample as ``risingspark_process_*{node, component}`` gauges (`cpu`, `memory`)."""
    for component, cores in res.cpu_cores.items():
        cpu.labels(node=node, component=component).set(cores)
        memory.labels(node=node, component=component).set(res.rss_bytes[component])
