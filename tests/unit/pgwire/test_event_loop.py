"""The frontend's event loop setting (`frontend.pgwire.server.event_loop_factory`, `run_server`)."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

from frontend.pgwire.server import event_loop_factory, run_server


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
