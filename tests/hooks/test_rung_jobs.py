"""``ladder_jobs``: a ladder task's jobs over its rungs and regions, told apart from jobs that only carry
the run's labels (another rung's fingerprint, another region, no rung, another retry budget)."""

from __future__ import annotations

import copy
from typing import Any

from airflow_vertex_dist.hooks.labels import BUDGET_LABEL, SPEC_LABEL, rung_label, rung_of, spec_fingerprint
from airflow_vertex_dist.hooks.rung_jobs import ladder_jobs


class _Log:
    def __init__(self) -> None:
        self.warnings: list[str] = []

    def info(self, msg: str, *args: Any, **kwargs: Any) -> None:
        pass

    def warning(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self.warnings.append(msg % args)


class FakeHook:
    """The List of one region: every job given, whatever the filter (the run's labels match)."""

    def __init__(self, jobs: list[dict[str, Any]]) -> None:
        self.jobs = jobs
        self.log = _Log()

    def find_jobs(self, kind: str, labels: dict[str, str]) -> list[dict[str, Any]]:
        return list(self.jobs)

    def create_job(self, kind: str, body: dict[str, Any]) -> dict[str, Any]:  # pragma: no cover
        raise AssertionError("no Create here")

    def cancel_job(self, name: str) -> None:  # pragma: no cover
        raise AssertionError("no Cancel here")


def body(machine: str) -> dict[str, Any]:
    return {
        "displayName": "t",
        "jobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {"machineType": machine},
                    "replicaCount": 1,
                    "diskSpec": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 100},
                    "containerSpec": {"imageUri": "python:3.11"},
                }
            ]
        },
    }


BODIES = [body("n1-standard-4"), body("n1-standard-8")]
REGIONS = ["us-central1", "us-east1"]


def job(
    n: int, rung: int | None, region: str, *, spec_of: int | None = None, budget: str = "m1"
) -> dict[str, Any]:
    source = BODIES[(spec_of or rung or 1) - 1]
    labels = {SPEC_LABEL: spec_fingerprint(source), BUDGET_LABEL: budget}
    if rung is not None:
        labels.update(rung_label(rung))
    return {
        **copy.deepcopy(source),
        "name": f"projects/p/locations/{region}/customJobs/{n}",
        "state": "JOB_STATE_FAILED",
        "createTime": f"2024-01-01T00:00:0{n}Z",
        "labels": labels,
    }


def test_the_ladders_jobs_by_rung_region_and_budget() -> None:
    central = FakeHook(
        [
            job(2, 1, "us-central1"),
            job(1, 1, "us-central1", budget="m0"),  # a try before a clear
            job(3, 2, "us-central1"),  # rung 2 lives in us-east1
            job(4, 1, "us-central1", spec_of=2),  # rung 1's label, rung 2's fingerprint
            job(5, None, "us-central1"),  # no rung: not a ladder's job
        ]
    )
    east = FakeHook([job(6, 2, "us-east1")])
    hooks: dict[str, Any] = {"us-central1": central, "us-east1": east}
    found = ladder_jobs(hooks, "customJobs", {"airflow-run": "r"}, BODIES, REGIONS, "m1")
    assert [(e.rung, e.job["name"].rsplit("/", 1)[1]) for e in found.mine] == [(1, "2"), (2, "6")]
    assert [(e.rung, e.job["name"].rsplit("/", 1)[1]) for e in found.earlier] == [(1, "1")]
    warnings = " | ".join(central.log.warnings)
    assert "it is in us-central1, not in rung 2's region us-east1" in warnings
    assert "is not rung 1's" in warnings
    assert "no rung of this ladder (airflow-rung=None)" in warnings


def test_a_job_whose_spec_differs_from_its_rungs_is_not_adopted() -> None:
    planted = job(7, 1, "us-central1")
    planted["jobSpec"]["workerPoolSpecs"][0]["containerSpec"] = {"imageUri": "evil:1"}  # labels copied
    hook = FakeHook([planted])
    hooks: dict[str, Any] = {"us-central1": hook}
    found = ladder_jobs(hooks, "customJobs", {}, BODIES[:1], REGIONS[:1], "m1")
    assert found.mine == [] and found.earlier == []
    assert "its spec differs from rung 1's" in hook.log.warnings[0]


def test_rung_label_values() -> None:
    assert rung_label(2) == {"airflow-rung": "r2"}
    assert rung_of({"airflow-rung": "r12"}) == 12
    for value in ("", "2", "r", "r0", "rx", "r-1"):
        assert rung_of({"airflow-rung": value}) is None
    assert rung_of(None) is None
