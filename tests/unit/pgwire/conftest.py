"""Fixtures: a real wire server with fake sessions on a free port."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .fakes import ServerThread


@pytest.fixture
def server() -> Iterator[ServerThread]:
    with ServerThread() as srv:
        yield srv
