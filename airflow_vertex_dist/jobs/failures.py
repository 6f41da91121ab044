"""Why a job (or its Create) failed, as a capacity ladder needs to know: pure functions over the job's
v1 JSON dict and over the API exception, no Airflow, no ``google`` import.

Every failure gets one class and a reason that says why:

==========================  ===========================================================================
class                       when
==========================  ===========================================================================
``stockout``                the job failed with "Resources are insufficient in region" before it ran,
                            or stayed QUEUED/PENDING past its rung's ``pending_limit``
``quota``                   Create answered RESOURCE_EXHAUSTED (429) -- unless its text names a
                            per-minute request rate, which the hook retries -- or the job failed with
                            "The following quota metrics exceed quota limits"
``flex-start not granted``  a FLEX_START job ended (or waited past ``pending_limit``) without starting
``preemption``              a SPOT job that had started failed with a stockout text, ``STOCKOUT`` or a
                            text naming a preemption
``resource lost``           the persistent resource the job ran on was deleted or rebooted under it
                            (the local emulator's words; the service's are not documented)
``user code``               a replica "exited with a non-zero status"
``bad image``               the text says an image could not be pulled or was not found
``permission``              PERMISSION_DENIED (403) at Create, error code 7, or a text about permission
``invalid request``         INVALID_ARGUMENT / FAILED_PRECONDITION / NOT_FOUND at Create
``cancelled``               the job was cancelled by someone else (a user, the task being killed)
``unclassified``            anything else
==========================  ===========================================================================

The first five are capacity (``CAPACITY``): a ladder moves to its next rung or retries, as the rung
says. ``user code``, ``bad image``, ``permission`` and ``invalid request`` are ``FAIL_FAST``: trying
again, here or elsewhere, would fail the same way and burn the same GPUs. The texts and their sources
are in ``airflow_vertex_dist.jobs.capacity_messages``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

from airflow_vertex_dist.common.regex import LazyRegex
from airflow_vertex_dist.common.rfc3339 import rfc3339_nanos
from airflow_vertex_dist.jobs.capacity_messages import (
    PREEMPTION_RE,
    QUOTA_RE,
    RATE_LIMIT_MARKER,
    REPLICA_EXIT_RE,
    RESOURCE_LOST_RE,
    STOCKOUT_RE,
    quota_metrics_named,
)
from airflow_vertex_dist.jobs.kinds import TERMINAL_STATES

__all__ = [
    "CAPACITY",
    "FAIL_FAST",
    "Failure",
    "FailureClass",
    "classify_create_error",
    "classify_job",
    "is_capacity_quota_error",
    "pending_seconds",
]

FailureClass = Literal[
    "stockout",
    "quota",
    "flex-start not granted",
    "preemption",
    "resource lost",
    "user code",
    "bad image",
    "permission",
    "invalid request",
    "cancelled",
    "unclassified",
]
CAPACITY: frozenset[FailureClass] = frozenset(
    {"stockout", "quota", "flex-start not granted", "preemption", "resource lost"}
)
FAIL_FAST: frozenset[FailureClass] = frozenset({"user code", "bad image", "permission", "invalid request"})

_IMAGE_RE = LazyRegex(
    r"(pull|pulling)\s+(the\s+)?(container\s+)?image|image\S*\s+(was\s+)?not\s+found|ErrImagePull|"
    r"ImagePullBackOff|manifest unknown",
    flags=re.IGNORECASE,
)
_PERMISSION_RE = LazyRegex(
    r"permission denied|does not have permission|PERMISSION_DENIED", flags=re.IGNORECASE
)

#: google.rpc.Code numbers of a job's ``error.code``.
_PERMISSION_DENIED = 7
_RESOURCE_EXHAUSTED = 8
#: gRPC status names (and HTTP statuses) of a Create that failed for good, by class.
_CREATE_CLASSES: dict[str, FailureClass] = {
    "PERMISSION_DENIED": "permission",
    "UNAUTHENTICATED": "permission",
    "INVALID_ARGUMENT": "invalid request",
    "FAILED_PRECONDITION": "invalid request",
    "NOT_FOUND": "invalid request",
    "OUT_OF_RANGE": "invalid request",
}
_HTTP_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND"}


class Failure(NamedTuple):
    """A failure's class and why (a sentence for the task log, quoting the service where it spoke)."""

    kind: FailureClass
    reason: str

    @property
    def capacity(self) -> bool:
        return self.kind in CAPACITY

    @property
    def fail_fast(self) -> bool:
        return self.kind in FAIL_FAST


def _status_name(exc: BaseException) -> str | None:
    """The gRPC status name of a ``google.api_core`` exception (``RESOURCE_EXHAUSTED``...), read from
    its attributes so this module needs no ``google`` import; ``None`` for another exception."""
    grpc_code = getattr(exc, "grpc_status_code", None)
    name = getattr(grpc_code, "name", None)
    if isinstance(name, str):
        return name
    code = getattr(exc, "code", None)
    if isinstance(code, int) and not isinstance(code, bool):
        if code == 429:
            return "RESOURCE_EXHAUSTED"
        return _HTTP_NAMES.get(code)
    return None


def _message(exc: BaseException) -> str:
    return str(getattr(exc, "message", None) or exc)


def is_capacity_quota_error(exc: BaseException) -> bool:
    """A RESOURCE_EXHAUSTED answer that is a capacity quota (not a per-minute request rate): what the
    hook does not retry at a ladder's Create, so that the ladder can move on at once."""
    return _status_name(exc) == "RESOURCE_EXHAUSTED" and RATE_LIMIT_MARKER not in _message(exc).lower()


