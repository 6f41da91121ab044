"""The bad-spec table's tuning-job and study rows (`test_bad_specs.py` runs them); each row is (case id,
spec dict, expected field path, expected rule text)."""

from __future__ import annotations

from .bad_job_cases import AT, PARAM, Case, T

__all__ = ["STUDY_CASES"]

STUDY_CASES: list[Case] = [
    # -- tuning jobs and studies
    (
        "parallel-over-max",
        T(("parallel_trial_count", 8)),
        "parallel_trial_count",
        "must not exceed max_trial_count",
    ),
    ("max-trials-zero", T(("max_trial_count", 0)), "max_trial_count", "greater than or equal to 1"),
    (
        "failed-negative",
        T(("max_failed_trial_count", -1)),
        "max_failed_trial_count",
        "greater than or equal to 0",
    ),
    (
        "failed-over-max",
        T(("max_failed_trial_count", 5)),
        "max_failed_trial_count",
        "must not exceed max_trial_count (got 5 > 4)",
    ),
    (
        "trial-tpu",
        T(("trial_job.primary.machine", {"machine_type": "ct5lp-hightpu-4t"})),
        "trial_job.primary.machine",
        "hyperparameter tuning jobs that require TPUs are not supported (got ct5lp-hightpu-4t)",
    ),
    (
        "trial-job-labels",
        T(("trial_job.labels", {"a": "b"})),
        "trial_job.labels",
        "set labels on the tuning job",
    ),
    ("no-metrics", T(("study.metrics", [])), "study.metrics", "at least one metric"),
    (
        "duplicate-metrics",
        T(
            (
                "study.metrics",
                [{"metric_id": "a", "goal": "MAXIMIZE"}, {"metric_id": "a", "goal": "MINIMIZE"}],
            )
        ),
        "study.metrics",
        "must be unique",
    ),
    ("metric-goal", T(("study.metrics.0.goal", "BIGGER")), "study.metrics[0].goal", "Input should be"),
    (
        "metric-id-space",
        T(("study.metrics.0.metric_id", "my metric")),
        "study.metrics[0].metric_id",
        "no whitespace",
    ),
    ("no-parameters", T(("study.parameters", [])), "study.parameters", "at least one parameter"),
    (
        "double-min-max",
        T((f"{PARAM}.min_value", 2.0), (f"{PARAM}.max_value", 1.0)),
        f"{AT}.min_value",
        "must be at most max_value",
    ),
    (
        "log-scale-zero",
        T((f"{PARAM}.min_value", 0.0), (f"{PARAM}.scale_type", "LOG")),
        f"{AT}.scale_type",
        "strictly positive",
    ),
    (
        "integer-min-max",
        T((PARAM, {"type": "integer", "parameter_id": "n", "min_value": 5, "max_value": 2})),
        f"{AT}.min_value",
        "must be at most max_value",
    ),
    (
        "discrete-order",
        T((PARAM, {"type": "discrete", "parameter_id": "d", "values": [1, 3, 2]})),
        f"{AT}.values",
        "increasing and at least 1e-10 apart",
    ),
    (
        "discrete-too-many",
        T((PARAM, {"type": "discrete", "parameter_id": "d", "values": list(range(1001))})),
        f"{AT}.values",
        "at most 1,000 values",
    ),
    (
        "categorical-empty",
        T((PARAM, {"type": "categorical", "parameter_id": "c", "values": []})),
        f"{AT}.values",
        "at least one value",
    ),
    (
        "categorical-scale",
        T((PARAM, {"type": "categorical", "parameter_id": "c", "values": ["a"], "scale_type": "LOG"})),
        f"{AT}.scale_type",
        "leave unset for categorical",
    ),
    ("parameter-type-missing", T((f"{PARAM}.type", ...)), AT, "Unable to extract tag"),
    (
        "grid-with-double",
        T(("study.algorithm", "GRID_SEARCH")),
        "study.algorithm",
        "GRID_SEARCH takes only integer, categorical and discrete parameters",
    ),
    (
        "duplicate-parameters",
        T(
            (
                "study.parameters",
                [
                    {"type": "double", "parameter_id": "lr", "min_value": 0.1, "max_value": 0.2},
                    {"type": "integer", "parameter_id": "lr", "min_value": 1, "max_value": 2},
                ],
            )
        ),
        "study.parameters",
        "parameter ids must be unique",
    ),
    (
        "double-children",
        T(
            (
                f"{PARAM}.conditional_parameters",
                [
                    {
                        "parent_values": [1],
                        "parameter": {"type": "integer", "parameter_id": "n", "min_value": 1, "max_value": 2},
                    }
                ],
            )
        ),
        f"{AT}.conditional_parameters",
        "cannot have conditional children",
    ),
    (
        "child-outside-int-range",
        T(
            (
                PARAM,
                {
                    "type": "integer",
                    "parameter_id": "layers",
                    "min_value": 1,
                    "max_value": 4,
                    "conditional_parameters": [
                        {
                            "parent_values": [9],
                            "parameter": {
                                "type": "integer",
                                "parameter_id": "units",
                                "min_value": 8,
                                "max_value": 64,
                            },
                        }
                    ],
                },
            )
        ),
        f"{AT}.parent_values",
        "9 is outside parent 'layers''s range [1, 4]",
    ),
    (
        "child-not-in-categories",
        T(
            (
                PARAM,
                {
                    "type": "categorical",
                    "parameter_id": "opt",
                    "values": ["adam"],
                    "conditional_parameters": [
                        {
                            "parent_values": ["sgd"],
                            "parameter": {
                                "type": "double",
                                "parameter_id": "momentum",
                                "min_value": 0.0,
                                "max_value": 1.0,
                            },
                        }
                    ],
                },
            )
        ),
        f"{AT}.parent_values",
        "'sgd' is not one of parent 'opt''s values",
    ),
    (
        "children-overlap",
        T(
            (
                PARAM,
                {
                    "type": "categorical",
                    "parameter_id": "opt",
                    "values": ["a", "b"],
                    "conditional_parameters": [
                        {
                            "parent_values": ["a"],
                            "parameter": {"type": "categorical", "parameter_id": "x", "values": ["1"]},
                        },
                        {
                            "parent_values": ["a", "b"],
                            "parameter": {"type": "categorical", "parameter_id": "x", "values": ["2"]},
                        },
                    ],
                },
            )
        ),
        f"{AT}.conditional_parameters",
        "must have disjoint parent_values",
    ),
    (
        "two-stopping-rules",
        T(("study.median_automated_stopping", {}), ("study.decay_curve_stopping", {})),
        "study",
        "at most one automated stopping rule",
    ),
    ("tuning-kms", T(("encryption_key", "key")), "encryption_key", "keyRings"),
    (
        "tuning-kms-other-region",
        T(
            ("location", "us-central1"),
            ("encryption_key", "projects/p/locations/asia-east1/keyRings/r/cryptoKeys/k"),
        ),
        "encryption_key",
        "the key must be in the job's region us-central1",
    ),
    (
        "safety-metrics-only",
        T(("study.metrics.0.safety_config", {"safety_threshold": 0.1})),
        "study.metrics",
        "every metric is a safety metric",
    ),
    (
        "tuning-location-mismatch",
        T(("location", "us-central1"), ("trial_job.location", "europe-west4")),
        "trial_job.location",
        "differs from the tuning job's location",
    ),
]
