"""The backfill chunk size: rounds aim at the barrier interval while a round's fixed part is small,
and at twice the fixed part when it is not (shrinking the chunk then only lowers the rows per
second); noise and a wrong estimate do not keep rounds long."""

from __future__ import annotations

import random

from compute.stream.chunk_size import (
    HISTORY,
    MAX_CHUNK_ROWS,
    MIN_CHUNK_ROWS,
    RoundSample,
    fit,
    next_chunk_rows,
)


def simulate(fixed: float, per_row: float, target: float, rounds: int = 40, scans: int = 1, noise: float = 0.0,
             seed: int = 0, estimate: float | None = None) -> list[RoundSample]:
    """Rounds of a job whose round takes ``fixed + per_row × rows`` (rows of every scan), plus up to
    `noise` seconds of random delay."""
    rng = random.Random(seed)
    chunk, history = 200_000, []
    for _ in range(rounds):
        rows = chunk * scans
        history = [*history[-HISTORY + 1:], RoundSample(rows, fixed + per_row * rows + rng.random() * noise)]
        chunk, estimate = next_chunk_rows(chunk, history, target, estimate)
    return history


def test_a_cheap_round_aims_at_the_barrier_interval():
    last = simulate(fixed=0.05, per_row=2e-6, target=1.0)[-1]
    assert 0.9 < last.seconds < 1.1
    assert last.rows > 400_000


def test_an_expensive_fixed_part_keeps_chunks_big():
    # 4 s before reading a row, 45 µs per row: aiming at 1 s shrank chunks to the minimum (~2K rows/s)
    rounds = simulate(fixed=4.0, per_row=45e-6, target=1.0)
    assert all(r.rows >= MIN_CHUNK_ROWS for r in rounds)
    assert sum(r.rows for r in rounds[-5:]) / sum(r.seconds for r in rounds[-5:]) > 10_000
    assert max(r.seconds for r in rounds[-5:]) < 10  # about twice the fixed part, not unbounded


def test_several_scans_share_the_goal():
    last = simulate(fixed=0.05, per_row=2e-6, target=1.0, scans=3)[-1]
    assert 0.9 < last.seconds < 1.1


def test_noise_does_not_keep_rounds_long():
    for seed in range(20):
        rounds = simulate(fixed=0.2, per_row=2e-6, target=1.0, noise=0.5, seed=seed)
        assert sum(r.seconds for r in rounds[-10:]) / 10 < 1.8, seed


def test_a_wrong_estimate_decays():
    # Rounds steady at the goal of a wrong estimate (3 s for a fixed part of 0.1 s): their sizes no
    # longer differ, so no fit corrects it; the decay does, and rounds come back to the interval.
    fixed, per_row = 0.1, 2e-6
    chunk, estimate = int((6.0 - fixed) / per_row), 3.0
    history = [RoundSample(chunk, fixed + per_row * chunk)] * HISTORY
    for _ in range(60):
        chunk, estimate = next_chunk_rows(chunk, history, 1.0, estimate)
        history = [*history[-HISTORY + 1:], RoundSample(chunk, fixed + per_row * chunk)]
    assert history[-1].seconds < 1.3


def test_fit():
    assert fit([RoundSample(100_000, 1.0)]) is None
    assert fit([RoundSample(100_000, 1.0), RoundSample(110_000, 1.1)]) is None  # sizes barely differ
    assert fit([RoundSample(100_000, 2.0), RoundSample(200_000, 1.0)]) is None  # not rising
    fixed = fit([RoundSample(100_000, 4.0 + 4.5), RoundSample(200_000, 4.0 + 9.0), RoundSample(150_000, 4 + 6.75)])
    assert fixed is not None and abs(fixed - 4.0) < 1e-6
    # never more than 0.9x the quickest round
    assert fit([RoundSample(100_000, 1.0), RoundSample(200_000, 1.01)]) == 0.9


def test_bounds():
    chunk, _ = next_chunk_rows(MAX_CHUNK_ROWS, [RoundSample(10, 0.001)], 1.0)
    assert chunk == MAX_CHUNK_ROWS
    chunk, _ = next_chunk_rows(MIN_CHUNK_ROWS, [RoundSample(MIN_CHUNK_ROWS, 100.0)], 1.0)
    assert chunk == MIN_CHUNK_ROWS
    chunk, _ = next_chunk_rows(100_000, [RoundSample(100_000, 100.0)], 1.0)
    assert chunk == 50_000  # shrinks at most 2x a round
    chunk, _ = next_chunk_rows(100_000, [RoundSample(100_000, 0.001)], 1.0)
    assert chunk == 400_000  # grows at most 4x
