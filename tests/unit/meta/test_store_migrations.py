"""The meta-store schema comes from the same alembic migrations on SQLite and on PostgreSQL:
upgrade to head gives exactly `meta.store.schema`, and the downgrade path goes back to an empty
database and up again."""

from __future__ import annotations

import os
from collections.abc import Iterator

import psycopg
import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory

from conftest import PG_ADMIN
from meta.store.schema import metadata
from meta.store.store import MetaStore, alembic_config


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'meta.db'}"
        return
    name = f"rs_meta_migrations_{os.getpid()}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _tables(store: MetaStore) -> set[str]:
    return set(sa.inspect(store.engine).get_table_names()) - {"alembic_version"}


def _revision(store: MetaStore) -> str | None:
    with store.engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def test_upgrade_gives_the_schema_and_downgrade_undoes_it(store_url: str) -> None:
    store = MetaStore(store_url)
    try:
        head = ScriptDirectory.from_config(alembic_config()).get_current_head()
        store.upgrade()
        assert _revision(store) == head
        assert _tables(store) == set(metadata.tables)
        with store.engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), metadata)
        assert diff == [], f"the migrations and meta.store.schema disagree: {diff}"

        # one step down and up again, then all the way down
        revisions = [s.revision for s in ScriptDirectory.from_config(alembic_config()).walk_revisions()]
        store.downgrade(revisions[1])
        assert _revision(store) == revisions[1]
        store.upgrade()
        assert _revision(store) == head
        store.downgrade("base")
        assert _revision(store) is None
        assert _tables(store) == set()
        store.upgrade()
        assert _tables(store) == set(metadata.tables)
        store.upgrade()  # idempotent at start
        assert _revision(store) == head
    finally:
        store.close()
