"""Bucket lifecycle on the local Cloud Storage JSON API (cloud_storage/buckets.py): ``buckets.insert``,
``get``, ``list`` and ``delete`` as Cloud Storage answers them, through the stock google-cloud-storage
client and raw HTTP, every bucket a directory under the gcs root."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from google.api_core import exceptions

from vertex_emulator.cloud_storage.api import StorageServer
from vertex_emulator.cloud_storage.buckets import bucket_name_problem


def raw(endpoint: str, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
    url = urlsplit(endpoint)
    conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
    try:
        conn.request(method, path, body=body)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


@pytest.fixture
def gcs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Path, str]]:
    from google.cloud import storage

    root = tmp_path / "gcs"
    root.mkdir()
    server = StorageServer(root)
    server.start()
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", server.endpoint)
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    client = storage.Client(project="p")
    try:
        yield client, root, server.endpoint
    finally:
        client.close()
        server.stop()


def test_create_list_and_delete_buckets_with_the_stock_client(gcs: tuple[Any, Path, str]) -> None:
    client, root, _ = gcs
    bucket = client.create_bucket("models-2026")
    assert bucket.name == "models-2026" and (root / "models-2026").is_dir()
    client.create_bucket("data-2026")
    assert [b.name for b in client.list_buckets()] == ["data-2026", "models-2026"]
    assert [b.name for b in client.list_buckets(prefix="mod")] == ["models-2026"]
    assert [b.name for b in client.list_buckets(max_results=1)] == ["data-2026"]
    pages = client.list_buckets(page_size=1).pages
    assert [[b.name for b in page] for page in pages] == [["data-2026"], ["models-2026"]]
    with pytest.raises(exceptions.Conflict, match="you already own it"):
        client.create_bucket("models-2026")

    bucket.blob("model/weights.bin").upload_from_string(b"w")
    with pytest.raises(exceptions.Conflict, match="The bucket you tried to delete was not empty"):
        bucket.delete()
    assert (root / "models-2026" / "model" / "weights.bin").exists()
    bucket.delete(force=True)  # the client deletes the objects first
    assert not (root / "models-2026").exists()
    client.bucket("data-2026").delete()
    assert list(client.list_buckets()) == []
    with pytest.raises(exceptions.NotFound, match="The specified bucket does not exist"):
        client.bucket("data-2026").delete()
    with pytest.raises(exceptions.NotFound):
        client.get_bucket("data-2026")


@pytest.mark.parametrize(
    "name",
    ["ab", "a" * 64, "Caps", "-dash", "dash-", "a b", "192.168.5.4", "goog-data", "my-google-x", "g00gle-x"],
)
def test_bad_bucket_names_are_refused_at_create(gcs: tuple[Any, Path, str], name: str) -> None:
    _, root, endpoint = gcs
    status, body = raw(endpoint, "POST", "/storage/v1/b?project=p", json.dumps({"name": name}).encode())
    assert status == 400 and b"Invalid bucket name" in body
    assert list(root.iterdir()) == []


def test_the_stock_client_meets_the_naming_rule(gcs: tuple[Any, Path, str]) -> None:
    client, root, _ = gcs
    for name in ("goog-data", "my-g00gle-data", "10.0.0.1"):
        with pytest.raises(exceptions.BadRequest, match="Invalid bucket name"):
            client.create_bucket(name)
    assert list(root.iterdir()) == []


@pytest.mark.parametrize(
    "name", ["abc", "a" * 63, "my_bucket-1", "example.com", "a" * 63 + "." + "b" * 63, "9lives"]
)
def test_good_bucket_names(name: str) -> None:
    assert bucket_name_problem(name) is None


def test_dotted_names_have_at_most_222_characters_and_63_per_component() -> None:
    assert bucket_name_problem(".".join(["a" * 63] * 4)) is not None  # 255 characters
    assert bucket_name_problem("a" * 64 + ".com") is not None
    assert bucket_name_problem("a..b") is not None


def test_raw_http_answers(gcs: tuple[Any, Path, str]) -> None:
    _, root, endpoint = gcs
    (root / "kept").mkdir()
    (root / "kept" / "x").write_text("x")
    status, body = raw(endpoint, "GET", "/storage/v1/b?project=p")
    listed = json.loads(body)
    assert status == 200 and listed["kind"] == "storage#buckets"
    assert [b["name"] for b in listed["items"]] == ["kept"]
    status, body = raw(endpoint, "GET", "/storage/v1/b")
    assert status == 400 and b"Required parameter: project" in body
    status, body = raw(endpoint, "DELETE", "/storage/v1/b/kept")
    assert status == 409 and json.loads(body)["error"]["errors"][0]["reason"] == "conflict"
    status, body = raw(endpoint, "DELETE", "/storage/v1/b/missing")
    assert status == 404 and b"The specified bucket does not exist" in body
    (root / "kept" / "x").unlink()
    (root / "kept" / "empty-dir").mkdir()  # no object: an empty directory holds none
    status, body = raw(endpoint, "DELETE", "/storage/v1/b/kept")
    assert status == 204 and not (root / "kept").exists()
    status, body = raw(endpoint, "DELETE", "/storage/v1/b/..")
    assert status in (400, 404) and root.exists()
    status, body = raw(endpoint, "GET", "/storage/v1/b?project=p")
    assert status == 200 and json.loads(body).get("items", []) == []


def test_a_symlinked_bucket_is_not_deleted_through(gcs: tuple[Any, Path, str], tmp_path: Path) -> None:
    _, root, endpoint = gcs
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "link").symlink_to(outside)
    status, _ = raw(endpoint, "DELETE", "/storage/v1/b/link")
    assert status == 400 and outside.is_dir()


def test_an_upload_is_written_at_the_service_time_a_scenario_runs_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a scenario paces the service's clock, an uploaded object's ``updated`` (and generation) is
    the service's time, as a job's times and its log entries are: a checkpoint and the preemption it
    precedes are on one clock. A file put in the tree by hand keeps the machine's time."""
    from datetime import datetime, timezone

    from google.cloud import storage

    from vertex_emulator.core.clock import ServiceClock

    real = [100.0]
    clock = ServiceClock(monotonic=lambda: real[0])
    clock.set_compression(3600)
    real[0] += 2.0  # two real seconds: two service hours
    root = tmp_path / "gcs"
    (root / "bkt").mkdir(parents=True)
    server = StorageServer(root, clock=clock)
    server.start()
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", server.endpoint)
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    client = storage.Client()
    try:
        client.bucket("bkt").blob("ckpt/ckpt-1.json").upload_from_string(b"{}")
        (root / "bkt" / "ckpt" / "by-hand.json").write_text("{}")
        blobs = {b.name: b for b in client.list_blobs("bkt", prefix="ckpt/")}
    finally:
        client.close()
        server.stop()
    now = datetime.now(timezone.utc)
    ahead = (blobs["ckpt/ckpt-1.json"].updated - now).total_seconds()
    assert 2 * 3600 - 2 - 60 < ahead < 2 * 3600  # the service's time: two hours ahead of the machine's
    assert abs((blobs["ckpt/by-hand.json"].updated - now).total_seconds()) < 60
