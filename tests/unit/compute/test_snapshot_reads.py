"""What a snapshot backfill reads each round (`compute.stream.snapshot._next_read`): planned splits
merged at run time, as many as the split target (unlimited) or the rate limit's bucket allows.

The rounds are simulated: a round reads what `_next_read` answers, marks it finished as the compute
node does, and spends the rows it read; a round's duration is chosen by the test."""

from __future__ import annotations

import doctest
import random

from compute.stream.round import JobRuntime
from compute.stream.snapshot import BURST_S, FIRST_READ_S, _next_read
from risingspark.barrier import SnapshotState, StreamJob, VnodeProgress
from risingspark.snapshot_splits import AGG_SPLIT_TARGET_ROWS, SPLIT_TARGET_ROWS, plan_splits
from risingspark.storage.desc import SstableInfo, StateTableDesc
from risingspark.stream_plan import StreamHashAgg, StreamMaterialize, StreamTableScan
from risingspark.types import INT8, Field
from risingspark.vnode import VNODE_COUNT

FIELDS = (Field("id", INT8),)
PARALLELISM = 2
ROWS = 10_000_000
PER_VNODE = ROWS / VNODE_COUNT


def sst(rows: int, lo: int = 0, hi: int = VNODE_COUNT - 1) -> SstableInfo:
    return SstableInfo("s", 1, 0, 0, lo, hi, 1, 1, rows, 0, 0)


def runtime(splits: tuple[tuple[int, int], ...], rate: int | None, ssts=(sst(ROWS),), agg: bool = False) -> JobRuntime:
    scan = StreamTableScan(FIELDS, (0,), upstream_id=1, upstream_desc=StateTableDesc(1, FIELDS, (0,)))
    source = StreamHashAgg(FIELDS, (0,), input=scan, group_key=(0,), aggs=()) if agg else scan
    plan = StreamMaterialize(FIELDS, (0,), input=source, table=StateTableDesc(2, FIELDS, (0,)))
    job = StreamJob(2, "m", plan, PARALLELISM, (1,), backfill_rate_limit=rate)
    progress = {0: [VnodeProgress(v, None, False, 0) for v in range(VNODE_COUNT)]}
    return JobRuntime(job, PARALLELISM, progress, snapshot=SnapshotState(1, tuple(ssts), True, splits, 1))


def read(rt: JobRuntime, now: float) -> int:
    """One round's read at `now`: the rows it read (each vnode holds `PER_VNODE`), 0 for none."""
    assert rt.snapshot is not None and rt.progress is not None
    rng = _next_read(rt, rt.snapshot, rt.job.backfill_rate_limit, now)
    if rng is None:
        return 0
    lo, hi = rng
    for v in range(lo, hi + 1):
        rt.progress[0][v] = VnodeProgress(v, None, True, 0)
    rows = round((hi - lo + 1) * PER_VNODE)
    if rt.bucket is not None and rt.job.backfill_rate_limit is not None:
        rt.bucket.rows -= rows
    return rows


def with_rate(rt: JobRuntime, rate: int) -> None:
    from dataclasses import replace
    rt.job = replace(rt.job, backfill_rate_limit=rate)


def per_vnode() -> tuple[tuple[int, int], ...]:
    return plan_splits(VNODE_COUNT, 1, VNODE_COUNT)


def test_unlimited_reads_one_planned_split_or_merges_single_vnodes_up_to_the_target() -> None:
    rt = runtime(plan_splits(ROWS), None)
    assert _next_read(rt, rt.snapshot, None, 0.0) == (0, 84)  # type: ignore[arg-type]
    # Planned for a limit, then made unlimited: the single vnodes merge up to the split target.
    rt = runtime(per_vnode(), None)
    lo, hi = _next_read(rt, rt.snapshot, None, 0.0)  # type: ignore[arg-type]
    assert (hi - lo + 1) * PER_VNODE <= SPLIT_TARGET_ROWS < (hi - lo + 2) * PER_VNODE
    agg = runtime(per_vnode(), None, agg=True)
    assert _next_read(agg, agg.snapshot, None, 0.0) == (0, VNODE_COUNT - 1)  # type: ignore[arg-type]
    assert ROWS <= AGG_SPLIT_TARGET_ROWS


