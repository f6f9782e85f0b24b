"""``COPY table [(columns)] FROM STDIN``: bulk loads in text or CSV format.

The wire server feeds the CopyData messages to a `CopyLoader`, which cuts the stream at line ends,
parses complete rows (text format: tab-separated with backslash escapes and ``\\N`` for NULL; CSV:
Arrow's reader, where an unquoted empty field is NULL) and writes them every `BATCH_ROWS` rows
as DML batches through the same path as INSERT (`frontend.handlers.dml`). The tag is ``COPY n``.
"""

from __future__ import annotations

import io
import logging
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.csv as pacsv
from sqlglot import exp

from frontend.handlers.dml import BATCH_ROWS, _columns, _target, _write_inserts
from frontend.parser import CopyStmt
from frontend.pgwire.api import CopyIn, StatementResult
from frontend.values import cast_column, special_numeric_error
from risingspark.catalog import RelationCatalog
from risingspark.errors import (
    BadCopyFileFormat,
    FeatureNotSupported,
    InvalidTextRepresentation,
    QueryCanceled,
)
from risingspark.types import TypeName

if TYPE_CHECKING:
    from frontend.session import Session

logger = logging.getLogger(__name__)

_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def unescape_text_field(field: str) -> str:
    """A field of COPY's text format with its backslash escapes resolved.

    >>> unescape_text_field(r"a\\tb\\\\c\\101")
    'a\\tb\\\\cA'
    """
    out, i, n = [], 0, len(field)
    while i < n:
        ch = field[i]
        if ch != "\\" or i + 1 == n:
            out.append(ch)
            i += 1
            continue
        nxt = field[i + 1]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt in "01234567":
            j = i + 1
            while j < n and j < i + 4 and field[j] in "01234567":
                j += 1
            out.append(chr(int(field[i + 1:j], 8)))
            i = j
        elif nxt == "x" and i + 2 < n and field[i + 2] in "0123456789abcdefABCDEF":
            j = i + 2
            while j < n and j < i + 4 and field[j] in "0123456789abcdefABCDEF":
                j += 1
            out.append(chr(int(field[i + 2:j], 16)))
            i = j
        else:
            out.append(nxt)
            i += 2
    return "".join(out)


def parse_text_rows(text: str, ncols: int, delimiter: str, null: str) -> list[list[str | None]]:
    """Columns of the rows of COPY text format (every line a row, no trailing partial line).

    >>> parse_text_rows("1\\ta\\n2\\t\\\\N\\n", 2, "\\t", "\\\\N")
    [['1', '2'], ['a', None]]
    """
    cols: list[list[str | None]] = [[] for _ in range(ncols)]
    for line_no, line in enumerate(text.split("\n")):
        if line.endswith("\r"):
            line = line[:-1]
        if line == "" and line_no == text.count("\n"):
            continue  # after the last newline
        if line == "\\.":
            break
        fields = line.split(delimiter)
        if len(fields) != ncols:
            if len(fields) > ncols:
                raise BadCopyFileFormat("extra data after last expected column")
            raise BadCopyFileFormat(f'missing data for column {len(fields) + 1}')
        for c, f in zip(cols, fields, strict=True):
            if f == null:
                c.append(None)
            else:
                c.append(unescape_text_field(f) if "\\" in f else f)
    return cols


def parse_csv_rows(data: bytes, names: list[str], stmt: CopyStmt, header: bool) -> list[list[str | None]]:
    """Columns of CSV rows (Arrow's reader: quoted fields may span lines; unquoted NULL strings and
    unquoted empty fields are NULL)."""
    read = pacsv.ReadOptions(column_names=names, skip_rows=1 if header else 0, encoding="utf8")
    escape = stmt.escape if stmt.escape != stmt.quote else False
    parse = pacsv.ParseOptions(delimiter=stmt.delimiter, quote_char=stmt.quote, double_quote=not escape,
                               escape_char=escape, newlines_in_values=True)
    convert = pacsv.ConvertOptions(column_types={n: pa.string() for n in names}, null_values=[stmt.null],
                                   strings_can_be_null=True, quoted_strings_can_be_null=False)
    try:
        table = pacsv.read_csv(io.BytesIO(data), read_options=read, parse_options=parse, convert_options=convert)
    except pa.ArrowInvalid as e:
        raise BadCopyFileFormat(str(e).splitlines()[0]) from None
    return [table.column(n).to_pylist() for n in names]


