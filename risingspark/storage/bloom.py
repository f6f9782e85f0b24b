"""A vectorized bloom filter over byte-string keys, stored inside SST files.

Each SST carries a bloom filter of its (prefix) keys in the Parquet footer's key-value metadata, so a
point lookup skips the SSTs that cannot hold its key (RisingWave: ``hummock/sstable/bloom.rs``).

Hash (`hash_keys`, stable forever: its values are stored in files). A MurmurHash3-style 64-bit hash,
single lane; it is NOT MurmurHash3 and must not be replaced by a library function. All arithmetic is
modulo 2**64, ``rotl`` is a 64-bit left rotation::

    C1, C2 = 0x87C37B91114253D5, 0x4CF5AD432745937F
    h = 0x9E3779B97F4A7C15                          # the seed
    for each 8-byte word w of the key, first to last, read little-endian; the last word of a key
    whose length is not a multiple of 8 is padded with zero bytes:
        k = rotl(w * C1, 31) * C2
        h = rotl(h ^ k, 27) * 5 + 0x52DCE729
    h ^= len(key)
    h ^= h >> 33; h *= 0xFF51AFD7ED558CCD           # the murmur3 fmix64 finalizer
    h ^= h >> 33; h *= 0xC4CEB9FE1A85EC53
    h ^= h >> 33

It is vectorized over the keys: the loop is over word positions, each step mixing one word into every
key that is long enough. Keys come as Arrow ``binary`` / ``large_binary`` (array or chunked) or as a
numpy fixed-width bytes array (dtype ``S{w}``). numpy pads an ``S`` element with zero bytes on the right
and drops trailing zero bytes when it reads one, so for ``S`` arrays the key is the element with its
trailing zero bytes stripped: a key hashes the same whatever the width it is padded to.
Precondition: a key never ends in a zero byte, or its Arrow and ``S`` forms hash differently (our key
encoding guarantees it for the keys we filter on).

Filter (`BloomFilter`). ``m`` bits (a multiple of 64, about ``bits_per_key`` per key, at least 64) and
``k = min(30, max(1, round(bits_per_key * ln 2)))`` probes by Kirsch-Mitzenmacher double hashing from
the 64-bit hash ``h``: ``h1 = h & 0xFFFFFFFF``, ``h2 = (h >> 32) | 1``, probe ``i`` (``0 <= i < k``)
sets/tests bit ``(h1 + i * h2) mod m``. Bit ``b`` is bit ``b & 63`` (least significant first) of
64-bit word ``b >> 6``. A filter of no keys has no bit set, so it contains nothing.

Byte format (`BloomFilter.to_bytes`), little-endian, 8-byte header then the words::

    offset 0  u8   version, 1
    offset 1  u8   num_hashes k, 1..30
    offset 2  u16  reserved, 0
    offset 4  u32  num_words, >= 1 (num_bits = 64 * num_words)
    offset 8  u64 * num_words  the bit words

>>> f = BloomFilter.build(pa.array([b"apple", b"pear"], pa.binary()))
>>> f.may_contain(np.array([b"apple", b"pear"])).tolist()
[True, True]
>>> BloomFilter.from_bytes(f.to_bytes()) == f
True
"""

from __future__ import annotations

import math
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeAlias

import numpy as np
import pyarrow as pa

from risingspark.errors import InternalError

Keys: TypeAlias = pa.Array | pa.ChunkedArray | np.ndarray
# word_at(j, idx): word j (uint64, zero bytes past the key's end) of the keys at positions idx
_WordAt: TypeAlias = Callable[[int, np.ndarray], np.ndarray]

FORMAT_VERSION = 1
MAX_HASHES = 30
_HEADER = struct.Struct("<BBHI")  # version, num_hashes, reserved, num_words

