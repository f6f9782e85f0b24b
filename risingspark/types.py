"""SQL data types and their mappings to Arrow, Spark, DuckDB and the Postgres wire protocol.

One `DataType` value describes a column everywhere: in the catalog, in Parquet SSTs (Arrow), in Spark
epoch rounds (Spark SQL DDL strings), in batch queries (DuckDB) and on the wire (type OIDs).

>>> DataType.parse("numeric(12,2)").sql()
'NUMERIC(12,2)'
>>> DataType.parse("varchar").oid
1043
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field

import pyarrow as pa

from risingspark import interval
from risingspark.errors import FeatureNotSupported, InvalidParameterValue

# Precision and scale used for NUMERIC without a declared precision: Arrow and Spark decimals have a
# fixed scale, so an unconstrained numeric keeps 10 fractional digits and is printed normalized.
UNCONSTRAINED_NUMERIC_PRECISION = 38
UNCONSTRAINED_NUMERIC_SCALE = 10


class TypeName(enum.Enum):
    SMALLINT = "smallint"
    INT = "integer"
    BIGINT = "bigint"
    BOOLEAN = "boolean"
    REAL = "real"
    DOUBLE = "double precision"
    NUMERIC = "numeric"
    VARCHAR = "character varying"
    DATE = "date"
    TIMESTAMP = "timestamp without time zone"
    TIMESTAMPTZ = "timestamp with time zone"
    INTERVAL = "interval"  # months, days, microseconds: `risingspark.interval`
    JSONB = "jsonb"  # stored as its canonical text: `risingspark.jsonb`
    ARRAY = "array"  # a one-dimensional array of `DataType.element`
    STRUCT = "struct"  # RisingWave's STRUCT<name type, ...>: `DataType.fields`


# oid, typlen (bytes, -1 variable), typname as in pg_type
_PG: dict[TypeName, tuple[int, int, str]] = {
    TypeName.SMALLINT: (21, 2, "int2"),
    TypeName.INT: (23, 4, "int4"),
    TypeName.BIGINT: (20, 8, "int8"),
    TypeName.BOOLEAN: (16, 1, "bool"),
    TypeName.REAL: (700, 4, "float4"),
    TypeName.DOUBLE: (701, 8, "float8"),
    TypeName.NUMERIC: (1700, -1, "numeric"),
    TypeName.VARCHAR: (1043, -1, "varchar"),
    TypeName.DATE: (1082, 4, "date"),
    TypeName.TIMESTAMP: (1114, 8, "timestamp"),
    TypeName.TIMESTAMPTZ: (1184, 8, "timestamptz"),
    TypeName.INTERVAL: (1186, 16, "interval"),
    TypeName.JSONB: (3802, -1, "jsonb"),
    TypeName.STRUCT: (2249, -1, "record"),  # as RisingWave: a struct is sent as an anonymous record
}

# element type OID -> array type OID, as in pg_type
_ARRAY_OIDS = {16: 1000, 21: 1005, 23: 1007, 20: 1016, 700: 1021, 701: 1022, 1700: 1231, 1043: 1015, 1082: 1182,
               1114: 1115, 1184: 1185, 1186: 1187, 3802: 3807, 2249: 2287}

_SPARK: dict[TypeName, str] = {
    TypeName.SMALLINT: "SMALLINT",
    TypeName.INT: "INT",
    TypeName.BIGINT: "BIGINT",
    TypeName.BOOLEAN: "BOOLEAN",
    TypeName.REAL: "FLOAT",
    TypeName.DOUBLE: "DOUBLE",
    TypeName.VARCHAR: "STRING",
    TypeName.DATE: "DATE",
    TypeName.TIMESTAMP: "TIMESTAMP_NTZ",
    TypeName.TIMESTAMPTZ: "TIMESTAMP",
    TypeName.INTERVAL: "STRUCT<months: INT, days: INT, usecs: BIGINT>",
    TypeName.JSONB: "STRING",
}

_DUCKDB: dict[TypeName, str] = {
    TypeName.SMALLINT: "SMALLINT",
    TypeName.INT: "INTEGER",
    TypeName.BIGINT: "BIGINT",
    TypeName.BOOLEAN: "BOOLEAN",
    TypeName.REAL: "REAL",
    TypeName.DOUBLE: "DOUBLE",
    TypeName.VARCHAR: "VARCHAR",
    TypeName.DATE: "DATE",
    TypeName.TIMESTAMP: "TIMESTAMP",
    TypeName.TIMESTAMPTZ: "TIMESTAMPTZ",
    TypeName.INTERVAL: "STRUCT(months INTEGER, days INTEGER, usecs BIGINT)",
    TypeName.JSONB: "JSON",
}

_ALIASES: dict[str, TypeName] = {
    "smallint": TypeName.SMALLINT,
    "int2": TypeName.SMALLINT,
    "int": TypeName.INT,
    "integer": TypeName.INT,
    "int4": TypeName.INT,
    "bigint": TypeName.BIGINT,
    "int8": TypeName.BIGINT,
    "boolean": TypeName.BOOLEAN,
    "bool": TypeName.BOOLEAN,
    "real": TypeName.REAL,
    "float4": TypeName.REAL,
    "double precision": TypeName.DOUBLE,
    "double": TypeName.DOUBLE,
    "float8": TypeName.DOUBLE,
    "float": TypeName.DOUBLE,
    "numeric": TypeName.NUMERIC,
    "decimal": TypeName.NUMERIC,
    "varchar": TypeName.VARCHAR,
    "character varying": TypeName.VARCHAR,
    "text": TypeName.VARCHAR,
    "string": TypeName.VARCHAR,
    "date": TypeName.DATE,
    "timestamp": TypeName.TIMESTAMP,
    "timestamp without time zone": TypeName.TIMESTAMP,
    "timestamptz": TypeName.TIMESTAMPTZ,
    "timestamp with time zone": TypeName.TIMESTAMPTZ,
    "interval": TypeName.INTERVAL,
    "jsonb": TypeName.JSONB,
}

_INTEGERS = (TypeName.SMALLINT, TypeName.INT, TypeName.BIGINT)


@dataclass(frozen=True)
class DataType:
    """A column type. `precision`/`scale` are set only for NUMERIC(p, s), `element` only for an
    ARRAY (``integer[]``: the output of array_agg), `fields` only for a STRUCT (its named fields
    in order; ``ROW(...)`` builds an anonymous one, fields named f1, f2, ... as PostgreSQL's)."""

    name: TypeName
    precision: int | None = None
    scale: int | None = None
    element: DataType | None = field(default=None, repr=False)
    fields: tuple[tuple[str, DataType], ...] = field(default=(), repr=False)

    @classmethod
    def array_of(cls, element: DataType) -> DataType:
        if element.name is TypeName.ARRAY:
            raise FeatureNotSupported("multidimensional arrays are not supported")
        return cls(TypeName.ARRAY, element=element)

    @classmethod
    def struct_of(cls, fields: tuple[tuple[str, DataType], ...]) -> DataType:
        if not fields:
            raise FeatureNotSupported("structs without fields are not supported")
        names = [n for n, _ in fields]
        if len(set(names)) != len(names):
            raise InvalidParameterValue("struct field names must be unique")
        t = cls(TypeName.STRUCT, fields=tuple(fields))
        if interval.is_interval_struct(t.to_arrow()):
            # stored like an interval (`risingspark.interval`): the two would be told apart by nothing
            raise FeatureNotSupported("STRUCT<months INT, days INT, usecs BIGINT> is not supported (it is how "
                                      "intervals are stored); rename a field")
        return t

    # ---- constructors -------------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str) -> DataType:
        """Parse a SQL type name such as ``NUMERIC(12,2)``, ``varchar(20)``, ``int8`` or
        ``STRUCT<a INT, b STRUCT<c VARCHAR>>``."""
        stripped = text.strip()
        if stripped.endswith("[]"):
            return cls.array_of(cls.parse(stripped[:-2]))
        if re.match(r"(?i)struct\s*<", stripped):
            if not stripped.endswith(">"):
                raise InvalidParameterValue(f'type "{text}" does not exist')
            return cls.struct_of(tuple(_struct_field(f) for f in _split_top(stripped[stripped.index("<") + 1:-1])))
        s = " ".join(stripped.lower().split())
        if s in ("json", "jsonpath"):
            raise FeatureNotSupported(f"type {s} is not supported, use jsonb")
        m = re.fullmatch(r"([a-z0-9_ ]+?)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?", s)
        if not m:
            raise InvalidParameterValue(f'type "{text}" does not exist')
        base, p, sc = m.group(1), m.group(2), m.group(3)
        if base in ("character", "char", "bpchar"):
            raise FeatureNotSupported(f"type {text} is not supported, use varchar")
        name = _ALIASES.get(base)
        if name is None:
            raise InvalidParameterValue(f'type "{text}" does not exist')
        if name is TypeName.NUMERIC and p is not None:
            precision, scale = int(p), int(sc or 0)
            if not 1 <= precision <= 38:
                raise InvalidParameterValue(f"NUMERIC precision {precision} must be between 1 and 38")
            if not 0 <= scale <= precision:
                raise InvalidParameterValue(f"NUMERIC scale {scale} must be between 0 and precision {precision}")
            return cls(name, precision, scale)
        # varchar(n) keeps no length: RisingWave's varchar is unbounded as well
        return cls(name)

    @classmethod
    def from_arrow(cls, t: pa.DataType) -> DataType:
        """The SQL type of an Arrow type (used for results computed by a batch engine)."""
        if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_uint8(t):
            return INT2
        if pa.types.is_int32(t) or pa.types.is_uint16(t):
            return INT4
        if pa.types.is_integer(t):
            return INT8
        if pa.types.is_boolean(t):
            return BOOL
        if pa.types.is_float16(t) or pa.types.is_float32(t):
            return FLOAT4
        if pa.types.is_floating(t):
            return FLOAT8
        if pa.types.is_decimal(t):
            if t.scale == UNCONSTRAINED_NUMERIC_SCALE and t.precision == UNCONSTRAINED_NUMERIC_PRECISION:
                return NUMERIC
            return cls(TypeName.NUMERIC, min(t.precision, 38), max(t.scale, 0))
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
            return VARCHAR
        if pa.types.is_date(t):
            return DATE
        if pa.types.is_timestamp(t):
            return TIMESTAMPTZ if t.tz else TIMESTAMP
        if pa.types.is_null(t):
            return VARCHAR
        if isinstance(t, pa.JsonType):
            return JSONB
        if interval.is_interval_struct(t) or pa.types.is_interval(t):
            return INTERVAL
        if pa.types.is_struct(t):
            return cls.struct_of(tuple((t.field(i).name or f"f{i + 1}", cls.from_arrow(t.field(i).type))
                                       for i in range(t.num_fields)))
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            return cls.array_of(cls.from_arrow(t.value_type))
        raise FeatureNotSupported(f"values of type {t} are not supported")

    # ---- properties ---------------------------------------------------------------------------
    @property
    def is_integer(self) -> bool:
        return self.name in _INTEGERS

    @property
    def is_numeric(self) -> bool:
        return self.name in _INTEGERS or self.name in (TypeName.NUMERIC, TypeName.REAL, TypeName.DOUBLE)

    @property
    def oid(self) -> int:
        if self.element is not None:
            return _ARRAY_OIDS[self.element.oid]
        return _PG[self.name][0]

    @property
    def typlen(self) -> int:
        return -1 if self.element is not None else _PG[self.name][1]

    @property
    def pg_typname(self) -> str:
        return "_" + self.element.pg_typname if self.element is not None else _PG[self.name][2]

    @property
    def typmod(self) -> int:
        if self.name is TypeName.NUMERIC and self.precision is not None:
            return ((self.precision << 16) | (self.scale or 0)) + 4
        return -1

    @property
    def effective_precision_scale(self) -> tuple[int, int]:
        if self.precision is None:
            return UNCONSTRAINED_NUMERIC_PRECISION, UNCONSTRAINED_NUMERIC_SCALE
        return self.precision, self.scale or 0

    # ---- mappings -----------------------------------------------------------------------------
    def sql(self) -> str:
        """The type as RisingWave prints it (``\\d``, ``information_schema``)."""
        if self.name is TypeName.NUMERIC and self.precision is not None:
            return f"NUMERIC({self.precision},{self.scale})"
        if self.element is not None:
            return self.element.sql() + "[]"
        if self.name is TypeName.STRUCT:
            return "STRUCT<" + ", ".join(f"{_quote_field(n)} {t.sql()}" for n, t in self.fields) + ">"
        return self.name.value.upper()

    def display(self) -> str:
        """Postgres' `format_type` text, e.g. ``numeric(12,2)`` or ``character varying``; a struct
        as RisingWave shows it, ``struct<a integer, b character varying>``."""
        if self.name is TypeName.NUMERIC and self.precision is not None:
            return f"numeric({self.precision},{self.scale})"
        if self.element is not None:
            return self.element.display() + "[]"
        if self.name is TypeName.STRUCT:
            return "struct<" + ", ".join(f"{_quote_field(n)} {t.display()}" for n, t in self.fields) + ">"
        return self.name.value

    def to_arrow(self) -> pa.DataType:
        n = self.name
        if n is TypeName.SMALLINT:
            return pa.int16()
        if n is TypeName.INT:
            return pa.int32()
        if n is TypeName.BIGINT:
            return pa.int64()
        if n is TypeName.BOOLEAN:
            return pa.bool_()
        if n is TypeName.REAL:
            return pa.float32()
        if n is TypeName.DOUBLE:
            return pa.float64()
        if n is TypeName.NUMERIC:
            p, s = self.effective_precision_scale
            return pa.decimal128(p, s)
        if n is TypeName.VARCHAR:
            return pa.string()
        if n is TypeName.DATE:
            return pa.date32()
        if n is TypeName.TIMESTAMP:
            return pa.timestamp("us")
        if n is TypeName.TIMESTAMPTZ:
            return pa.timestamp("us", tz="UTC")
        if n is TypeName.INTERVAL:
            return interval.ARROW_TYPE
        if n is TypeName.JSONB:
            return pa.string()
        if n is TypeName.STRUCT:
            return pa.struct([pa.field(name, t.to_arrow()) for name, t in self.fields])
        if self.element is not None:
            return pa.list_(self.element.to_arrow())
        raise AssertionError(n)

    def to_spark(self) -> str:
        """A Spark SQL DDL type string."""
        if self.name is TypeName.NUMERIC:
            p, s = self.effective_precision_scale
            return f"DECIMAL({p},{s})"
        if self.element is not None:
            return f"ARRAY<{self.element.to_spark()}>"
        if self.name is TypeName.STRUCT:
            return "STRUCT<" + ", ".join(f"`{n.replace('`', '``')}`: {t.to_spark()}" for n, t in self.fields) + ">"
        return _SPARK[self.name]

    def to_duckdb(self) -> str:
        if self.name is TypeName.NUMERIC:
            p, s = self.effective_precision_scale
            return f"DECIMAL({p},{s})"
        if self.element is not None:
            return self.element.to_duckdb() + "[]"
        if self.name is TypeName.STRUCT:
            return "STRUCT(" + ", ".join(f'"{n.replace(chr(34), chr(34) * 2)}" {t.to_duckdb()}'
                                         for n, t in self.fields) + ")"
        return _DUCKDB[self.name]

    def to_json(self) -> str:
        return self.sql()

    @classmethod
    def from_json(cls, text: str) -> DataType:
        return cls.parse(text)

    def __str__(self) -> str:
        return self.sql()


INT2 = DataType(TypeName.SMALLINT)
INT4 = DataType(TypeName.INT)
INT8 = DataType(TypeName.BIGINT)
BOOL = DataType(TypeName.BOOLEAN)
FLOAT4 = DataType(TypeName.REAL)
FLOAT8 = DataType(TypeName.DOUBLE)
NUMERIC = DataType(TypeName.NUMERIC)
VARCHAR = DataType(TypeName.VARCHAR)
DATE = DataType(TypeName.DATE)
TIMESTAMP = DataType(TypeName.TIMESTAMP)
TIMESTAMPTZ = DataType(TypeName.TIMESTAMPTZ)
INTERVAL = DataType(TypeName.INTERVAL)
JSONB = DataType(TypeName.JSONB)


def _split_top(text: str) -> list[str]:
    """`text` split at the commas outside brackets and quotes."""
    parts, depth, start, quoted = [], 0, 0, False
    for i, c in enumerate(text):
        if c == '"':
            quoted = not quoted
        elif quoted:
            continue
        elif c in "<(":
            depth += 1
        elif c in ">)":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in (p.strip() for p in parts) if p] if any(p.strip() for p in parts) else []


