"""Frontend message decoding and backend message framing."""

from __future__ import annotations

import struct

import pytest

from frontend.pgwire import backend as be
from frontend.pgwire import messages as m
from frontend.pgwire.api import ColumnDesc
from risingspark.errors import ProtocolViolation

from .fakes import RawClient, error_fields


def test_decode_startup_packets() -> None:
    body = struct.pack("!i", m.PROTOCOL_3_0) + b"user\0root\0database\0dev\0\0"
    assert m.decode_startup(body) == m.StartupMessage(m.PROTOCOL_3_0, {"user": "root", "database": "dev"})
    assert m.decode_startup(struct.pack("!i", m.SSL_REQUEST_CODE)) == m.SSLRequest()
    assert m.decode_startup(struct.pack("!i", m.GSSENC_REQUEST_CODE)) == m.GSSENCRequest()
    assert m.decode_startup(struct.pack("!iII", m.CANCEL_REQUEST_CODE, 7, 0xFFFFFFFF)) == m.CancelRequest(
        7, 0xFFFFFFFF)


def test_decode_extended_messages() -> None:
    assert m.decode_message(b"P", RawClient.parse("select $1", "s1", (21, 0))) == m.Parse(
        "s1", "select $1", (21, 0))
    bind = RawClient.bind("p", "s1", (b"\x00\x01", None), (1, 0), (1,))
    assert m.decode_message(b"B", bind) == m.Bind("p", "s1", (1, 0), (b"\x00\x01", None), (1,))
    assert m.decode_message(b"D", b"Ss1\0") == m.Describe("S", "s1")
    assert m.decode_message(b"E", RawClient.execute("p", 10)) == m.Execute("p", 10)
    assert m.decode_message(b"C", b"P\0") == m.Close("P", "")
    assert m.decode_message(b"S", b"") == m.Sync()
    assert m.decode_message(b"X", b"") == m.Terminate()


@pytest.mark.parametrize(("portal", "statement", "params", "param_formats", "result_formats"), [
    ("", "", (), (), ()),
    ("", "_pg3_0", (struct.pack("!i", 42),), (1,), (1,)),
    ("p", "s1", (b"", None, "é".encode()), (0,), (0, 1, 1)),
    ("\u00e9", "s", tuple(bytes([i]) * i for i in range(20)), (1, 0) * 10, ()),
])
def test_a_bind_decodes_whole_and_any_truncation_is_a_protocol_violation(
        portal: str, statement: str, params: tuple, param_formats: tuple, result_formats: tuple) -> None:
    body = RawClient.bind(portal, statement, params, param_formats, result_formats)
    assert m.decode_message(b"B", body) == m.Bind(portal, statement, param_formats, params, result_formats)
    for cut in range(len(body)):
        with pytest.raises(ProtocolViolation):
            m.decode_message(b"B", body[:cut])


def test_decode_password_and_sasl() -> None:
    assert m.decode_message(b"p", b"secret\0").password == "secret"
    initial = b"SCRAM-SHA-256\0" + struct.pack("!i", 3) + b"n,,"
    assert m.decode_message(b"p", initial).sasl_initial_response() == ("SCRAM-SHA-256", b"n,,")


def test_decode_rejects_garbage() -> None:
    with pytest.raises(ProtocolViolation, match="invalid frontend message type"):
        m.decode_message(b"z", b"")
    with pytest.raises(ProtocolViolation):
        m.decode_message(b"Q", b"no terminator")
    with pytest.raises(ProtocolViolation):
        m.decode_message(b"B", b"\0\0\0\0\0\x01\0\0\0\x10ab")


def test_backend_framing() -> None:
    assert be.ready_for_query(b"I") == b"Z\0\0\0\x05I"
    assert be.authentication_ok() == b"R\0\0\0\x08\0\0\0\0"
    assert be.parameter_status("TimeZone", "UTC") == b"S\0\0\0\x11TimeZone\0UTC\0"
    assert be.data_row([b"1", None]) == b"D\0\0\0\x0f\0\x02\0\0\0\x011\xff\xff\xff\xff"
    desc = be.row_description([ColumnDesc("a", 23, 4)], [1])
    assert desc == b"T" + struct.pack("!ih", 4 + 2 + 2 + 18, 1) + b"a\0" + struct.pack("!IhIhih", 0, 0, 23, 4,
                                                                                         -1, 1)
    assert be.parameter_description([23, 25]) == b"t\0\0\0\x0e\0\x02\0\0\0\x17\0\0\0\x19"
    assert be.authentication_sasl(["SCRAM-SHA-256"]) == b"R\0\0\0\x17\0\0\0\x0aSCRAM-SHA-256\0\0"


def test_error_and_notice_fields() -> None:
    err = be.error_response("ERROR", "42P01", 'relation "x" does not exist', hint="create it", position=15)
    assert err[:1] == b"E"
    assert error_fields(err[5:]) == {"S": "ERROR", "V": "ERROR", "C": "42P01",
                                     "M": 'relation "x" does not exist', "H": "create it", "P": "15"}
    notice = be.notice_response("hello")
    assert notice[:1] == b"N" and error_fields(notice[5:])["C"] == "00000"


def test_messages_read_from_any_split_of_the_stream() -> None:
    """`MessageReader` parses what each read returned, whatever the packet boundaries: several
    messages in one read, a header cut in two, a message (1 MB) spanning many reads."""
    import asyncio
    import random

    def framed(kind: bytes, body: bytes) -> bytes:
        return kind + struct.pack("!i", len(body) + 4) + body

    big = bytes(random.Random(1).randrange(256) for _ in range(1 << 20))
    messages = [(b"B", RawClient.bind("", "s1", (b"\x00\x01", None), (1, 0), (1,))), (b"D", b"P\0"),
                (b"E", RawClient.execute("", 0)), (b"S", b""), (b"d", big), (b"Q", b"select 1\0"), (b"S", b"")]
    stream = b"".join(framed(k, b) for k, b in messages)
    want = [m.decode_message(k, b) for k, b in messages]
    for seed in range(20):
        rng = random.Random(seed)
        cuts = sorted(rng.sample(range(1, len(stream)), rng.randint(0, 40)))

        async def read_all(cuts: list[int] = cuts) -> list:
            reader = asyncio.StreamReader(limit=1 << 22)
            for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True):
                reader.feed_data(stream[a:b])
            reader.feed_eof()
            messages = m.MessageReader(reader)
            got = [await messages.read() for _ in want]
            with pytest.raises(asyncio.IncompleteReadError):
                await messages.read()
            return got

        assert asyncio.run(read_all()) == want
