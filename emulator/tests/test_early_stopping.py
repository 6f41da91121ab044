"""Automated early stopping: the rules on curves, and a real study whose poor trial is stopped."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from vertex_emulator import testing
from vertex_emulator.tuning.hypertune import curve, final_measurement, measurements
from vertex_emulator.tuning.stopping import ConvexRule, decay_curve_should_stop, median_should_stop

GOOD_A = [(1.0, 3.0), (2.0, 6.0), (3.0, 9.0)]
GOOD_B = [(1.0, 2.0), (2.0, 4.0), (3.0, 6.0)]


def run_study(
    tmp_path: Path,
    name: str,
    trainer: str,
    stopping: dict[str, Any],
    *,
    transport: str = "grpc",
    timeout: float = 60,
) -> Any:
    """Run a 3-trial study (one at a time) of ``trainer`` with ``stopping`` in its studySpec to its end."""
    from google.cloud import aiplatform_v1

    body = testing.tuning_job(name, max_trials=3, parallel=1)
    body["trialJobSpec"]["workerPoolSpecs"][0]["containerSpec"]["command"] = [sys.executable, "-c", trainer]
    body["studySpec"].update(stopping)
    message = aiplatform_v1.HyperparameterTuningJob.from_json(json.dumps(body))
    with testing.running_emulator(tmp_path) as em:
        client = testing.grpc_client(em) if transport == "grpc" else testing.rest_client(em)
        try:
            job = client.create_hyperparameter_tuning_job(
                parent=testing.PARENT, hyperparameter_tuning_job=message
            )
            return testing.wait_for_state(client, job.name, ["JOB_STATE_SUCCEEDED"], timeout=timeout)
        finally:
            client.transport.close()


def test_median_rule_follows_the_reference_wording() -> None:
    # completed running averages up to step 1: 3 and 2, median 2.5
    assert median_should_stop([(1.0, 1.0)], [GOOD_A, GOOD_B], maximize=True)
    assert not median_should_stop([(1.0, 2.5)], [GOOD_A, GOOD_B], maximize=True)  # not strictly below
    # the trial's *best* value counts, the completed trials' running averages up to its last step
    assert not median_should_stop([(1.0, 1.0), (2.0, 4.0)], [GOOD_A, GOOD_B], maximize=True)
    # minimizing: "below" is worse, i.e. above
    assert median_should_stop([(1.0, 9.0)], [GOOD_A, GOOD_B], maximize=False)
    assert not median_should_stop([(1.0, 1.0)], [GOOD_A, GOOD_B], maximize=False)
    # too few completed trials, or none measured by that step: no decision
    assert not median_should_stop([(1.0, 1.0)], [GOOD_A], maximize=True)
    assert not median_should_stop([(0.0, -5.0)], [GOOD_A, GOOD_B], maximize=True)
    assert not median_should_stop([], [GOOD_A, GOOD_B], maximize=True)


def test_decay_curve_rule_stops_only_what_cannot_catch_up() -> None:
    # at step 1 the completed trials later gained 6 and 4; 1 + 6 = 7 cannot reach the best final 9
    assert decay_curve_should_stop([(1.0, 1.0)], [GOOD_A, GOOD_B], maximize=True)
    # 3 + 6 = 9 can (ties are not stopped)
    assert not decay_curve_should_stop([(1.0, 3.0)], [GOOD_A, GOOD_B], maximize=True)
    minimized = [[(1.0, -v) for _, v in GOOD_A[:1]] + [(3.0, -9.0)], [(1.0, -2.0), (3.0, -6.0)]]
    assert decay_curve_should_stop([(1.0, -1.0)], minimized, maximize=False)
    assert not decay_curve_should_stop([(1.0, -1.0)], [GOOD_A], maximize=True)


TRAINER = """
import sys, time, hypertune
x = int(next(a for a in sys.argv if a.startswith("--x=")).split("=")[1])
ht = hypertune.HyperTune()
for step in (1, 2, 3):
    ht.report_hyperparameter_tuning_metric("score", float((4 - x) * step), global_step=step)
    if x == 3:
        time.sleep(120)  # the poor trial would train on and on
