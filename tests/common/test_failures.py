"""Failure classification (``jobs.failures``): every class from the job dict or the Create error, with
the texts Vertex AI is reported to use (``jobs.capacity_messages``)."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_vertex_dist.jobs.capacity_messages import (
    quota_message,
    quota_metric,
    quota_metrics_named,
    stockout_message,
)
from airflow_vertex_dist.jobs.failures import (
    CAPACITY,
    FAIL_FAST,
    classify_create_error,
    classify_job,
    is_capacity_quota_error,
    pending_seconds,
)

CREATED = "2024-01-01T00:00:00Z"


def failed(
    message: str, code: int = 3, started: bool = True, state: str = "JOB_STATE_FAILED"
) -> dict[str, Any]:
    job: dict[str, Any] = {
        "state": state,
        "createTime": CREATED,
        "endTime": "2024-01-01T00:10:00Z",
        "error": {"code": code, "message": message},
    }
    if started:
        job["startTime"] = "2024-01-01T00:01:00Z"
    return job


def test_the_service_texts() -> None:
    assert stockout_message("us-central1") == (
        "Resources are insufficient in region: us-central1. Try a different region or use a different "
        "accelerator."
    )
    metric = quota_metric("NVIDIA_TESLA_A100")
    assert metric == "aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus"
    assert quota_metric("NVIDIA_L4", preemptible=True) == (
        "aiplatform.googleapis.com/custom_model_training_preemptible_nvidia_l4_gpus"
    )
    assert quota_metric("NVIDIA_GB200") is None  # not named by the source: no guess
    text = quota_message(metric)
    assert text == (
        "The following quota metrics exceed quota limits: "
        "aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus"
    )
    assert quota_metrics_named(text) == [metric]
    assert quota_metrics_named("something else") == []


@pytest.mark.parametrize(
    ("job", "strategy", "kind"),
    [
        (failed(stockout_message("us-central1"), started=False), None, "stockout"),
        (failed("Resources are insufficient in region: europe-west4", code=8), "STANDARD", "stockout"),
        (
            failed("Resources are insufficient in region: us-central1. Please try a different region."),
            None,
            "stockout",
        ),
        (failed(stockout_message("us-central1"), started=True), "SPOT", "preemption"),
        (failed("The VM was preempted", started=True), "SPOT", "preemption"),
        (failed("STOCKOUT", started=True), "SPOT", "preemption"),
        (failed(stockout_message("us-central1"), started=False), "FLEX_START", "flex-start not granted"),
        (failed("", started=False), "FLEX_START", "flex-start not granted"),
        (failed(quota_message(quota_metric("NVIDIA_TESLA_K80") or "x"), code=8), None, "quota"),
        (
            failed("The replica workerpool0-0 exited with a non-zero status of 1. To find out more..."),
            "SPOT",
            "user code",
        ),
        (failed("Failed to pull image us-docker.pkg.dev/p/r/trainer:v9"), None, "bad image"),
        (failed("Error: manifest unknown"), None, "bad image"),
        (failed("service account does not have permission to read gs://b", code=7), None, "permission"),
        (failed("", code=7), None, "permission"),
        (failed("Internal error", code=13), None, "unclassified"),
        # the local emulator's words for a job whose persistent resource was deleted or rebooted
        (
            failed(
                "The PersistentResource projects/p/locations/us-central1/persistentResources/gpus was "
                "deleted while the job was on it.",
                code=10,
            ),
            None,
            "resource lost",
        ),
        (
            failed(
                "The PersistentResource projects/p/locations/us-central1/persistentResources/gpus was "
                "rebooted while the job ran on it.",
                code=10,
                started=False,
            ),
            "SPOT",
            "resource lost",
        ),
        (failed("The PersistentResource gpus was created", code=10), None, "unclassified"),
        (failed("", code=1, state="JOB_STATE_CANCELLED"), None, "cancelled"),
        (failed("", state="JOB_STATE_EXPIRED", started=False), "FLEX_START", "flex-start not granted"),
        (failed("", state="JOB_STATE_EXPIRED", started=False), None, "unclassified"),
    ],
)
def test_classify_a_failed_job(job: dict[str, Any], strategy: str | None, kind: str) -> None:
    failure = classify_job(job, strategy=strategy)
    assert failure is not None
    assert failure.kind == kind, failure
    message = job["error"]["message"]
    if message:
        assert message in failure.reason  # the service's words are quoted


def test_fail_fast_and_capacity_classes_do_not_overlap() -> None:
    assert not CAPACITY & FAIL_FAST
    assert {"user code", "bad image", "permission"} <= FAIL_FAST
    assert {"stockout", "quota", "flex-start not granted", "preemption", "resource lost"} == CAPACITY


def test_waiting_jobs_and_successes_are_not_failures() -> None:
    assert classify_job({"state": "JOB_STATE_RUNNING", "startTime": CREATED}, pending_limit_s=1) is None
    assert classify_job({"state": "JOB_STATE_SUCCEEDED"}) is None
    assert classify_job({"state": "JOB_STATE_PARTIALLY_SUCCEEDED"}) is None
    assert classify_job({"state": "JOB_STATE_PAUSED"}) is None
    pending = {"state": "JOB_STATE_PENDING", "createTime": CREATED}
    assert classify_job(pending) is None  # no pending_limit: wait as long as it takes


def test_pending_past_the_rungs_limit_is_a_stockout() -> None:
    pending = {"state": "JOB_STATE_PENDING", "createTime": CREATED}
    assert classify_job(pending, pending_limit_s=60, pending_for_s=59.0) is None
    failure = classify_job(pending, pending_limit_s=60, pending_for_s=61.0)
    assert failure is not None and failure.kind == "stockout"
    assert "PENDING for 61s" in failure.reason and "pending_limit of 60s" in failure.reason
    queued = {"state": "JOB_STATE_QUEUED", "createTime": CREATED}
    flex = classify_job(queued, strategy="FLEX_START", pending_limit_s=60, pending_for_s=600.0)
    assert flex is not None and flex.kind == "flex-start not granted"


def test_a_job_cancelled_for_its_pending_limit_is_read_back_as_a_stockout() -> None:
    """After a crash the next try reads why the ladder left a rung from the job alone."""
    cancelled = {
        "state": "JOB_STATE_CANCELLED",
        "createTime": CREATED,
        "endTime": "2024-01-01T00:02:00Z",
        "error": {"code": 1, "message": "CANCELED"},
    }
    failure = classify_job(cancelled, pending_limit_s=100)
    assert failure is not None and failure.kind == "stockout"
    by_user = classify_job(cancelled, pending_limit_s=1000)
    assert by_user is not None and by_user.kind == "cancelled"


def test_pending_seconds() -> None:
    job = {"createTime": CREATED, "endTime": "2024-01-01T00:00:30.500Z"}
    assert pending_seconds(job) == 30.5
    assert pending_seconds({**job, "startTime": CREATED}) is None
    assert pending_seconds({"createTime": CREATED}, now_ns=1704067210 * 10**9) == 10.0


class _Code:
    def __init__(self, name: str) -> None:
        self.name = name


class FakeApiError(Exception):
    """Stands in for a ``google.api_core`` exception: ``grpc_status_code`` and ``message``."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.grpc_status_code = _Code(status)
        self.message = message