def test_a_lower_limit_makes_the_next_read_smaller_not_only_later() -> None:
    rate = 100_000
    rt = runtime(per_vnode(), rate)
    now, reads = 0.0, []
    for _ in range(4):  # rounds of 5 s: each reads what the limit earned in 5 s
        reads.append(read(rt, now))
        now += 5.0
    steady = reads[-1]
    assert abs(steady - rate * PARALLELISM * 5.0) <= PER_VNODE
    assert reads[0] <= rate * PARALLELISM * FIRST_READ_S  # the first read: one second's worth
    with_rate(rt, rate // 2)  # the adaptive rate backs off
    halved = read(rt, now)
    assert abs(halved - steady / 2) <= 2 * PER_VNODE


def test_a_limit_holds_on_average_over_rounds_of_any_length() -> None:
    rng = random.Random(7)
    for rate in (2_000, 30_000, 40_000):  # (below 10M rows in 120 s)
        rt = runtime(per_vnode(), rate, ssts=(sst(ROWS),))
        now = total = 0.0
        while now < 120.0:
            total += read(rt, now)
            now += rng.uniform(0.2, 6.0)
        allowed = rate * PARALLELISM * (now + FIRST_READ_S)
        assert total <= allowed + PER_VNODE  # never more than earned, but for the read in flight
        assert total >= rate * PARALLELISM * (now - 6.0) - 2 * PER_VNODE  # and not much less


def test_reads_longer_than_the_burst_earn_their_whole_time() -> None:
    """A read off the barrier's path takes longer than `BURST_S` and the bucket is not asked
    meanwhile: the next read takes what the whole cycle earned, so the limit holds on average (with
    the cap alone, a cycle of 19 s read 10 s worth: half the limit)."""
    rate = 100_000
    rt = runtime(per_vnode(), rate)
    now, reads = 0.0, []
    for _ in range(3):  # (10M rows: the fourth read would find less left)
        reads.append(read(rt, now))
        now += 19.0  # a read of ~13 s, then a round or two before the next one starts
    assert all(abs(r - rate * PARALLELISM * 19.0) <= PER_VNODE for r in reads[1:]), reads


def test_a_split_bigger_than_the_bucket_is_read_once_the_bucket_is_full() -> None:
    rt = runtime(per_vnode(), 100)  # 200 rows/s: a vnode (39K rows) never fits a 2K-row bucket
    times = [t for t in range(0, 400) if read(rt, float(t))]
    assert times[0] == BURST_S - FIRST_READ_S  # not at the start: first the bucket fills
    assert abs(times[1] - times[0] - PER_VNODE / (100 * PARALLELISM)) <= 1  # then the debt is paid


def test_a_pause_empties_the_bucket() -> None:
    rt = runtime(per_vnode(), 100_000)
    read(rt, 0.0)
    with_rate(rt, 0)
    assert rt.snapshot is not None
    rt.bucket = None  # what a round at rate 0 does (`_snapshot_split`)
    with_rate(rt, 100_000)
    assert read(rt, 100.0) <= 100_000 * PARALLELISM * FIRST_READ_S


def test_estimates_follow_the_ssts_vnode_ranges() -> None:
    # Rows only in vnodes 0..127: a budget covering them reads the empty half with them.
    rt = runtime(per_vnode(), 10_000, ssts=(sst(1_000, 0, 127),))
    assert _next_read(rt, rt.snapshot, 10_000, 100.0) == (0, VNODE_COUNT - 1)  # type: ignore[arg-type]


def test_module_doctests() -> None:
    import compute.stream.snapshot
    import risingspark.snapshot_splits
    for module in (compute.stream.snapshot, risingspark.snapshot_splits):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0