_U64 = np.uint64
_SEED = _U64(0x9E3779B97F4A7C15)
_C1 = _U64(0x87C37B91114253D5)
_C2 = _U64(0x4CF5AD432745937F)
_C3 = _U64(0x52DCE729)
_FMIX1 = _U64(0xFF51AFD7ED558CCD)
_FMIX2 = _U64(0xC4CEB9FE1A85EC53)
_LOW32 = _U64(0xFFFFFFFF)
# _MASKS[r]: the low r bytes of a word, r = 0..8
_MASKS = np.array([(1 << (8 * r)) - 1 for r in range(9)], dtype=np.uint64)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _U64(r)) | (x >> _U64(64 - r))


def _mix_word(h: np.ndarray, w: np.ndarray) -> np.ndarray:
    """One word step of the hash (see the module docstring), on equal-length uint64 arrays."""
    w *= _C1
    w = _rotl(w, 31)
    w *= _C2
    h ^= w
    h = _rotl(h, 27)
    h *= _U64(5)
    h += _C3
    return h


def _fmix64(h: np.ndarray) -> np.ndarray:
    h ^= h >> _U64(33)
    h *= _FMIX1
    h ^= h >> _U64(33)
    h *= _FMIX2
    h ^= h >> _U64(33)
    return h


def _hash_words(lengths: np.ndarray, word_at: _WordAt) -> np.ndarray:
    """The hash of keys of `lengths` (int64) bytes; ``word_at(j, idx)`` is word `j` of keys `idx`."""
    n = len(lengths)
    h = np.full(n, _SEED, dtype=np.uint64)
    idx = np.flatnonzero(lengths > 0)
    j = 0
    while idx.size:
        if idx.size == n:  # every key has word j: no gather / scatter
            h = _mix_word(h, word_at(j, idx))
        else:
            h[idx] = _mix_word(h[idx], word_at(j, idx))
        j += 1
        idx = idx[lengths[idx] > 8 * j]
    h ^= lengths.astype(np.uint64)
    return _fmix64(h)


class _ArrowWordAt:
    """Word `j` (uint64, zero past the key's end) of some keys, from Arrow offsets and data."""

    def __init__(self, starts: np.ndarray, lengths: np.ndarray, data: np.ndarray) -> None:
        self.starts, self.lengths = starts, lengths
        padded = np.zeros(len(data) + 8, dtype=np.uint8)
        padded[: len(data)] = data
        self.padded = padded  # keeps the buffer of `words` alive
        # words[p]: the 8 bytes at byte offset p, as one unaligned little-endian word
        self.words = np.ndarray((len(data) + 1,), dtype="<u8", buffer=padded, strides=(1,))

    def __call__(self, j: int, idx: np.ndarray) -> np.ndarray:
        every = idx.size == len(self.starts)
        starts, lengths = (self.starts, self.lengths) if every else (self.starts[idx], self.lengths[idx])
        w = self.words[starts + 8 * j].astype(np.uint64)
        rem = lengths - 8 * j
        if (rem < 8).any():
            w &= _MASKS[np.minimum(rem, 8)]
        return w


class _FixedWordAt:
    """Word `j` of rows of a zero-padded ``(n, words)`` little-endian uint64 matrix."""

    def __init__(self, matrix: np.ndarray) -> None:
        self.matrix = matrix

    def __call__(self, j: int, idx: np.ndarray) -> np.ndarray:
        col = self.matrix[:, j]
        return (col if idx.size == len(col) else col[idx]).astype(np.uint64)


def _hash_arrow(arr: pa.Array) -> np.ndarray:
    if not (pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type)):
        raise InternalError(f"bloom keys must be binary, not {arr.type}")
    if arr.null_count:
        raise InternalError("bloom keys must not be NULL")
    n = len(arr)
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    _, offsets_buf, data_buf = arr.buffers()
    odt = np.int64 if pa.types.is_large_binary(arr.type) else np.int32
    offsets = np.frombuffer(offsets_buf, dtype=odt, count=n + 1, offset=arr.offset * odt().itemsize)
    offsets = offsets.astype(np.int64)
    first, last = int(offsets[0]), int(offsets[-1])
    data = (np.frombuffer(data_buf, dtype=np.uint8, count=last - first, offset=first)
            if data_buf is not None and last > first else np.empty(0, dtype=np.uint8))
    starts = offsets[:-1] - first
    lengths = np.diff(offsets)
    return _hash_words(lengths, _ArrowWordAt(starts, lengths, data))


