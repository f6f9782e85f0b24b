"""Session variables (``SET`` / ``SHOW``): one table of names, defaults, checks and help lines, as
RisingWave's `SessionConfig`. Names are case-insensitive."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from frontend.planner_vars import PLANNER_VARS, check_parallelism, notice_for, parallelism
from risingspark.catalog import ADAPTIVE_BACKFILL_RATE, BACKFILL_RATE_LIMIT
from risingspark.errors import InvalidParameterValue, UndefinedParameter


def _bool(v: str) -> str:
    s = v.strip().lower()
    if s in ("true", "on", "yes", "1", "t"):
        return "true"
    if s in ("false", "off", "no", "0", "f"):
        return "false"
    raise InvalidParameterValue(f'invalid value for a boolean parameter: "{v}"')


def _int(minimum: int) -> Callable[[str], str]:
    def check(v: str) -> str:
        s = v.strip().lower()
        if s == "default":
            raise InvalidParameterValue("DEFAULT is handled by SET ... TO DEFAULT")
        try:
            n = int(s)
        except ValueError:
            raise InvalidParameterValue(f'invalid value for an integer parameter: "{v}"') from None
        if n < minimum:
            raise InvalidParameterValue(f"value {n} is below the minimum {minimum}")
        return str(n)
    return check


# PostgreSQL's units of a time parameter kept in milliseconds, largest first (guc.c's memory and time
# unit tables): input may use any of them (and us), a value is shown in the largest that divides it.
_MS_UNITS = (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000), ("ms", 1))
_DURATION = re.compile(r"^\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*([a-zA-Z]*)\s*$")


def _duration_ms(name: str) -> Callable[[str], str]:
    """A time parameter in milliseconds, as PostgreSQL's: ``500``, ``'500ms'``, ``'1s'``, ``'1.5min'``;
    shown in the largest unit that divides it (``SHOW statement_timeout`` → ``1s``)."""
    def check(v: str) -> str:
        m = _DURATION.match(v)
        factor = None if m is None else dict((*_MS_UNITS, ("us", 0.001), ("", 1))).get(m.group(2))
        if m is None or factor is None:  # (the hint only for a number with an unknown unit, as PostgreSQL)
            raise InvalidParameterValue(f'invalid value for parameter "{name}": "{v}"', hint=None if m is None else
                                        'Valid units for this parameter are "us", "ms", "s", "min", "h", and "d".')
        number = float(m.group(1)) * factor
        if not math.isfinite(number) or number > 2**31 - 1:
            raise InvalidParameterValue(f'invalid value for parameter "{name}": "{v}"',
                                        hint="Value exceeds integer range.")
        ms = round(number)
        if ms < 0:
            raise InvalidParameterValue(f"{ms} ms is outside the valid range for parameter \"{name}\" "
                                        "(0 .. 2147483647)")
        return format_ms(ms)
    return check


def format_ms(ms: int) -> str:
    """``0``, ``1500ms``, ``1s``, ``1min``... as PostgreSQL shows a time parameter."""
    if ms == 0:
        return "0"
    unit, size = next((u, n) for u, n in _MS_UNITS if ms % n == 0)
    return f"{ms // size}{unit}"


def duration_ms(shown: str) -> int:
    """The milliseconds of a value `_duration_ms` accepted."""
    m = _DURATION.match(shown)
    assert m is not None, shown
    return round(float(m.group(1)) * dict((*_MS_UNITS, ("", 1)))[m.group(2)])


QUERY_MODES = ("auto", "local", "distributed")  # `frontend.distributed`


def _choice(name: str, values: tuple[str, ...]) -> Callable[[str], str]:
    def check(v: str) -> str:
        s = v.strip().lower()
        if s not in values:
            raise InvalidParameterValue(f'invalid value for parameter "{name}": "{v}"',
                                        hint="Available values: " + ", ".join(values) + ".")
        return s
    return check


def _synchronous_commit(v: str) -> str:
    """PostgreSQL's ``synchronous_commit``: ``off`` acknowledges a write once queued in the frontend
    (`frontend.dml_commit`); ``on`` and the replication levels (``local``, ``remote_write``,
    ``remote_apply``: there is no standby to wait for) once it is durable. Booleans as PostgreSQL's."""
    s = v.strip().lower()
    if s in ("local", "remote_write", "remote_apply", "on", "off"):
        return s
    try:
        return _onoff(s)
    except InvalidParameterValue:
        raise InvalidParameterValue(f'invalid value for parameter "synchronous_commit": "{v}"',
                                    hint="Available values: local, remote_write, remote_apply, on, off.") from None


