"""A version delta carries the levels of the tables that changed, and the dropped ones; applied to
its base it gives the new version (`risingspark.storage.desc.VersionDelta`)."""

from __future__ import annotations

import doctest
from dataclasses import replace

import pytest

from risingspark.storage import desc
from risingspark.storage.desc import HummockVersion, SstableInfo, SubLevel, TableLevels, VersionDelta


def _sst(table_id: int, n: int) -> SstableInfo:
    return SstableInfo(path=f"t{table_id}/{n}.parquet", table_id=table_id, level=0, sub_level=n, min_vnode=0,
                       max_vnode=255, min_epoch=n, max_epoch=n, row_count=1, tombstone_count=0, size_bytes=1,
                       sst_id=n)


def test_only_the_tables_that_changed_travel():
    old = HummockVersion(7, 70, {t: TableLevels(t, (SubLevel(1, (_sst(t, 1),)),)) for t in (1, 2, 3)})
    touched = replace(old.tables[1], l0=(*old.tables[1].l0, SubLevel(2, (_sst(1, 2),))))
    new = HummockVersion(8, 80, {1: touched, 2: old.tables[2], 4: TableLevels(4, (SubLevel(2, (_sst(4, 2),)),))})
    delta = VersionDelta.between(old, new)
    assert sorted(delta.changed) == [1, 4] and delta.dropped == (3,)
    got = delta.apply(old)
    assert got == new and got.tables[2] is old.tables[2]
    assert [s.path for s in got.ssts(1)] == ["t1/1.parquet", "t1/2.parquet"]
    with pytest.raises(AssertionError):
        delta.apply(new)  # (not its base)


def test_doctests():
    assert doctest.testmod(desc).failed == 0
