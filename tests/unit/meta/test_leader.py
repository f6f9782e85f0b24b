"""One active meta per meta store: a second meta's lock attempt fails while the first holds it, and
succeeds once it is released (on PostgreSQL an advisory lock, on SQLite a file lock)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

import psycopg
import pytest

from conftest import PG_ADMIN
from meta.leader import LeaderLock


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'meta.db'}"
        return
    name = f"rs_meta_leader_{os.getpid()}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_one_active_meta_and_a_standby(store_url: str) -> None:
    active, standby = LeaderLock(store_url), LeaderLock(store_url)
    try:
        assert active.try_acquire()
        assert not standby.try_acquire()
        took_over = threading.Event()
        stop = threading.Event()
        waiter = threading.Thread(target=lambda: standby.acquire(stop, poll_s=0.05) and took_over.set())
        waiter.start()
        assert not took_over.wait(0.3)
        active.release()  # the active meta goes away
        waiter.join(30)
        assert took_over.is_set()
        assert not LeaderLock(store_url).try_acquire()
    finally:
        active.release()
        standby.release()


def test_a_standby_gives_up_waiting_when_stopped(store_url: str) -> None:
    active, standby = LeaderLock(store_url), LeaderLock(store_url)
    try:
        assert active.try_acquire()
        stop = threading.Event()
        stop.set()
        assert standby.acquire(stop, poll_s=0.05) is False
    finally:
        active.release()
        standby.release()
