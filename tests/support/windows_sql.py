"""PostgreSQL forms of RisingWave's time window table functions, for the oracle (PostgreSQL has no
TUMBLE or HOP). Windows are aligned to the Unix epoch, as RisingWave's (offset 0).

``TUMBLE(t, ts, size)``: every row of ``t`` once, with ``window_start`` the start of the window of
``size`` holding ``ts`` and ``window_end = window_start + size``.

``HOP(t, ts, hop, size)``: every row of ``t`` once per window of ``size`` starting at a multiple of
``hop`` that holds ``ts``: the starts ``s`` with ``s <= ts < s + size``, i.e. the last multiple of
``hop`` at or before ``ts`` and the ``size / hop - 1`` before it (``size`` a multiple of ``hop``).
"""

from __future__ import annotations

EPOCH = "timestamp '1970-01-01 00:00:00'"


def _interval(seconds: int) -> str:
    return f"interval '{seconds} seconds'"


def tumble(table: str, ts: str, size_s: int, alias: str | None = None) -> str:
    """A FROM item equal to ``TUMBLE(table, ts, INTERVAL 'size_s' SECOND)``, named ``alias``
    (default: the table's name, so ``table.col`` still resolves)."""
    start = f"date_bin({_interval(size_s)}, {ts}, {EPOCH})"
    return (f"(SELECT {table}.*, {start} AS window_start, {start} + {_interval(size_s)} AS window_end "
            f"FROM {table}) AS {alias or table}")


def hop(table: str, ts: str, hop_s: int, size_s: int, alias: str | None = None) -> str:
    """A FROM item equal to ``HOP(table, ts, INTERVAL 'hop_s' SECOND, INTERVAL 'size_s' SECOND)``."""
    assert size_s % hop_s == 0, "the window size must be a multiple of the hop"
    last = f"date_bin({_interval(hop_s)}, {table}.{ts}, {EPOCH})"
    return (f"(SELECT {table}.*, w.window_start, w.window_start + {_interval(size_s)} AS window_end "
            f"FROM {table} CROSS JOIN LATERAL (SELECT {last} - k * {_interval(hop_s)} AS window_start "
            f"FROM generate_series(0, {size_s // hop_s - 1}) AS k) AS w) AS {alias or table}")