class CopyLoader:
    """Receives the data of one ``COPY ... FROM STDIN`` and writes it as DML batches."""

    def __init__(self, session: Session, rel: RelationCatalog, targets: list[int], stmt: CopyStmt) -> None:
        self.session = session
        self.rel = rel
        self.targets = targets
        self.stmt = stmt
        self.rows = 0
        self._buffer = bytearray()
        self._pending: list[list[str | None]] = [[] for _ in targets]
        self._header_pending = stmt.header

    async def write(self, data: bytes) -> None:
        self._buffer += data
        if len(self._buffer) >= (8 << 20):
            cut = self._buffer.rfind(b"\n") + 1
            if cut and not self._open_quote(cut):
                chunk = bytes(self._buffer[:cut])
                del self._buffer[:cut]
                await self.session.run_in_thread(self._load, chunk, False)

    def _open_quote(self, cut: int) -> bool:
        """Whether a CSV quoted field is still open at `cut` (then the chunk must grow)."""
        return self.stmt.format == "csv" and self._buffer.count(self.stmt.quote.encode(), 0, cut) % 2 == 1

    async def finish(self) -> StatementResult:
        await self.session.run_in_thread(self._load, bytes(self._buffer), True)
        self._buffer.clear()
        logger.info("COPY into %s (id %d): %d rows", self.rel.name, self.rel.id, self.rows)
        return self.session.after_dml(StatementResult(f"COPY {self.rows}"))

    async def abort(self, message: str) -> None:
        raise QueryCanceled(f"COPY from stdin failed: {message}")

    def _load(self, chunk: bytes, last: bool) -> None:
        if chunk.strip():
            if self.stmt.format == "csv":
                names = [f"c{i}" for i in range(len(self.targets))]
                cols = parse_csv_rows(chunk, names, self.stmt, self._header_pending)
            else:
                try:
                    text = chunk.decode("utf-8")
                except UnicodeDecodeError:
                    raise InvalidTextRepresentation('invalid byte sequence for encoding "UTF8"') from None
                if self._header_pending:
                    text = text.split("\n", 1)[1] if "\n" in text else ""
                cols = parse_text_rows(text, len(self.targets), self.stmt.delimiter, self.stmt.null)
            self._header_pending = False
            for pending, col in zip(self._pending, cols, strict=True):
                pending.extend(col)
        n = len(self._pending[0]) if self._pending else 0
        if n and (last or n >= BATCH_ROWS):
            self._flush_rows(n)

    def _flush_rows(self, n: int) -> None:
        arrays = {}
        for i, values in zip(self.targets, self._pending, strict=True):
            field = self.rel.fields[i]
            arr = cast_column(values, field.type)
            if arr is None:
                bad = next((v for v in values if v is not None and cast_column([v], field.type) is None), "")
                if field.type.name is TypeName.NUMERIC and (special := special_numeric_error(bad)) is not None:
                    raise special
                raise InvalidTextRepresentation(f'invalid input syntax for type {field.type.display()}: "{bad}"',
                                                detail=f"COPY {self.rel.name}, column {field.name}")
            arrays[i] = arr
        _write_inserts(self.session, self.rel, arrays, n)
        self.rows += n
        self._pending = [[] for _ in self.targets]


def copy_from(session: Session, stmt: CopyStmt) -> StatementResult:
    """Start a COPY FROM STDIN: the result asks the wire server for the data."""
    if stmt.format == "binary":
        raise FeatureNotSupported("COPY FROM STDIN in binary format is not supported; use text or csv")
    if len(stmt.delimiter) != 1:
        raise FeatureNotSupported("COPY delimiter must be a single one-byte character")
    parts = stmt.table
    table = exp.Table(this=exp.to_identifier(parts[-1], quoted=True),
                      db=exp.to_identifier(parts[-2], quoted=True) if len(parts) > 1 else None)
    rel = _target(session, table, "copy into")
    targets = _columns(rel, stmt.columns)
    loader = CopyLoader(session, rel, targets, stmt)
    return StatementResult("", copy_in=CopyIn(len(targets), loader.write, loader.finish, loader.abort))
