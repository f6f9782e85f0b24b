"""How many snapshot rows an arrangement or no-shuffle backfill reads in its next epoch round.

RisingWave's backfill reads until the next barrier arrives, so a round takes about one barrier
interval whatever a row costs. Here a round is a Spark job whose time is a fixed part (planning and
scheduling its stages: a multi-way join's round costs seconds before it reads a row) plus a part per
row: ``time(rows) ≈ fixed + per_row × rows``. Aiming every round at the barrier interval is right
while the fixed part is small; when it is not — it can exceed the interval by itself — shrinking the
chunk only lowers the rows read per second (seen in a playground's log: a 3-way join's rounds fell to 10K rows and
~4.5 s each, ~2K rows/s, against 15K rows/s in its first, bigger round).

So a line is fitted through the latest rounds (least squares over up to `HISTORY` of them, when
their sizes differ by at least a fifth); its intercept estimates the fixed part (never more than
0.9× the quickest of them) and its slope the per-row cost. The next round aims at
``max(target, 2 × fixed)`` seconds — at least as much time reading rows as paying the fixed part —
and the chunk scales to fill it. Without a usable fit the estimate decays by `DECAY` a round (a
noisy pair of rounds cannot keep rounds long for the rest of a backfill: as the goal shrinks, the
chunk does, and the next sizes refit), and with no estimate the chunk scales by
``target / elapsed``. A chunk grows at most 4× and shrinks at most 2× per round, within
``[MIN_CHUNK_ROWS, MAX_CHUNK_ROWS]``. The caller passes only rounds that read at the chunk size
(not rate-limited ones) of one set of reading scans (a backfill order's next stage starts over).
"""

from __future__ import annotations

from dataclasses import dataclass

INITIAL_CHUNK_ROWS = 200_000
MIN_CHUNK_ROWS = 10_000
MAX_CHUNK_ROWS = 4_000_000
MAX_CHUNK_GROWTH = 4.0
MAX_CHUNK_SHRINK = 0.5


HISTORY = 6
DECAY = 0.9


@dataclass(frozen=True)
class RoundSample:
    rows: int
    seconds: float


def fit(rounds: list[RoundSample]) -> float | None:
    """The fixed part of a round from the line through `rounds`; None when their sizes barely differ
    or the line does not rise."""
    if len(rounds) < 2:
        return None
    xs, ys = [r.rows for r in rounds], [r.seconds for r in rounds]
    if max(xs) - min(xs) < 0.2 * max(xs):
        return None
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
    if slope <= 0:
        return None
    return min(max(0.0, my - slope * mx), 0.9 * min(ys))


def next_chunk_rows(chunk_rows: int, rounds: list[RoundSample], target_s: float,
                    fixed_s: float | None = None) -> tuple[int, float | None]:
    """The chunk of the next round after `rounds` (oldest first, the last one just run; at most
    `HISTORY` are used), and the estimate of a round's fixed part (`fixed_s`: the estimate so far)."""
    rounds = rounds[-HISTORY:]
    sample = rounds[-1]
    fitted = fit(rounds)
    if fitted is not None:
        fixed_s = fitted
    elif fixed_s is not None:
        fixed_s *= DECAY
    if fixed_s is not None and sample.rows and sample.seconds > fixed_s:
        goal = max(target_s, 2 * fixed_s)
        # (rows counts every scan's: the chunk is per scan, so it scales as the rows that fill the goal)
        wanted = chunk_rows * (goal - fixed_s) / (sample.seconds - fixed_s)
    else:
        wanted = chunk_rows * target_s / max(sample.seconds, 1e-3)
    wanted = min(chunk_rows * MAX_CHUNK_GROWTH, max(chunk_rows * MAX_CHUNK_SHRINK, wanted))
    return int(min(MAX_CHUNK_ROWS, max(MIN_CHUNK_ROWS, wanted))), fixed_s
