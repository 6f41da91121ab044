"""Bad data in the local Cloud Storage: what sits in ``--gcs-root`` and what a request names.

Only regular files inside the root are objects (a symlink to a file outside shows nothing of it, a
FIFO cannot hang a listing); an object's hashes are computed once per version, not on every metadata
GET; names Cloud Storage refuses (CR/LF, over 1,024 bytes) and names the directory tree cannot hold
are 400, Range numbers of any length are read, and a bucket or object resource nested past 64
levels is 400: never a 500.
"""

from __future__ import annotations

import http.client
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
from probes import record

from vertex_emulator import testing
from vertex_emulator.app import Emulator


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Emulator, Path]]:
    root = tmp_path_factory.mktemp("gcsdata")
    with testing.running_emulator(root) as em:
        bucket = Path(em.config.gcs_root) / "b"
        bucket.mkdir()
        yield em, bucket


def call(
    em: Emulator, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    assert em.config.storage_endpoint is not None
    url = urlsplit(em.config.storage_endpoint)
    conn = http.client.HTTPConnection(str(url.hostname), int(url.port or 80), timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        raw = resp.read()
    finally:
        conn.close()
    if "json" not in (resp.getheader("Content-Type") or ""):
        return resp.status, raw
    return resp.status, json.loads(raw)


def test_a_symlink_to_an_outside_file_shows_nothing_of_it(
    store: tuple[Emulator, Path], tmp_path: Path
) -> None:
    em, bucket = store
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"x" * 12345)
    (bucket / "link.txt").symlink_to(secret)
    (bucket / "plain.txt").write_bytes(b"plain")
    status, data = call(em, "GET", "/storage/v1/b/b/o")
    assert status == 200
    names = [item["name"] for item in data.get("items", [])]
    assert "link.txt" not in names and "plain.txt" in names
    assert "12345" not in json.dumps(data)
    status, _ = call(em, "GET", "/storage/v1/b/b/o/link.txt")
    assert status in (400, 404)
    record(
        "symlink_listing",
        "List of a bucket holding a symlink to a file outside --gcs-root",
        f"not listed; GET {status} (was: listed with the outside file's size and hashes)",
    )


def test_a_fifo_does_not_hang_a_listing(store: tuple[Emulator, Path]) -> None:
    em, bucket = store
    os.mkfifo(bucket / "pipe")
    started = time.monotonic()
    status, data = call(em, "GET", "/storage/v1/b/b/o")
    assert status == 200 and "pipe" not in [item["name"] for item in data.get("items", [])]
    status, _ = call(em, "GET", "/storage/v1/b/b/o/pipe?alt=media")
    assert status == 404
    record(
        "fifo_listing",
        "List of a bucket holding a FIFO",
        f"200 in {(time.monotonic() - started) * 1000:.0f} ms, FIFO not listed (was: hung)",
    )


def test_metadata_gets_do_not_rehash_the_object(store: tuple[Emulator, Path]) -> None:
    em, bucket = store
    (bucket / "big.bin").write_bytes(os.urandom(1024) * (96 * 1024))  # 96 MiB
    (bucket / "small.bin").write_bytes(b"s")
    first_started = time.perf_counter()
    assert call(em, "GET", "/storage/v1/b/b/o/big.bin")[0] == 200  # hashed once here
    first = time.perf_counter() - first_started

    def best(path: str) -> float:
        times = []
        for _ in range(3):
            started = time.perf_counter()
            assert call(em, "GET", path)[0] == 200
            times.append(time.perf_counter() - started)
        return min(times)

    big, small = best("/storage/v1/b/b/o/big.bin"), best("/storage/v1/b/b/o/small.bin")
    assert big <= 5 * small + 0.02, (big, small)
    record(
        "metadata_rehash",
        "metadata GET of a 96 MiB object, after the first",
        f"{big * 1000:.1f} ms (first GET {first * 1000:.0f} ms; was every GET, 1 GiB: 8.6 s)",
    )


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("a\nb", "line feed"),
        ("a\rb", "carriage return"),
        ("x" * 1025, "1024 bytes"),
        ("d/" + "y" * 300, "255 bytes"),
    ],
)
def test_names_the_tree_or_cloud_storage_refuses_are_400(
    store: tuple[Emulator, Path], name: str, words: str
) -> None:
    em, _ = store
    status, data = call(
        em, "POST", f"/upload/storage/v1/b/b/o?uploadType=media&name={quote(name, safe='')}", b"data"
    )
    assert status == 400 and words in data["error"]["message"], (status, data)
    status, data = call(em, "GET", f"/storage/v1/b/b/o/{quote(name, safe='')}")
    assert status == 400, (status, data)
    if words == "255 bytes":
        record("long_name", "upload of an object whose name has a 300-byte part", f"{status} (was 500)")
    if words == "line feed":
        record("newline_name", "upload of an object named 'a\\nb'", f"{status} (was: accepted)")


def test_huge_range_numbers_are_not_a_500(store: tuple[Emulator, Path]) -> None:
    em, bucket = store
    (bucket / "r.txt").write_bytes(b"0123456789")
    digits = "9" * 5000
    status, _ = call(em, "GET", "/storage/v1/b/b/o/r.txt?alt=media", headers={"Range": f"bytes={digits}-"})
    assert status == 416
    status, body = call(
        em, "GET", "/storage/v1/b/b/o/r.txt?alt=media", headers={"Range": f"bytes=2-{digits}"}
    )
    assert status == 206 and body == b"23456789"
    status, body = call(em, "GET", "/storage/v1/b/b/o/r.txt?alt=media", headers={"Range": f"bytes=-{digits}"})
    assert status == 206 and body == b"0123456789"
    record("huge_range", "GET alt=media with Range: bytes=<5,000 nines>-", f"{416} (was 500)")


DEEP = b"[" * 100_000 + b"]" * 100_000
DEEP_RESOURCES = {
    "bucket": ("/storage/v1/b", "application/json", DEEP),
    "resumable": ("/upload/storage/v1/b/b/o?uploadType=resumable&name=deep", "application/json", DEEP),
    "multipart": (
        "/upload/storage/v1/b/b/o?uploadType=multipart",
        "multipart/related; boundary=x",
        b"--x\r\nContent-Type: application/json\r\n\r\n" + DEEP + b"\r\n--x\r\n\r\ndata\r\n--x--\r\n",
    ),
}


@pytest.mark.parametrize("kind", sorted(DEEP_RESOURCES))
def test_a_deeply_nested_resource_is_400_not_500(store: tuple[Emulator, Path], kind: str) -> None:
    em, _ = store
    path, content_type, body = DEEP_RESOURCES[kind]
    status, data = call(em, "POST", path, body, {"Content-Type": content_type})
    assert status == 400 and "nests 100000 levels deep, more than 64" in data["error"]["message"], (
        status,
        data,
    )
    if kind == "bucket":
        record(
            "deep_storage_resource",
            "bucket insert, resumable upload start or multipart metadata of 100,000 nested brackets",
            f"{status} naming the nesting (was 500: RecursionError)",
        )