def classify_create_error(exc: BaseException) -> Failure:
    """The class of an error a Create raised (after the hook's own retries of transient errors)."""
    name = _status_name(exc)
    text = _message(exc)
    if name == "RESOURCE_EXHAUSTED":
        metrics = quota_metrics_named(text)
        named = f" ({', '.join(metrics)})" if metrics else ""
        return Failure("quota", f"Create answered RESOURCE_EXHAUSTED{named}: {text}")
    if name in _CREATE_CLASSES:
        kind = _CREATE_CLASSES[name]
        return Failure(kind, f"Create answered {name}: {text}")
    return Failure("unclassified", f"Create failed ({type(exc).__name__}): {text}")


def pending_seconds(job: Mapping[str, Any], now_ns: int | None = None) -> float | None:
    """Seconds from the job's ``createTime`` to its ``endTime`` (an ended job) or to ``now_ns`` (default:
    now) while it has not started (no ``startTime``); ``None`` once it started or without a
    ``createTime``."""
    if job.get("startTime") or not job.get("createTime"):
        return None
    try:
        created = rfc3339_nanos(str(job["createTime"]))
        end = job.get("endTime")
        later = rfc3339_nanos(str(end)) if end else (time.time_ns() if now_ns is None else now_ns)
    except ValueError:
        return None
    return max(0.0, (later - created) / 1e9)


def _secs(seconds: float) -> str:
    return f"{seconds:.1f}" if seconds < 10 else f"{seconds:.0f}"


def classify_job(
    job: Mapping[str, Any],
    *,
    strategy: str | None = None,
    pending_limit_s: float | None = None,
    pending_for_s: float | None = None,
    now_ns: int | None = None,
    resource_gone: str | None = None,
) -> Failure | None:
    """Why ``job`` failed for a ladder, or ``None`` while it should be waited on (or it succeeded).

    ``strategy`` is the rung's scheduling strategy; ``pending_limit_s`` the rung's limit on the wait for
    the job to start; ``pending_for_s`` how long it has waited so far (default: from its times and
    ``now_ns``, the service's time now, by default this host's). A
    PARTIALLY_SUCCEEDED or PAUSED job is not a capacity matter: ``None`` (the wait's own rules apply).
    ``resource_gone`` says why the persistent resource the job ran on is gone (the caller read it): a
    CANCELLED job then lost its rung's capacity, since the service cancels the jobs on a resource it
    deletes ("Delete a persistent resource").
    """
    state = str(job.get("state", ""))
    started = bool(job.get("startTime"))
    flex = strategy == "FLEX_START"
    if state in ("JOB_STATE_QUEUED", "JOB_STATE_PENDING") and not started and pending_limit_s is not None:
        waited = pending_for_s if pending_for_s is not None else pending_seconds(job, now_ns)
        if waited is not None and waited >= pending_limit_s:
            where = state.removeprefix("JOB_STATE_")
            why = f"stayed {where} for {_secs(waited)}s without starting, past the rung's pending_limit of "
            why += f"{pending_limit_s:g}s"
            return Failure("flex-start not granted" if flex else "stockout", why)
        return None
    if state not in TERMINAL_STATES or state in ("JOB_STATE_SUCCEEDED", "JOB_STATE_PARTIALLY_SUCCEEDED"):
        return None
    error = job.get("error") if isinstance(job.get("error"), dict) else {}
    text = str(error.get("message", "") if error else "")
    code = error.get("code") if error else None
    said = f": {text}" if text else ""
    if state == "JOB_STATE_CANCELLED":
        waited = pending_seconds(job, now_ns)
        if pending_limit_s is not None and waited is not None and waited >= pending_limit_s:
            kind: FailureClass = "flex-start not granted" if flex else "stockout"
            return Failure(
                kind,
                f"cancelled after {_secs(waited)}s without starting (pending_limit {pending_limit_s:g}s)",
            )
        if resource_gone is not None:
            return Failure("resource lost", f"the service cancelled the job: {resource_gone}")
        return Failure("cancelled", f"the job was cancelled{said}")
    if state == "JOB_STATE_EXPIRED":
        if flex and not started:
            return Failure("flex-start not granted", f"FLEX_START job expired without starting{said}")
        return Failure("unclassified", f"the job expired{said}")
    return _classify_failed(text, code, strategy=strategy, started=started)


def _classify_failed(text: str, code: Any, *, strategy: str | None, started: bool) -> Failure:
    said = f": {text}" if text else " (no error message)"
    spot, flex = strategy == "SPOT", strategy == "FLEX_START"
    if RESOURCE_LOST_RE.search(text):
        return Failure("resource lost", f"the persistent resource was taken from under the job{said}")
    if STOCKOUT_RE.search(text) or (spot and started and PREEMPTION_RE.search(text)):
        if spot and started:
            return Failure("preemption", f"the SPOT job was preempted after it started{said}")
        if flex and not started:
            return Failure("flex-start not granted", f"no capacity was granted to the FLEX_START job{said}")
        return Failure("stockout", f"no capacity in the region{said}")
    if QUOTA_RE.search(text) or (code == _RESOURCE_EXHAUSTED and "quota" in text.lower()):
        return Failure("quota", f"the job failed over quota{said}")
    if PREEMPTION_RE.search(text):
        return Failure("preemption" if started else "stockout", f"capacity was taken back{said}")
    if REPLICA_EXIT_RE.search(text):
        return Failure("user code", f"the training code failed{said}")
    if _IMAGE_RE.search(text):
        return Failure("bad image", f"a replica's image could not be pulled{said}")
    if code == _PERMISSION_DENIED or _PERMISSION_RE.search(text):
        return Failure("permission", f"a permission is missing{said}")
    if flex and not started:
        return Failure("flex-start not granted", f"the FLEX_START job ended without starting{said}")
    return Failure("unclassified", f"the job failed{said}")
