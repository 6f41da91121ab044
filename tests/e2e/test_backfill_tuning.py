"""``dags/backfill_tuning.py`` end to end: one tuning job per day, the quality gate, the promotion."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import pytest
from operators.harness import register_dag

from vertex_emulator.app import Emulator

pytestmark = pytest.mark.slow

PARENT = "projects/test-project/locations/us-central1"


def mapped_xcoms(dr: Any, task_id: str) -> dict[int, Any]:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        rows = session.execute(
            XComModel.get_many(
                key="return_value", run_id=dr.run_id, dag_ids=dr.dag_id, task_ids=task_id
            ).with_only_columns(XComModel.map_index, XComModel.value)
        ).all()
    return {int(i): json.loads(v) if isinstance(v, str | bytes) else v for i, v in rows}


def states(dr: Any, task_id: str) -> dict[int, str]:
    from airflow.utils.session import create_session

    with create_session() as session:
        tis = dr.get_task_instances(session=session)
        return {ti.map_index: str(ti.state) for ti in tis if ti.task_id == task_id}


def test_each_day_gets_its_own_tuning_job_and_the_best_trial_is_promoted(
    examples: Emulator, load_dags: Any
) -> None:
    dag = load_dags("backfill_tuning.py")["vertex_dist_backfill_tuning"]
    register_dag(dag)
    when = datetime(2026, 11, 29, tzinfo=timezone.utc)
    days = ["2026-11-01", "2026-11-02"]
    dr = dag.test(logical_date=when, run_after=when, run_conf={"first_day": days[0], "last_day": days[1]})
    for task_id in ("day.prepare_day", "day.tune", "day.quality_gate", "day.promote"):
        assert states(dr, task_id) == {0: "success", 1: "success"}, task_id

    jobs = sorted(examples.store.list("hyperparameterTuningJobs", PARENT), key=lambda j: j["displayName"])
    assert [j["displayName"] for j in jobs] == ["tune-20261101", "tune-20261102"]
    tuned = mapped_xcoms(dr, "day.tune")
    promoted = mapped_xcoms(dr, "day.promote")
    bucket = examples.config.gcs_root / "vertex-dist-examples" / "backfill_tuning"
    for index, (day, job) in enumerate(zip(days, jobs, strict=True)):
        assert job["state"] == "JOB_STATE_SUCCEEDED"
        assert len(job["trials"]) == 3 and {t["state"] for t in job["trials"]} == {"SUCCEEDED"}
        out = next(o for o in tuned.values() if o["name"] == job["name"])
        assert out["trial_counts"] == {"total": 3, "done": 3, "succeeded": 3, "infeasible": 0, "active": 0}
        # the best trial is the one with the highest final accuracy
        best = out["best_trial"]
        values = {r["id"]: r["metric_value"] for r in out["trials"]}
        assert best["metric_value"] == max(values.values()) == values[best["id"]]
        assert best["metric_value"] >= 0.75
        assert sorted(p["parameters"]["learning_rate"] for p in out["trials"]) == [0.05, 0.3, 1.5]

        record = next(p for p in promoted.values() if p["day"] == day)
        assert record["trial"] == best["id"] and record["metric_value"] == best["metric_value"]
        model = json.loads((bucket / day / "promoted" / "model.json").read_text())
        assert model["hyperparameters"]["learning_rate"] == best["parameters"]["learning_rate"]
        metrics = json.loads((bucket / day / "promoted" / "metrics.json").read_text())
        assert metrics["trial"] == best["id"]
        assert json.loads((bucket / day / "promoted" / "promotion.json").read_text()) == record
        assert (bucket / day / "data" / "train.csv").is_file()
        assert index in tuned


def test_a_day_below_the_bar_is_tuned_but_not_promoted(examples: Emulator, load_dags: Any) -> None:
    dag = load_dags("backfill_tuning.py")["vertex_dist_backfill_tuning"]
    dag.get_task("day.quality_gate").metric_threshold = 0.9999  # a bar no trial reaches
    register_dag(dag)
    when = datetime(2026, 11, 29, 12, tzinfo=timezone.utc)
    day = {"first_day": "2026-11-05", "last_day": "2026-11-05"}
    dr = dag.test(logical_date=when, run_after=when, run_conf=day)
    assert states(dr, "day.tune") == {0: "success"}
    assert states(dr, "day.quality_gate") == {0: "failed"}
    assert states(dr, "day.promote") == {0: "upstream_failed"}
    [job] = examples.store.list("hyperparameterTuningJobs", PARENT)
    assert job["state"] == "JOB_STATE_SUCCEEDED" and len(job["trials"]) == 3
    day_dir = examples.config.gcs_root / "vertex-dist-examples" / "backfill_tuning" / "2026-11-05"
    assert (day_dir / "trials").is_dir() and not (day_dir / "promoted").exists()
