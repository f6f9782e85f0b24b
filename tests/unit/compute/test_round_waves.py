"""The waves of an epoch round: a job runs after the jobs whose tables it reads; the jobs of one
wave run at the same time."""

from __future__ import annotations

from compute.stream.round import JobRuntime, job_waves
from risingspark.barrier import StreamJob
from risingspark.storage.desc import StateTableDesc
from risingspark.stream_plan import StreamDml, StreamMaterialize, StreamTableScan, StreamUnion
from risingspark.table_kind import ConflictBehavior
from risingspark.types import INT8, Field

FIELDS = (Field("id", INT8),)


def desc(table_id: int) -> StateTableDesc:
    return StateTableDesc(table_id, FIELDS, (0,))


def table_job(job_id: int) -> JobRuntime:
    plan = StreamMaterialize(FIELDS, (0,), input=StreamDml(FIELDS, (0,), table_id=job_id), table=desc(job_id),
                             conflict=ConflictBehavior.OVERWRITE)
    return JobRuntime(StreamJob(job_id, f"t{job_id}", plan, 2, ()), 2)


def mv_job(job_id: int, *reads: int) -> JobRuntime:
    scans = tuple(StreamTableScan(FIELDS, (0,), upstream_id=r, upstream_desc=desc(r)) for r in reads)
    source = scans[0] if len(scans) == 1 else StreamUnion(FIELDS, (0,), branches=scans)
    plan = StreamMaterialize(FIELDS, (0,), input=source, table=desc(job_id))
    return JobRuntime(StreamJob(job_id, f"mv{job_id}", plan, 2, reads), 2)


def names(waves: list[list[JobRuntime]]) -> list[list[str]]:
    return [[rt.job.name for rt in wave] for wave in waves]


def test_views_of_one_table_share_a_wave():
    jobs = [table_job(1), table_job(2), mv_job(3, 1), mv_job(4, 1), mv_job(5, 2), mv_job(6, 3), mv_job(7, 6, 2),
            mv_job(8, 99)]
    assert names(job_waves(jobs)) == [["t1", "t2", "mv8"], ["mv3", "mv4", "mv5"], ["mv6"], ["mv7"]]


def test_no_jobs():
    assert job_waves([]) == []
