"""psql 15 against the playground: its backslash commands run their own catalog queries, and any one
of them failing makes psql print nothing for the command, so each test asserts on what psql prints.
Tab completion runs psql's completion queries through a pseudo-terminal."""

from __future__ import annotations

import os
import pty
import select
import shutil
import signal
import subprocess

import psycopg
import pytest

from conftest import PlaygroundProcess, unique_name

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(shutil.which("psql") is None, reason="psql is not installed")]


@pytest.fixture(scope="module")
def shop(playground: PlaygroundProcess) -> str:
    """A schema with a table, a view, a materialized view and an index, on the search path of psql."""
    schema = unique_name("psql")
    with playground.connect() as c:
        c.execute(f"create schema {schema}")
        c.execute(f"set search_path to {schema}")
        c.execute("create table orders (id int primary key, customer varchar not null, amount numeric(10,2), "
                  "placed timestamp)")
        c.execute("insert into orders values (1, 'ann', 10.50, '2024-01-01 10:00:00'), (2, 'bob', 3.25, null)")
        c.execute("flush")
        c.execute("create view big_orders as select id, amount from orders where amount > 5")
        c.execute("create materialized view totals as select customer, sum(amount) as total from orders "
                  "group by customer")
        c.execute("create index totals_by_total on totals (total)")
        c.execute("create index orders_by_customer on orders (customer)")
        c.execute("comment on table orders is 'every order'")
        c.execute("comment on column orders.amount is 'in euros'")
    return schema