def test_create_errors() -> None:
    quota = FakeApiError("RESOURCE_EXHAUSTED", quota_message(quota_metric("NVIDIA_L4") or ""))
    failure = classify_create_error(quota)
    assert failure.kind == "quota"
    assert "custom_model_training_nvidia_l4_gpus" in failure.reason
    assert is_capacity_quota_error(quota)
    rate = FakeApiError(
        "RESOURCE_EXHAUSTED",
        "Quota exceeded for quota metric 'Resource management (CRUD) requests' and limit 'Resource "
        "management (CRUD) requests per minute per region'",
    )
    assert not is_capacity_quota_error(rate)  # a request rate: the hook retries it
    assert classify_create_error(FakeApiError("PERMISSION_DENIED", "no")).kind == "permission"
    assert classify_create_error(FakeApiError("INVALID_ARGUMENT", "bad")).kind == "invalid request"
    assert classify_create_error(FakeApiError("INTERNAL", "oops")).kind == "unclassified"
    assert classify_create_error(RuntimeError("boom")).kind == "unclassified"


def test_create_errors_of_the_google_client() -> None:
    from google.api_core import exceptions

    cases: list[tuple[type[Exception], str]] = [
        (exceptions.ResourceExhausted, "quota"),
        (exceptions.TooManyRequests, "quota"),
        (exceptions.PermissionDenied, "permission"),
        (exceptions.InvalidArgument, "invalid request"),
        (exceptions.InternalServerError, "unclassified"),
    ]
    for error, kind in cases:
        assert classify_create_error(error("x")).kind == kind, error
    quota: type[Exception] = exceptions.ResourceExhausted
    assert is_capacity_quota_error(quota("The following quota metrics exceed quota limits: x"))


def test_a_job_cancelled_with_its_persistent_resource_lost_its_rungs_capacity() -> None:
    """Vertex AI cancels the jobs on a persistent resource it deletes ("Delete a persistent resource"): a
    CANCELLED job whose resource the ladder found gone is "resource lost"; one whose resource is still
    there was cancelled by someone, and is not a capacity failure."""
    job = failed("The job was cancelled.", code=1, state="JOB_STATE_CANCELLED")
    gone = classify_job(job, resource_gone="persistent resource projects/p/.../gpus was deleted")
    assert gone is not None and (gone.kind, gone.capacity) == ("resource lost", True)
    assert "gpus was deleted" in gone.reason
    kept = classify_job(job)
    assert kept is not None and (kept.kind, kept.capacity) == ("cancelled", False)
