"""The field table of docs/emulator.md and the Create-time log of fields not applied locally."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from vertex_emulator import testing
from vertex_emulator.jobservice.fidelity import NOTES, field_table, note_for, unapplied_fields
from vertex_emulator.rules.fields import ROOTS, walk

DOC = Path(__file__).resolve().parents[2] / "docs" / "emulator.md"


def test_every_note_names_a_v1_field_and_every_field_has_one() -> None:
    relative = {f.path.split(".", 1)[1] for root in ROOTS for f in walk(root)}
    assert sorted(set(NOTES) - relative) == []  # no note for a field the protos do not have
    for root in ROOTS:
        for field in walk(root):
            assert note_for(field) is not None, field.path


def test_the_table_has_a_row_per_field_and_the_page_renders_it() -> None:
    table = field_table()
    for field in walk("CustomJob"):
        assert f"| `{field.path}` |" in table
    assert "| `HyperparameterTuningJob.studySpec.observationNoise` | yes | no |" in table
    assert (
        "| `HyperparameterTuningJob.studySpec.parameters.doubleValueSpec.defaultValue` | refused |" in table
    )
    assert "from vertex_emulator.jobservice.fidelity import field_table" in DOC.read_text()


def test_create_logs_the_fields_not_applied_locally_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    body = {
        "display_name": "unapplied",
        "job_spec": {
            "network": "projects/1/global/networks/vpc",
            "service_account": "trainer@p.iam.gserviceaccount.com",
            "worker_pool_specs": [
                {
                    "machine_spec": {"machine_type": "n1-standard-4"},
                    "replica_count": 1,
                    "container_spec": {"image_uri": "python:3.11", "command": [sys.executable, "-c", "pass"]},
                    "disk_spec": {"boot_disk_size_gb": 200},
                },
                {
                    "machine_spec": {"machine_type": "n1-standard-4"},
                    "replica_count": 2,
                    "container_spec": {"image_uri": "python:3.11", "command": [sys.executable, "-c", "pass"]},
                },
            ],
        },
    }
    with caplog.at_level(logging.INFO, logger="vertex_emulator.jobservice.service"):
        with testing.running_emulator(tmp_path) as em:
            client = testing.grpc_client(em)
            try:
                job = client.create_custom_job(parent=testing.PARENT, custom_job=body)
            finally:
                client.transport.close()
    lines = [
        r.getMessage()
        for r in caplog.records
        if r.name == "vertex_emulator.jobservice.service" and job.name in r.getMessage()
    ]
    assert len(lines) == 1
    named = lines[0].split(": ")[-1].split(", ")
    assert sorted(named) == sorted(
        [
            "jobSpec.workerPoolSpecs.machineSpec",
            "jobSpec.workerPoolSpecs.containerSpec.imageUri",
            "jobSpec.workerPoolSpecs.diskSpec",
            "jobSpec.serviceAccount",
            "jobSpec.network",
        ]
    )
    assert unapplied_fields("customJobs", job) == named  # the stored job reads the same


def test_a_job_on_a_persistent_resource_is_not_told_the_resource_is_ignored() -> None:
    """The job runs on the resource's replicas (test_persistent_resources.py), so Create does not log
    ``persistentResourceId`` among the fields it does not apply."""
    from google.cloud.aiplatform_v1 import types

    job = types.CustomJob(
        display_name="on-a-resource",
        job_spec={
            "persistent_resource_id": "pool-a",
            "worker_pool_specs": [{"machine_spec": {"machine_type": "n1-standard-4"}, "replica_count": 1}],
        },
    )
    assert "jobSpec.persistentResourceId" not in unapplied_fields("customJobs", job)
