"""The local Cloud Storage JSON API, driven by the stock google-cloud-storage client (as a replica does)."""

from __future__ import annotations

import http.client
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from vertex_emulator.cloud_storage.api import StorageServer


@pytest.fixture
def gcs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Path, str]]:
    """(a google-cloud-storage Client as a replica builds it, the gcs root, the server's endpoint)."""
    from google.cloud import storage

    root = tmp_path / "gcs"
    (root / "bkt").mkdir(parents=True)
    server = StorageServer(root)
    server.start()
    # what a replica has: STORAGE_EMULATOR_HOST and no credentials at all
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", server.endpoint)
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    client = storage.Client()
    try:
        yield client, root, server.endpoint
    finally:
        client.close()
        server.stop()


def raw(endpoint: str, method: str, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    url = urlsplit(endpoint)
    conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_objects_are_files_under_the_gcs_root(gcs: tuple[Any, Path, str]) -> None:
    client, root, _ = gcs
    bucket = client.bucket("bkt")
    blob = bucket.blob("runs/a/model/model.json")
    blob.upload_from_string(b'{"w": [1, 2]}', content_type="application/json")  # multipart upload
    assert (root / "bkt" / "runs" / "a" / "model" / "model.json").read_bytes() == b'{"w": [1, 2]}'
    assert bucket.blob("runs/a/model/model.json").download_as_bytes() == b'{"w": [1, 2]}'
    got = bucket.get_blob("runs/a/model/model.json")
    assert got is not None and got.size == 13 and got.md5_hash and got.crc32c
    # a file put there by hand is an object too (what package_uris and the next job read)
    (root / "bkt" / "data").mkdir()
    (root / "bkt" / "data" / "train.csv").write_text("x,y\n1,2\n")
    assert bucket.blob("data/train.csv").download_as_text() == "x,y\n1,2\n"
    assert bucket.blob("data/train.csv").download_as_bytes(start=2, end=4) == b"y\n1"
    assert client.get_bucket("bkt").name == "bkt"


def test_resumable_upload_in_chunks_and_download(gcs: tuple[Any, Path, str], tmp_path: Path) -> None:
    client, root, _ = gcs
    data = os.urandom(3 * 256 * 1024 + 123)
    src = tmp_path / "big.bin"
    src.write_bytes(data)
    blob = client.bucket("bkt").blob("ckpt/big.bin", chunk_size=256 * 1024)  # forces a resumable upload
    blob.upload_from_filename(str(src))
    assert (root / "bkt" / "ckpt" / "big.bin").read_bytes() == data
    out = tmp_path / "out.bin"
    client.bucket("bkt").blob("ckpt/big.bin").download_to_filename(str(out))  # checksum-verified
    assert out.read_bytes() == data
    assert not [p for p in (root / "bkt" / "ckpt").iterdir() if p.name != "big.bin"]  # no temp file left


def test_list_with_prefix_delimiter_and_pages(gcs: tuple[Any, Path, str]) -> None:
    client, _, _ = gcs
    bucket = client.bucket("bkt")
    for name in ("m/a.txt", "m/b.txt", "m/sub/c.txt", "n/d.txt", "top.txt"):
        bucket.blob(name).upload_from_string(name)
    assert [b.name for b in client.list_blobs("bkt")] == [
        "m/a.txt",
        "m/b.txt",
        "m/sub/c.txt",
        "n/d.txt",
        "top.txt",
    ]
    assert [b.name for b in client.list_blobs("bkt", max_results=2)] == ["m/a.txt", "m/b.txt"]
    assert [b.name for b in client.list_blobs("bkt", page_size=2)] == [
        b.name for b in client.list_blobs("bkt")
    ]
    it = client.list_blobs("bkt", prefix="m/", delimiter="/")
    assert [b.name for b in it] == ["m/a.txt", "m/b.txt"]
    assert it.prefixes == {"m/sub/"}


def test_delete_preconditions_and_errors(gcs: tuple[Any, Path, str]) -> None:
    from google.api_core import exceptions

    client, root, _ = gcs
    bucket = client.bucket("bkt")
    bucket.blob("once").upload_from_string("1", if_generation_match=0)
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.blob("once").upload_from_string("2", if_generation_match=0)
    assert bucket.blob("once").download_as_text() == "1"
    bucket.blob("once").delete()
    assert not (root / "bkt" / "once").exists() and not bucket.blob("once").exists()
    with pytest.raises(exceptions.NotFound):
        bucket.blob("once").download_as_bytes()
    with pytest.raises(exceptions.NotFound, match="bucket does not exist"):
        client.bucket("nope").blob("x").upload_from_string("x")
    with pytest.raises(exceptions.BadRequest, match="ending in '/'"):
        bucket.blob("folder/").upload_from_string("")


def test_paths_never_leave_the_root_and_web_pages_are_refused(gcs: tuple[Any, Path, str]) -> None:
    _, root, endpoint = gcs
    (root.parent / "secret.txt").write_text("s")
    status, body = raw(endpoint, "GET", "/storage/v1/b/bkt/o/..%2F..%2Fsecret.txt?alt=media")
    assert status == 400 and b"'..'" in body
    status, body = raw(endpoint, "GET", "/storage/v1/b/bkt/o", {"Origin": "http://evil.example"})
    assert status == 403 and b"Origin" in body
    status, body = raw(endpoint, "GET", "/storage/v1/b/bkt/o", {"Host": "evil.example:80"})
    assert status == 403 and b"loopback" in body


WRITE_MODEL = """\
import os
from google.cloud import storage
bucket, _, prefix = os.environ["AIP_MODEL_DIR"][len("gs://"):].partition("/")
storage.Client().bucket(bucket).blob(prefix + "model.txt").upload_from_string("weights-42")
print("wrote", os.environ["AIP_MODEL_DIR"] + "model.txt")
"""

READ_MODEL = """\
import os, sys
from google.cloud import storage
assert "GOOGLE_APPLICATION_CREDENTIALS" not in os.environ and "AVD_TEST_CANARY" not in os.environ
text = storage.Client().bucket("bkt").blob("runs/1/model/model.txt").download_as_text()
print("read", text)
sys.exit(0 if text == "weights-42" else 1)
"""


@pytest.mark.slow
def test_a_job_writes_its_model_with_google_cloud_storage_and_a_later_job_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trainer code as it runs on Vertex AI: gs:// AIP_MODEL_DIR, the stock client, no local path."""
    from google.cloud.aiplatform_v1 import CustomJob

    from vertex_emulator import testing

    # the emulator's own environment (a key file, a canary) never reaches the replicas
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing-key.json"))
    monkeypatch.setenv("AVD_TEST_CANARY", "canary")
    parent = "projects/p/locations/us-central1"
    with testing.running_emulator(tmp_path) as em:
        client = testing.grpc_client(em)
        try:
            names = []
            for code, base in ((WRITE_MODEL, "gs://bkt/runs/1"), (READ_MODEL, "gs://bkt/runs/2")):
                body = testing.container_job("gcs", code, baseOutputDirectory={"outputUriPrefix": base})
                spec = CustomJob.from_json(json.dumps(body))
                job = client.create_custom_job(parent=parent, custom_job=spec)
                ended = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED"}
                done = testing.wait_for_state(client, job.name, ended, 60)
                assert done.state.name == "JOB_STATE_SUCCEEDED", done.error.message
                names.append(job.name)
        finally:
            client.transport.close()
        assert (em.config.gcs_root / "bkt" / "runs" / "1" / "model" / "model.txt").read_text() == "weights-42"
        tail = em.runner.replica_view(names[1], "workerpool0-0")
        assert tail is not None and tail["logTail"] == ["read weights-42"]


def test_gcsfs_reads_writes_lists_and_deletes(
    gcs: tuple[Any, Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """gcsfs (fsspec), the other client trainer code uses for gs://, through STORAGE_EMULATOR_HOST."""
    # read when gcsfs is imported: without it, recent gcsfs asks the Storage Control gRPC API for each
    # bucket's layout, which the emulator does not serve (60 s of retries, then it falls back)
    monkeypatch.setenv("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
    gcsfs = pytest.importorskip("gcsfs", reason="gcsfs is not installed")
    _, root, _ = gcs
    fs = gcsfs.GCSFileSystem(token="anon", skip_instance_cache=True)  # noqa: S106 - no credentials at all
    with fs.open("bkt/logs/events.txt", "wb") as fh:
        fh.write(b"step 1\n")
    fs.pipe("bkt/logs/sub/more.txt", b"x" * 10)
    big = os.urandom(3 * 256 * 1024 + 7)
    with fs.open("bkt/ckpt/big.bin", "wb", block_size=256 * 1024) as fh:  # a resumable upload in chunks
        fh.write(big)
    assert (root / "bkt" / "ckpt" / "big.bin").read_bytes() == big == fs.cat("bkt/ckpt/big.bin")
    assert (root / "bkt" / "logs" / "events.txt").read_bytes() == b"step 1\n"
    assert fs.cat("bkt/logs/events.txt") == b"step 1\n"
    assert sorted(fs.ls("bkt/logs", detail=False)) == ["bkt/logs/events.txt", "bkt/logs/sub"]
    assert fs.find("bkt/logs") == ["bkt/logs/events.txt", "bkt/logs/sub/more.txt"]
    assert fs.info("bkt/logs/sub/more.txt")["size"] == 10
    fs.rm("bkt/logs/events.txt")
    assert not (root / "bkt" / "logs" / "events.txt").exists()


def test_copy_and_rewrite(gcs: tuple[Any, Path, str]) -> None:
    """``copy_blob`` (objects.copy) and ``rewrite`` (objects.rewrite) between buckets, names with '/'."""
    from google.api_core import exceptions

    client, root, _ = gcs
    (root / "other").mkdir()
    src_bucket, dst_bucket = client.bucket("bkt"), client.bucket("other")
    src = src_bucket.blob("runs/1/model/w.bin")
    src.upload_from_string(b"weights-1")
    copied = src_bucket.copy_blob(src, dst_bucket, "promoted/model/w.bin")
    assert (root / "other" / "promoted" / "model" / "w.bin").read_bytes() == b"weights-1"
    assert (
        copied.name == "promoted/model/w.bin"
        and copied.size == 9
        and copied.md5_hash == src_bucket.get_blob("runs/1/model/w.bin").md5_hash
    )

    target = dst_bucket.blob("rewritten/w.bin")
    token, done, total = target.rewrite(src)
    assert (token, done, total) == (None, 9, 9)
    assert target.download_as_bytes() == b"weights-1"

    # preconditions: the destination must not exist (generation 0); the source's generation must match
    with pytest.raises(exceptions.PreconditionFailed):
        src_bucket.copy_blob(src, dst_bucket, "promoted/model/w.bin", if_generation_match=0)
    with pytest.raises(exceptions.PreconditionFailed):
        src_bucket.copy_blob(src, dst_bucket, "x.bin", if_source_generation_match=1)
    assert not (root / "other" / "x.bin").exists()
    with pytest.raises(exceptions.NotFound):
        src_bucket.copy_blob(src_bucket.blob("missing.bin"), dst_bucket, "y.bin")
    with pytest.raises(exceptions.NotFound):
        src_bucket.copy_blob(src, client.bucket("no-such-bucket"), "y.bin")
    # a copy onto itself keeps the bytes
    src_bucket.copy_blob(src, src_bucket, "runs/1/model/w.bin")
    assert src.download_as_bytes() == b"weights-1"
    assert not [p for p in root.rglob("*") if p.name.startswith(".avd-upload-")]  # no temporary file left


def test_list_with_match_glob(gcs: tuple[Any, Path, str]) -> None:
    """``matchGlob`` (objects.list reference, "List objects and prefixes using glob"), through
    ``list_blobs(match_glob=...)``; it was ignored (every object listed)."""
    from google.api_core import exceptions

    client, _, _ = gcs
    bucket = client.bucket("bkt")
    names = [
        "data/a1.csv",
        "data/b2.csv",
        "runs/1/logs/a.txt",
        "runs/1/model/model.pkl",
        "runs/2/model/model.pkl",
        "runs/2/model/sub/x.pkl",
        "top.txt",
    ]
    for name in names:
        bucket.blob(name).upload_from_string(name)

    def listed(glob: str, **kwargs: Any) -> list[str]:
        return [b.name for b in client.list_blobs("bkt", match_glob=glob, **kwargs)]

    assert listed("runs/*/model/*.pkl") == ["runs/1/model/model.pkl", "runs/2/model/model.pkl"]
    assert listed("runs/**/*.pkl") == [
        "runs/1/model/model.pkl",
        "runs/2/model/model.pkl",
        "runs/2/model/sub/x.pkl",
    ]
    assert listed("runs/2/**/model.pkl") == ["runs/2/model/model.pkl"]  # "**/" also matches no folder
    assert listed("**.txt") == ["runs/1/logs/a.txt", "top.txt"]
    assert listed("*.txt") == ["top.txt"]  # "*" stays within one segment
    assert listed("data/[ab]?.csv") == ["data/a1.csv", "data/b2.csv"]
    assert listed("data/[!a]*") == ["data/b2.csv"]
    assert listed("{top.txt,data/a*}") == ["data/a1.csv", "top.txt"]
    assert listed("**", prefix="runs/2/") == ["runs/2/model/model.pkl", "runs/2/model/sub/x.pkl"]
    assert listed("**", max_results=2) == names[:2]
    paged = client.list_blobs("bkt", match_glob="**.pkl", page_size=1)
    assert [b.name for b in paged] == [n for n in names if n.endswith(".pkl")]
    # with delimiter "/", the prefixes are filtered by the glob too
    it = client.list_blobs("bkt", prefix="runs/", delimiter="/", match_glob="runs/2/")
    assert list(it) == [] and it.prefixes == {"runs/2/"}
    with pytest.raises(exceptions.BadRequest, match="delimiter: must be absent or '/'"):
        list(client.list_blobs("bkt", delimiter="-", match_glob="*"))
    with pytest.raises(exceptions.BadRequest, match="never closed"):
        list(client.list_blobs("bkt", match_glob="data/[ab"))


def test_only_the_live_generation_is_served(
    gcs: tuple[Any, Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read (or delete) of a generation that is not the live one is 404, as Cloud Storage answers
    for a generation it does not have; it used to return the current object."""
    from google.api_core import exceptions

    client, root, _ = gcs
    bucket = client.bucket("bkt")
    bucket.blob("model.bin").upload_from_string(b"v1")
    first = bucket.get_blob("model.bin").generation
    bucket.blob("model.bin").upload_from_string(b"v2")  # at once: the generation still moves on
    live = bucket.get_blob("model.bin").generation
    assert live > first
    assert bucket.get_blob("model.bin", generation=first) is None
    with pytest.raises(exceptions.NotFound):
        bucket.blob("model.bin", generation=first).download_as_bytes()
    with pytest.raises(exceptions.NotFound):
        bucket.delete_blob("model.bin", generation=first)
    assert bucket.blob("model.bin", generation=live).download_as_bytes() == b"v2"
    assert bucket.get_blob("model.bin", generation=live).size == 2
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.blob("model.bin").download_as_bytes(if_generation_match=first)
    copied = bucket.copy_blob(bucket.blob("model.bin"), bucket, "copy.bin")
    again = bucket.copy_blob(bucket.blob("model.bin"), bucket, "copy.bin")
    assert again.generation > copied.generation

    monkeypatch.setenv("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
    gcsfs = pytest.importorskip("gcsfs", reason="gcsfs is not installed")
    fs = gcsfs.GCSFileSystem(token="anon", skip_instance_cache=True, version_aware=True)  # noqa: S106
    assert fs.cat(f"bkt/model.bin#{live}") == b"v2"
    with pytest.raises(FileNotFoundError):
        fs.cat(f"bkt/model.bin#{first}")
    bucket.delete_blob("model.bin", generation=live)
    assert not (root / "bkt" / "model.bin").exists()
