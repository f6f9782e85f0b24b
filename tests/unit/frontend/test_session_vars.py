"""Time parameters (``statement_timeout`` and the like) take PostgreSQL's units and are shown as
PostgreSQL shows them; the oracle is a real PostgreSQL (127.0.0.1:5432). ``backfill_rate_limit``
takes a number or ``adaptive``, and new jobs' catalog entries say which."""

from __future__ import annotations

import asyncio
import functools

import psycopg
import pytest

from frontend.session_vars import SessionVars, duration_ms
from risingspark.catalog import ADAPTIVE_BACKFILL_RATE, BACKFILL_RATE_LIMIT
from risingspark.errors import InvalidParameterValue

PG = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"
VALUES = ["0", "500", "1s", "1.5s", "1min", "90s", "2h", "1d", "250ms", "1500us", "60000", " 2 s ", "1e3"]
INVALID = ["abc", "1x", "-1", "1 sec", "", "2147483648", "3000000s", "1e10"]


def _results(session, sql: str) -> list:
    """The statement results of one simple query on a session."""
    async def collect():
        return [r async for r in session.execute_simple(sql)]

    return asyncio.run(collect())


@pytest.fixture(scope="module")
def pg():
    with psycopg.connect(PG, autocommit=True) as c:
        yield c


@pytest.mark.parametrize("value", VALUES)
def test_statement_timeout_as_postgres_shows_it(pg, value):
    pg.execute("SELECT set_config('statement_timeout', %s, false)", (value,))
    expected = pg.execute("SHOW statement_timeout").fetchone()[0]
    pg.execute("RESET statement_timeout")
    v = SessionVars()
    v.set("statement_timeout", value)
    assert v.get("statement_timeout") == expected
    assert duration_ms(expected) == pg.execute("SELECT %s::interval", (expected if expected != "0" else "0ms",)
                                               ).fetchone()[0].total_seconds() * 1000


@pytest.mark.parametrize("value", INVALID)
def test_invalid_timeouts_fail_as_in_postgres(pg, value):
    with pytest.raises(psycopg.errors.InvalidParameterValue) as pg_error:
        pg.execute("SELECT set_config('statement_timeout', %s, false)", (value,))
    with pytest.raises(InvalidParameterValue) as ours:
        SessionVars().set("statement_timeout", value)
    assert ours.value.sqlstate == pg_error.value.sqlstate == "22023"
    assert str(ours.value) == pg_error.value.diag.message_primary
    assert ours.value.hint == pg_error.value.diag.message_hint


@pytest.mark.parametrize(("value", "shown", "extra"), [
    ("adaptive", "adaptive", {ADAPTIVE_BACKFILL_RATE: True}), (" ADAPTIVE ", "adaptive", {ADAPTIVE_BACKFILL_RATE: True}),
    ("5000", "5000", {BACKFILL_RATE_LIMIT: 5000}), ("0", "0", {BACKFILL_RATE_LIMIT: 0}), ("-1", "-1", {}),
])
def test_backfill_rate_limit_takes_a_number_or_adaptive(value, shown, extra):
    v = SessionVars()
    assert v.backfill_rate_extra() == {}
    v.set("backfill_rate_limit", value)
    assert v.get("backfill_rate_limit") == shown
    assert v.backfill_rate_extra() == extra
    v.set("backfill_rate_limit", None)  # SET ... TO DEFAULT
    assert v.get("backfill_rate_limit") == "-1" and v.backfill_rate_extra() == {}


@pytest.mark.parametrize("value", ["adaptiv", "fast", "1.5", "", "-2"])
def test_a_bad_backfill_rate_limit_is_an_invalid_parameter_value(value):
    with pytest.raises(InvalidParameterValue) as e:
        SessionVars().set("backfill_rate_limit", value)
    assert e.value.sqlstate == "22023"
    assert "backfill_rate_limit" in str(e.value) or "minimum -1" in str(e.value)


def test_a_reported_setting_changed_by_set_or_reset_is_announced():
    """PostgreSQL sends ParameterStatus when SET or RESET changes a reported setting (TimeZone,
    DateStyle, IntervalStyle...); psycopg shows timestamptz values in the reported TimeZone."""
    from catalog_session import make_session

    session = make_session()
    run = functools.partial(_results, session)
    assert run("SET TimeZone = 'Asia/Kolkata'")[0].parameters == {"TimeZone": "Asia/Kolkata"}
    assert run("SET statement_timeout = '1s'")[0].parameters == {}
    assert run("RESET timezone")[0].parameters == {"TimeZone": "UTC"}
    assert session.time_zone is None


TRANSACTION_SCRIPT = [
    "SET statement_timeout = '5s'",
    "BEGIN", "SET statement_timeout = '1s'", "ROLLBACK",
    "BEGIN", "SET LOCAL statement_timeout = '2s'", "COMMIT",
    "BEGIN", "SET statement_timeout = '3s'", "SET LOCAL statement_timeout = '4s'", "COMMIT",
    "SET LOCAL statement_timeout = '7s'",  # outside a block: a WARNING, no effect
    "BEGIN", "RESET statement_timeout", "ROLLBACK",
    "BEGIN", "SET statement_timeout = '6s'", "SAVEPOINT s", "SET LOCAL statement_timeout = '8s'", "COMMIT",
    "START TRANSACTION", "SET statement_timeout = '9s'", "ABORT",
    "BEGIN", "SET statement_timeout = '1min'", "END",
]


def test_settings_are_transactional_as_in_postgresql(pg):
    """A ROLLBACK restores the settings its block changed; SET LOCAL lasts until the block ends (and
    has no effect outside one, with PostgreSQL's WARNING); COMMIT keeps a plain SET. The value after
    each statement is PostgreSQL's."""
    from catalog_session import make_session

    session = make_session()
    run = functools.partial(_results, session)
    want, got, warnings = [], [], []
    try:
        for sql in TRANSACTION_SCRIPT:
            pg.execute(sql)
            want.append(pg.execute("SHOW statement_timeout").fetchone()[0])
            result = run(sql)[0]
            warnings += [n.message for n in result.notices if not isinstance(n, str)]
            got.append(run("SHOW statement_timeout")[0].rows[0][0])
    finally:
        pg.execute("ROLLBACK")  # (a WARNING when no block is open)
        pg.execute("RESET statement_timeout")
    assert got == want
    assert warnings == ["SET LOCAL can only be used in transaction blocks"]
    # a reported setting restored by a ROLLBACK is announced again
    run("BEGIN")
    assert run("SET TimeZone = 'Asia/Kolkata'")[0].parameters == {"TimeZone": "Asia/Kolkata"}
    assert run("ROLLBACK")[0].parameters == {"TimeZone": "UTC"}
    assert session.time_zone is None
