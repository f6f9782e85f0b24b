"""`meta.child_process.free_port`: the ports meta gives its children (and the tests their services)."""

from __future__ import annotations

import random
import socket

import pytest

from meta import child_process
from meta.child_process import LOWEST_PORT, free_port


def test_a_port_is_free_and_below_the_ephemeral_range() -> None:
    """Outgoing connections take ports of the ephemeral range: one took a port `bind(0)` had given
    before the service bound it."""
    low = child_process._ephemeral_low()
    for _ in range(20):
        port = free_port("127.0.0.1")
        assert LOWEST_PORT <= port < low
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_a_port_in_use_is_drawn_again(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        taken = held.getsockname()[1]
        draws = iter([taken, taken])
        real = random.Random(0)
        monkeypatch.setattr(child_process, "_ephemeral_low", lambda: max(taken + 1, LOWEST_PORT + 2))
        monkeypatch.setattr(child_process._PORTS, "randint", lambda lo, hi: next(draws, real.randint(lo, hi)))
        assert free_port("127.0.0.1") != taken


def test_without_room_below_the_ephemeral_range_the_kernel_picks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(child_process, "_ephemeral_low", lambda: LOWEST_PORT)
    assert free_port("127.0.0.1") > 0
