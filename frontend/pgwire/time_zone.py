"""timestamptz values shown in the session's ``TimeZone``, as PostgreSQL shows them.

A timestamptz is an instant (stored and computed in UTC). PostgreSQL prints it as the wall time of
the session's ``TimeZone`` with that zone's offset at the instant (``2024-06-15 08:00:00-04``,
``+05:30``, ``+05:45``); the binary format is the instant whatever the zone. `display_zone` reads the
setting: an IANA zone name in any case; a whole-hour POSIX offset (``UTC+5``, which PostgreSQL reads
with the inverted sign) or number (``SET TIME ZONE -5``) as an ``Etc/GMT`` zone; ``UTC``, its aliases
and anything else (``+05:30``) keep UTC, as before (an unknown zone *name* is refused at SET); the encoders of
`frontend.pgwire.datarows` take the zone (``encode_rows(..., time_zone)``) and print a timestamptz's
wall time there with `offset_text`, PostgreSQL's offset form. The batch engine also
runs the session's queries in the zone (DuckDB's ``TimeZone``, `frontend.batch`), so ``::date``,
``extract(hour ...)`` and ``date_trunc`` of a timestamptz and an unzoned timestamptz literal follow it.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import zoneinfo

_UTC_NAMES = {"utc", "etc/utc", "gmt", "etc/gmt", "z", "zulu", "uct", "universal", "etc/universal", "etc/zulu",
              "etc/uct", "greenwich", "etc/greenwich", "gmt0", "gmt+0", "gmt-0", "etc/gmt0", "etc/gmt+0", "etc/gmt-0"}


_OFFSET = re.compile(r"(?:UTC|GMT)?\s*([+-]?)(\d{1,2})", re.IGNORECASE)


@functools.lru_cache(maxsize=256)
def display_zone(setting: str) -> str | None:
    """The IANA zone a ``TimeZone`` setting names, or None for UTC (see the module doc): a zone name
    in any case (``america/new_york``, as PostgreSQL), or a whole-hour POSIX offset (``UTC+5``,
    ``-5``: five hours west of UTC, PostgreSQL's reading) as the ``Etc/GMT+5`` zone."""
    name = setting.strip().strip("'\"")
    if name.lower() in _UTC_NAMES:
        return None
    if m := _OFFSET.fullmatch(name):
        hours = int(m.group(2)) * (-1 if m.group(1) == "-" else 1)
        if name[:1].isdigit() or name[:1] in "+-":  # SET TIME ZONE -5: an offset from UTC (east positive)
            hours = -hours
        return None if hours == 0 else f"Etc/GMT{hours:+d}" if abs(hours) <= 14 else None
    return _ZONES().get(name.lower())


@functools.cache
def _ZONES() -> dict[str, str]:  # noqa: N802 - a constant built once
    return {z.lower(): z for z in zoneinfo.available_timezones()}


def looks_like_a_zone_name(setting: str) -> bool:
    """A setting PostgreSQL would read as a zone name (letters, ``/``, ``_``, ``-``): one
    `display_zone` does not know is an error (22023), as in PostgreSQL."""
    name = setting.strip().strip("'\"")
    return bool(re.fullmatch(r"[A-Za-z][A-Za-z_/-]*", name)) and name.lower() not in _UTC_NAMES


def offset_text(offset: dt.timedelta) -> str:
    """PostgreSQL's offset: ``-04``, ``+05:30``, ``+00:19:32`` (seconds only when there are some).

    >>> offset_text(dt.timedelta(hours=-4)), offset_text(dt.timedelta(hours=5, minutes=30))
    ('-04', '+05:30')
    """
    seconds = int(offset.total_seconds())
    sign = "-" if seconds < 0 else "+"
    h, rest = divmod(abs(seconds), 3600)
    m, s = divmod(rest, 60)
    return f"{sign}{h:02d}" + (f":{m:02d}" if m or s else "") + (f":{s:02d}" if s else "")


@functools.lru_cache(maxsize=256)
def zone_info(zone: str) -> zoneinfo.ZoneInfo:
    return zoneinfo.ZoneInfo(zone)
