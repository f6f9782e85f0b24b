"""``WITH c AS CHANGELOG FROM relation`` in a materialized view, as RisingWave's changelog
(`e2e_test/streaming/changelog.slt`): one row per change the upstream saw since the view was
created — its snapshot as inserts, then inserts (1), deletes (2), updates as an update delete (4) and
an update insert (3) — in an append-only view; and a setting without a plan choice here answers
SET with a NOTICE."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import errors

from conftest import PlaygroundProcess, unique_name

pytestmark = pytest.mark.e2e


def test_changelog_rows_follow_the_upstream_changes(playground: PlaygroundProcess) -> None:
    t = unique_name("cl")
    with playground.connect() as conn:
        conn.execute(f"CREATE TABLE {t}_rows (v1 INT, v2 INT)")
        conn.execute(f"CREATE TABLE {t}_keyed (v1 INT PRIMARY KEY, v2 INT)")
        conn.execute(f"INSERT INTO {t}_keyed VALUES (9, 90)")  # before the views: their snapshot
        conn.execute("FLUSH")
        conn.execute(f"CREATE MATERIALIZED VIEW {t}_1 AS WITH sub AS changelog FROM public.{t}_rows SELECT * FROM sub")
        conn.execute(f"CREATE MATERIALIZED VIEW {t}_2 AS WITH sub AS CHANGELOG FROM {t}_keyed "
                     f"SELECT v1, v2, changelog_op, _changelog_row_id AS row_id FROM sub")
        conn.execute(f"CREATE MATERIALIZED VIEW {t}_3 AS WITH sub AS changelog FROM {t}_keyed "
                     f"SELECT changelog_op, count(*) AS n, max(v2) AS top FROM sub GROUP BY changelog_op")
        conn.execute(f"INSERT INTO {t}_rows VALUES (1, 1), (2, 2)")
        conn.execute(f"INSERT INTO {t}_keyed VALUES (5, 5), (6, 6)")
        conn.execute("FLUSH")
        conn.execute(f"UPDATE {t}_rows SET v2 = 100 WHERE v1 = 1")
        conn.execute(f"UPDATE {t}_keyed SET v2 = 500 WHERE v1 = 5")
        conn.execute(f"INSERT INTO {t}_keyed VALUES (6, 60)")  # an insert over a key: an update
        conn.execute("FLUSH")
        conn.execute(f"DELETE FROM {t}_rows WHERE v1 = 2")
        conn.execute(f"DELETE FROM {t}_keyed WHERE v1 = 9")
        conn.execute("FLUSH")

        assert [d.name for d in conn.execute(f"SELECT * FROM {t}_1").description] == ["v1", "v2", "changelog_op"]
        assert sorted(conn.execute(f"SELECT * FROM {t}_1").fetchall()) == \
            [(1, 1, 1), (1, 1, 4), (1, 100, 3), (2, 2, 1), (2, 2, 2)]
        rows = conn.execute(f"SELECT v1, v2, changelog_op, row_id FROM {t}_2").fetchall()
        assert sorted(r[:3] for r in rows) == \
            [(5, 5, 1), (5, 5, 4), (5, 500, 3), (6, 6, 1), (6, 6, 4), (6, 60, 3), (9, 90, 1), (9, 90, 2)]
        ids = {r[3] for r in rows}
        assert len(ids) == len(rows) and all(isinstance(i, int) for i in ids)
        # the snapshot's insert of 9 came before its delete
        by_change = {(r[0], r[2]): r[3] for r in rows}
        assert by_change[(9, 1)] < by_change[(9, 2)] and by_change[(5, 1)] < by_change[(5, 3)]
        assert sorted(conn.execute(f"SELECT * FROM {t}_3").fetchall()) == \
            [(1, 3, 90), (2, 1, 90), (3, 2, 500), (4, 2, 6)]

        plan = [r[0] for r in conn.execute(f"EXPLAIN CREATE MATERIALIZED VIEW x AS WITH c AS changelog FROM {t}_keyed "
                                           f"SELECT * FROM c").fetchall()]
        assert plan[0].startswith("StreamMaterialize [append_only]") and any("StreamChangeLog" in p for p in plan), plan


def test_changelog_errors(conn: psycopg.Connection) -> None:
    t = unique_name("cl_err")
    conn.execute(f"CREATE TABLE {t} (v INT)")
    with pytest.raises(errors.FeatureNotSupported, match="CHANGELOG"):
        conn.execute(f"WITH c AS changelog FROM {t} SELECT * FROM c")
    with pytest.raises(errors.FeatureNotSupported, match="CHANGELOG"):
        conn.execute(f"CREATE VIEW {t}_v AS WITH c AS changelog FROM {t} SELECT * FROM c")
    with pytest.raises(errors.UndefinedTable):
        conn.execute(f"CREATE MATERIALIZED VIEW {t}_m AS WITH c AS changelog FROM {t}_missing SELECT * FROM c")


def test_set_of_a_setting_without_a_plan_choice_sends_a_notice(conn: psycopg.Connection) -> None:
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
    conn.execute("SET rw_streaming_enable_delta_join = true")
    conn.execute("SET streaming_parallelism_for_table = 2")
    assert len(notices) == 1 and "streaming_enable_delta_join" in notices[0], notices
    assert conn.execute("SHOW rw_streaming_enable_delta_join").fetchone() == ("true",)
    with pytest.raises(errors.InvalidParameterValue):
        conn.execute("SET streaming_join_encoding = fastest")
