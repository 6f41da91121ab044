"""The end of a wait (``Verdict``), the trigger event (``JobEvent``) and its check when a
task resumes (``read_event``).

Every trigger of the package fires exactly one ``JobEvent``. Pure: no Airflow or Google imports.

``reattach`` is not an end: a converging job trigger (``VertexJobTrigger`` with ``converge``) found
that an older job of the task runs the same spec (concurrent tries each made one). The event names the
job to keep (``job``) and the one the trigger waited on (``superseded``, the only extra key an event
may carry); the task cancels the superseded job and waits on the kept one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, NamedTuple, TypedDict, cast, get_args

if TYPE_CHECKING:
    from airflow_vertex_dist.jobs.types import CompactJob

__all__ = ["SUPERSEDED_KEY", "EventStatus", "JobEvent", "Verdict", "read_event", "superseded_job"]

#: How a wait ended (``reattach``: it goes on, on another job; see the module doc).
EventStatus = Literal["success", "error", "reattach"]
#: The key of a ``reattach`` event that names the job the trigger waited on.
SUPERSEDED_KEY = "superseded"


class _Supersedes(TypedDict, total=False):
    superseded: str  # a ``reattach`` event's only: the job its trigger waited on


class JobEvent(_Supersedes):
    """The payload of a trigger's event: how the wait ended, the message for the task log, and the
    job as it was then (compact: ``compact_job``), or
    ``None`` when there is no job to show (it does not exist, or the API failed)."""

    status: EventStatus
    message: str
    job: CompactJob | None


class Verdict(NamedTuple):
    """The end of a wait: ``success`` or ``error``, with a message for the task log.

    A ``NamedTuple``, not a frozen dataclass: this module is imported when a DAG file builds an
    operator, and a frozen dataclass costs about a millisecond to create (its methods are generated
    and compiled at import); a ``NamedTuple`` a tenth of that."""

    status: EventStatus
    message: str

    @property
    def ok(self) -> bool:
        return self.status == "success"


def read_event(event: object) -> tuple[Verdict, CompactJob | None]:
    """Check a trigger event's payload as a resumed task gets it: ``(verdict, compact job or None)``.

    ``ValueError`` when it is not a ``JobEvent`` (``{"status": "success" | "error" | "reattach",
    "message": str, "job": dict | None}``, no other key but a ``reattach`` event's ``superseded``) or
    a success or ``reattach`` event does not carry the job.
    """
    if not isinstance(event, dict) or event.get("status") not in get_args(EventStatus):
        raise ValueError(f"event: expected {{'status': 'success'|'error'|'reattach', ...}} (got {event!r})")
    keys = set(JobEvent.__required_keys__)
    if event["status"] == "reattach":
        keys.add(SUPERSEDED_KEY)
        if not isinstance(event.get(SUPERSEDED_KEY), str) or not event[SUPERSEDED_KEY]:
            raise ValueError(f"event: a reattach event names the job it supersedes (got {event!r})")
    if set(event) != keys:
        missing, unknown = sorted(keys - set(event)), sorted(set(event) - keys)
        raise ValueError(f"event: expected the keys {sorted(keys)}: missing {missing}, unknown {unknown}")
    job, message = event["job"], event["message"]
    if not isinstance(message, str) or not (job is None or isinstance(job, dict)):
        raise ValueError(f"event: 'message' is a string and 'job' a dict or None (got {event!r})")
    if event["status"] != "error" and not (isinstance(job, dict) and job.get("name")):
        raise ValueError(f"event: a {event['status']} event carries the job (got {event!r})")
    return Verdict(event["status"], message), cast("CompactJob | None", job)


def superseded_job(event: dict[str, object]) -> str:
    """The job a ``reattach`` event's trigger waited on (checked by ``read_event``)."""
    return str(event[SUPERSEDED_KEY])
