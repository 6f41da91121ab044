"""The differential test's corpus: v1 Create bodies, good and bad, each read by the provider's specs
(``from_api``) and by the emulator's own rules (``vertex_emulator.rules.check_create``).

Two sources:

* every row of the provider's bad-spec table (``tests/specs/bad_job_cases.py``, ``bad_study_cases.py``),
  rendered as the v1 body it stands for (``differential_render``); a row with no v1 form (an enum name
  the protos lack, two pools at one position, ...) is listed in ``NO_V1_FORM`` with the reason;
* ``HAND_CASES`` below: layouts written as v1 JSON (``differential_custom_cases.py`` for custom jobs,
  ``differential_tuning_cases.py`` for tuning jobs, with the builders of ``differential_v1.py``), each
  with the verdict Google's documentation gives (``expect``), which the emulator must give.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.differential_custom_cases import CUSTOM_CASES
from tests.differential_render import v1_or_reason
from tests.differential_tuning_cases import TUNING_CASES
from tests.differential_v1 import custom
from tests.specs.bad_job_cases import JOB_CASES
from tests.specs.bad_study_cases import STUDY_CASES

__all__ = ["CORPUS", "HAND_CASES", "NO_V1_FORM", "Case", "table_cases"]


@dataclass(frozen=True)
class Case:
    case_id: str
    kind: str  # "customJobs" | "hyperparameterTuningJobs"
    body: dict[str, Any]
    location: str = "us-central1"
    #: the verdict Google's documentation gives ("ok" / "bad"); None for a table row (no second reading)
    expect: str | None = None


#: Rows of the bad-spec table with no v1 form, and why (the test checks this list is exact).
NO_V1_FORM: dict[str, str] = {
    "ps-and-reducers": "parameter servers and a Reduction Server both need position 2",
    "task-both": "WorkerPoolSpec.task is a oneof: the wire carries one task",
    "unknown-accelerator": "an AcceleratorType name the protos lack",
    "strategy-unknown": "a Scheduling.Strategy name the protos lack",
    "timeout-garbage": "not a google.protobuf.Duration",
    "unknown-field": "a CustomJobSpec field the protos lack",
    "metric-goal": "a GoalType name the protos lack",
    "parameter-type-missing": "a parameter without a value spec kind puts its bounds where v1 has none",
    "two-stopping-rules": "StudySpec.automated_stopping_spec is a oneof",
    "tuning-location-mismatch": "a v1 request has one location, its parent's",
    "trial-job-labels": "CustomJobSpec has no labels (a tuning job's labels are its own)",
}

HAND_CASES: list[Case] = [
    *(Case(cid, "customJobs", body, expect=expect) for cid, expect, body in CUSTOM_CASES),
    *(Case(cid, "hyperparameterTuningJobs", body, expect=expect) for cid, expect, body in TUNING_CASES),
    Case("bad-location-unknown", "customJobs", custom(), location="mars-central1", expect="bad"),
    Case("good-location-europe", "customJobs", custom(), location="europe-west4", expect="ok"),
]


def table_cases() -> tuple[list[Case], dict[str, str]]:
    """Every row of the bad-spec table as a ``Case``, and the rows with no v1 form (id -> why)."""
    cases: list[Case] = []
    skipped: dict[str, str] = {}
    for case_id, data, _path, _rule in [*JOB_CASES, *STUDY_CASES]:
        rendered = v1_or_reason(data)
        if isinstance(rendered, str):
            skipped[f"table:{case_id}"] = rendered
            continue
        kind, body, location = rendered
        cases.append(Case(f"table:{case_id}", kind, body, location))
    return cases, skipped


CORPUS: list[Case] = [*table_cases()[0], *HAND_CASES]
