"""The backfill chunk size: rounds aim at the barrier interval while a round's fixed part is small,
and at twice the fixed part when it is not (shrinking the chunk then only lowers the rows per
second)."""

from __future__ import annotations

from compute.stream.chunk_size import MAX_CHUNK_ROWS, MIN_CHUNK_ROWS, RoundSample, next_chunk_rows


def simulate(fixed: float, per_row: float, target: float, rounds: int = 30, scans: int = 1) -> list[tuple[int, float]]:
    """Rounds of a job whose round takes ``fixed + per_row × rows`` (rows of every scan)."""
    chunk, previous, estimate, out = 200_000, None, None, []
    for _ in range(rounds):
        rows = chunk * scans
        sample = RoundSample(rows, fixed + per_row * rows)
        out.append((rows, sample.seconds))
        chunk, estimate = next_chunk_rows(chunk, sample, previous, target, estimate)
        previous = sample
    return out


def test_a_cheap_round_aims_at_the_barrier_interval():
    rows, seconds = simulate(fixed=0.05, per_row=2e-6, target=1.0)[-1]
    assert 0.9 < seconds < 1.1
    assert rows > 400_000


def test_an_expensive_fixed_part_keeps_chunks_big():
    # 4 s before reading a row, 45 µs per row: the old rule shrank to the minimum chunk (~2K rows/s)
    rounds = simulate(fixed=4.0, per_row=45e-6, target=1.0)
    rows, seconds = rounds[-1]
    assert 7.5 < seconds < 8.5  # twice the fixed part
    assert rows / seconds > 10_000
    assert all(r >= MIN_CHUNK_ROWS for r, _ in rounds)


def test_several_scans_share_the_goal():
    rows, seconds = simulate(fixed=0.05, per_row=2e-6, target=1.0, scans=3)[-1]
    assert 0.9 < seconds < 1.1


def test_bounds():
    chunk, _ = next_chunk_rows(MAX_CHUNK_ROWS, RoundSample(10, 0.001), None, 1.0)
    assert chunk == MAX_CHUNK_ROWS
    chunk, _ = next_chunk_rows(MIN_CHUNK_ROWS, RoundSample(MIN_CHUNK_ROWS, 100.0), None, 1.0)
    assert chunk == MIN_CHUNK_ROWS
    chunk, _ = next_chunk_rows(100_000, RoundSample(100_000, 100.0), None, 1.0)
    assert chunk == 50_000  # shrinks at most 2× a round
    chunk, _ = next_chunk_rows(100_000, RoundSample(100_000, 0.001), None, 1.0)
    assert chunk == 400_000  # grows at most 4×
