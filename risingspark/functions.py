"""User-defined functions in the catalog (RisingWave's ``FunctionCatalog``), shared by meta (which
stores them), the frontend (which resolves calls) and compute (which runs them: a materialized view's
plan carries the definitions of the functions it calls, `risingspark.stream_plan.StreamMaterialize`).

Functions take their ids from the catalog counter databases, schemas and relations use, so an id
never names two objects, and a function is never changed in place (there is no ALTER FUNCTION ...
AS): an id names one definition for ever, which is what caches and the engines' registered names
(``rs_udf_<id>``) rely on.

>>> from risingspark.types import INT4, VARCHAR
>>> f = FunctionCatalog(1010, 1000, 1001, "count_char", ("s", "c"), (VARCHAR, VARCHAR), INT4,
...                     "javascript", "return 0;", 1)
>>> f.signature, f.udf_name, FunctionCatalog.from_json(f.to_json()) == f
('count_char(character varying, character varying)', 'rs_udf_1010', True)
"""

from __future__ import annotations

from dataclasses import dataclass

from risingspark.types import DataType

UDF_PREFIX = "rs_udf_"  # the name the engines (Spark, DuckDB) register a function under, then its id


@dataclass(frozen=True)
class FunctionCatalog:
    id: int
    database_id: int
    schema_id: int
    name: str
    arg_names: tuple[str, ...]
    arg_types: tuple[DataType, ...]
    return_type: DataType
    language: str
    body: str
    owner: int

    @property
    def signature(self) -> str:
        """How PostgreSQL's messages name the function: ``count_char(character varying, integer)``."""
        return f"{self.name}({', '.join(t.display() for t in self.arg_types)})"

    @property
    def udf_name(self) -> str:
        return f"{UDF_PREFIX}{self.id}"

    def to_json(self) -> dict:
        return {"id": self.id, "database_id": self.database_id, "schema_id": self.schema_id, "name": self.name,
                "arg_names": list(self.arg_names), "arg_types": [t.to_json() for t in self.arg_types],
                "return_type": self.return_type.to_json(), "language": self.language, "body": self.body,
                "owner": self.owner}

    @classmethod
    def from_json(cls, d: dict) -> FunctionCatalog:
        return cls(d["id"], d["database_id"], d["schema_id"], d["name"], tuple(d["arg_names"]),
                   tuple(DataType.from_json(t) for t in d["arg_types"]), DataType.from_json(d["return_type"]),
                   d["language"], d["body"], d["owner"])
