"""System parameters: cluster-wide settings kept in the meta store and changed at run time with
``ALTER SYSTEM SET`` (as RisingWave's `SystemParams`)."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import sqlalchemy as sa

from meta.store.schema import system_params
from meta.store.store import MetaStore
from risingspark.errors import InvalidParameterValue, UndefinedParameter


@dataclass(frozen=True)
class ParamSpec:
    name: str
    default: int
    help: str
    minimum: int = 0


SPECS: dict[str, ParamSpec] = {p.name: p for p in (
    ParamSpec("barrier_interval_ms", 1000, "Interval between barriers, in milliseconds", minimum=10),
    ParamSpec("checkpoint_frequency", 1, "Barriers per checkpoint (one epoch round runs per checkpoint)",
              minimum=1),
    ParamSpec("max_concurrent_creating_streaming_jobs", 1,
              "Streaming jobs allowed to backfill at once (0: unlimited)"),
    ParamSpec("level0_stop_write_threshold_sub_level_number", 128,
              "L0 sub-levels of a state table at which the writes of the tables feeding it stall until "
              "compaction catches up (0: never)"),
    ParamSpec("adaptive_backfill_target_barrier_latency_ms", 0,
              "Barrier latency an adaptive backfill rate aims at: it grows while barriers commit faster "
              "and halves when one is slower (0: twice barrier_interval_ms)"),
)}


class SystemParams:
    def __init__(self, store: MetaStore) -> None:
        self._store = store
        self._lock = threading.Lock()
        with store.begin() as conn:
            stored = {r.name: r.value for r in conn.execute(sa.select(system_params))}
        self._values = {name: int(stored.get(name, spec.default)) for name, spec in SPECS.items()}

    def get(self, name: str) -> int:
        if name not in SPECS:
            raise UndefinedParameter(f'unrecognized system parameter "{name}"')
        return self._values[name]

    def set(self, name: str, value: int | None) -> None:
        spec = SPECS.get(name)
        if spec is None:
            raise UndefinedParameter(f'unrecognized system parameter "{name}"')
        value = spec.default if value is None else int(value)
        if value < spec.minimum:
            raise InvalidParameterValue(f"{name} must be at least {spec.minimum}")
        with self._store.transaction() as tx:
            tx.conn.execute(system_params.delete().where(system_params.c.name == name))
            tx.conn.execute(system_params.insert().values(name=name, value=str(value)))
        with self._lock:
            self._values[name] = value

    def all(self) -> dict[str, int]:
        return dict(self._values)

    def describe(self) -> list[tuple[str, str, str, bool]]:
        """``(name, value, description, mutable)`` of every parameter, as SHOW PARAMETERS."""
        return [(n, str(self._values[n]), s.help, True) for n, s in sorted(SPECS.items())]

    @property
    def barrier_interval_ms(self) -> int:
        return self._values["barrier_interval_ms"]
