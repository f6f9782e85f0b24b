"""Fixtures: a real wire server with fake sessions on a free port."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .fakes import ServerThread


@pytest.fixture(params=["uvloop", "asyncio"])
def server(request: pytest.FixtureRequest) -> Iterator[ServerThread]:
    """The server on each event loop a frontend can run (`frontend.pgwire.server.event_loop_factory`)."""
    with ServerThread(event_loop=request.param) as srv:
        yield srv
