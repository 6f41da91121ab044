"""Trial parameter values typed by their study: an INTEGER parameter's value is an int, not 5.0."""

from __future__ import annotations

import json
from typing import Any

from airflow_vertex_dist.common.trial_values import typed_parameters, typed_value, whole_number_parameters
from airflow_vertex_dist.jobs.dicts import compact_job
from airflow_vertex_dist.jobs.outputs import tuning_output
from airflow_vertex_dist.jobs.trials import best_trial, trial_summary

STUDY: dict[str, Any] = {
    "metrics": [{"metricId": "loss", "goal": "MINIMIZE"}],
    "parameters": [
        {"parameterId": "layers", "integerValueSpec": {"minValue": "1", "maxValue": "8"}},
        {"parameterId": "lr", "doubleValueSpec": {"minValue": 0.001, "maxValue": 1.0}},
        {"parameterId": "batch", "discreteValueSpec": {"values": [32.0, 64.0, 128.0]}},
        {"parameterId": "ratio", "discreteValueSpec": {"values": [0.5, 1.0, 2.0]}},
        {
            "parameterId": "optimizer",
            "categoricalValueSpec": {"values": ["adam", "sgd"]},
            "conditionalParameterSpecs": [
                {
                    "parentCategoricalValues": {"values": ["sgd"]},
                    "parameterSpec": {
                        "parameterId": "momentum_steps",
                        "integerValueSpec": {"minValue": "0", "maxValue": "4"},
                    },
                }
            ],
        },
    ],
}


def trial(tid: str, state: str, loss: float | None, **values: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": tid,
        "state": state,
        "parameters": [{"parameterId": k, "value": v} for k, v in values.items()],
    }
    if loss is not None:
        out["finalMeasurement"] = {"metrics": [{"metricId": "loss", "value": loss}]}
    return out


def job() -> dict[str, Any]:
    """A tuning job as the client returns it: every number a protobuf double."""
    return {
        "name": "projects/p/locations/us-central1/hyperparameterTuningJobs/7",
        "state": "JOB_STATE_SUCCEEDED",
        "maxTrialCount": 2,
        "studySpec": STUDY,
        "trials": [
            trial("1", "SUCCEEDED", 0.5, layers=5.0, lr=0.1, batch=64.0, ratio=1.0, optimizer="adam"),
            trial(
                "2",
                "SUCCEEDED",
                0.9,
                layers=2.0,
                lr=1.0,
                batch=32.0,
                ratio=2.0,
                optimizer="sgd",
                momentum_steps=3.0,
            ),
        ],
    }


def test_whole_number_parameters_are_integer_ones_and_discrete_ones_of_whole_values() -> None:
    assert whole_number_parameters(STUDY) == {"layers", "batch", "momentum_steps"}
    assert whole_number_parameters(None) == frozenset()
    assert whole_number_parameters({"parameters": [{"parameterId": "d", "discreteValueSpec": {}}]}) == set()


def test_typed_value_converts_whole_floats_only() -> None:
    assert type(typed_value(5.0, True)) is int and typed_value(5.0, True) == 5
    assert typed_value(5.5, True) == 5.5  # not whole: left as it came
    assert type(typed_value(5.0, False)) is float
    assert typed_value("adam", True) == "adam"
    assert typed_value(float("inf"), True) == float("inf")
    assert typed_parameters(None, frozenset({"x"})) is None


def test_outputs_hold_ints_for_integer_parameters() -> None:
    out = tuning_output(job(), "https://console")
    best = out["best_trial"]
    assert best is not None
    assert best["parameters"] == {"layers": 5, "lr": 0.1, "batch": 64, "ratio": 1.0, "optimizer": "adam"}
    assert type(best["parameters"]["layers"]) is int and type(best["parameters"]["batch"]) is int
    assert type(best["parameters"]["ratio"]) is float and type(best["parameters"]["lr"]) is float
    rows = {row["id"]: row["parameters"] for row in out["trials"]}
    assert type(rows["2"]["momentum_steps"]) is int and type(rows["2"]["lr"]) is float
    assert '"layers": 5,' in json.dumps(best["parameters"])  # the XCom's JSON: 5, not 5.0


def test_a_compact_job_keeps_the_types_without_the_study_parameters() -> None:
    compact = compact_job(job())
    assert "parameters" not in compact["studySpec"]  # the event stays small ...
    [first, second] = compact["trials"]
    assert first["parameters"][0] == {"parameterId": "layers", "value": 5}  # ... and the ints are kept
    assert type(first["parameters"][0]["value"]) is int
    assert type(second["parameters"][1]["value"]) is float  # lr
    again = json.loads(json.dumps(compact))  # through the trigger event's JSON
    assert type(trial_summary(again)["trials"][0]["parameters"]["layers"]) is int
    best = best_trial(again)
    assert best is not None and best["parameters"]["batch"] == 64 and type(best["parameters"]["batch"]) is int
