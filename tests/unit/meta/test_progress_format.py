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


def test_progress_per_upstream_in_a_backfill_order() -> None:
    from meta.progress import upstream_progress, waiting_text
    from risingspark.vnode import VNODE_COUNT

    # scans: 0 of the fact table (1), 1 of a dimension (2), 2 and 3 of another dimension (3) twice
    scanned = [1, 2, 3, 3]
    all_of = {(1, v) for v in range(VNODE_COUNT)}
    half = {(2, v) for v in range(VNODE_COUNT)}  # scan 2 of relation 3 finished, scan 3 not
    consumed = {(1, 0): 100, (2, 0): 30, (3, 5): 20}
    rows = {1: 1000, 2: 100, 3: 50}
    order = ((2, 1), (3, 1))
    ups = upstream_progress(scanned, consumed, all_of | half, rows, order)
    names = {1: "fact", 2: "dim_a", 3: "dim_b"}
    assert [(u.upstream_id, u.consumed_rows, u.total_rows, u.finished, u.waiting_for) for u in ups] == [
        (1, 0, 1000, False, (3,)), (2, 100, 100, True, ()), (3, 50, 100, False, ())]
    assert [u.text(names) for u in ups] == ["0.00% (0/1000) waiting for dim_b", "100.00% (100/100)", "50.00% (50/100)"]
    assert [u.reading for u in ups] == [False, False, True]
    assert waiting_text(ups, names) == "fact waiting for dim_b"
    done = upstream_progress(scanned, consumed, all_of | half | {(3, v) for v in range(VNODE_COUNT)}, rows, order)
    assert done[0].waiting_for == () and done[0].reading and waiting_text(done, names) == ""
