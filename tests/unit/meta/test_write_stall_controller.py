"""Write stall: which tables stall, engaging and releasing, writers held until release, and the
picker treating an L0 at the threshold as due."""

from __future__ import annotations

from prometheus_client import REGISTRY

from meta.compaction.picker import CompactionConfig, pick_compaction
from meta.compaction.write_stall import WriteStallController, stalled_tables
from risingspark.catalog import RelationCatalog, RelationKind
from risingspark.storage.desc import HummockVersion, SstableInfo, StateTableDesc, SubLevel, TableLevels
from risingspark.types import INT8, Field


def rel(rel_id: int, name: str, kind: RelationKind, deps: tuple[int, ...] = ()) -> RelationCatalog:
    fields = (Field("id", INT8),)
    return RelationCatalog(id=rel_id, database_id=1, schema_id=1, name=name, kind=kind, fields=fields, pk=(0,),
                           dist_key=(0,), definition="", dependencies=deps,
                           state_tables=(StateTableDesc(rel_id, fields, pk=(0,)),))


def sst(table_id: int, epoch: int) -> SstableInfo:
    return SstableInfo(f"{table_id}-{epoch}", table_id, 0, epoch, 0, 255, epoch, epoch, 10, 0, 1000)


def version(depths: dict[int, int]) -> HummockVersion:
    return HummockVersion(1, 100, {t: TableLevels(t, tuple(SubLevel(e, (sst(t, e),)) for e in range(1, n + 1)))
                                   for t, n in depths.items()})


T = rel(1, "t", RelationKind.TABLE)
U = rel(2, "u", RelationKind.TABLE)
MV = rel(3, "mv", RelationKind.MATERIALIZED_VIEW, (1,))
MV2 = rel(4, "mv2", RelationKind.MATERIALIZED_VIEW, (3, 2))


def test_a_table_stalls_on_the_deepest_state_table_it_feeds():
    rels = [T, U, MV, MV2]
    assert stalled_tables(version({1: 3, 2: 3, 3: 3, 4: 3}), rels, 4) == {}
    assert stalled_tables(version({1: 4}), rels, 4) == {1: (1, 4)}
    # a view two steps down stalls both tables that feed it
    assert stalled_tables(version({1: 1, 4: 9}), rels, 4) == {1: (4, 9), 2: (4, 9)}
    # a deep view stalls only the tables upstream of it
    assert stalled_tables(version({3: 5}), rels, 4) == {1: (3, 5)}


def test_engage_and_release():
    controller = WriteStallController()
    rels = [T, U, MV]
    assert controller.update(version({3: 6}), rels, 5) == {1}
    (stall,) = controller.stalls
    assert (stall.table_id, stall.name, stall.state_table_id, stall.l0_sub_levels) == (1, "t", 3, 6)
    assert REGISTRY.get_sample_value("risingspark_storage_write_stall", {"job": "t"}) == 1
    assert controller.is_stalled(1) and not controller.is_stalled(2)  # another table's writers go on
    since = controller.stalls[0].since
    assert controller.update(version({3: 7}), rels, 5) == {1} and controller.stalls[0].since == since
    controller.update(version({3: 2}), rels, 5)  # compaction caught up
    assert not controller.is_stalled(1) and controller.stalls == []
    assert REGISTRY.get_sample_value("risingspark_storage_write_stall", {"job": "t"}) is None
    assert controller.update(version({3: 60}), rels, 0) == set()  # 0: never stall


def test_an_l0_at_the_threshold_is_due_whatever_its_depth_and_size():
    levels = TableLevels(1, tuple(SubLevel(e, (sst(1, e),)) for e in range(1, 5)),
                         ((), (), (), (), (), (SstableInfo("big", 1, 6, 0, 0, 255, 1, 1, 10**6, 0, 10**9),)))
    config = CompactionConfig()  # trigger 8, L0 1/10**6 of the base: nothing due
    assert pick_compaction(levels, config) is None
    task = pick_compaction(levels, CompactionConfig(l0_stop_write_sub_levels=4))
    assert task is not None and task.kind == "l0" and task.l0_sub_levels == (1,)  # all but the newest 3
