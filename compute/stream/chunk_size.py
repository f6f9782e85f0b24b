"""How many snapshot rows an arrangement or no-shuffle backfill reads in its next epoch round.

RisingWave's backfill reads until the next barrier arrives, so a round takes about one barrier
interval whatever a row costs. Here a round is a Spark job whose time is a fixed part (planning and
scheduling its stages: a multi-way join's round costs seconds before it reads a row) plus a part per
row: ``time(rows) ≈ fixed + per_row × rows``. Aiming every round at the barrier interval is right
while the fixed part is small; when it is not — it can exceed the interval by itself — shrinking the
chunk only lowers the rows read per second (measured: a 3-way join's rounds fell to 10K rows and
~4.5 s each, ~2K rows/s, against 15K rows/s in its first, bigger round).

So the two latest rounds of different sizes give a line through ``(rows, seconds)``; its intercept
estimates the fixed part and its slope the per-row cost. The next round aims at
``max(target, 2 × fixed)`` seconds — at least as much time reading rows as paying the fixed part —
and the chunk is the rows that fill it. Without two usable rounds (the first one, equal sizes, a
line that is not increasing) it scales the chunk by ``target / elapsed`` as before. A chunk grows at
most 4× and shrinks at most 2× per round, within ``[MIN_CHUNK_ROWS, MAX_CHUNK_ROWS]``. A rate limit
(`backfill_rate_limit`, fixed or adaptive) caps the rows per round on top of this.
"""

from __future__ import annotations

from dataclasses import dataclass

INITIAL_CHUNK_ROWS = 200_000
MIN_CHUNK_ROWS = 10_000
MAX_CHUNK_ROWS = 4_000_000
MAX_CHUNK_GROWTH = 4.0
MAX_CHUNK_SHRINK = 0.5


@dataclass(frozen=True)
class RoundSample:
    rows: int
    seconds: float


def next_chunk_rows(chunk_rows: int, sample: RoundSample, previous: RoundSample | None, target_s: float,
                    fixed_s: float | None = None) -> tuple[int, float | None]:
    """The chunk of the next round, after a round that read `sample.rows` in `sample.seconds`, and
    the estimate of a round's fixed part (`fixed_s`: the estimate so far, None before the first)."""
    if previous is not None and sample.rows and abs(sample.rows - previous.rows) >= 0.2 * max(sample.rows,
                                                                                            previous.rows):
        slope = (sample.seconds - previous.seconds) / (sample.rows - previous.rows)
        if slope > 0:
            fixed_s = max(0.0, sample.seconds - slope * sample.rows)
    if fixed_s is not None and sample.rows and sample.seconds > fixed_s:
        goal = max(target_s, 2 * fixed_s)
        # (rows counts every scan's: the chunk is per scan, so it scales as the rows that fill the goal)
        wanted = chunk_rows * (goal - fixed_s) / (sample.seconds - fixed_s)
    else:
        wanted = chunk_rows * target_s / max(sample.seconds, 1e-3)
    wanted = min(chunk_rows * MAX_CHUNK_GROWTH, max(chunk_rows * MAX_CHUNK_SHRINK, wanted))
    return int(min(MAX_CHUNK_ROWS, max(MIN_CHUNK_ROWS, wanted))), fixed_s
