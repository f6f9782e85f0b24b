"""The SST bloom filter: the stable key hash, no false negatives, the false-positive rate, the format."""

from __future__ import annotations

import math
import struct
import time

import numpy as np
import pyarrow as pa
import pytest

from risingspark.errors import InternalError
from risingspark.storage.bloom import FEW_KEYS, BloomFilter, hash_key, hash_keys, num_hashes_for

M64 = (1 << 64) - 1


def ref_hash(key: bytes) -> int:
    """A scalar transcription of the hash in the module docstring of `risingspark.storage.bloom`."""

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (64 - r))) & M64

    h = 0x9E3779B97F4A7C15
    for i in range(0, len(key), 8):
        w = int.from_bytes(key[i:i + 8].ljust(8, b"\0"), "little")
        k = rotl(w * 0x87C37B91114253D5 & M64, 31) * 0x4CF5AD432745937F & M64
        h = (rotl(h ^ k, 27) * 5 + 0x52DCE729) & M64
    h ^= len(key)
    h ^= h >> 33
    h = h * 0xFF51AFD7ED558CCD & M64
    h ^= h >> 33
    h = h * 0xC4CEB9FE1A85EC53 & M64
    return h ^ (h >> 33)


def binary(keys: list[bytes]) -> pa.BinaryArray:
    return pa.array(keys, pa.binary())


def random_keys(rng: np.random.Generator, n: int, *, min_len: int = 1, max_len: int = 100,
                prefix: bytes = b"", nonzero_end: bool = False) -> pa.BinaryArray:
    """`n` random keys of `prefix` + ``min_len..max_len`` random bytes (any byte value), vectorized."""
    lengths = rng.integers(min_len, max_len + 1, n) + len(prefix)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data = rng.integers(0, 256, int(offsets[-1]), dtype=np.uint8)
    if prefix:
        starts = offsets[:-1]
        for i, byte in enumerate(prefix):
            data[starts + i] = byte
    if nonzero_end:
        ends = offsets[1:] - 1
        data[ends] = np.maximum(data[ends], 1)
    return pa.BinaryArray.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


GOLDEN = {
    b"": 0x9CA066F1A4AB2EEA,
    b"a": 0x049603088011F1B2,
    b"abcdefgh": 0xDD27B0B573EAD7A3,
    b"abcdefghi": 0x3C9CCA7EC636EB32,
    b"\x7f" * 100: 0xDEE20178F4E9C9D8,
}


# --- the hash ------------------------------------------------------------------------------------------------


def test_golden_values_never_change() -> None:
    keys = list(GOLDEN)
    got = hash_keys(binary(keys))
    assert got.dtype == np.uint64
    assert [int(x) for x in got] == list(GOLDEN.values())
    assert [ref_hash(k) for k in keys] == list(GOLDEN.values())
    # the same keys as an S array (b"" is the all-zero element)
    assert [int(x) for x in hash_keys(np.array(keys, dtype="S128"))] == list(GOLDEN.values())


def test_matches_the_scalar_reference() -> None:
    rng = np.random.default_rng(1)
    arr = random_keys(rng, 500, min_len=0, max_len=70)
    got = hash_keys(arr)
    assert [int(x) for x in got] == [ref_hash(k) for k in arr.to_pylist()]


def test_same_keys_same_hash_in_every_form() -> None:
    rng = np.random.default_rng(2)
    arr = random_keys(rng, 3000, max_len=60, nonzero_end=True)
    keys = arr.to_pylist()
    expected = hash_keys(arr)
    chunked = pa.chunked_array([arr.slice(0, 1000), arr.slice(1000, 1), arr.slice(1001, 0), arr.slice(1001)])
    np.testing.assert_array_equal(hash_keys(chunked), expected)
    np.testing.assert_array_equal(hash_keys(pa.array(keys, pa.large_binary())), expected)
    # a sliced array: offsets not starting at 0, data buffer beyond the slice
    np.testing.assert_array_equal(hash_keys(arr.slice(17, 100)), expected[17:117])
    np.testing.assert_array_equal(hash_keys(pa.chunked_array([arr]).slice(5, 10)), expected[5:15])
    for width in (60, 61, 64, 200):  # S arrays padded to various widths
        s = np.array(keys, dtype=f"S{width}")
        np.testing.assert_array_equal(hash_keys(s), expected)
    s = np.array(keys, dtype="S80")
    np.testing.assert_array_equal(hash_keys(s[::3]), expected[::3])  # a non-contiguous S array
    assert hash_keys(pa.array([], pa.binary())).shape == (0,)
    assert hash_keys(pa.chunked_array([], pa.binary())).shape == (0,)
    assert hash_keys(np.array([], dtype="S8")).shape == (0,)