ADAPTIVE = "adaptive"  # `backfill_rate_limit`: meta adapts the rate to the barrier latency (`meta.backfill_rate`)


def check_backfill_rate(v: str) -> str:
    """``backfill_rate_limit``: rows/s per parallelism (-1: unlimited, 0: paused) or ``adaptive``."""
    s = v.strip().lower()
    if s == ADAPTIVE:
        return s
    try:
        n = int(s)
    except ValueError:
        raise InvalidParameterValue(f'invalid value for parameter "backfill_rate_limit": "{v}"',
                                    hint="Use a number of rows per second per parallelism (-1: unlimited, "
                                         "0: paused) or adaptive.") from None
    if n < -1:
        raise InvalidParameterValue(f"value {n} is below the minimum -1")
    return str(n)


def backfill_rate(shown: str) -> int | str | None:
    """A `backfill_rate_limit` value as meta takes it: rows/s, ``"adaptive"``, or None (unlimited).

    >>> backfill_rate("-1"), backfill_rate("0"), backfill_rate("5000"), backfill_rate("adaptive")
    (None, 0, 5000, 'adaptive')
    """
    if shown == ADAPTIVE:
        return ADAPTIVE
    return None if int(shown) < 0 else int(shown)


def _text(v: str) -> str:
    return v


def _onoff(v: str) -> str:
    return "on" if _bool(v) == "true" else "off"


def _time_zone(v: str) -> str:
    """A zone name must be one (`frontend.pgwire.time_zone`); offsets and POSIX forms are taken."""
    from frontend.pgwire.time_zone import display_zone, looks_like_a_zone_name

    if v.strip().strip("'\"").lower() in ("local", "default"):  # SET TIME ZONE LOCAL: the default
        return "UTC"
    if looks_like_a_zone_name(v) and display_zone(v) is None:
        raise InvalidParameterValue(f'invalid value for parameter "TimeZone": "{v.strip()}"')
    return v


@dataclass(frozen=True)
class VarSpec:
    name: str
    default: str
    help: str
    check: Callable[[str], str] = _text
    read_only: bool = False
    report: bool = False  # announced in ParameterStatus at startup


