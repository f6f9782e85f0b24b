"""The object store on S3-compatible storage: a cluster of separate processes whose meta is given
``--object-store-url s3://bucket/prefix?endpoint_override=...`` (moto's S3 server, over a real
socket). Every service learns the URL from meta; DML batches, SSTs and change logs land in the
bucket, nothing under the local data directory, and MVs equal PostgreSQL's answer."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pyarrow.fs as pafs
import pytest

from support.cluster import LocalCluster
from support.oracle import assert_same, copy_table

pytestmark = pytest.mark.e2e

BUCKET = "rs-objects"


@pytest.fixture
def s3_endpoint():
    server_mod = pytest.importorskip("moto.server")
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def test_cluster_on_an_s3_object_store(tmp_path: Path, s3_endpoint: str, oracle_dsn: str, meta_store_url) -> None:
    s3 = pafs.S3FileSystem(endpoint_override=s3_endpoint.split("://")[1], scheme="http", access_key="test",
                           secret_key="test", region="us-east-1", allow_bucket_creation=True)
    s3.create_dir(BUCKET)
    url = (f"s3://{BUCKET}/cluster?endpoint_override={s3_endpoint}&region=us-east-1"
           f"&access_key=test&secret_key=test")
    cluster = LocalCluster(tmp_path / "rs", meta_store_url=meta_store_url("s3"), object_store_url=url)
    cluster.base.mkdir()
    try:
        cluster.meta()
        cluster.compute()
        cluster.compactor()
        fe = cluster.frontend()
        with cluster.connect(fe) as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
            conn.execute("CREATE TABLE readings (id BIGINT PRIMARY KEY, sensor VARCHAR, value INT)")
            conn.execute("INSERT INTO readings SELECT i, 's' || (i % 11), i % 97 FROM generate_series(1, 8000) AS g(i)")
            conn.execute("FLUSH")
            conn.execute("CREATE MATERIALIZED VIEW per_sensor AS SELECT sensor, count(*) AS n, max(value) AS hi "
                         "FROM readings GROUP BY sensor")
            conn.execute("DELETE FROM readings WHERE id % 10 = 0")
            conn.execute("INSERT INTO readings VALUES (9001, 'new', 1)")
            conn.execute("FLUSH")
            copy_table(conn, pg, "readings")
            assert assert_same(conn, pg, "per_sensor", "SELECT sensor, count(*) AS n, max(value) AS hi "
                                                        "FROM readings GROUP BY sensor") == 12
        files = s3.get_file_info(pafs.FileSelector(f"{BUCKET}/cluster", recursive=True))
        assert any("/hummock/" in f.path and f.path.endswith(".parquet") for f in files), [f.path for f in files]
        assert not (cluster.base / "data" / "objects").exists()
    except Exception:
        print(cluster.logs())
        raise
    finally:
        cluster.stop()
