from __future__ import annotations

from meta.progress import ProgressRate, format_progress


def test_format_as_risingwave() -> None:
    assert format_progress(452_300, 1_000_000) == "45.23% (452300/1000000)"
    assert format_progress(0, 0) == "0.00% (0/0)"


def test_clamped_below_100_until_done() -> None:
    assert format_progress(1_000_000, 1_000_000) == "99.99% (1000000/1000000)"
    assert format_progress(2_000, 1_000) == "99.99% (2000/1000)"
    assert format_progress(99_999_5, 1_000_000) == "99.99% (999995/1000000)"


def test_rate_and_eta() -> None:
    r = ProgressRate(window=10)
    assert r.rows_per_second() is None
    r.record(0, at=0.0)
    r.record(5_000, at=1.0)
    r.record(10_000, at=2.0)
    assert r.rows_per_second() == 5_000
    assert r.eta_seconds(20_000) == 2.0
