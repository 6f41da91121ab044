"""``$(NAME)`` references in a pool's command, args and env, expanded as the service expands them
(Kubernetes' rule: the pool's env and the service's variables, ``$$`` for a literal ``$``, an unknown
name left as written), through the stock JobServiceClient over gRPC and over REST."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path
from typing import Any

from google.cloud.aiplatform_v1 import CustomJob

from vertex_emulator.app import Emulator
from vertex_emulator.runtime.cluster import expand_references
from vertex_emulator.testing import PARENT, wait_for_state

RECORD = (
    "import json, os, sys; "
    "json.dump({'argv': sys.argv[1:], 'env': dict(os.environ)}, open(os.environ['RECORD'], 'w'))"
)


def _create(client: Any, body: dict[str, Any]) -> Any:
    job = client.create_custom_job(parent=PARENT, custom_job=CustomJob.from_json(json.dumps(body)))
    done = wait_for_state(client, job.name, ["JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED"], timeout=120)
    assert done.state.name == "JOB_STATE_SUCCEEDED", done.error.message
    return done


def test_expand_references_follows_kubernetes() -> None:
    scope = {"A": "x", "EMPTY": ""}
    cases = {
        "$(A)": "x",
        "pre-$(A)-$(A)-post": "pre-x-x-post",
        "$(EMPTY)|": "|",
        "$(NOPE)": "$(NOPE)",
        "$$(A)": "$(A)",
        "$$$(A)": "$x",
        "$$": "$",
        "a$$b": "a$b",
        "$A": "$A",
        "$": "$",
        "x$": "x$",
        "$(A": "$(A",
        "$($(A)": "$($(A)",  # the name runs to the first ")"
        "$()": "$()",
        "no refs": "no refs",
    }
    assert {value: expand_references(value, scope) for value in cases} == cases
    # linear: a long run of unclosed references is one pass
    assert expand_references("$(" * 100_000, scope) == "$(" * 100_000


def test_container_command_args_and_env_are_expanded(grpc_client: Any, tmp_path: Path) -> None:
    record = tmp_path / "record.json"
    body = {
        "displayName": "expands",
        "jobSpec": {
            "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/run"},
            "workerPoolSpecs": [
                {
                    "machineSpec": {"machineType": "n1-standard-4"},
                    "replicaCount": "1",
                    "containerSpec": {
                        "imageUri": "python:3.11",
                        "command": [sys.executable, "-c", RECORD, "--job=$(CLOUD_ML_JOB_ID)"],
                        "args": [
                            "--model-dir=$(AIP_MODEL_DIR)",  # Google's samples rely on this one
                            "--escaped=$$(AIP_MODEL_DIR)",
                            "--unknown=$(NOPE)",
                            "--own=$(CHAIN)",
                            "--late=$(LATER)",
                            "--image=$(HOME)",  # the image's (here the host's) variables: not in scope
                            "--emulator=$(STORAGE_EMULATOR_HOST)",  # not a Vertex AI variable
                            "--price=$$5",
                            "--open=$(AIP_MODEL_DIR",
                        ],
                        "env": [
                            {"name": "RECORD", "value": str(record)},
                            {"name": "OWN", "value": "$(AIP_CHECKPOINT_DIR)x"},
                            {"name": "CHAIN", "value": "$(OWN)/y"},
                            {"name": "EARLY", "value": "$(LATER)"},  # defined after it: unchanged
                            {"name": "LATER", "value": "z"},
                            {"name": "WHERE", "value": "$(HOME)"},
                        ],
                    },
                }
            ],
        },
    }
    job = _create(grpc_client, body)
    seen = json.loads(record.read_text())
    job_id = job.name.rsplit("/", 1)[-1]
    assert seen["argv"] == [
        f"--job={job_id}",
        "--model-dir=gs://bkt/run/model/",
        "--escaped=$(AIP_MODEL_DIR)",
        "--unknown=$(NOPE)",
        "--own=gs://bkt/run/checkpoints/x/y",
        "--late=z",
        "--image=$(HOME)",
        "--emulator=$(STORAGE_EMULATOR_HOST)",
        "--price=$5",
        "--open=$(AIP_MODEL_DIR",
    ]
    env = seen["env"]
    assert env["OWN"] == "gs://bkt/run/checkpoints/x"
    assert env["CHAIN"] == "gs://bkt/run/checkpoints/x/y"
    assert env["EARLY"] == "$(LATER)"
    assert env["WHERE"] == "$(HOME)"
    # the job as stored and returned keeps what was sent
    assert list(job.job_spec.worker_pool_specs[0].container_spec.args)[0] == "--model-dir=$(AIP_MODEL_DIR)"


def _wheel(path: Path) -> Path:
    """A pure-Python wheel of module ``expandpkg.task``, which records its argv and environment."""
    whl = path / "expandpkg-0.1-py3-none-any.whl"
    files = {
        "expandpkg/__init__.py": "",
        "expandpkg/task.py": RECORD + "\n",
        "expandpkg-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: expandpkg\nVersion: 0.1\n",
        "expandpkg-0.1.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = "".join(f"{n},,\n" for n in files) + "expandpkg-0.1.dist-info/RECORD,,\n"
    with zipfile.ZipFile(whl, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
        zf.writestr("expandpkg-0.1.dist-info/RECORD", record)
    return whl


def test_python_package_args_are_expanded_over_rest(
    emulator: Emulator, rest_client: Any, tmp_path: Path
) -> None:
    record = tmp_path / "record.json"
    packages = emulator.config.gcs_root / "bkt" / "packages"
    packages.mkdir(parents=True)
    whl = _wheel(packages)  # package URIs are Cloud Storage locations: gs://bkt/packages/...
    body = {
        "displayName": "package-expands",
        "jobSpec": {
            "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/pkg-run"},
            "workerPoolSpecs": [
                {
                    "machineSpec": {"machineType": "n1-standard-4"},
                    "replicaCount": "1",
                    "pythonPackageSpec": {
                        "executorImageUri": "us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest",
                        "packageUris": [f"gs://bkt/packages/{whl.name}"],
                        "pythonModule": "expandpkg.task",
                        "args": [
                            "--model-dir=$(AIP_MODEL_DIR)",
                            "--keep=$$(AIP_MODEL_DIR)",
                            "--flag=$(FLAG)",
                        ],
                        "env": [{"name": "RECORD", "value": str(record)}, {"name": "FLAG", "value": "on"}],
                    },
                }
            ],
        },
    }
    _create(rest_client, body)
    seen = json.loads(record.read_text())
    assert seen["argv"] == ["--model-dir=gs://bkt/pkg-run/model/", "--keep=$(AIP_MODEL_DIR)", "--flag=on"]
