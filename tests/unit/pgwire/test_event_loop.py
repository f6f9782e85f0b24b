"""The frontend's event loop setting (`frontend.pgwire.server.event_loop_factory`, `run_server`)."""

from __future__ import annotations

import asyncio
import signal

import pytest
import uvloop

from frontend.pgwire.server import SHUTDOWN_SIGNALS, event_loop_factory, run_server


@pytest.mark.parametrize(("name", "kind"), [("uvloop", uvloop.Loop), ("asyncio", asyncio.BaseEventLoop)])
def test_a_server_runs_on_the_loop_it_names(name: str, kind: type) -> None:
    seen = []

    async def main() -> None:
        seen.append(asyncio.get_running_loop())

    run_server(main(), name)
    assert isinstance(seen[0], kind)
    assert (name == "uvloop") == isinstance(seen[0], uvloop.Loop)


def test_an_unknown_loop_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="event_loop must be one of uvloop, asyncio, not 'trio'"):
        event_loop_factory("trio")


def test_the_command_line_refuses_an_unknown_loop_before_starting(capsys: pytest.CaptureFixture[str]) -> None:
    from risingspark.cli import main

    assert main(["frontend", "--event-loop", "trio", "--metrics-port", "0"]) == 1
    assert "event_loop must be one of uvloop, asyncio, not 'trio'" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["uvloop", "asyncio"])
def test_the_shutdown_signals_act_again_once_the_server_ended(name: str) -> None:
    """A Ctrl-C or SIGTERM while the process shuts down after the server's loop (uvloop left them bound
    to its closed loop, where they did nothing)."""
    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig in SHUTDOWN_SIGNALS:
            loop.add_signal_handler(sig, lambda: None)

    before = {sig: signal.getsignal(sig) for sig in SHUTDOWN_SIGNALS}
    run_server(main(), name)
    assert {sig: signal.getsignal(sig) for sig in SHUTDOWN_SIGNALS} == before


@pytest.mark.parametrize("name", ["uvloop", "asyncio"])
def test_the_handlers_in_effect_before_the_server_are_put_back(name: str) -> None:
    """As a SparkContext's SIGINT handler in the same process: removing the loop's handler sets the
    default one, not the one it replaced."""
    def before_the_server(signum: int, frame: object) -> None:
        pass

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig in SHUTDOWN_SIGNALS:
            loop.add_signal_handler(sig, lambda: None)

    saved = {sig: signal.signal(sig, before_the_server) for sig in SHUTDOWN_SIGNALS}
    try:
        run_server(main(), name)
        assert {sig: signal.getsignal(sig) for sig in SHUTDOWN_SIGNALS} == dict.fromkeys(SHUTDOWN_SIGNALS,
                                                                                        before_the_server)
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def test_the_standard_loop_is_the_standard_loop_under_uvloops_policy() -> None:
    policy = asyncio.get_event_loop_policy()
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())  # (as some uvicorn versions set for the process)
    try:
        loop = event_loop_factory("asyncio")()
        try:
            assert not isinstance(loop, uvloop.Loop)
        finally:
            loop.close()
    finally:
        asyncio.set_event_loop_policy(policy)
