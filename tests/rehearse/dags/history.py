"""Last night's jobs made again, for the rehearsal of a recorded history: one training task per ended
CustomJob of the ``customJobs`` List pages named by ``VERTEX_DIST_HISTORY`` (paths, ``os.pathsep``
between them), in the order they were created, each with the recorded job's display name, labels and
machine type -- what the scenario the history converter writes matches a job by. The tasks run one
after another (each whatever became of the one before), so jobs of one name and labels are created in
the history's order. The replicas' code never runs: the scenario plays each job."""

import json
import os
from datetime import datetime, timezone
from pathlib import Path

from airflow.sdk import DAG, chain

from airflow_vertex_dist.common.rfc3339 import rfc3339_nanos
from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.specs import Container, DistributedTrainingJob, Machine, WorkerPool

ENDED = ("JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED")


def recorded_jobs() -> list[dict]:
    """The history's ended CustomJobs, oldest first (as the converter orders them)."""
    pages = [Path(p) for p in os.environ.get("VERTEX_DIST_HISTORY", "").split(os.pathsep) if p]
    jobs = [job for page in pages for job in json.loads(page.read_text()).get("customJobs", [])]
    ended = [job for job in jobs if job["state"] in ENDED]
    return sorted(ended, key=lambda job: (rfc3339_nanos(job["createTime"]), job["name"]))


def _spec(job: dict) -> DistributedTrainingJob:
    pool = job["jobSpec"]["workerPoolSpecs"][0]
    return DistributedTrainingJob(
        display_name=job["displayName"],
        primary=WorkerPool(
            machine=Machine(machine_type=pool["machineSpec"]["machineType"]),
            container=Container(image_uri=pool["containerSpec"]["imageUri"]),
        ),
        labels=job.get("labels") or {},
    )


with DAG("history", schedule=None, start_date=datetime(2026, 1, 1, tzinfo=timezone.utc), catchup=False):
    chain(
        *(
            VertexTrainingOperator(
                task_id=f"job_{number:02d}",
                spec=_spec(job),
                trigger_rule="all_done",
                retries=0,
                deferrable=False,
                poll_interval=1,
            )
            for number, job in enumerate(recorded_jobs())
        )
    )