SPECS: dict[str, VarSpec] = {v.name: v for v in (
    VarSpec("search_path", '"$user", public', "Schemas searched for unqualified names"),
    VarSpec("application_name", "", "Name of the client application", report=True),
    VarSpec("client_encoding", "UTF8", "Client character set (only UTF8)", report=True),
    VarSpec("datestyle", "ISO, MDY", "Display format of dates", report=True),
    VarSpec("intervalstyle", "postgres", "Display format of intervals", report=True),
    VarSpec("timezone", "UTC", "Time zone of timestamptz values", _time_zone, report=True),
    VarSpec("extra_float_digits", "1", "Digits of floating-point output", _int(-15)),
    VarSpec("standard_conforming_strings", "on", "Backslashes are literal in strings", _onoff, report=True),
    VarSpec("transaction_isolation", "read committed", "Isolation level (statements auto-commit)"),
    VarSpec("statement_timeout", "0", "Abort any statement that runs longer (in milliseconds, or with a unit: "
            "'1s', '500ms', '1min'; 0: never)", _duration_ms("statement_timeout")),
    VarSpec("lock_timeout", "0", "Accepted for compatibility", _duration_ms("lock_timeout")),
    VarSpec("idle_in_transaction_session_timeout", "0", "Accepted for compatibility",
            _duration_ms("idle_in_transaction_session_timeout")),
    VarSpec("streaming_parallelism", "default", "Actors per fragment of new streaming jobs (default or adaptive: "
            "one per Spark core)", check_parallelism("streaming_parallelism")),
    VarSpec("background_ddl", "false", "CREATE MATERIALIZED VIEW returns at once; the backfill runs "
            "in the background (SHOW JOBS)", _bool),
    VarSpec("backfill_rate_limit", "-1", "Backfill rows per second per parallelism of new jobs "
            "(-1: unlimited, 0: paused, adaptive: follows the cluster's barrier latency)", check_backfill_rate),
    VarSpec("streaming_use_snapshot_backfill", "true", "New MVs backfill from a fixed snapshot read in bulk, "
            "then catch up from the upstream's change log", _bool),
    VarSpec("streaming_use_arrangement_backfill", "true", "Without snapshot backfill: per-vnode arrangement "
            "backfill (parallelism independent of the upstream) rather than no-shuffle backfill", _bool),
    VarSpec("query_mode", "auto", "Where batch queries run: local (the frontend), distributed (Spark jobs of a "
            "compute node), auto (distributed for joins and aggregations over big relations)", _choice("query_mode", QUERY_MODES)),
    VarSpec("rw_batch_stream_min_bytes", str(64 << 20), "Bytes of SSTs from which a local batch query reads a "
            "table or MV as a stream instead of whole (0: every one)", _int(0)),
    VarSpec("synchronous_commit", "on", "off: a write returns once queued in the frontend, durable a moment "
            "later (a crash may lose the last ones); on: once it is durable", _synchronous_commit),
    VarSpec("rw_implicit_flush", "false", "Every INSERT/UPDATE/DELETE waits until its rows are visible", _bool),
    VarSpec("enable_serverless_backfill", "false", "Accepted for compatibility: backfills run on the cluster's "
            "Spark", _bool),
    VarSpec("client_min_messages", "notice", "Lowest level of messages sent to the client"),
    VarSpec("default_transaction_isolation", "read committed", "Isolation level of new transactions"),
    VarSpec("transaction_read_only", "off", "Accepted for compatibility", _onoff),
    VarSpec("default_transaction_read_only", "off", "Accepted for compatibility", _onoff),
    VarSpec("bytea_output", "hex", "Output format of bytea values"),
    VarSpec("row_security", "on", "Accepted for compatibility", _onoff),
    VarSpec("default_table_access_method", "heap", "Access method of new tables", read_only=True),
    VarSpec("server_version", "13.14.0", "Postgres version the server speaks", read_only=True, report=True),
    VarSpec("server_version_num", "130014", "Postgres version number", read_only=True),
    VarSpec("server_encoding", "UTF8", "Server character set", read_only=True, report=True),
    VarSpec("integer_datetimes", "on", "Timestamps are 64-bit integers", read_only=True, report=True),
    VarSpec("is_superuser", "on", "The user is a superuser", read_only=True, report=True),
    VarSpec("max_identifier_length", "63", "Longest identifier", read_only=True),
    *(VarSpec(v.name, v.default, v.help, v.check or _bool) for v in PLANNER_VARS),
)}
# RisingWave's settings RisingSpark accepts without a plan choice to make: a SET of one sends a NOTICE
NOTICES = {v.name: n for v in PLANNER_VARS if (n := notice_for(v)) is not None}

# Time parameters, kept in milliseconds (pg_settings shows them as a number and the unit ms).
MS_VARS = frozenset(n for n, s in SPECS.items() if getattr(s.check, "__qualname__", "").startswith("_duration_ms"))

# Postgres spells some reported names in mixed case.
REPORTED_NAMES = {"datestyle": "DateStyle", "intervalstyle": "IntervalStyle", "timezone": "TimeZone"}
ALIASES = {"transaction isolation level": "transaction_isolation", "time zone": "timezone",
           "implicit_flush": "rw_implicit_flush", **{a: v.name for v in PLANNER_VARS for a in v.aliases}}


