"""Nexmark events in the generator's standard proportions, as SQL over a range of event numbers.

Event ``e`` is, as in the Nexmark generator, by ``e % 50``: 0 a person, 1-3 an auction, 4-49 a bid
(person : auction : bid = 1 : 3 : 46), at 10,000 events per second of event time (``date_time`` =
``BASE + e * 100 µs``). Ids follow the generator: person ``1000 + e / 50``, auction ``1000 + 3 * (e / 50)
+ (e % 50 - 1)``. The generator's random choices are replaced by fixed hashes of ``e`` (``(e * P + C) %
2^31-1``), so the rows are the same in every run and in both dialects:

* an auction's seller is a hot seller (a multiple of 4) three times in four, else one of the last
  1,000 people; its category is one of 10-14; it expires 0-333 ms of event time after it opens (the
  generator's auction length at 100 auctions in flight);
* a bid goes to the hot auction (the newest even one) half the time, else to one of the last 100
  auctions; its bidder is a hot bidder three times in four; its price is log-uniform over 100 to 10^8;
  its channel is one of Google, Facebook, Baidu, Apple half the time (url without a ``channel_id``),
  else ``channel-<n>`` with ``&channel_id=<n>`` in its url.

``events_sql(table, first, last, dialect)`` is the ``SELECT`` of the rows of ``table`` among events
``first`` to ``last`` (inclusive): the playground runs it as ``INSERT INTO t SELECT ...`` (PostgreSQL
SQL: ``generate_series``) and Spark as the same columns over ``spark.range`` (``SPARK``), which is how
the batch baseline reads the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass

PROPORTION = {"person": 1, "auction": 3, "bid": 46}
TOTAL = sum(PROPORTION.values())
BASE = "2026-11-26 00:00:00"
EVENT_MICROS = 100  # 10,000 events per second of event time
STATES = ("az", "ca", "id", "or", "wa", "wy")
CITIES = ("phoenix", "los angeles", "san francisco", "boise", "portland", "bend", "redmond", "seattle", "kent",
          "cheyenne")
FIRST_NAMES = ("peter", "paul", "luke", "john", "saul", "vicky", "kate", "julie", "sarah", "deiter", "walter")
LAST_NAMES = ("shultz", "abrams", "spencer", "white", "bartels", "walton", "smith", "jones", "noris")
WORDS = ("zfyxu", "qnkyt", "tmvcz", "ahwxn", "lxzqa", "pcbob", "dwkkr", "oyfvh")
HOT_CHANNELS = ("Google", "Facebook", "Baidu", "Apple")


@dataclass(frozen=True)
class Dialect:
    """How the few dialect-specific pieces are written."""

    text: str  # the string type of a CAST
    div: str  # integer division of two BIGINTs, "{a}" and "{b}"
    ts: str  # TIMESTAMP (without time zone) from microseconds since BASE, "{micros}"


POSTGRES = Dialect("VARCHAR", "({a}) / ({b})", f"TIMESTAMP '{BASE}' + ({{micros}}) * INTERVAL '1 microsecond'")
SPARK = Dialect("STRING", "({a}) div ({b})",
                f"TIMESTAMP_NTZ '{BASE}' + make_dt_interval(0, 0, 0, CAST(({{micros}}) AS DECIMAL(18, 6)) / 1000000)")

_PRIMES = (2654435761, 40503, 2246822519, 3266489917, 668265263, 374761393, 1181783497, 1540483477, 1958533)


def _h(k: int) -> str:
    """The k-th fixed hash of the event number, in [0, 2^31 - 1)."""
    return f"((e * {_PRIMES[k % len(_PRIMES)]} + {k * 7919}) % 2147483647)"


def _pick(values: tuple[str, ...], index: str) -> str:
    return f"CASE {index} % {len(values)} " + " ".join(f"WHEN {i} THEN '{v}'" for i, v in enumerate(values)) + " END"


def _columns(table: str, d: Dialect) -> list[str]:
    epoch = d.div.format(a="e", b=str(TOTAL))  # events of one 50-event round before e
    ts = d.ts.format(micros=f"e * {EVENT_MICROS}")

    def text(x: str) -> str:
        return f"CAST({x} AS {d.text})"

    if table == "person":
        name = f"{_pick(FIRST_NAMES, _h(1))} || ' ' || {_pick(LAST_NAMES, _h(2))}"
        return [f"1000 + {epoch} AS id", f"{name} AS name",
                f"{_pick(FIRST_NAMES, _h(1))} || {text(_h(3) + ' % 1000')} || '@nexmark.com' AS email_address",
                f"{text('1000000000000000 + ' + _h(4) + ' % 1000000000')} AS credit_card",
                f"{_pick(CITIES, _h(5))} AS city", f"{_pick(STATES, _h(6))} AS state", f"{ts} AS date_time",
                "'' AS extra"]
    if table == "auction":
        person = epoch  # the newest person's base-0 id
        initial = f"(100 + {_h(4)} % 9900)"
        expires = d.ts.format(micros=f"e * {EVENT_MICROS} + ({_h(5)} % 333334)")
        seller = f"CASE WHEN {_h(1)} % 4 > 0 THEN {person} - {person} % 4 ELSE {person} - {_h(2)} % LEAST({person} + 1, 1000) END"
        return [f"1000 + 3 * {epoch} + e % {TOTAL} - 1 AS id",
                f"{_pick(WORDS, _h(3))} || ' ' || {_pick(WORDS, _h(6))} AS item_name",
                f"'description ' || {_pick(WORDS, _h(7))} AS description", f"{initial} AS initial_bid",
                f"{initial} + {_h(8)} % 10000 AS reserve", f"{ts} AS date_time", f"{expires} AS expires",
                f"1000 + {seller} AS seller", f"10 + {_h(0)} % 5 AS category", "'' AS extra"]
    assert table == "bid", table
    auction = f"(3 * {epoch} + 2)"  # the newest auction's base-0 id
    person = epoch
    decade = " ".join(f"WHEN {i} THEN {10 ** i}" for i in range(6))
    hot = f"{_h(7)} % 2 = 0"
    channel_no = f"{_h(8)} % 10000"
    url = (f"'https://www.nexmark.com/' || {_pick(WORDS, _h(3))} || '/' || {_pick(WORDS, _h(4))} || '/' || "
           f"{_pick(WORDS, _h(5))} || '/item.htm?query=1'")
    return [f"1000 + CASE WHEN {_h(1)} % 2 > 0 THEN {auction} - {auction} % 2 "
            f"ELSE {auction} - {_h(2)} % LEAST({auction} + 1, 100) END AS auction",
            f"1000 + CASE WHEN {_h(3)} % 4 > 0 THEN {person} - {person} % 4 "
            f"ELSE {person} - {_h(4)} % LEAST({person} + 1, 1000) END AS bidder",
            f"(100 + {_h(5)} % 900) * CASE {_h(6)} % 6 {decade} END AS price",
            f"CASE WHEN {hot} THEN {_pick(HOT_CHANNELS, _h(0))} ELSE 'channel-' || {text(channel_no)} END AS channel",
            f"CASE WHEN {hot} THEN {url} ELSE {url} || '&channel_id=' || {text(channel_no)} END AS url",
            f"{ts} AS date_time", "'' AS extra"]


def _offsets(table: str) -> tuple[int, int]:
    """The event offsets (within a round of 50) of ``table``'s events, first and last."""
    first = {"person": 0, "auction": 1, "bid": 4}[table]
    return first, first + PROPORTION[table] - 1


