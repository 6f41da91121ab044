"""The task log's line for a preemption (``operators.checkpoint_log``), for each thing its lost time can
be counted from, and the checkpoint directory a job's spec and body name."""

from __future__ import annotations

from airflow_vertex_dist.jobs.checkpoint_loss import preemption_losses
from airflow_vertex_dist.operators.checkpoint_log import _line, job_checkpoint_dir
from airflow_vertex_dist.specs import Checkpoints, Container, DistributedTrainingJob, Machine, WorkerPool

S = 1_000_000_000
T0 = 1_767_225_600 * S  # 2026-01-01T00:00:00Z
DIR = "gs://b/run/checkpoints/"


def _spec(**extra: object) -> DistributedTrainingJob:
    machine = Machine(machine_type="n1-standard-4")
    return DistributedTrainingJob(
        display_name="t",
        primary=WorkerPool(machine=machine, container=Container(image_uri="python:3.11")),
        **extra,
    )


def test_each_line_says_what_its_lost_time_is_counted_from() -> None:
    ckpts = {T0 + 600 * S: "ckpt-1.json", T0 + 1200 * S: "ckpt-2.json"}
    first, second, third = preemption_losses(
        T0, [T0 + 1500 * S, T0 + 1800 * S, T0 + 2700 * S], [*ckpts, T0 + 2400 * S]
    )
    names = {**ckpts, T0 + 2400 * S: "ckpt-3.json"}
    assert _line("7", first, DIR, names) == (
        "Preemption of 7 at 2026-01-01T00:25:00.000000000Z: last checkpoint "
        "gs://b/run/checkpoints/ckpt-2.json written at 2026-01-01T00:20:00.000000000Z: 300 s lost since it"
    )
    assert _line("7", second, DIR, names) == (
        "Preemption of 7 at 2026-01-01T00:30:00.000000000Z: no checkpoint in gs://b/run/checkpoints/ "
        "since the previous preemption (the last was written at 2026-01-01T00:20:00.000000000Z): "
        "300 s lost since the previous preemption at 2026-01-01T00:25:00.000000000Z"
    )
    assert third.since == "checkpoint" and third.lost_s == 300.0
    [early] = preemption_losses(T0, [T0 + 60 * S], [])
    assert _line("7", early, DIR, {}).endswith(
        "no checkpoint in gs://b/run/checkpoints/ yet: 60 s lost since the job started at "
        "2026-01-01T00:00:00.000000000Z"
    )
    assert "the checkpoints in gs://b/run/checkpoints/ could not be read: 60 s" in _line(
        "7", early, DIR, None
    )
    assert "the spec names no checkpoint directory: 60 s" in _line("7", early, None, None)


def test_the_directory_is_the_contracts_under_the_jobs_own_output() -> None:
    body = {"jobSpec": {"baseOutputDirectory": {"outputUriPrefix": "gs://b/rendered"}}}
    assert job_checkpoint_dir(_spec(), body) is None  # no contract
    contract = _spec(base_output_directory="gs://b/{{ ds }}", checkpoints=Checkpoints())
    assert job_checkpoint_dir(contract, body) == "gs://b/rendered/checkpoints/"  # what the job was sent
    mine = _spec(checkpoints=Checkpoints(directory="gs://c/ckpt"))
    assert job_checkpoint_dir(mine, body) == "gs://c/ckpt/"