def _struct_field(text: str) -> tuple[str, DataType]:
    """``name type`` of a STRUCT<...> declaration (a quoted name keeps its case, as PostgreSQL's
    identifiers; an unquoted one is folded to lower case)."""
    m = re.fullmatch(r'\s*(?:"((?:[^"]|"")*)"|([A-Za-z_][A-Za-z0-9_$]*))\s+(.+)', text, re.DOTALL)
    if not m:
        raise InvalidParameterValue(f'invalid struct field "{text}"')
    name = m.group(1).replace('""', '"') if m.group(1) is not None else m.group(2).lower()
    return name, DataType.parse(m.group(3))


def _quote_field(name: str) -> str:
    return name if re.fullmatch(r"[a-z_][a-z0-9_$]*", name) else '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class Field:
    """A named column. Hidden columns (row ids, stream keys kept for correctness) are not shown by
    `SELECT *`, as RisingWave's `_row_id` and `_rw_*` columns."""

    name: str
    type: DataType
    hidden: bool = False

    def to_json(self) -> dict:
        return {"name": self.name, "type": self.type.to_json(), "hidden": self.hidden}

    @classmethod
    def from_json(cls, d: dict) -> Field:
        return cls(d["name"], DataType.from_json(d["type"]), bool(d.get("hidden", False)))


def arrow_schema(fields: tuple[Field, ...] | list[Field]) -> pa.Schema:
    return pa.schema([pa.field(f.name, f.type.to_arrow()) for f in fields])


def spark_ddl(fields: tuple[Field, ...] | list[Field]) -> str:
    """A Spark schema DDL string, e.g. ``\\`id\\` BIGINT, \\`name\\` STRING``."""
    return ", ".join(f"`{f.name}` {f.type.to_spark()}" for f in fields)
