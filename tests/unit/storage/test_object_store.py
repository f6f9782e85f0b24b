"""The object store over pyarrow.fs (local directory; S3 URL parsing)."""

from __future__ import annotations

import pickle
import time

import pyarrow as pa
import pytest

from risingspark.errors import InvalidParameterValue
from risingspark.storage.object_store import ObjectStore, get_object_store


def test_parquet_round_trip_and_listing(tmp_path):
    store = ObjectStore(str(tmp_path / "root"))
    t = pa.table({"a": [1, 2, 3], "b": ["x", "y", None]})
    size = store.write_parquet("hummock/12/abc.parquet", t, row_group_size=2)
    assert size == (tmp_path / "root/hummock/12/abc.parquet").stat().st_size
    assert store.read_parquet("hummock/12/abc.parquet").equals(t)
    assert store.read_parquet("hummock/12/abc.parquet", columns=["b"]).column_names == ["b"]
    assert store.parquet_metadata("hummock/12/abc.parquet").num_row_groups == 2
    store.write_bytes("hummock/13/x.bin", b"hello")
    store.write_bytes("other/y.bin", b"")
    assert store.read_bytes("hummock/13/x.bin") == b"hello"
    listed = store.list("hummock")
    assert [(o.path, o.size) for o in listed] == [("hummock/12/abc.parquet", size), ("hummock/13/x.bin", 5)]
    assert abs(listed[0].mtime - time.time()) < 600
    assert [o.path for o in store.list("")] == ["hummock/12/abc.parquet", "hummock/13/x.bin", "other/y.bin"]
    assert store.list("nothing/here") == []
    assert store.exists("other/y.bin") and not store.exists("other") and not store.exists("nope")


def test_writes_are_atomic_replacements(tmp_path):
    store = ObjectStore(str(tmp_path))
    store.write_bytes("d/f", b"one")
    store.write_bytes("d/f", b"two")
    assert store.read_bytes("d/f") == b"two"

    class Boom(Exception):
        pass

    class Exploding:
        """A table whose writing fails half-way."""

        def __getattr__(self, name):
            raise Boom(name)

    with pytest.raises(Boom):
        store.write_parquet("d/g.parquet", Exploding())
    assert not store.exists("d/g.parquet")
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["f"]  # no temp file left
    store.write_parquet("d/g.parquet", pa.table({"a": [1]}))
    assert [o.path for o in store.list("d")] == ["d/f", "d/g.parquet"]


def test_delete_ignores_missing_files(tmp_path):
    store = ObjectStore(str(tmp_path))
    store.write_bytes("a/1", b"x")
    store.write_bytes("a/2", b"x")
    store.delete(["a/1", "a/missing", "b/none"])
    assert [o.path for o in store.list("a")] == ["a/2"]


def test_file_urls_and_path_validation(tmp_path):
    store = ObjectStore(f"file://{tmp_path}")
    store.write_bytes("x/y", b"1")
    assert ObjectStore(str(tmp_path)).read_bytes("x/y") == b"1"
    assert store.url == f"file://{tmp_path}"
    for bad in ("/etc/passwd", "../up", "a/../../b", "a/./b"):
        with pytest.raises(InvalidParameterValue):
            store.read_bytes(bad)


def test_get_object_store_caches_per_url_and_survives_pickling(tmp_path):
    url = str(tmp_path)
    store = get_object_store(url)
    assert get_object_store(url) is store
    assert pickle.loads(pickle.dumps(store)) is store
    assert get_object_store(f"file://{tmp_path}") is not store


def test_s3_urls_become_s3_filesystem_options():
    store = ObjectStore("s3://bucket/some/prefix?endpoint_override=http://minio:9000&region=eu-west-1"
                        "&access_key=AK&secret_key=SK&allow_bucket_creation=true")
    assert store.filesystem.type_name == "s3"
    options = store.filesystem.__reduce__()[1][0]
    assert options["endpoint_override"] == "minio:9000" and options["scheme"] == "http"
    assert (options["region"], options["access_key"], options["secret_key"]) == ("eu-west-1", "AK", "SK")
    assert options["allow_bucket_creation"] is True
    assert store.full_path("hummock/1/a.parquet") == "bucket/some/prefix/hummock/1/a.parquet"
    with pytest.raises(InvalidParameterValue):
        ObjectStore("s3://bucket?no_such_option=1")
    with pytest.raises(InvalidParameterValue):
        ObjectStore("s3:///prefix")


@pytest.fixture
def s3_server(monkeypatch):
    """An in-process S3 endpoint (moto), when moto is installed."""
    server_mod = pytest.importorskip("moto.server")
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def test_s3_store_against_an_s3_endpoint(s3_server):
    store = ObjectStore(f"s3://rs-test/warehouse?endpoint_override={s3_server}&region=us-east-1"
                        "&allow_bucket_creation=true")
    store.filesystem.create_dir("rs-test")
    t = pa.table({"a": [1, 2]})
    size = store.write_parquet("hummock/1/a.parquet", t)
    store.write_bytes("dml/b", b"abc")
    assert store.read_parquet("hummock/1/a.parquet").equals(t)
    assert store.read_bytes("dml/b") == b"abc"
    assert [(o.path, o.size) for o in store.list("")] == [("dml/b", 3), ("hummock/1/a.parquet", size)]
    assert store.list("nope") == [] and store.exists("dml/b") and not store.exists("dml")
    store.delete(["dml/b", "dml/missing"])
    assert [o.path for o in store.list("")] == ["hummock/1/a.parquet"]
