"""Backfill: one hyperparameter tuning job per day of a date range, each gated before promotion.

Trigger it with the range to (re)build, e.g. ``{"first_day": "2026-11-01", "last_day": "2026-11-07"}``:

- ``days_to_tune`` lists the days; the task group ``day`` is mapped over them, so every day has
  its own task instances and so its own Vertex AI job (the run labels carry the map index: a retry
  of one day re-attaches to that day's job and never bills a second one), and its own gate: a day
  that fails its gate is not promoted, the other days are;
- ``prepare_day`` writes the day's dataset to ``<bucket>/backfill_tuning/<day>/data/`` and builds
  the day's study: a grid over the learning rate, ``TRIALS`` trials of the parameter-server
  trainer, each trial's outputs under ``<bucket>/backfill_tuning/<day>/trials/<trial id>/``;
- ``tune`` runs the study (deferred: waiting costs no worker slot);
- ``quality_gate`` (a ``VertexTrialSensor``) passes when the best trial's accuracy reaches
  ``MIN_ACCURACY`` and fails the day otherwise: then nothing is promoted for that day;
- ``promote`` copies the best trial's model to ``<bucket>/backfill_tuning/<day>/promoted/`` with a
  ``promotion.json`` naming the trial, its parameters and its metric.

Days run ``MAX_PARALLEL_DAYS`` at a time (``max_active_tis_per_dagrun`` of each task).
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from typing import Any

from airflow.sdk import DAG, Param, task, task_group
from examples_common import BUCKET, CONN_ID, POLL_INTERVAL, PS_TRAINER_IMAGE, copy_tree, join, writable_dir

from airflow_vertex_dist.operators.tuning import VertexTuningOperator
from airflow_vertex_dist.sensors.jobs import VertexTrialSensor

DAG_ID = "vertex_dist_backfill_tuning"
ROOT = join(BUCKET, "backfill_tuning")
TRIALS = 3
LEARNING_RATES = (0.05, 0.3, 1.5)
MIN_ACCURACY = 0.75
MAX_DAYS = 31
MAX_PARALLEL_DAYS = 4
ROWS = 800


@task
def days_to_tune(params: Any = None) -> list[str]:
    """The days of ``[first_day, last_day]`` as ``YYYY-MM-DD``."""
    first, last = date.fromisoformat(params["first_day"]), date.fromisoformat(params["last_day"])
    if last < first:
        raise ValueError(f"params.last_day: must not be before first_day ({last} < {first})")
    count = (last - first).days + 1
    if count > MAX_DAYS:
        raise ValueError(f"params: at most {MAX_DAYS} days per run (got {count}, {first} to {last})")
    return [(first + timedelta(days=i)).isoformat() for i in range(count)]


def tuning_spec(day: str, data_uri: str) -> dict[str, Any]:
    """The day's HyperparameterTuningJob spec, as a plain dict (validated by the operator)."""
    compact = day.replace("-", "")
    return {
        "display_name": f"tune-{compact}",
        "trial_job": {
            "display_name": f"tune-{compact}-trial",
            "primary": {
                "machine": {"machine_type": "n1-standard-4"},
                "container": {
                    "image_uri": PS_TRAINER_IMAGE,
                    "args": [f"--data-dir={data_uri}", "--epochs=2", "--batch_size=40"],
                },
            },
            "base_output_directory": join(ROOT, day, "trials"),
            "scheduling": {"timeout": "3600s"},
        },
        "study": {
            "metrics": [{"metric_id": "accuracy", "goal": "MAXIMIZE"}],
            "parameters": [
                {"type": "discrete", "parameter_id": "learning_rate", "values": list(LEARNING_RATES)},
            ],
            "algorithm": "GRID_SEARCH",
        },
        "max_trial_count": TRIALS,
        "parallel_trial_count": TRIALS,
        "labels": {"example": "backfill-tuning", "day": compact},
    }


@task(max_active_tis_per_dagrun=MAX_PARALLEL_DAYS)
def prepare_day(day: str) -> dict[str, Any]:
    """Write the day's dataset; the day's tuning spec."""
    from trainers.prep import prepare

    data_uri = join(ROOT, day, "data")
    with writable_dir(data_uri) as out:
        prepare(out, rows=ROWS, seed=int(day.replace("-", "")), day=day)
    return tuning_spec(day, data_uri)


@task(max_active_tis_per_dagrun=MAX_PARALLEL_DAYS)
def promote(day: str, gate: dict[str, Any]) -> dict[str, Any]:
    """Copy the best trial's model to the day's ``promoted/`` directory."""
    import json

    best = gate["best_trial"]
    source = join(ROOT, day, "trials", str(best["id"]), "model")
    target = join(ROOT, day, "promoted")
    files = copy_tree(source, target)
    record = {
        "day": day,
        "job": gate["name"],
        "trial": best["id"],
        "parameters": best["parameters"],
        "metric_id": best["metric_id"],
        "metric_value": best["metric_value"],
        "source": source,
        "uri": target,
        "files": sorted(files),
    }
    with writable_dir(target) as out:
        (out / "promotion.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return record


#: The day's spec and job, pulled from this day's (this map index's) task instances.
SPEC_OF_THE_DAY = "{{ ti.xcom_pull(task_ids='day.prepare_day', map_indexes=ti.map_index) | tojson }}"
JOB_OF_THE_DAY = "{{ ti.xcom_pull(task_ids='day.tune', map_indexes=ti.map_index)['name'] }}"


@task_group(group_id="day")
def tune_day(day: str) -> None:
    """Prepare, tune, gate and promote one day."""
    tune = VertexTuningOperator(
        task_id="tune",
        spec=SPEC_OF_THE_DAY,
        vertex_dist_conn_id=CONN_ID,
        deferrable=True,
        poll_interval=POLL_INTERVAL,
        execution_timeout=timedelta(hours=4),
        max_active_tis_per_dagrun=MAX_PARALLEL_DAYS,
    )
    gate = VertexTrialSensor(
        task_id="quality_gate",
        job_name=JOB_OF_THE_DAY,
        vertex_dist_conn_id=CONN_ID,
        metric_threshold=MIN_ACCURACY,
        deferrable=True,
        poke_interval=POLL_INTERVAL,
        timeout=3600,
    )
    prepare_day(day) >> tune >> gate
    promote(day, gate.output)


with DAG(
    DAG_ID,
    schedule=None,
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    params={
        "first_day": Param("2026-11-01", type="string", format="date", description="first day to tune"),
        "last_day": Param("2026-11-03", type="string", format="date", description="last day (inclusive)"),
    },
    tags=["vertex-dist", "example"],
    doc_md=__doc__,
) as dag:
    tune_day.expand(day=days_to_tune())