def _hash_fixed(arr: np.ndarray) -> np.ndarray:
    if arr.ndim != 1:
        raise InternalError(f"bloom keys must be a 1-D array, not {arr.ndim}-D")
    n, width = len(arr), arr.dtype.itemsize
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    nwords = -(-width // 8)
    padded = np.zeros((n, nwords * 8), dtype=np.uint8)
    padded[:, :width] = np.ascontiguousarray(arr).view(np.uint8).reshape(n, width)
    nonzero = padded[:, :width] != 0
    # length = 1 + the index of the last nonzero byte (0 when there is none)
    lengths = np.where(nonzero.any(axis=1), width - np.argmax(nonzero[:, ::-1], axis=1), 0).astype(np.int64)
    matrix = padded.view("<u8")  # bytes past the key's end are zero already
    return _hash_words(lengths, _FixedWordAt(matrix))


def hash_keys(keys: Keys) -> np.ndarray:
    """A stable 64-bit hash (``np.uint64``) per key; the function is in the module docstring.

    Args:
        keys: Arrow ``binary`` / ``large_binary`` (array or chunked array, no NULLs), or a 1-D numpy
            ``S{w}`` array whose elements are zero-padded keys (trailing zero bytes are not hashed).
            Keys must not end in a zero byte for the two forms to agree.

    Returns:
        A uint64 array, one hash per key.
    """
    with np.errstate(over="ignore"):
        if isinstance(keys, pa.ChunkedArray):
            parts = [_hash_arrow(c) for c in keys.chunks]
            return np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)
        if isinstance(keys, pa.Array):
            return _hash_arrow(keys)
        if isinstance(keys, np.ndarray) and keys.dtype.kind == "S":
            return _hash_fixed(keys)
    raise InternalError(f"bloom keys must be Arrow binary or a numpy bytes array, not {type(keys).__name__}"
                        + (f" of {keys.dtype}" if isinstance(keys, np.ndarray) else ""))


_M64 = (1 << 64) - 1
_SEED_INT, _C1_INT, _C2_INT, _C3_INT = int(_SEED), int(_C1), int(_C2), int(_C3)
_FMIX1_INT, _FMIX2_INT = int(_FMIX1), int(_FMIX2)


def hash_key(key: bytes) -> int:
    """`hash_keys` of one key given as its true bytes (Arrow's form), in Python integers: a point
    lookup's one key, for which the vectorized hash costs tens of numpy calls.

    >>> keys = [b"", b"apple", b"0123456789abcdef!"]
    >>> [hash_key(k) for k in keys] == hash_keys(pa.array(keys, pa.binary())).tolist()
    True
    """
    h = _SEED_INT
    for j in range(0, len(key), 8):
        w = int.from_bytes(key[j:j + 8], "little")  # (bytes past the end count as zero)
        w = (w * _C1_INT) & _M64
        w = (((w << 31) | (w >> 33)) & _M64) * _C2_INT & _M64
        h ^= w
        h = ((((h << 27) | (h >> 37)) & _M64) * 5 + _C3_INT) & _M64
    h ^= len(key)
    h ^= h >> 33
    h = (h * _FMIX1_INT) & _M64
    h ^= h >> 33
    h = (h * _FMIX2_INT) & _M64
    return h ^ (h >> 33)


FEW_KEYS = 8  # up to this many keys are probed one by one in Python (see `BloomFilter.may_contain_hash`)


def num_hashes_for(bits_per_key: int) -> int:
    """The number of probes k for `bits_per_key`: ``round(bits_per_key * ln 2)``, in 1..30."""
    return min(MAX_HASHES, max(1, round(bits_per_key * math.log(2))))