"""


@pytest.mark.slow
@pytest.mark.parametrize("rule", ["medianAutomatedStoppingSpec", "decayCurveStoppingSpec"])
def test_a_poor_trial_is_stopped_and_keeps_its_measurement(tmp_path: Path, rule: str) -> None:
    started = time.monotonic()
    job = run_study(tmp_path, "early-stop", TRAINER, {rule: {}})
    assert time.monotonic() - started < 60  # not the 120 s the poor trial would have run
    trials = {t.id: t for t in job.trials}
    assert [trials[i].state.name for i in ("1", "2", "3")] == ["SUCCEEDED"] * 3
    assert [m.value for m in trials["1"].final_measurement.metrics] == [9.0]
    # the stopped trial: done, with the measurement it reported (Trial.State: INFEASIBLE is for a
    # trial "done but missing the final_measurement")
    stopped = trials["3"]
    assert stopped.final_measurement.step_count == 1
    assert [m.value for m in stopped.final_measurement.metrics] == [1.0]
    assert len(stopped.measurements) == 1


def test_convex_rule_follows_the_reference_wording() -> None:
    rule = ConvexRule(min_measurements=1)  # needs 2 completed trials and 2 points (a slope)
    # max step learned from the completed trials (3); the steepest slope 1 from step 2: 2 + 1 = 3 < 9
    assert rule([(1.0, 1.0), (2.0, 2.0)], [GOOD_A, GOOD_B], maximize=True)
    # slope 4 from step 2: 5 + 4 = 9 can reach the best final (ties are not stopped)
    assert not rule([(1.0, 1.0), (2.0, 5.0)], [GOOD_A, GOOD_B], maximize=True)
    # "No prediction can be made if the curve is completely flat" (nor, here, if it only worsens)
    assert not rule([(1.0, 1.0), (2.0, 1.0)], [GOOD_A, GOOD_B], maximize=True)
    assert not rule([(1.0, 2.0), (2.0, 1.0)], [GOOD_A, GOOD_B], maximize=True)
    # too few completed trials (min_measurement_count + 1) or measurements
    assert not rule([(1.0, 1.0), (2.0, 2.0)], [GOOD_A], maximize=True)
    assert not ConvexRule(min_measurements=3)([(1.0, 1.0), (2.0, 2.0)], [GOOD_A] * 4, maximize=True)
    # not past min_step_count, or already at max_step_count
    assert not ConvexRule(min_step=2.0, min_measurements=1)(
        [(1.0, 1.0), (2.0, 2.0)], [GOOD_A] * 2, maximize=True
    )
    assert not ConvexRule(max_step=2.0, min_measurements=1)(
        [(1.0, 1.0), (2.0, 2.0)], [GOOD_A] * 2, maximize=True
    )
    # minimizing: improving is going down; overestimate -2 - 1 = -3 is worse than the best -9
    minimized = [[(s, -v) for s, v in GOOD_A], [(s, -v) for s, v in GOOD_B]]
    assert rule([(1.0, -1.0), (2.0, -2.0)], minimized, maximize=False)
    # the v1 JSON form: int64 fields as strings, 0 read as unset, minMeasurementCount defaulting to 5
    assert ConvexRule.of({"maxStepCount": "10", "minStepCount": "0"}) == ConvexRule(10.0, None, 5)
    assert ConvexRule.of({"minMeasurementCount": "2"}) == ConvexRule(None, None, 2)


#: the poor trial (x=3) reports a slow climb, then would train on and on
CONVEX_TRAINER = """
import sys, time, hypertune
x = int(next(a for a in sys.argv if a.startswith("--x=")).split("=")[1])
ht = hypertune.HyperTune()
for step in (1, 2, 3):
    if x == 3 and step == 3:
        time.sleep(120)
    value = 1.0 + 0.1 * step if x == 3 else float((4 - x) * step)
    ht.report_hyperparameter_tuning_metric("score", value, global_step=step)
"""


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_convex_stopping_stops_a_poor_trial(tmp_path: Path, transport: str) -> None:
    started = time.monotonic()
    stopping = {"convexAutomatedStoppingSpec": {"minMeasurementCount": "1"}}
    job = run_study(tmp_path, "convex", CONVEX_TRAINER, stopping, transport=transport, timeout=90)
    assert time.monotonic() - started < 90  # not the 120 s the poor trial would have run
    trials = {t.id: t for t in job.trials}
    assert [trials[i].state.name for i in ("1", "2", "3")] == ["SUCCEEDED"] * 3
    # stopped after its two measurements (1.1 then 1.2: overestimate 1.3 at step 3 < the best 9)
    stopped = trials["3"]
    assert stopped.final_measurement.step_count == 2
    assert [round(m.value, 6) for m in stopped.final_measurement.metrics] == [1.2]


def test_measurements_carry_elapsed_duration_from_the_trial_start() -> None:
    lines = [
        {"timestamp": 100.5, "score": "1.0", "global_step": "1"},
        {"timestamp": 102.25, "score": "2.0", "global_step": "2"},
        {"timestamp": "bad", "score": "3.0", "global_step": "3"},
    ]
    metrics = [{"metricId": "score", "goal": "MAXIMIZE"}]
    assert curve(lines, "score") == [(1.0, 1.0), (2.0, 2.0), (3.0, 3.0)]
    assert curve(lines, "score", started=100.0) == [(0.5, 1.0), (2.25, 2.0)]  # no timestamp, no point
    reported = measurements(lines, metrics, started=100.0)
    assert [m.get("elapsedDuration") for m in reported] == ["0.500s", "2.250s", None]
    assert measurements(lines, metrics)[0] == {
        "stepCount": "1",
        "metrics": [{"metricId": "score", "value": 1.0}],
    }
    best = final_measurement(lines[:2], metrics, "BEST_MEASUREMENT", started=100.0)
    assert best == {
        "stepCount": "2",
        "metrics": [{"metricId": "score", "value": 2.0}],
        "elapsedDuration": "2.250s",
    }


ELAPSED_TRAINER = """
import sys, time, hypertune
x = int(next(a for a in sys.argv if a.startswith("--x=")).split("=")[1])
ht = hypertune.HyperTune()
if x == 3:
    time.sleep(1.5)  # the poor trial reports late, and once
    ht.report_hyperparameter_tuning_metric("score", 1.0, global_step=1)
    time.sleep(120)
for step in (1, 2, 3):
    ht.report_hyperparameter_tuning_metric("score", float((4 - x) * step), global_step=step)
"""


@pytest.mark.slow
def test_median_rule_on_elapsed_duration(tmp_path: Path) -> None:
    stopping = {"medianAutomatedStoppingSpec": {"useElapsedDuration": True}}
    job = run_study(tmp_path, "early-stop-elapsed", ELAPSED_TRAINER, stopping)
    trials = {t.id: t for t in job.trials}
    stopped = trials["3"]
    assert stopped.state.name == "SUCCEEDED"
    assert [m.value for m in stopped.final_measurement.metrics] == [1.0]
    # measured from the trial's start: after the 1.5 s the trainer slept, and some start-up
    assert stopped.final_measurement.elapsed_duration.total_seconds() >= 1.5
    assert all(m.elapsed_duration.total_seconds() > 0 for m in trials["1"].measurements)
