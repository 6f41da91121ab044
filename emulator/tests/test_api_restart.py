"""An emulator restart on the same state dir keeps every job listable; jobs that were running come
back finished with a clear error (the runner's recover), finished ones are untouched."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from google.cloud import aiplatform_v1

from vertex_emulator import testing
from vertex_emulator.testing import PARENT, container_job, tuning_job, wait_for_state


def test_restart_keeps_jobs(tmp_path: Path) -> None:
    with testing.running_emulator(tmp_path) as first:
        client = testing.grpc_client(first)
        done = client.create_custom_job(
            parent=PARENT,
            custom_job=aiplatform_v1.CustomJob.from_json(
                json.dumps(container_job("done", "print('ok')", labels={"run": "1"}))
            ),
        )
        wait_for_state(client, done.name, {"JOB_STATE_SUCCEEDED"}, timeout=30)
        running = client.create_custom_job(
            parent=PARENT,
            custom_job=aiplatform_v1.CustomJob.from_json(
                json.dumps(container_job("running", "import time; time.sleep(60)", labels={"run": "1"}))
            ),
        )
        wait_for_state(client, running.name, {"JOB_STATE_RUNNING"}, timeout=30)
        study = client.create_hyperparameter_tuning_job(
            parent=PARENT,
            hyperparameter_tuning_job=aiplatform_v1.HyperparameterTuningJob.from_json(
                json.dumps(tuning_job("study", "import time; time.sleep(60)"))
            ),
        )
        first_target = first.grpc_target
        client.transport.close()
        assert stat.S_IMODE(os.stat(first.config.state_dir).st_mode) == 0o700

    with testing.running_emulator(tmp_path) as second:
        client = testing.rest_client(second)
        jobs = {job.display_name: job for job in client.list_custom_jobs(parent=PARENT, timeout=10)}
        assert {"done", "running"} <= set(jobs)
        assert jobs["done"].state.name == "JOB_STATE_SUCCEEDED"
        assert jobs["done"].name == done.name and jobs["done"].create_time == done.create_time
        after = jobs["running"]
        assert after.state.name in {
            "JOB_STATE_FAILED",
            "JOB_STATE_RUNNING",
            "JOB_STATE_PENDING",
            "JOB_STATE_QUEUED",
        }
        if after.state.name == "JOB_STATE_FAILED":
            assert after.error.code != 0 and "restart" in after.error.message
        tuned = client.get_hyperparameter_tuning_job(name=study.name)
        assert tuned.display_name == "study" and tuned.state.name == "JOB_STATE_FAILED"
        assert [
            j.name for j in client.list_custom_jobs(request={"parent": PARENT, "filter": "labels.run=1"})
        ] == [
            running.name,
            done.name,
        ]
        client.transport.close()
        assert second.config.web_base_url == second.rest_endpoint
    assert first_target.startswith("127.0.0.1:")
