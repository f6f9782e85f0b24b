"""A small seeded Nexmark event set — people, auctions and bids over three minutes that cross
midnight (two days for the per-day queries, 18 ten-second windows) — and a seeded stream of
inserts, updates and deletes over it.

Bid prices and bid times are unique, so the queries that rank bids (q6, q9, q18, q19: ``ORDER BY
price`` within an auction, ``date_time``) have one answer; ``extra`` names each bid (``b<n>``),
which is how the writer addresses a row of the key-less bid table. Most bids fall within their
auction's [date_time, expires]; a few auctions draw 20 bids or more (q103, q104); ids include q2's
1007, 1020, 2001, 2019 and 2087; urls look like Nexmark's, some with a ``channel_id`` (q21, q22).
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field

import psycopg

from support.workloads import sql_literal, values_sql

START = dt.datetime(2026, 11, 26, 23, 58, 30)
SPAN_MS = 180_000
STATES = ["or", "id", "ca", "wa", "az", "ny"]
CITIES = ["Portland", "Boise", "San Francisco", "Seattle", "Phoenix", "New York"]
CHANNELS = ["apple", "Google", "facebook", "Baidu", "channel-2031", "channel-4409", "partner"]
WORDS = ["a1b2", "zzx", "qwerty", "k9", "nexus", "abc", "xyz", "p0p"]
AUCTION_IDS = list(range(1000, 1040)) + list(range(2000, 2020)) + [2087]
PERSON_IDS = list(range(1000, 1040))


@dataclass
class Nexmark:
    """The rows of person, auction and bid (tuples in the DDL's column order)."""

    tables: dict[str, list[tuple]] = field(default_factory=dict)
    auctions: dict[int, tuple] = field(default_factory=dict)  # id -> its row
    used_prices: set[int] = field(default_factory=set)
    used_ms: set[int] = field(default_factory=set)
    next_bid: int = 0


def _at(ms: int) -> dt.datetime:
    return START + dt.timedelta(milliseconds=ms)


def _person(rng: random.Random, pid: int, ms: int) -> tuple:
    i = rng.randrange(len(STATES))
    return (pid, f"person {pid}", f"p{pid}@example.com", f"{rng.randrange(10**15, 10**16)}", CITIES[i], STATES[i],
            _at(ms), "")


def _auction(rng: random.Random, aid: int, ms: int, seller: int) -> tuple:
    initial = rng.randrange(100, 5000)
    return (aid, f"item {aid}", f"description {rng.choice(WORDS)}", initial, initial + rng.randrange(0, 10000),
            _at(ms), _at(ms + rng.randrange(10_000, 60_000)), seller, rng.randrange(10, 15), "")


def unique_price(rng: random.Random, d: Nexmark) -> int:
    """< 10,000, < 1,000,000 or more (q15-q17's ranks), never one used before."""
    while True:
        hi = rng.choice([10_000, 10_000, 1_000_000, 1_000_000, 50_000_000])
        price = rng.randrange(hi // 100, hi)
        if price not in d.used_prices:
            d.used_prices.add(price)
            return price


def unique_ms(rng: random.Random, d: Nexmark, lo: int, hi: int) -> int:
    while True:
        ms = rng.randrange(max(lo, 0), max(min(hi, SPAN_MS), lo + 1))
        if ms not in d.used_ms:
            d.used_ms.add(ms)
            return ms


def new_bid(rng: random.Random, d: Nexmark, auction: int | None = None) -> tuple:
    if auction is None:  # a few auctions are hot (q103, q104)
        auction = rng.choice(AUCTION_IDS[:4] if rng.random() < 0.25 else AUCTION_IDS)
    a = d.auctions.get(auction)
    if a is not None and rng.random() < 0.8:  # within the auction's lifetime (q4, q6, q9, q106)
        ms = unique_ms(rng, d, (a[5] - START) // dt.timedelta(milliseconds=1),
                       (a[6] - START) // dt.timedelta(milliseconds=1))
    else:
        ms = unique_ms(rng, d, 0, SPAN_MS)
    channel = rng.choice(CHANNELS)
    url = f"https://www.nexmark.com/{rng.choice(WORDS)}/{rng.choice(WORDS)}/{rng.choice(WORDS)}/item.htm?query=1"
    if rng.random() < 0.6:
        url += f"&channel_id={rng.randrange(100, 10_000)}"
    d.next_bid += 1
    return (auction, rng.choice(PERSON_IDS), unique_price(rng, d), channel, url, _at(ms), f"b{d.next_bid}")


def generate(rng: random.Random, bids: int = 1000) -> Nexmark:
    d = Nexmark()
    person_ms = sorted(rng.sample(range(0, SPAN_MS - 30_000), len(PERSON_IDS)))
    d.tables["person"] = [_person(rng, pid, ms) for pid, ms in zip(PERSON_IDS, person_ms, strict=True)]
    d.tables["auction"] = []
    for aid in AUCTION_IDS:
        ms = rng.randrange(0, SPAN_MS - 20_000)
        # often a seller who joined just before (the same 10 s window: q8)
        earlier = [p for p, pms in zip(PERSON_IDS, person_ms, strict=True) if pms <= ms] or PERSON_IDS[:1]
        seller = earlier[-1] if rng.random() < 0.5 else rng.choice(PERSON_IDS)
        d.auctions[aid] = _auction(rng, aid, ms, seller)
        d.tables["auction"].append(d.auctions[aid])
    d.tables["bid"] = [new_bid(rng, d) for _ in range(bids)]
    return d


class NexmarkWriter:
    """A seeded stream of inserts, updates and deletes of people, auctions and bids."""

    def __init__(self, rng: random.Random, data: Nexmark) -> None:
        self.rng, self.d = rng, data
        self.next_person, self.next_auction = 3000, 4000

    def statements(self, n: int) -> list[str]:
        rng, d = self.rng, self.d
        out: list[str] = []
        while len(out) < n:
            x = rng.random()
            bid = f"'b{rng.randrange(1, d.next_bid + 1)}'"
            if x < 0.35:
                out.append("INSERT INTO bid VALUES " + ", ".join(values_sql(new_bid(rng, d)) for _ in range(3)))
            elif x < 0.45:
                out.append(f"UPDATE bid SET price = {unique_price(rng, d)} WHERE extra = {bid}")
            elif x < 0.5:
                ms = unique_ms(rng, d, 0, SPAN_MS)
                out.append(f"UPDATE bid SET date_time = {sql_literal(_at(ms))}, "
                           f"channel = '{rng.choice(CHANNELS)}' WHERE extra = {bid}")
            elif x < 0.6:
                out.append(f"DELETE FROM bid WHERE extra = {bid}")
            elif x < 0.66:
                pid = self.next_person
                self.next_person += 1
                out.append(f"INSERT INTO person VALUES {values_sql(_person(rng, pid, rng.randrange(SPAN_MS)))}")
            elif x < 0.72:
                i = rng.randrange(len(STATES))
                out.append(f"UPDATE person SET state = '{STATES[i]}', city = '{CITIES[i]}' "
                           f"WHERE id = {rng.choice(PERSON_IDS)}")
            elif x < 0.75:
                out.append(f"DELETE FROM person WHERE id = {rng.choice(PERSON_IDS)}")
            elif x < 0.82:
                aid = self.next_auction
                self.next_auction += 1
                ms = rng.randrange(SPAN_MS - 20_000)
                a = _auction(rng, aid, ms, rng.choice(PERSON_IDS))
                d.auctions[aid] = a
                out.append(f"INSERT INTO auction VALUES {values_sql(a)}")
                out.append("INSERT INTO bid VALUES " + ", ".join(values_sql(new_bid(rng, d, aid)) for _ in range(3)))
            elif x < 0.92:
                aid = rng.choice(AUCTION_IDS)
                a = d.auctions[aid]
                a = d.auctions[aid] = (*a[:6], a[5] + dt.timedelta(milliseconds=rng.randrange(5_000, 60_000)), *a[7:])
                out.append(f"UPDATE auction SET category = {rng.randrange(10, 15)}, expires = {sql_literal(a[6])} "
                           f"WHERE id = {aid}")
            else:
                out.append(f"DELETE FROM auction WHERE id = {rng.choice(AUCTION_IDS[4:])}")
        return out

    def step(self, conn: psycopg.Connection, n: int) -> None:
        for stmt in self.statements(n):
            conn.execute(stmt)
