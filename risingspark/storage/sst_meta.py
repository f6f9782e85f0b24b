"""The index of one SST, as Hummock's `SstableMeta`: what a point or prefix lookup needs so it reads
only the blocks that can hold its keys.

An SST's rows are sorted by ``_key``, the memcomparable encoding of ``(_vnode, pk...)``
(`risingspark.storage.memcmp`), then by ``_epoch`` descending; a **block** is a Parquet row group of
at most `block_rows` rows. The index holds the first key of every block and the SST's last key, and a
bloom filter of the keys' prefixes of `bloom_prefix` pk columns (RisingWave's prefix bloom filter,
sized for the lookups the table gets: a join side looks up by join key, so its filter covers only
that prefix; a table's primary-key check looks up whole keys). A lookup of key prefix ``P``:

1. skips the SST when ``P`` lies outside ``[first key, last key]`` or the filter rules it out;
2. reads blocks ``j..k``, where ``j`` is the last block whose first key is below ``P`` (a key's
   versions may straddle a block boundary, so the block before the first one starting at ``P``
   may hold its newest version) and ``k`` the last block whose first key is below ``P + 0xFF``;
3. finds the rows by binary search in those blocks (`risingspark.storage.point_get`).

The index lives in the SST's own Parquet footer, as the key-value metadata ``risingspark.sst`` (one
binary value), so an SST stays one immutable file::

    b"RSST" | version u8 (1) | header length u32 | header (JSON) | keys | bloom filter

``keys`` is ``(blocks + 1)`` little-endian u32 offsets then the bytes of the ``blocks + 1`` keys (the
first key of each block, then the last key); the header gives ``rows``, ``block_rows``, ``blocks``,
``bloom_prefix`` and the byte lengths of the two sections. Files written before this index existed
have no such value: they read as one block with no index (`SstMeta.indexed` is False), so a lookup
reads them whole, as before.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from risingspark.errors import InternalError
from risingspark.storage.bloom import BloomFilter
from risingspark.storage.memcmp import key_matrix

META_KEY = b"risingspark.sst"
_MAGIC = b"RSST"
_VERSION = 1


@dataclass(frozen=True)
class SstMeta:
    """The parsed index of one SST (see the module doc).

    Attributes:
        num_rows: rows in the file.
        block_rows: rows per block; every block but the last holds exactly this many.
        first_keys: the first key of every block, an S-dtype array (zero-padded).
        last_key: the SST's greatest key.
        bloom: the filter of key prefixes, or None (an unindexed file).
        bloom_prefix: the pk columns the filter's keys hold (after the vnode).
        parquet: the file's Parquet footer, so block reads do not parse it again.
        indexed: False for a file written without an index (read whole).
    """

    num_rows: int
    block_rows: int
    first_keys: np.ndarray
    last_key: bytes
    bloom: BloomFilter | None
    bloom_prefix: int
    parquet: pq.FileMetaData | None = None
    indexed: bool = True

    @property
    def num_blocks(self) -> int:
        return len(self.first_keys)

    @property
    def first_key(self) -> bytes:
        return bytes(self.first_keys[0]) if len(self.first_keys) else b""

    def block_bounds(self, block: int) -> tuple[int, int]:
        """The ``[start, end)`` rows of a block."""
        start = block * self.block_rows
        return start, min(self.num_rows, start + self.block_rows)

    @property
    def nbytes(self) -> int:
        """About the memory this meta holds (for the meta cache's budget)."""
        footer = self.parquet.serialized_size if self.parquet is not None else 0
        bloom = self.bloom.bits.nbytes if self.bloom is not None else 0
        return self.first_keys.nbytes + len(self.last_key) + bloom + 2 * footer + 256


def encode_meta(num_rows: int, block_rows: int, first_keys: list[bytes] | pa.Array, last_key: bytes,
                bloom: BloomFilter, bloom_prefix: int) -> bytes:
    """The footer value of an SST's index."""
    keys = [bytes(k) for k in (first_keys.to_pylist() if isinstance(first_keys, pa.Array) else first_keys)]
    keys.append(bytes(last_key))
    offsets = np.zeros(len(keys) + 1, dtype="<u4")
    np.cumsum([len(k) for k in keys], out=offsets[1:])
    key_blob = offsets.tobytes() + b"".join(keys)
    bloom_blob = bloom.to_bytes()
    header = json.dumps({"rows": num_rows, "block_rows": block_rows, "blocks": len(keys) - 1,
                         "bloom_prefix": bloom_prefix, "keys_bytes": len(key_blob),
                         "bloom_bytes": len(bloom_blob)}, separators=(",", ":")).encode()
    return _MAGIC + struct.pack("<BI", _VERSION, len(header)) + header + key_blob + bloom_blob


def decode_meta(data: bytes, parquet: pq.FileMetaData | None, path: str) -> SstMeta:
    """Parse the footer value written by `encode_meta` (`path` names the file in errors)."""
    try:
        if data[:4] != _MAGIC:
            raise ValueError("bad magic")
        version, header_len = struct.unpack_from("<BI", data, 4)
        if version != _VERSION:
            raise ValueError(f"unknown version {version}")
        pos = 9
        header = json.loads(data[pos:pos + header_len])
        pos += header_len
        n_keys = int(header["blocks"]) + 1
        key_blob = data[pos:pos + int(header["keys_bytes"])]
        pos += int(header["keys_bytes"])
        offsets = np.frombuffer(key_blob, dtype="<u4", count=n_keys + 1)
        base = (n_keys + 1) * 4
        keys = [key_blob[base + int(offsets[i]):base + int(offsets[i + 1])] for i in range(n_keys)]
        bloom = BloomFilter.from_bytes(data[pos:pos + int(header["bloom_bytes"])])
        if len(keys[-1]) != offsets[-1] - offsets[-2] or n_keys < 2:
            raise ValueError("truncated keys")
    except (ValueError, KeyError, struct.error, json.JSONDecodeError, InternalError) as e:
        raise InternalError(f"SST {path} has a corrupt index: {e}") from e
    first = key_matrix(pa.array(keys[:-1], pa.binary()))
    return SstMeta(int(header["rows"]), int(header["block_rows"]), first, keys[-1], bloom,
                   int(header["bloom_prefix"]), parquet)


def meta_of_footer(parquet: pq.FileMetaData, path: str) -> SstMeta:
    """The index of a file from its Parquet footer; an unindexed meta for files that have none."""
    kv = parquet.metadata or {}
    data = kv.get(META_KEY)
    if data is None:
        return SstMeta(parquet.num_rows, max(1, parquet.num_rows), np.zeros(1, dtype="S1"), b"", None, 0,
                       parquet, indexed=False)
    meta = decode_meta(data, parquet, path)
    if meta.num_rows != parquet.num_rows or meta.num_blocks != parquet.num_row_groups:
        raise InternalError(f"SST {path}: its index describes {meta.num_rows} rows in {meta.num_blocks} blocks, "
                            f"the file holds {parquet.num_rows} rows in {parquet.num_row_groups} row groups")
    return meta
