"""How meta talks to the compute nodes of a resource group during barriers.

In the playground the compute node is in the same process and satisfies `ComputeClient` directly;
deployments reach it over HTTP through the same interface.
"""

from __future__ import annotations

from typing import Protocol

from risingspark.barrier import Barrier, EpochResult


class ComputeClient(Protocol):
    def run_epoch(self, barrier: Barrier) -> EpochResult:
        """Run one epoch round; raise if any part of it failed (meta then recovers)."""
        ...

    def reset(self) -> None:
        """Forget every running job (recovery): the next barrier re-adds them from the meta store."""
        ...
