"""Headless Chromium driven through the DevTools protocol, for tests that look at the dashboard as a
person would: load a page, read its DOM, click, take a screenshot.

Uses Debian's ``chromium`` package (`.ci/run` installs it) and `websocket-client` for the protocol.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import websocket

BINARIES = ("chromium", "chromium-browser", "google-chrome")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage", "--hide-scrollbars")


def find_chromium() -> str | None:
    return next((path for b in BINARIES if (path := shutil.which(b))), None)


class Chromium:
    """One headless browser with a fresh profile in `profile_dir`, showing one page."""

    def __init__(self, binary: str, profile_dir: Path, *, width: int = 1400, height: int = 1600) -> None:
        self.binary = binary
        self.profile_dir = profile_dir
        self.size = (width, height)
        self.proc: subprocess.Popen | None = None
        self._ws: websocket.WebSocket | None = None
        self._ids = 0
        self.events: list[dict[str, Any]] = []

    def __enter__(self) -> Chromium:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self, timeout: float = 30) -> None:
        self.profile_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.profile_dir.parent / "chromium.log", "wb")  # noqa: SIM115 - lives as long as the browser
        self.proc = subprocess.Popen(
            [self.binary, *FLAGS, f"--user-data-dir={self.profile_dir}", "--remote-debugging-port=0",
             f"--window-size={self.size[0]},{self.size[1]}", "about:blank"],
            stdout=log, stderr=log, start_new_session=True)
        port_file = self.profile_dir / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not (port_file.exists() and port_file.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Chromium did not start (exit {self.proc.poll()}); see {log.name}")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        targets = httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json()
        page = next(t for t in targets if t["type"] == "page")
        self._ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=60, suppress_origin=True)
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=self.size[0], height=self.size[1],
                  deviceScaleFactor=1, mobile=False)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one DevTools command and return its result (events seen meanwhile go to `events`)."""
        assert self._ws is not None
        self._ids += 1
        self._ws.send(json.dumps({"id": self._ids, "method": method, "params": params}))
        while True:
            msg = json.loads(self._ws.recv())
            if msg.get("id") == self._ids:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def navigate(self, url: str, timeout: float = 30) -> None:
        assert self._ws is not None
        self.events.clear()
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + timeout
        try:
            while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"{url} did not load in {timeout} s")
                self._ws.settimeout(remaining)
                self.events.append(json.loads(self._ws.recv()))
        finally:
            self._ws.settimeout(60)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (awaited when it is a promise)."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30, interval: float = 0.25) -> Any:
        """Evaluate `expression` until it is truthy; return that value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"still false after {timeout} s: {expression}")
            time.sleep(interval)

    def console_errors(self) -> list[str]:
        return [str(e["params"]) for e in self.events
                if e.get("method") == "Runtime.exceptionThrown"
                or (e.get("method") == "Runtime.consoleAPICalled" and e["params"].get("type") == "error")]

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        if self._ws is not None:
            with contextlib.suppress(Exception):  # the browser may be gone already
                self.call("Browser.close")
            self._ws.close()
            self._ws = None
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