def event_filter(table: str) -> str:
    lo, hi = _offsets(table)
    return f"e % {TOTAL} = {lo}" if lo == hi else f"e % {TOTAL} BETWEEN {lo} AND {hi}"


def events_sql(table: str, first: int, last: int, dialect: Dialect = POSTGRES) -> str:
    """The rows of ``table`` among events ``first`` to ``last``, in ``dialect``.

    >>> events_sql("person", 0, 99).startswith("SELECT 1000 + (e) / (50) AS id")
    True
    """
    source = (f"generate_series({first}, {last}) AS g(e)" if dialect is POSTGRES
              else f"(SELECT id AS e FROM range({first}, {last + 1})) AS g")
    return f"SELECT {', '.join(_columns(table, dialect))} FROM {source} WHERE {event_filter(table)}"


def events_for_bids(bids: int) -> int:
    """The number of events (from event 0) that hold ``bids`` bids: whole rounds of 50."""
    rounds = -(-bids // PROPORTION["bid"])
    return rounds * TOTAL


def row_counts(events: int) -> dict[str, int]:
    """Rows of each table among events 0 to ``events - 1``."""
    rounds, rest = divmod(events, TOTAL)
    out = {}
    for table in PROPORTION:
        lo, hi = _offsets(table)
        out[table] = rounds * PROPORTION[table] + max(0, min(rest, hi + 1) - lo)
    return out
