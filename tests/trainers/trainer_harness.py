"""Helpers for the example trainers' tests: ``dags/`` importable, an emulator mapping the example images.

This directory has no ``__init__.py`` and no ``conftest.py`` on purpose: as a package it would be
named ``trainers`` (``tests/`` is not a package) and shadow the ``trainers`` package under test.
Test modules import this one first (``import trainer_harness``), which puts ``dags/`` on sys.path.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

DAGS_DIR = Path(__file__).resolve().parents[2] / "dags"
if str(DAGS_DIR) not in sys.path:
    sys.path.insert(0, str(DAGS_DIR))

if TYPE_CHECKING:
    from vertex_emulator.app import Emulator

TERMINAL = ("JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED")


@contextmanager
def emulator_and_client(tmp_path: Path, **config: Any) -> Iterator[tuple[Emulator, Any]]:
    """An emulator whose image map runs the example images from this checkout's ``dags/``, and the
    stock JobServiceClient over gRPC to it; ``config`` overrides more of the emulator's settings."""
    from trainers.local import image_map

    from vertex_emulator import testing

    with testing.running_emulator(
        tmp_path, **{"image_map": image_map(), "stop_grace_s": 2.0, **config}
    ) as em:
        client = testing.grpc_client(em)
        try:
            yield em, client
        finally:
            client.transport.close()


def submit(client: Any, body: dict[str, Any]) -> str:
    """Create a CustomJob (``jobSpec``) or HyperparameterTuningJob (``studySpec``) from a v1 body."""
    from google.cloud.aiplatform_v1.types import CustomJob, HyperparameterTuningJob

    from vertex_emulator import testing

    if "studySpec" in body:
        tuning = HyperparameterTuningJob.from_json(json.dumps(body))
        return str(
            client.create_hyperparameter_tuning_job(
                parent=testing.PARENT, hyperparameter_tuning_job=tuning
            ).name
        )
    return str(
        client.create_custom_job(parent=testing.PARENT, custom_job=CustomJob.from_json(json.dumps(body))).name
    )


def finish(em: Emulator, name: str, timeout: float = 90.0) -> dict[str, Any]:
    """Wait for a terminal state; the job (v1 JSON) when it SUCCEEDED, else fail with its error."""
    from vertex_emulator import testing

    job: dict[str, Any] = testing.wait_for_state(em, name, TERMINAL, timeout=timeout)
    assert job["state"] == "JOB_STATE_SUCCEEDED", job.get("error", {}).get("message", job["state"])
    return job


def job_logs(em: Emulator, name: str) -> Path:
    """``<state>/logs/<job id>``: replica logs, ``replicas.json`` and ``hypertune/<key>.metrics``."""
    return em.config.state_dir / "logs" / name.rsplit("/", 1)[-1]


def metric_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
