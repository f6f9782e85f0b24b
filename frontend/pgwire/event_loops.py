"""The event loops a frontend can run on (its ``event_loop`` setting). Apart from the wire server so
that a frontend's supervisor (`frontend.processes`) checks the setting without importing the server
before it forks."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

EVENT_LOOPS = ("uvloop", "asyncio")


def event_loop_factory(name: str) -> Callable[[], asyncio.AbstractEventLoop]:
    """The event loop a server runs on, by its setting's name (``event_loop``).

    ``uvloop`` (the default) is libuv's loop, written in C, as uvicorn picks it when installed: the
    frontend's event loop reads every message and answers the statements it can take without a
    thread (constant SELECTs, cached point queries, single-row INSERTs), so its own cost is a share
    of every such statement's. ``asyncio`` is the standard library's loop (in Python), kept as the
    baseline the serving benchmark compares with (`bench/serving.py --event-loops`).

    Raises:
        ValueError: an unknown name (before anything starts).
    """
    if name == "uvloop":
        import uvloop

        return uvloop.new_event_loop
    if name == "asyncio":
        return asyncio.SelectorEventLoop  # (not `new_event_loop`: it follows a global policy, which may be uvloop's)
    raise ValueError(f"event_loop must be one of {', '.join(EVENT_LOOPS)}, not {name!r}")