class SessionVars:
    """A session's settings. In a transaction block (`begin` .. `end`) they are transactional as
    PostgreSQL's: a ROLLBACK restores what the block changed, and a ``SET LOCAL`` lasts until the
    block ends either way (after a plain SET of the same setting in the block, COMMIT keeps that
    SET's value). Savepoints are not tracked: a ROLLBACK TO SAVEPOINT keeps the settings."""

    def __init__(self) -> None:
        self._values = {n: s.default for n, s in SPECS.items()}
        self._search_path: tuple[str | None, tuple[str, ...]] = (None, ())  # (the value parsed, its schemas)
        self._reset: dict[str, str] = {}  # the values the client connected with (RESET goes back to them)
        self._before: dict[str, str] | None = None  # in a block: each changed setting's value at its start
        self._kept: dict[str, str] = {}  # in a block: the values plain SETs gave (COMMIT keeps them)

    @property
    def in_block(self) -> bool:
        return self._before is not None

    def begin(self) -> None:
        if self._before is None:
            self._before, self._kept = {}, {}

    def end(self, commit: bool) -> list[str]:
        """The block ends: the settings it changed are restored (all on ROLLBACK, those only SET
        LOCAL changed on COMMIT); the names whose value changed back."""
        before, kept = self._before or {}, self._kept
        self._before, self._kept = None, {}
        changed = []
        for name, value in before.items():
            final = kept.get(name, value) if commit else value
            if self._values[name] != final:
                self._values[name] = final
                changed.append(name)
        return changed

    @staticmethod
    def spec(name: str) -> VarSpec:
        key = ALIASES.get(name.lower(), name.lower())
        spec = SPECS.get(key)
        if spec is None:
            raise UndefinedParameter(f'unrecognized configuration parameter "{name}"')
        return spec

    def get(self, name: str) -> str:
        value = self._values.get(name)  # (a setting's own name, as the engine asks: no alias lookup)
        return self._values[self.spec(name).name] if value is None else value

    def check(self, name: str, value: str | None) -> VarSpec:
        """Fail as `set` would, changing nothing."""
        spec = self.spec(name)
        if spec.read_only:
            raise InvalidParameterValue(f'parameter "{spec.name}" cannot be changed')
        if value is not None:
            spec.check(value)
        return spec

    def set(self, name: str, value: str | None, local: bool = False) -> VarSpec:
        """Set `name` (None: its reset value); `local`: only until the transaction block ends (the
        caller refuses SET LOCAL outside one)."""
        spec = self.check(name, None)
        self._assign(spec.name, self._reset.get(spec.name, spec.default) if value is None else spec.check(value),
                     local)
        if spec.name == "force_two_phase_agg" and self.flag("force_two_phase_agg"):
            self._assign("enable_two_phase_agg", "true", local)  # as RisingWave's setter
        return spec

    def set_startup(self, name: str, value: str) -> VarSpec:
        """A setting of the client's startup packet: set, and what RESET, DEFAULT and DISCARD ALL
        go back to (as PostgreSQL's reset value)."""
        spec = self.set(name, value)
        self._reset[spec.name] = self._values[spec.name]
        return spec

    def _assign(self, name: str, value: str, local: bool) -> None:
        if self._before is not None:
            self._before.setdefault(name, self._values[name])
            if not local:
                self._kept[name] = value
        self._values[name] = value

    @staticmethod
    def spec_items() -> list[tuple[str, VarSpec]]:
        return list(SPECS.items())

    def flag(self, name: str) -> bool:
        return self.get(name) == "true"

    def number(self, name: str) -> int:
        return int(self.get(name))

    def job_parallelism(self, kind: str) -> int:
        """The parallelism of a new job of `kind` (table, materialized_view, index): its
        ``streaming_parallelism_for_<kind>``, else ``streaming_parallelism``; 0: adaptive (one actor
        per Spark core)."""
        for name in (f"streaming_parallelism_for_{kind}", "streaming_parallelism"):
            n = parallelism(self.get(name))
            if n is not None:
                return n
        return 0

    def backfill_rate_extra(self) -> dict[str, object]:
        """The catalog `extra` entries of a new job's backfill rate (`risingspark.catalog`)."""
        rate = backfill_rate(self.get("backfill_rate_limit"))
        if rate == ADAPTIVE:
            return {ADAPTIVE_BACKFILL_RATE: True}
        return {} if rate is None else {BACKFILL_RATE_LIMIT: rate}

    def search_path(self) -> list[str]:
        return list(self.search_path_key())

    def search_path_key(self) -> tuple[str, ...]:
        """`search_path` as a tuple, parsed once per value (every statement's plan key holds it)."""
        raw = self._values["search_path"]
        if self._search_path[0] is not raw:
            self._search_path = (raw, tuple(p.strip().strip('"') for p in raw.split(",")))
        return self._search_path[1]

    def reported(self) -> dict[str, str]:
        return {REPORTED_NAMES.get(n, n): self._values[n] for n, s in SPECS.items() if s.report}

    def all(self) -> list[tuple[str, str, str]]:
        return [(n, self._values[n], s.help) for n, s in sorted(SPECS.items())]
