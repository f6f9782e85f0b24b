"""Virtual nodes: ``vnode = hash(distribution key) % 256``, as RisingWave.

The hash is Spark's Murmur3 ``hash()`` over the distribution key cast to its declared type, so every
epoch round computes the same vnode for the same key; state tables are sorted by ``(vnode, pk)``.
Every stored row carries its ``_vnode``; `vnode_of` computes it in Python for point lookups (a batch
query reading the one vnode of an index that holds a key), checked against Spark in tests/spark.
"""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal

VNODE_COUNT = 256


def vnode_expr(columns: list[str] | tuple[str, ...], spark_types: list[str] | tuple[str, ...]) -> str:
    """The Spark SQL expression giving the vnode of a row.

    >>> vnode_expr(["id"], ["BIGINT"])
    'CAST(pmod(hash(CAST(`id` AS BIGINT)), 256) AS SMALLINT)'
    """
    if not columns:
        # A singleton distribution (e.g. a global aggregate): everything lives in vnode 0.
        return "CAST(0 AS SMALLINT)"
    args = ", ".join(f"CAST(`{c}` AS {t})" for c, t in zip(columns, spark_types, strict=True))
    return f"CAST(pmod(hash({args}), {VNODE_COUNT}) AS SMALLINT)"


def actor_vnodes(actor: int, parallelism: int) -> range:
    """The contiguous vnode range owned by `actor` of a fragment with `parallelism` actors."""
    return range(actor * VNODE_COUNT // parallelism, (actor + 1) * VNODE_COUNT // parallelism)


# ---- the same hash in Python, for point lookups (a batch query reading one vnode of an index) ----------

_MASK = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def _mix_k1(k1: int) -> int:
    return (_rotl((k1 * 0xCC9E2D51) & _MASK, 15) * 0x1B873593) & _MASK


def _mix_h1(h1: int, k1: int) -> int:
    return (_rotl(h1 ^ k1, 13) * 5 + 0xE6546B64) & _MASK


def _fmix(h1: int, length: int) -> int:
    h1 ^= length
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _MASK
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _MASK
    return h1 ^ (h1 >> 16)


def _hash_int(value: int, seed: int) -> int:
    return _fmix(_mix_h1(seed, _mix_k1(value & _MASK)), 4)


def _hash_long(value: int, seed: int) -> int:
    value &= 0xFFFFFFFFFFFFFFFF
    h1 = _mix_h1(seed, _mix_k1(value & _MASK))
    return _fmix(_mix_h1(h1, _mix_k1(value >> 32)), 8)


def _hash_bytes(data: bytes, seed: int) -> int:
    """Spark's `Murmur3_x86_32.hashUnsafeBytes`: little-endian 4-byte words, then each remaining
    byte (sign-extended) mixed as a word of its own."""
    aligned = len(data) - len(data) % 4
    h1 = seed
    for i in range(0, aligned, 4):
        h1 = _mix_h1(h1, _mix_k1(int.from_bytes(data[i:i + 4], "little")))
    for b in data[aligned:]:
        h1 = _mix_h1(h1, _mix_k1((b - 256 if b > 127 else b) & _MASK))
    return _fmix(h1, len(data))


def _signed(h: int) -> int:
    return h - (1 << 32) if h & 0x80000000 else h


def spark_hash(values: list | tuple, spark_types: list[str] | tuple[str, ...], seed: int = 42) -> int:
    """Spark's ``hash(CAST(v AS type), ...)`` (Murmur3 x86 32-bit, seed 42; a NULL leaves the seed
    as it is), for values already of the type: ints, floats, `Decimal`, str, bool, `date`,
    `datetime` (microseconds since the epoch, naive ones read as UTC).

    >>> spark_hash([1], ["INT"]), spark_hash(["a"], ["STRING"])
    (-559580957, 1485273170)
    """
    h = seed & _MASK
    for v, t in zip(values, spark_types, strict=True):
        t = t.upper()
        if v is None:
            continue
        if t in ("TINYINT", "SMALLINT", "INT", "INTEGER"):
            h = _hash_int(int(v), h)
        elif t == "BIGINT":
            h = _hash_long(int(v), h)
        elif t == "BOOLEAN":
            h = _hash_int(1 if v else 0, h)
        elif t in ("FLOAT", "REAL"):
            f = 0.0 if v == 0 else float(v)
            h = _hash_int(struct.unpack("<i", struct.pack("<f", f))[0], h)
        elif t == "DOUBLE":
            f = 0.0 if v == 0 else float(v)
            h = _hash_long(struct.unpack("<q", struct.pack("<d", f))[0], h)
        elif t == "DATE":
            h = _hash_int((v - dt.date(1970, 1, 1)).days, h)
        elif t.startswith("TIMESTAMP"):
            if v.tzinfo is None:
                v = v.replace(tzinfo=dt.UTC)
            delta = v - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
            h = _hash_long((delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds, h)
        elif t.startswith("DECIMAL"):
            precision, scale = (int(x) for x in t[t.index("(") + 1:t.index(")")].split(","))
            unscaled = int(Decimal(v).scaleb(scale).to_integral_value())
            if precision <= 18:
                h = _hash_long(unscaled, h)
            else:  # Java's BigInteger.toByteArray: minimal two's complement, big-endian
                n = (unscaled if unscaled >= 0 else -unscaled - 1).bit_length() // 8 + 1
                h = _hash_bytes(unscaled.to_bytes(n, "big", signed=True), h)
        elif t in ("STRING", "VARCHAR") or t.startswith("VARCHAR"):
            h = _hash_bytes(str(v).encode(), h)
        else:
            raise ValueError(f"no Python hash for Spark type {t}")
    return _signed(h)


def vnode_of(values: list | tuple, spark_types: list[str] | tuple[str, ...]) -> int:
    """The vnode `vnode_expr` gives a row with these distribution key values."""
    if not values:
        return 0
    return spark_hash(values, spark_types) % VNODE_COUNT
