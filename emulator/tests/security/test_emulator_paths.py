"""Paths: a ``gs://`` URI never maps outside ``--gcs-root``, and an unsafe one is refused at Create.

``gs://bucket//abs/path`` used to map to ``/abs/path`` (the empty segment restarted the path at the
filesystem root), ``..`` was refused only when the job ran, and a symlink under the root was
followed anywhere.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from probes import JOBS, JSON, PARENT, Http, answer, job_bytes, job_count, record

from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.core.gcs import check_request_uris, gcs_parts, to_local_path

ESCAPES = [
    ("gs://bucket//{outside}", "empty path segment"),
    ("gs://bucket/../../{outside}", "'..' is not allowed"),
    ("gs://bucket/a/./b", "'.' is not allowed"),
    ("gs://../x", "is not a bucket name"),
    ("gs://My_Bucket/x", "is not a bucket name"),
    ("gs:///etc", "needs a bucket"),
    ("gs://bucket/a\x00b", "NUL"),
]


@pytest.mark.parametrize(("uri", "rule"), ESCAPES)
def test_unsafe_uris_never_map(tmp_path: Path, uri: str, rule: str) -> None:
    uri = uri.format(outside=str(tmp_path / "outside").lstrip("/"))
    with pytest.raises(ValueError, match=re.escape(rule)) as info:
        to_local_path(uri, tmp_path / "gcs", field="jobSpec.baseOutputDirectory.outputUriPrefix")
    assert str(info.value).startswith("jobSpec.baseOutputDirectory.outputUriPrefix: ")


def test_safe_uris_map_inside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "gcs"
    assert to_local_path("gs://b/a/b/", root) == root / "b" / "a" / "b"
    assert to_local_path("gs://my-bucket.example_1", root) == root / "my-bucket.example_1"
    # percent signs are literal, as in object names: never decoded into '..' or '/'
    assert to_local_path("gs://b/%2e%2e/%2F/x", root) == root / "b" / "%2e%2e" / "%2F" / "x"
    assert gcs_parts("gs://b/a..b/c") == ("b", ("a..b", "c"))


def test_a_symlink_out_of_the_root_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "gcs", tmp_path / "outside"
    (root / "b").mkdir(parents=True)
    outside.mkdir()
    (root / "b" / "out").symlink_to(outside)
    (root / "b" / "in").symlink_to(root / "b")
    with pytest.raises(ValueError, match="resolves outside"):
        to_local_path("gs://b/out/model", root, field="f")
    with pytest.raises(ValueError, match="resolves outside"):
        to_local_path("gs://b/out", root, field="f")
    assert to_local_path("gs://b/in/model", root) == root / "b" / "in" / "model"
    record(
        "symlink_escape",
        "gs://b/out/model where b/out links outside --gcs-root",
        "refused (ValueError naming the field) when mapped",
    )


def test_check_request_uris_names_the_field() -> None:
    body = testing.container_job("p")
    body["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["args"] = ["gs://b/data"]
    check_request_uris(body)
    body["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["args"] = ["x", "gs://b//etc"]
    with pytest.raises(ValueError, match=r"^jobSpec\.workerPoolSpecs\[0\]\.containerSpec\.args\[1\]: "):
        check_request_uris(body)
    body["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["args"] = []
    body["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["env"] = [{"name": "DATA", "value": "gs://b/../x"}]
    with pytest.raises(ValueError, match=r"^jobSpec\.workerPoolSpecs\[0\]\.containerSpec\.env\[0\]\.value: "):
        check_request_uris(body)


def test_an_escaping_output_directory_is_refused_at_create(
    emulator: Emulator, tmp_path: Path, web: Http
) -> None:
    outside = tmp_path / "outside-root"
    uri = f"gs://bucket/{outside}"  # gs://bucket//tmp/...: the '//' would restart at '/'
    before = job_count(emulator)
    body = job_bytes("escape", baseOutputDirectory={"outputUriPrefix": uri})
    status, data = web.request("POST", JOBS, body, JSON)
    assert status == 400 and data["error"]["status"] == "INVALID_ARGUMENT", data
    assert data["error"]["message"].startswith("jobSpec.baseOutputDirectory.outputUriPrefix: "), data
    assert job_count(emulator) == before and not outside.exists()
    record("output_dir_escape", "Create with base_output_directory gs://bucket//tmp/…", answer(status, data))


def test_an_escaping_package_uri_is_refused_at_create(emulator: Emulator) -> None:
    from google.api_core import exceptions
    from google.cloud.aiplatform_v1 import CustomJob

    pool = {
        "machineSpec": {"machineType": "n1-standard-4"},
        "replicaCount": "1",
        "pythonPackageSpec": {
            "executorImageUri": "us-docker.pkg.dev/vertex-ai/training/pytorch-xla.2-4.py310:latest",
            "packageUris": ["gs://bucket/trainer-0.1.tar.gz", "gs://bucket/../../../home/x/evil.tar.gz"],
            "pythonModule": "trainer.task",
        },
    }
    body = {"displayName": "pkg", "jobSpec": {"workerPoolSpecs": [pool]}}
    with pytest.raises(exceptions.InvalidArgument) as info:
        testing.grpc_client(emulator).create_custom_job(
            parent=PARENT, custom_job=CustomJob.from_json(json.dumps(body))
        )
    assert (
        "jobSpec.workerPoolSpecs[0].pythonPackageSpec.packageUris[1]: '..' is not allowed"
        in info.value.message
    )
    record(
        "package_uri_escape",
        "Create over gRPC with packageUris ['gs://bucket/../../../home/x/evil.tar.gz']",
        f"{info.value.grpc_status_code.name} naming {info.value.message.split(': ')[0]}",
    )