def test_distinct_keys_distinct_hashes() -> None:
    # prefixes of one another, a trailing zero byte (Arrow only), one byte flipped, every length
    base = bytes(range(1, 101))
    keys = [base[:i] for i in range(101)] + [b"a\0", b"a\0\0", b"\0", b"\0\0", b"\xff" * 9, b"\xfe" + b"\xff" * 8]
    keys += [b"abcdefgh" + bytes([i]) for i in range(256)]
    h = hash_keys(binary(keys))
    assert len(set(h.tolist())) == len(keys)


def test_the_hash_distributes_well() -> None:
    n = 100_000
    decimal = binary([str(i).encode() for i in range(n)])
    big_endian = pa.BinaryArray.from_buffers(pa.binary(), n, [
        None, pa.py_buffer(np.arange(n + 1, dtype=np.int32) * 4), pa.py_buffer(np.arange(n, dtype=">u4").tobytes())])
    padded = np.array([b"user-%08d\x01" % i for i in range(n)], dtype="S32")
    for keys in (decimal, big_endian, padded):
        h = hash_keys(keys)
        assert len(np.unique(h)) == n
        for shift in (0, 8, 32, 56):  # the low bits (h1), the high bits (h2) and in between
            counts = np.bincount(((h >> np.uint64(shift)) & np.uint64(0xFF)).astype(np.int64), minlength=256)
            expected = n / 256
            chi2 = float(((counts - expected) ** 2 / expected).sum())
            assert chi2 < 400, (shift, chi2)  # 255 degrees of freedom: mean 255, sd 22.6
        # each output bit is set about half of the time
        ones = np.unpackbits(h.view(np.uint8).reshape(n, 8), axis=1).mean(axis=0)
        assert np.all(np.abs(ones - 0.5) < 0.01)


def test_rejects_bad_keys() -> None:
    with pytest.raises(InternalError):
        hash_keys(pa.array([b"a", None], pa.binary()))
    with pytest.raises(InternalError):
        hash_keys(pa.array(["a"], pa.string()))
    with pytest.raises(InternalError):
        hash_keys(np.array([1, 2]))
    with pytest.raises(InternalError):
        hash_keys(np.array([[b"a"]]))
    with pytest.raises(InternalError):
        hash_keys([b"a"])  # type: ignore[arg-type]


