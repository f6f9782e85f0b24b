"""Fail points: named places in the code where a test can make a service pause, so that a kill -9
lands at a known moment (a compactor that has written its outputs but not reported them).

As RisingWave's use of the `fail` crate (``fail_point!("...")``, configured by the ``FAILPOINTS``
environment variable of a test build): a service's ``--failpoints`` setting (``RISINGSPARK_FAILPOINTS``)
is a comma-separated list of ``name=seconds``; `hit(name)` then logs and sleeps that long. With no
setting, `hit` is a dictionary lookup.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from risingspark.errors import InvalidParameterValue

logger = logging.getLogger(__name__)

_PAUSES: dict[str, float] = {}


def configure(spec: str) -> None:
    """Set the process' fail points from ``"a.b=30,c=1.5"`` (replacing earlier ones)."""
    pauses = {}
    for item in spec.split(","):
        if not item.strip():
            continue
        name, sep, seconds = item.partition("=")
        try:
            pauses[name.strip()] = float(seconds)
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            raise InvalidParameterValue(f"invalid fail point {item.strip()!r}: expected name=seconds")
    _PAUSES.clear()
    _PAUSES.update(pauses)


def hit(name: str, detail: Callable[[], str] = lambda: "") -> None:
    """Pause here if the fail point `name` is set (`detail` says, in the log line, what is done)."""
    seconds = _PAUSES.get(name)
    if seconds is None:
        return
    logger.warning("fail point %s: pausing %.1f s %s", name, seconds, detail())
    time.sleep(seconds)
