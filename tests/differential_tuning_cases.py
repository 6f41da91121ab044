"""The differential corpus's hand cases for hyperparameter tuning jobs and their studies, good and bad,
written as v1 JSON, each with the verdict Google's documentation gives (``"ok"`` / ``"bad"``).
``differential_corpus.py`` makes them ``Case`` rows."""

from __future__ import annotations

from typing import Any

from tests.differential_v1 import (
    A100,
    FLEX_START,
    categorical_param,
    child_param,
    discrete_param,
    double_param,
    int_param,
    pool,
    tuning,
)

__all__ = ["TUNING_CASES"]


TUNING_CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("good-study-int-one-value", "ok", tuning([int_param("n", 3, 3)])),
    ("good-study-double-one-value", "ok", tuning([double_param("lr", 0.5, 0.5)])),
    (
        "good-study-two-metrics",
        "ok",
        tuning(
            metrics=[{"metricId": "acc", "goal": "MAXIMIZE"}, {"metricId": "latency", "goal": "MINIMIZE"}]
        ),
    ),  # fmt: skip
    (
        "good-study-safety-and-objective",
        "ok",
        tuning(
            metrics=[
                {"metricId": "acc", "goal": "MAXIMIZE"},
                {"metricId": "loss_ok", "goal": "MAXIMIZE", "safetyConfig": {"safetyThreshold": 0.1}},
            ]
        ),
    ),  # fmt: skip
    (
        "good-study-grid",
        "ok",
        tuning(
            [int_param("n", 1, 3), categorical_param("opt", "adam", "sgd"), discrete_param("d", 0.1, 0.2)],
            study={"algorithm": "GRID_SEARCH"},
        ),
    ),  # fmt: skip
    (
        "good-study-conditional",
        "ok",
        tuning(
            [
                categorical_param(
                    "opt",
                    "adam",
                    "sgd",
                    conditionalParameterSpecs=[
                        child_param("parentCategoricalValues", ["sgd"], double_param("momentum", 0, 0.9)),
                        child_param("parentCategoricalValues", ["adam"], double_param("beta", 0.8, 0.99)),
                        child_param("parentCategoricalValues", ["adam"], int_param("warmup", 0, 10)),
                    ],
                )
            ]
        ),
    ),  # fmt: skip
    (
        "good-study-same-child-disjoint",
        "ok",
        tuning(
            [
                int_param(
                    "layers",
                    1,
                    4,
                    conditionalParameterSpecs=[
                        child_param("parentIntValues", [1, 2], int_param("units", 8, 64)),
                        child_param("parentIntValues", [3, 4], int_param("units", 64, 512)),
                    ],
                )
            ]
        ),
    ),  # fmt: skip
    ("good-study-discrete-1000", "ok", tuning([discrete_param("d", *range(1000))])),
    ("good-study-log-scale", "ok", tuning([double_param("lr", 1e-4, 1e-1, scaleType="UNIT_LOG_SCALE")])),
    ("good-study-failed-zero", "ok", tuning(maxFailedTrialCount=0)),
    (
        "good-study-failed-equal-max",
        "ok",
        tuning(maxTrialCount=3, parallelTrialCount=1, maxFailedTrialCount=3),
    ),
    (
        "good-study-trial-flex",
        "ok",
        tuning(trialJobSpec={"workerPoolSpecs": [pool(A100)], "scheduling": FLEX_START}),
    ),
    (
        "bad-study-safety-only",
        "bad",
        tuning(
            metrics=[{"metricId": "loss_ok", "goal": "MAXIMIZE", "safetyConfig": {"safetyThreshold": 0.1}}]
        ),
    ),  # fmt: skip
    ("bad-study-log-discrete-zero", "bad", tuning([discrete_param("d", 0, 1, scaleType="UNIT_LOG_SCALE")])),
    ("bad-study-categorical-repeat", "bad", tuning([categorical_param("c", "a", "a")])),
    (
        "bad-study-child-not-in-discrete",
        "bad",
        tuning(
            [
                discrete_param(
                    "d",
                    1,
                    2,
                    conditionalParameterSpecs=[
                        child_param("parentDiscreteValues", [3], int_param("n", 1, 2))
                    ],
                )
            ]
        ),
    ),  # fmt: skip
    (
        "bad-study-grid-double-child",
        "bad",
        tuning(
            [
                categorical_param(
                    "opt",
                    "a",
                    conditionalParameterSpecs=[
                        child_param("parentCategoricalValues", ["a"], double_param("lr", 0.1, 0.2))
                    ],
                )
            ],
            study={"algorithm": "GRID_SEARCH"},
        ),
    ),  # fmt: skip
    ("bad-study-parallel-zero", "bad", tuning(parallelTrialCount=0)),
    (
        "bad-study-failed-over-max",
        "bad",
        tuning(maxTrialCount=3, parallelTrialCount=1, maxFailedTrialCount=4),
    ),
    ("bad-study-max-omitted", "bad", {k: v for k, v in tuning().items() if k != "maxTrialCount"}),
    (
        "bad-study-default-value",
        "bad",
        tuning([{"parameterId": "n", "integerValueSpec": {"minValue": 1, "maxValue": 3, "defaultValue": 2}}]),
    ),  # fmt: skip
    ("bad-study-no-value-spec", "bad", tuning([{"parameterId": "n"}])),
    ("bad-study-int-reversed", "bad", tuning([int_param("n", 5, 2)])),
    (
        "bad-study-child-repeats-top-id",
        "bad",
        tuning(
            [
                categorical_param(
                    "opt",
                    "a",
                    conditionalParameterSpecs=[
                        child_param("parentCategoricalValues", ["a"], int_param("opt", 1, 2))
                    ],
                )
            ]
        ),
    ),  # fmt: skip
    (
        "bad-study-categorical-scale",
        "bad",
        tuning([categorical_param("c", "a", scaleType="UNIT_LINEAR_SCALE")]),
    ),
    ("bad-study-discrete-1001", "bad", tuning([discrete_param("d", *range(1001))])),
    (
        "bad-study-trial-flex-cpu",
        "bad",
        tuning(trialJobSpec={"workerPoolSpecs": [pool()], "scheduling": FLEX_START}),
    ),
    ("bad-study-metric-id-space", "bad", tuning(metrics=[{"metricId": "my acc", "goal": "MAXIMIZE"}])),
]