# --- the filter ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 7, 1000, 200_000])
def test_no_false_negatives(n: int) -> None:
    rng = np.random.default_rng(n)
    arr = random_keys(rng, n, nonzero_end=True)  # lengths 1..100, any byte value but a zero last byte
    bloom = BloomFilter.build(arr)
    assert bloom.num_bits == max(64, -(-n * 10 // 64) * 64)
    assert bloom.num_hashes == 7
    assert bloom.may_contain(arr).all()
    assert bloom.may_contain(pa.chunked_array([arr.slice(0, n // 2), arr.slice(n // 2)], pa.binary())).all()
    assert bloom.may_contain(np.array(arr.slice(0, 2000).to_pylist(), dtype="S100")).all()


def test_no_false_negatives_odd_keys() -> None:
    base = "ключ-🔑-".encode() + bytes(range(1, 256))
    keys = [base[:i] for i in range(1, len(base) + 1)]  # non-ASCII, prefixes of one another
    keys += [b"\x00", b"\x00\x00", b"a\x00b", b"\xff" * 1000, b"", b"x" * 5000]
    keys += keys[:10]  # duplicates
    for bits_per_key in (1, 2, 5, 10, 20, 50):
        bloom = BloomFilter.build(binary(keys), bits_per_key=bits_per_key)
        assert bloom.num_hashes == num_hashes_for(bits_per_key)
        assert bloom.may_contain(binary(keys)).all()
        nonzero_end = [k for k in keys if k and k[-1] != 0]
        assert bloom.may_contain(np.array(nonzero_end)).all()  # the S form of the same keys


def test_few_keys_probed_in_python_answer_as_the_vectorized_probes() -> None:
    rng = np.random.default_rng(5)
    present = random_keys(rng, 3000, nonzero_end=True)
    absent = random_keys(rng, 3000, min_len=3, prefix=b"\x02")
    for bits_per_key in (1, 3, 10):
        bloom = BloomFilter.build(present, bits_per_key=bits_per_key)
        h = hash_keys(pa.concat_arrays([present, absent]))
        vectorized = bloom.may_contain_hashes(h)  # more than FEW_KEYS at once
        assert len(h) > FEW_KEYS and not vectorized.all() and vectorized[:3000].all()
        one_by_one = np.concatenate([bloom.may_contain_hashes(h[i:i + FEW_KEYS]) for i in range(0, len(h), FEW_KEYS)])
        assert one_by_one.tolist() == vectorized.tolist()


def test_empty_filter_contains_nothing() -> None:
    bloom = BloomFilter.build(pa.array([], pa.binary()))
    assert bloom.num_bits == 64
    assert not bloom.bits.any()
    assert not bloom.may_contain(binary([b"", b"a", b"abc" * 10])).any()
    assert bloom.may_contain(pa.array([], pa.binary())).shape == (0,)


def test_num_hashes() -> None:
    assert [num_hashes_for(b) for b in (1, 2, 3, 5, 10, 16, 20, 43, 44, 100)] == [1, 1, 2, 3, 7, 11, 14, 30, 30, 30]
    with pytest.raises(InternalError):
        BloomFilter.build(binary([b"a"]), bits_per_key=0)


def test_false_positive_rate_is_close_to_theory() -> None:
    rng = np.random.default_rng(7)
    n = 200_000
    present = random_keys(rng, n, min_len=10, max_len=40, prefix=b"\x01")
    absent = random_keys(rng, n, min_len=10, max_len=40, prefix=b"\x02")
    bloom = BloomFilter.build(present, bits_per_key=10)
    k, bits_per_key = bloom.num_hashes, bloom.num_bits / n
    theory = (1 - math.exp(-k / bits_per_key)) ** k
    fpr = float(bloom.may_contain(absent).mean())
    print(f"\nfalse-positive rate {fpr:.4%}, theory {theory:.4%} (k={k}, {bits_per_key:.2f} bits/key)")
    assert fpr < 0.02
    assert theory / 2 < fpr < theory * 1.5


def test_size_is_about_bits_per_key() -> None:
    arr = random_keys(np.random.default_rng(3), 10_000)
    for bits_per_key in (4, 10, 16):
        data = BloomFilter.build(arr, bits_per_key=bits_per_key).to_bytes()
        assert len(data) == 8 + math.ceil(10_000 * bits_per_key / 64) * 8


def test_timings() -> None:
    """Prints timings (never asserts them): the brief asks for < 300 ms to build over 1M keys."""
    rng = np.random.default_rng(4)
    keys = random_keys(rng, 1_000_000, min_len=15, max_len=25)
    builds, lookups = [], []
    for _ in range(3):  # the first run pays for page faults on fresh memory
        t0 = time.perf_counter()
        bloom = BloomFilter.build(keys)
        t1 = time.perf_counter()
        assert bloom.may_contain(keys.slice(0, 10_000)).all()
        t2 = time.perf_counter()
        builds.append((t1 - t0) * 1e3)
        lookups.append((t2 - t1) * 1e3)
    print(f"\nbuild 1M keys: {' / '.join(f'{t:.1f}' for t in builds)} ms, "
          f"may_contain 10K keys: {' / '.join(f'{t:.2f}' for t in lookups)} ms")


# --- the format ----------------------------------------------------------------------------------------------


def test_bytes_round_trip() -> None:
    arr = random_keys(np.random.default_rng(5), 1234)
    for bloom in (BloomFilter.build(arr), BloomFilter.build(arr, bits_per_key=3),
                  BloomFilter.build(pa.array([], pa.binary()))):
        data = bloom.to_bytes()
        assert isinstance(data, bytes)
        version, num_hashes, reserved, num_words = struct.unpack_from("<BBHI", data)
        assert (version, num_hashes, reserved, num_words) == (1, bloom.num_hashes, 0, bloom.num_bits // 64)
        back = BloomFilter.from_bytes(data)
        assert back == bloom and hash(back) == hash(bloom)
        assert back.to_bytes() == data
        np.testing.assert_array_equal(back.may_contain(arr), bloom.may_contain(arr))
    assert BloomFilter.build(arr) != BloomFilter.build(arr, bits_per_key=3)


def test_golden_bytes() -> None:
    data = BloomFilter.build(binary([b"a", b"b"]), bits_per_key=10).to_bytes()
    assert data[:8] == bytes([1, 7, 0, 0, 1, 0, 0, 0])
    assert len(data) == 16
    assert BloomFilter.from_bytes(data).may_contain(binary([b"a", b"b"])).all()


def test_from_bytes_rejects_corrupt_input() -> None:
    data = BloomFilter.build(random_keys(np.random.default_rng(6), 100)).to_bytes()
    bad = [
        b"",
        data[:7],                       # a truncated header
        data[:-1],                      # truncated words
        data[:8],                       # a header without its words
        data + b"\0" * 8,               # trailing bytes
        bytes([2]) + data[1:],          # an unknown version
        bytes([0]) + data[1:],
        data[:1] + bytes([0]) + data[2:],   # num_hashes 0
        data[:1] + bytes([31]) + data[2:],  # num_hashes > 30
        data[:2] + b"\1\0" + data[4:],      # reserved bits set
        data[:4] + struct.pack("<I", 0),    # no words
        data[:4] + struct.pack("<I", 0xFFFFFFFF) + data[8:],
    ]
    for blob in bad:
        with pytest.raises(InternalError):
            BloomFilter.from_bytes(blob)


def test_constructor_validates() -> None:
    words = np.zeros(2, dtype=np.uint64)
    BloomFilter(128, 3, words)
    for args in ((100, 3, words), (0, 3, np.zeros(0, np.uint64)), (128, 0, words), (128, 31, words),
                 (192, 3, words), (128, 3, words.astype(np.int64))):
        with pytest.raises(InternalError):
            BloomFilter(*args)
    bloom = BloomFilter(128, 3, words)
    with pytest.raises(ValueError):
        bloom.bits[0] = 1  # read-only
    words[0] = 1  # the caller's array stays writable


def test_one_key_hashed_in_python_as_the_vectorized_hash() -> None:
    rng = np.random.default_rng(5)
    keys = random_keys(rng, 300, min_len=0, max_len=70).to_pylist() + [b"\x00", b"a\x00\x00", b"\x00" * 9]
    assert [hash_key(k) for k in keys] == [int(x) for x in hash_keys(binary(keys))]


def test_one_key_probed_in_python_answers_as_the_vectorized_probes_also_after_pickling() -> None:
    """`may_contain_hash` reads the words as little-endian bytes (a view kept beside them): every
    bit of every word answers as the vectorized probe, and a filter sent to another process (pickled:
    the view is not) answers the same."""
    import pickle

    rng = np.random.default_rng(9)
    present = random_keys(rng, 2000, nonzero_end=True)
    absent = random_keys(rng, 4000, min_len=3, prefix=b"\x02")
    for bits_per_key in (1, 4, 10):
        bloom = BloomFilter.build(present, bits_per_key=bits_per_key)
        h = hash_keys(pa.concat_arrays([present, absent]))
        vectorized = bloom.may_contain_hashes(h).tolist()
        assert not all(vectorized) and all(vectorized[:2000])
        copy = pickle.loads(pickle.dumps(bloom))
        for f in (bloom, copy):
            assert [f.may_contain_hash(int(x)) for x in h] == vectorized
