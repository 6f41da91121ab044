"""The emulator's pytest plugin, as a user meets it: a test file of their own, in a directory with no
conftest, run by pytest in a subprocess, gets the fixtures from the installed distribution's
``pytest11`` entry point alone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

USER_TEST = r'''
import sys

from google.cloud import aiplatform_v1


def test_a_job_of_mine_runs(vertex_emulator, vertex_job_client):
    body = {
        "display_name": "mine",
        "job_spec": {"worker_pool_specs": [{
            "machine_spec": {"machine_type": "n1-standard-4"},
            "replica_count": 1,
            "container_spec": {"image_uri": "python:3.11", "command": [sys.executable, "-c", "print(42)"]},
        }]},
    }
    job = vertex_job_client.create_custom_job(
        parent="projects/mine/locations/us-central1", custom_job=aiplatform_v1.CustomJob(body)
    )
    from vertex_emulator.testing import wait_for_state

    ended = ["JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED"]
    done = wait_for_state(vertex_job_client, job.name, ended, timeout=120)
    assert done.state.name == "JOB_STATE_SUCCEEDED", done.error


def test_two_emulators_from_the_factory_are_apart(vertex_emulator_factory):
    first, second = vertex_emulator_factory(), vertex_emulator_factory()
    assert first.grpc_target != second.grpc_target
    assert first.config.state_dir != second.config.state_dir
'''


def test_the_fixtures_come_from_the_installed_plugin(tmp_path: Path) -> None:
    (tmp_path / "test_mine.py").write_text(USER_TEST)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert "2 passed" in result.stdout


USER_STATE_TEST = r'''
import json

import pytest
from google.cloud import aiplatform_v1

from vertex_emulator import testing

PARENT = "projects/mine/locations/us-central1"


def create(emulator, name):
    client = testing.grpc_client(emulator)
    body = json.dumps(testing.container_job(name, "print(42)"))
    job = client.create_custom_job(parent=PARENT, custom_job=aiplatform_v1.CustomJob.from_json(body))
    testing.wait_for_state(client, job.name, ["JOB_STATE_SUCCEEDED"], timeout=120)
    return job.name


def names(emulator):
    return [job.name for job in testing.grpc_client(emulator).list_custom_jobs(parent=PARENT)]


@pytest.fixture(scope="session")
def night(vertex_session_emulator):
    name = create(vertex_session_emulator, "last-night")
    vertex_session_emulator.state.snapshot("night")
    return name


def test_one_leaves_a_job_behind(vertex_reset_emulator):
    create(vertex_reset_emulator, "mine")
    assert len(names(vertex_reset_emulator)) == 1


def test_two_starts_empty(vertex_reset_emulator):
    assert names(vertex_reset_emulator) == []


@pytest.mark.vertex_snapshot("night")
def test_three_starts_from_the_night(night, vertex_reset_emulator):
    assert names(vertex_reset_emulator) == [night]


def test_four_starts_empty_again(vertex_reset_emulator):
    assert names(vertex_reset_emulator) == []
'''


def test_the_session_emulator_is_reset_or_restored_before_each_test(tmp_path: Path) -> None:
    (tmp_path / "test_state_of_mine.py").write_text(USER_STATE_TEST)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--strict-markers", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert "4 passed" in result.stdout
