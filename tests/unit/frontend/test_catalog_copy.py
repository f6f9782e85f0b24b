"""A frontend of its own reads a copy of the catalog that meta pushes (`meta.client`): a statement
naming an object the copy does not have yet (made through another frontend a moment ago) asks meta
again and runs once more; a name that does not exist anywhere fails as before, after one question."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from catalog_session import DB, EVENTS, ORDERS, make_session

from risingspark.catalog import DatabaseCatalog
from risingspark.errors import InvalidCatalogName, UndefinedTable


def _run(coro):
    return asyncio.run(coro)


def test_a_relation_made_elsewhere_is_found_after_asking_meta_again():
    session = make_session([ORDERS])
    meta = session.frontend.meta
    meta.pending = replace(meta.snapshot, version=meta.snapshot.version + 1,
                           relations={**meta.snapshot.relations, EVENTS.id: EVENTS})
    result = _run(session.execute("SELECT count(*) AS n FROM events", [], []))
    assert result.rows.to_pylist() == [{"n": 0}]
    assert meta.syncs == 1
    # the copy now has it: no more questions
    _run(session.execute("SELECT count(*) AS n FROM events", [], []))
    assert meta.syncs == 1


def test_a_name_that_exists_nowhere_fails_after_one_question():
    session = make_session([ORDERS])
    with pytest.raises(UndefinedTable, match='relation "nowhere" does not exist'):
        _run(session.execute("SELECT * FROM nowhere", [], []))
    assert session.frontend.meta.syncs == 1


def test_a_database_made_elsewhere_accepts_connections():
    session = make_session([ORDERS])
    meta = session.frontend.meta
    with pytest.raises(InvalidCatalogName):
        _run(session.startup({"user": "root", "database": "analytics"}))
    meta.pending = replace(meta.snapshot, version=meta.snapshot.version + 1,
                           databases={**meta.snapshot.databases, DB + 100: DatabaseCatalog(DB + 100, "analytics")})
    assert _run(session.startup({"user": "root", "database": "analytics"}))["session_authorization"] == "root"