def psql(playground: PlaygroundProcess, schema: str | None, *args: str, input: str | None = None,
         check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PGCONNECT_TIMEOUT": "10", "PGCLIENTENCODING": "UTF8", "PGTZ": "UTC"}
    env.pop("PGPASSWORD", None)
    if schema:
        env["PGOPTIONS"] = f"-c search_path={schema}"
    out = subprocess.run(["psql", "-X", "-h", "127.0.0.1", "-p", str(playground.port), "-U", "root", "-d", "dev",
                          *args], env=env, input=input, capture_output=True, text=True, timeout=120)
    if check:
        assert out.returncode == 0 and out.stderr == "", out.stderr
    return out


def test_list_relations(playground: PlaygroundProcess, shop: str) -> None:
    s = shop
    rows = [line.split("|") for line in psql(playground, shop, "-c", r"\d").stdout.splitlines()[3:-2]]
    assert [[c.strip() for c in r] for r in rows] == [
        [s, "big_orders", "view", "root"], [s, "orders", "table", "root"], [s, "totals", "materialized view", "root"]]
    for cmd, expected in [(r"\dt", [[s, "orders", "table", "root"]]), (r"\dv", [[s, "big_orders", "view", "root"]]),
                          (r"\dm", [[s, "totals", "materialized view", "root"]]),
                          (r"\di", [[s, "orders_by_customer", "index", "root", "orders"],
                                    [s, "totals_by_total", "index", "root", "totals"]])]:
        out = psql(playground, shop, "-c", cmd).stdout.splitlines()
        assert out[0].strip() == "List of relations"
        assert [[c.strip() for c in line.split("|")] for line in out[3:-2]] == expected, cmd
        assert out[-2] == f"({len(expected)} row{'s' if len(expected) > 1 else ''})"
    nothing = psql(playground, shop, "-c", r"\dv nothing*", check=False)
    assert (nothing.stdout, nothing.stderr) == ("", 'Did not find any relation named "nothing*".\n')


def test_describe_table(playground: PlaygroundProcess, shop: str) -> None:
    lines = psql(playground, shop, "-c", r"\d orders").stdout.splitlines()
    assert lines[0].strip() == f'Table "{shop}.orders"'
    assert [[c.strip() for c in line.split("|")] for line in lines[3:7]] == [
        ["id", "integer", "", "not null", ""], ["customer", "character varying", "", "not null", ""],
        ["amount", "numeric(10,2)", "", "", ""], ["placed", "timestamp without time zone", "", "", ""]]
    assert lines[7:9] == ["Indexes:", '    "orders_by_customer" btree (customer)']
    plus = psql(playground, shop, "-c", r"\d+ orders").stdout.splitlines()
    assert plus[0].strip() == f'Table "{shop}.orders"'
    assert plus[5].split("|")[0].strip() == "amount" and plus[5].split("|")[-1].strip() == "in euros"


def test_describe_views(playground: PlaygroundProcess, shop: str) -> None:
    mv = psql(playground, shop, "-c", r"\d+ totals").stdout.splitlines()
    assert mv[0].strip() == f'Materialized view "{shop}.totals"'
    assert [line.split("|")[0].strip() for line in mv[3:5]] == ["customer", "total"]
    assert "View definition:" in mv
    assert mv[mv.index("View definition:") + 1].strip().startswith("select customer, sum(amount) as total")
    assert '    "totals_by_total" btree (total)' in mv
    view = psql(playground, shop, "-c", r"\d+ big_orders").stdout.splitlines()
    assert view[0].strip() == f'View "{shop}.big_orders"'
    assert [line.split("|")[0].strip() for line in view[3:5]] == ["id", "amount"]
    assert view[view.index("View definition:") + 1].strip() == "select id, amount from orders where amount > 5;"
    index = psql(playground, shop, "-c", r"\d totals_by_total").stdout.splitlines()
    assert index[0].strip() == f'Index "{shop}.totals_by_total"'
    assert [[c.strip() for c in line.split("|")] for line in index[3:5]] == [
        ["total", "numeric(38,2)", "yes", "total"], ["customer", "character varying", "no", "customer"]]
    assert f"btree, for table \"{shop}.totals\"" in index


def test_schemas_databases_roles_functions(playground: PlaygroundProcess, shop: str) -> None:
    dn = psql(playground, shop, "-c", r"\dn").stdout.splitlines()
    assert dn[0].strip() == "List of schemas"
    assert [shop, "root"] in [[c.strip() for c in line.split("|")] for line in dn[3:-2]]
    l_ = psql(playground, None, "-c", r"\l").stdout.splitlines()
    assert l_[0].strip() == "List of databases"
    assert [c.strip() for c in l_[3].split("|")][:4] == ["dev", "root", "UTF8", "C"]
    du = psql(playground, None, "-c", r"\du").stdout.splitlines()
    assert [c.strip() for c in du[3].split("|")][:2] in (["postgres", "Superuser, Create role, Create DB"],
                                                          ["root", "Superuser, Create role, Create DB"])
    df = psql(playground, shop, "-c", r"\df").stdout.splitlines()
    assert df[0].strip() == "List of functions" and df[-2] == "(0 rows)"


def test_df_lists_functions_as_postgres_does(playground: PlaygroundProcess, oracle_dsn: str) -> None:
    """\\df of JavaScript functions prints what PostgreSQL prints for functions of the same
    signatures (SQL ones there): only those on the search path."""
    schema = unique_name("psqlfn")
    signatures = ["count_char(s varchar, c varchar) RETURNS int", "twice(double precision) RETURNS double precision"]
    with playground.connect() as c, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        pg.execute(f"CREATE SCHEMA {schema}")
        c.execute(f"CREATE SCHEMA {schema}")
        for sig in signatures:
            c.execute(f"CREATE FUNCTION {schema}.{sig} LANGUAGE javascript AS $$ return null; $$")
            pg.execute(f"CREATE FUNCTION {schema}.{sig} LANGUAGE sql AS $$ SELECT 1 $$")
    ours = psql(playground, schema, "-c", r"\df").stdout
    env = {**os.environ, "PGOPTIONS": f"-c search_path={schema}"}
    theirs = subprocess.run(["psql", "-X", "-d", oracle_dsn, "-c", r"\df"], env=env, capture_output=True, text=True,
                            timeout=60, check=True).stdout
    assert ours == theirs and "count_char" in ours
    assert psql(playground, None, "-c", r"\df").stdout.count(schema) == 0  # not on the search path
    with playground.connect() as c:
        ids = [r[0] for r in c.execute("SELECT p.oid FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                                       "WHERE n.nspname = %s", (schema,)).fetchall()]
        assert len(ids) == 2
        c.execute(f"DROP SCHEMA {schema} CASCADE")  # its functions go with it, as on PostgreSQL
        assert c.execute(f"SELECT count(*) FROM pg_proc WHERE oid IN ({ids[0]}, {ids[1]})").fetchone() == (0,)


def test_timing_expanded_notices_and_errors(playground: PlaygroundProcess, shop: str) -> None:
    out = psql(playground, shop, "-f", "-", input="\\timing on\nselect count(*) from orders;\n")
    assert out.stdout.startswith("Timing is on.\n count \n-------\n     2\n(1 row)\n\nTime: ")
    out = psql(playground, shop, "-f", "-", input="\\x\nselect id, customer from orders order by id;\n")
    assert out.stdout == ("Expanded display is on.\n-[ RECORD 1 ]-\nid       | 1\ncustomer | ann\n"
                          "-[ RECORD 2 ]-\nid       | 2\ncustomer | bob\n\n")
    bad = psql(playground, shop, "-c", "select * from nope", check=False)
    assert bad.returncode == 1
    assert bad.stderr.startswith('ERROR:  relation "nope" does not exist\nLINE 1: select * from nope\n')
    verbose = psql(playground, shop, "-v", "VERBOSITY=verbose", "-c", "select * from nope", check=False)
    assert verbose.stderr.startswith('ERROR:  42P01: relation "nope" does not exist')
    notice = psql(playground, shop, "-c", "drop view if exists nope", check=False)
    assert notice.stdout == "DROP_VIEW\n"
    assert notice.stderr == 'NOTICE:  view "nope" does not exist, skipping\n'


def _complete(playground: PlaygroundProcess, schema: str, typed: str, expected: str) -> str:
    """What psql echoes after `typed` and a TAB, through a pseudo-terminal, once `expected` (the
    completion) shows; fails when psql prints nothing more for a minute."""
    env = {**os.environ, "PGOPTIONS": f"-c search_path={schema}", "PGCONNECT_TIMEOUT": "10", "TERM": "dumb"}
    pid, fd = pty.fork()
    if pid == 0:  # the child: psql on the terminal
        try:
            os.execvpe("psql", ["psql", "-X", "-h", "127.0.0.1", "-p", str(playground.port), "-U", "root",
                                "-d", "dev"], env)
        finally:
            os._exit(127)
    out = b""

    def read_until(marker: bytes, start: int = 0) -> None:
        nonlocal out
        while marker not in out[start:]:
            ready, _, _ = select.select([fd], [], [], 60)
            assert ready, f"psql printed: {out!r}"
            out += os.read(fd, 4096)

    try:
        read_until(b"dev=#")
        start = len(out)
        os.write(fd, typed.encode() + b"\t")
        read_until(expected.encode(), start)
        return out[start:].decode(errors="replace")
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)


def test_tab_completion(playground: PlaygroundProcess, shop: str) -> None:
    """psql's completion queries (relations visible on the search path, columns of a relation) run."""
    with psycopg.connect(playground.dsn, autocommit=True) as c:
        c.execute(f"create table {shop}.orders_archive (id int)")
    assert _complete(playground, shop, "select * from orders_a", "rchive").endswith("rchive ")
    assert "tomer" in _complete(playground, shop, "select * from orders where cus", "tomer")
