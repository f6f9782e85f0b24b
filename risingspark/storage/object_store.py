"""The object store holding SSTs, change logs and DML batches, through `pyarrow.fs`.

A store is rooted at a URL; every path given to it is relative to that root (``hummock/12/x.parquet``):

- a plain path or ``file:///abs/dir``: the local file system (writes are atomic: temp file + rename);
- ``s3://bucket/prefix?endpoint_override=http://minio:9000&region=us-east-1``: S3 or an S3-compatible
  store; query parameters are `pyarrow.fs.S3FileSystem` arguments (``access_key``/``secret_key`` may
  be given there, otherwise the usual ``AWS_*`` environment and credential chain apply);
- any other scheme pyarrow knows (``gs://``, ``hdfs://``): `pyarrow.fs.FileSystem.from_uri`.

>>> import tempfile
>>> store = ObjectStore(tempfile.mkdtemp())
>>> store.write_bytes("a/b.txt", b"hi")
>>> [(o.path, o.size) for o in store.list("a")]
[('a/b.txt', 2)]
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlsplit

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from risingspark.errors import InvalidParameterValue

logger = logging.getLogger(__name__)

_S3_BOOL_ARGS = {"anonymous", "background_writes", "allow_bucket_creation", "allow_bucket_deletion",
                 "force_virtual_addressing", "check_directory_existence_before_creation",
                 "allow_delayed_open", "tls_verify_certificates"}
_S3_FLOAT_ARGS = {"connect_timeout", "request_timeout"}


@dataclass(frozen=True)
class ObjectInfo:
    """One object of a listing: its path relative to the store root, size in bytes and modification
    time in seconds since the Unix epoch (0.0 when the file system does not say)."""

    path: str
    size: int
    mtime: float


def _s3_filesystem(netloc: str, query: str) -> pafs.S3FileSystem:
    kwargs: dict[str, object] = {}
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key in _S3_BOOL_ARGS:
            kwargs[key] = value.strip().lower() in ("1", "true", "yes", "on")
        elif key in _S3_FLOAT_ARGS:
            kwargs[key] = float(value)
        else:
            kwargs[key] = value
    endpoint = kwargs.get("endpoint_override")
    if isinstance(endpoint, str) and "://" in endpoint:
        scheme, _, host = endpoint.partition("://")
        kwargs["endpoint_override"] = host.rstrip("/")
        kwargs.setdefault("scheme", scheme)
    # Small objects then go up in one PUT instead of a multipart upload: fewer round trips.
    kwargs.setdefault("allow_delayed_open", True)
    if not netloc:
        raise InvalidParameterValue("an s3:// object store URL needs a bucket: s3://bucket/prefix")
    try:
        return pafs.S3FileSystem(**kwargs)
    except TypeError as e:
        raise InvalidParameterValue(f"invalid S3 object store option: {e}") from e


class ObjectStore:
    """Files under one root URL. Paths are relative, ``/``-separated, without ``..``."""

    def __init__(self, url: str) -> None:
        self._url = url
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme in ("", "file"):
            local = unquote(parts.path) if scheme == "file" else url
            self._fs: pafs.FileSystem = pafs.LocalFileSystem()
            self._root = os.path.abspath(local).replace(os.sep, "/").rstrip("/")
            self._local = True
        elif scheme in ("s3", "s3a"):
            self._fs = _s3_filesystem(parts.netloc, parts.query)
            self._root = (parts.netloc + "/" + parts.path.strip("/")).rstrip("/")
            self._local = False
        else:
            try:
                self._fs, root = pafs.FileSystem.from_uri(url)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise InvalidParameterValue(f"unsupported object store URL {url!r}: {e}") from e
            self._root = root.rstrip("/")
            self._local = False
        logger.debug("object store %s rooted at %s (%s)", url, self._root, self._fs.type_name)

    def __reduce__(self) -> tuple:
        # Unpickled in a Spark worker: reuse that process's store for the URL.
        return (get_object_store, (self._url,))

    def __repr__(self) -> str:
        return f"ObjectStore({self._url!r})"

    @property
    def url(self) -> str:
        return self._url

    @property
    def filesystem(self) -> pafs.FileSystem:
        return self._fs

    def local_uri(self, path: str) -> str | None:
        """A ``file://`` URI of `path` when the store is a local directory (for readers such as
        Spark's own Parquet reader); None for remote stores."""
        return f"file://{self.full_path(path)}" if self._local else None

    def full_path(self, path: str) -> str:
        """The file system path of `path` (relative to the root)."""
        rel = path.strip("/")
        if not rel and path:
            raise InvalidParameterValue(f"invalid object path {path!r}")
        if path.startswith("/") or any(p in ("..", ".") for p in rel.split("/")):
            raise InvalidParameterValue(f"object paths are relative to the store root, got {path!r}")
        return f"{self._root}/{rel}" if rel else self._root

    # ---- Parquet ----------------------------------------------------------------------------
    def write_parquet(self, path: str, table: pa.Table, *, row_group_size: int | None = None,
                      key_value_metadata: dict[bytes, bytes] | None = None, **writer_options: object) -> int:
        """Write `table` as one Parquet file at `path`; returns the bytes written. `key_value_metadata`
        goes into the file's footer as it is (not into the stored Arrow schema)."""

        def write(stream: pa.NativeFile) -> None:
            with pq.ParquetWriter(stream, table.schema, **writer_options) as writer:  # type: ignore[arg-type]
                writer.write_table(table, row_group_size=row_group_size)
                if key_value_metadata:
                    writer.add_key_value_metadata(key_value_metadata)

        return self._write(path, write)

    def read_parquet(self, path: str, *, columns: list[str] | None = None) -> pa.Table:
        with self._fs.open_input_file(self.full_path(path)) as f:
            return pq.read_table(f, columns=columns)

    def parquet_metadata(self, path: str) -> pq.FileMetaData:
        with self._fs.open_input_file(self.full_path(path)) as f:
            return pq.read_metadata(f)

    # ---- bytes ------------------------------------------------------------------------------
    def write_bytes(self, path: str, data: bytes) -> None:
        self._write(path, lambda stream: stream.write(data))

    def read_bytes(self, path: str) -> bytes:
        with self._fs.open_input_stream(self.full_path(path)) as f:
            return f.read()

    # ---- namespace --------------------------------------------------------------------------
    def exists(self, path: str) -> bool:
        return self._fs.get_file_info(self.full_path(path)).type == pafs.FileType.File

    def delete(self, paths: Iterable[str]) -> None:
        """Delete files; paths that do not exist are ignored."""
        for path in paths:
            with contextlib.suppress(FileNotFoundError):
                self._fs.delete_file(self.full_path(path))

    def list(self, prefix: str = "") -> list[ObjectInfo]:
        """Every file under the directory `prefix`, recursively, sorted by path (empty if absent).

        On a local store this includes the temp files (``.name.tmp-*``) of writes in progress or
        interrupted by a crash, so a garbage sweep can find them.
        """
        base = self.full_path(prefix) if prefix.strip("/") else self._root
        selector = pafs.FileSelector(base, recursive=True, allow_not_found=True)
        try:
            infos = self._fs.get_file_info(selector)
        except (FileNotFoundError, NotADirectoryError):
            return []
        strip = len(self._root) + 1 if self._root else 0
        out = [ObjectInfo(i.path[strip:], int(i.size or 0), i.mtime.timestamp() if i.mtime else 0.0)
               for i in infos if i.type == pafs.FileType.File]
        out.sort(key=lambda o: o.path)
        return out

    # ---- internals --------------------------------------------------------------------------
    def _write(self, path: str, write: Callable[[pa.NativeFile], object]) -> int:
        target = self.full_path(path)
        if not self._local:
            # An object PUT is atomic: readers see the whole object or nothing.
            with self._fs.open_output_stream(target) as stream:
                write(stream)
                return stream.tell()
        parent, _, name = target.rpartition("/")
        self._fs.create_dir(parent, recursive=True)
        tmp = f"{parent}/.{name}.tmp-{uuid.uuid4().hex}"
        try:
            with self._fs.open_output_stream(tmp) as stream:
                write(stream)
                size = stream.tell()
            self._fs.move(tmp, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                self._fs.delete_file(tmp)
            raise
        return size


def final_path(path: str) -> str:
    """The path a local store's temporary file of a write in progress (``.<name>.tmp-<id>``) will be
    renamed to; any other path itself.

    >>> final_path("hummock/5/.12-ab.parquet.tmp-0f3c")
    'hummock/5/12-ab.parquet'
    """
    parent, _, name = path.rpartition("/")
    if name.startswith(".") and ".tmp-" in name:
        name = name[1:].rsplit(".tmp-", 1)[0]
        return f"{parent}/{name}" if parent else name
    return path


_STORES: dict[str, ObjectStore] = {}
_STORES_LOCK = threading.Lock()


def get_object_store(url: str) -> ObjectStore:
    """The process-wide `ObjectStore` for `url` (created on first use; Spark tasks call this)."""
    store = _STORES.get(url)
    if store is None:
        with _STORES_LOCK:
            store = _STORES.get(url)
            if store is None:
                store = _STORES[url] = ObjectStore(url)
    return store