def _probes(h: np.ndarray, num_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """``(h1 mod m, h2 mod m)`` as uint64: probe i is ``(p + i * step) mod m``."""
    m = _U64(num_bits)
    return (h & _LOW32) % m, ((h >> _U64(32)) | _U64(1)) % m


def _advance(p: np.ndarray, step: np.ndarray, num_bits: int, scratch: np.ndarray) -> None:
    """``p = (p + step) mod m`` in place, for uint64 ``0 <= p, step < m < 2**63``.

    ``p + step < 2m``; when it is below m, ``p + step - m`` wraps to above it, so the minimum is the
    residue (three cheap ufuncs, no masked one).
    """
    p += step
    np.subtract(p, _U64(num_bits), out=scratch)
    np.minimum(p, scratch, out=p)


def _word_bytes(words: np.ndarray) -> memoryview:
    """The words as little-endian bytes (a view on a little-endian machine)."""
    if sys.byteorder != "little":
        words = words.astype("<u8")
    return memoryview(np.ascontiguousarray(words).data).cast("B")


@dataclass(frozen=True, eq=False)
class BloomFilter:
    """A bloom filter of byte-string keys; see the module docstring for the probes and the format.

    Attributes:
        num_bits: m, a multiple of 64, at least 64.
        num_hashes: k, 1..30.
        bits: the uint64 words, ``num_bits // 64`` of them (read-only).
    """

    num_bits: int
    num_hashes: int
    bits: np.ndarray
    _bytes: memoryview = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.num_bits < 64 or self.num_bits % 64:
            raise InternalError(f"bloom filter num_bits must be a positive multiple of 64, not {self.num_bits}")
        if not 1 <= self.num_hashes <= MAX_HASHES:
            raise InternalError(f"bloom filter num_hashes must be in 1..{MAX_HASHES}, not {self.num_hashes}")
        bits = np.asarray(self.bits)
        if bits.dtype != np.uint64 or bits.shape != (self.num_bits // 64,):
            raise InternalError(f"bloom filter bits must be {self.num_bits // 64} uint64 words, "
                                f"not {bits.shape} {bits.dtype}")
        view = bits.view()
        view.flags.writeable = False
        object.__setattr__(self, "bits", view)
        # The words as little-endian bytes, for `may_contain_hash`: bit p is bit ``p & 7`` of byte
        # ``p >> 3``, and indexing a memoryview costs a fraction of indexing a numpy array (no copy on
        # a little-endian machine; a word's bytes reversed on another).
        object.__setattr__(self, "_bytes", _word_bytes(view))

    def __getstate__(self) -> dict:
        return {"num_bits": self.num_bits, "num_hashes": self.num_hashes, "bits": self.bits}

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_bytes", _word_bytes(self.bits))

    @classmethod
    def build(cls, keys: Keys, *, bits_per_key: int = 10) -> BloomFilter:
        """A filter of `keys` (duplicates allowed) with about `bits_per_key` bits per key.

        Builds in a temporary bool per bit (``bits_per_key`` bytes per key), then packs it into words.
        """
        if bits_per_key < 1:
            raise InternalError(f"bits_per_key must be at least 1, not {bits_per_key}")
        h = hash_keys(keys)
        num_bits = max(64, -(-len(h) * bits_per_key // 64) * 64)
        num_hashes = num_hashes_for(bits_per_key)
        bitset = np.zeros(num_bits, dtype=bool)
        if len(h):
            p, step = _probes(h, num_bits)
            scratch = np.empty_like(p)
            with np.errstate(over="ignore"):
                for i in range(num_hashes):
                    if i:
                        _advance(p, step, num_bits, scratch)
                    bitset[p.view(np.int64)] = True  # p < 2**63: the same values; int64 indexes faster
        words = np.packbits(bitset, bitorder="little").view("<u8").astype(np.uint64)
        return cls(num_bits, num_hashes, words)

    def may_contain(self, keys: Keys) -> np.ndarray:
        """A bool per key: False means the key was certainly not given to `build`."""
        return self.may_contain_hashes(hash_keys(keys))

    def may_contain_hashes(self, h: np.ndarray) -> np.ndarray:
        """`may_contain` of keys already hashed by `hash_keys` (a lookup probes every SST's filter
        with the same keys: it hashes them once)."""
        out = np.ones(len(h), dtype=bool)
        if not len(h):
            return out
        if len(h) <= FEW_KEYS:
            for j, hv in enumerate(h.tolist()):
                out[j] = self.may_contain_hash(hv)
            return out
        p, step = _probes(h, self.num_bits)
        scratch = np.empty_like(p)
        with np.errstate(over="ignore"):
            for i in range(self.num_hashes):
                if i:
                    _advance(p, step, self.num_bits, scratch)
                words = self.bits[(p >> _U64(6)).view(np.int64)]
                out &= ((words >> (p & _U64(63))) & _U64(1)).astype(bool)
        return out

    def may_contain_hash(self, h: int) -> bool:
        """`may_contain` of one key hashed by `hash_keys`, probed in Python integers (a point
        lookup's one key: numpy's per-call cost made the vectorized probes of a few keys the most
        of a lookup's time)."""
        m, data = self.num_bits, self._bytes
        p, step = (h & 0xFFFFFFFF) % m, ((h >> 32) | 1) % m
        for _ in range(self.num_hashes):
            if not (data[p >> 3] >> (p & 7)) & 1:
                return False
            p = (p + step) % m
        return True

    def to_bytes(self) -> bytes:
        """The versioned byte format of the module docstring."""
        header = _HEADER.pack(FORMAT_VERSION, self.num_hashes, 0, self.num_bits // 64)
        return header + self.bits.astype("<u8", copy=False).tobytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> BloomFilter:
        """Parses `to_bytes` output; raises `InternalError` on an unknown version or corrupt data."""
        if len(data) < _HEADER.size:
            raise InternalError(f"bloom filter truncated: {len(data)} bytes, header is {_HEADER.size}")
        version, num_hashes, reserved, num_words = _HEADER.unpack_from(data)
        if version != FORMAT_VERSION:
            raise InternalError(f"unknown bloom filter version {version}")
        if reserved or num_words == 0 or not 1 <= num_hashes <= MAX_HASHES:
            raise InternalError(f"corrupt bloom filter header: num_hashes={num_hashes} reserved={reserved} "
                                f"num_words={num_words}")
        expected = _HEADER.size + 8 * num_words
        if len(data) != expected:
            raise InternalError(f"bloom filter of {num_words} words must be {expected} bytes, not {len(data)}")
        words = np.frombuffer(data, dtype="<u8", count=num_words, offset=_HEADER.size).astype(np.uint64)
        return cls(64 * num_words, num_hashes, words)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BloomFilter):
            return NotImplemented
        return (self.num_bits == other.num_bits and self.num_hashes == other.num_hashes
                and bool(np.array_equal(self.bits, other.bits)))

    def __hash__(self) -> int:
        return hash((self.num_bits, self.num_hashes, self.bits.tobytes()))


if __name__ == "__main__":
    import time

    rng = np.random.default_rng(0)
    n = 1_000_000
    lengths = rng.integers(15, 26, n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    blob = rng.integers(1, 256, int(offsets[-1]), dtype=np.uint8)
    keys = pa.BinaryArray.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(blob)])
    t0 = time.perf_counter()
    hash_keys(keys)
    t1 = time.perf_counter()
    bloom = BloomFilter.build(keys)
    t2 = time.perf_counter()
    probe = keys.slice(0, 10_000)
    bloom.may_contain(probe)
    t3 = time.perf_counter()
    other = pa.array([b"\x00missing-%d" % i for i in range(100_000)], pa.binary())
    fpr = float(bloom.may_contain(other).mean())
    print(f"hash_keys 1M: {(t1 - t0) * 1e3:.1f} ms, build 1M: {(t2 - t1) * 1e3:.1f} ms, "
          f"may_contain 10K: {(t3 - t2) * 1e3:.2f} ms, {len(bloom.to_bytes()) / n:.2f} bytes/key, "
          f"false positives {fpr:.4%}")
