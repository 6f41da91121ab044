"""The end of a wait (:class:`Verdict`) and the trigger event a resumed task checks (:func:`read_event`).

Pure: no Airflow or Google imports.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

__all__ = ["Verdict", "read_event"]


class Verdict(NamedTuple):
    """The end of a wait: ``success`` or ``error``, with a message for the task log.

    A ``NamedTuple``, not a frozen dataclass: this module is imported when a DAG file builds an
    operator, and a frozen dataclass costs about a millisecond to create (its methods are generated
    and compiled at import); a ``NamedTuple`` a tenth of that."""

    status: Literal["success", "error"]
    message: str

    @property
    def ok(self) -> bool:
        return self.status == "success"


def read_event(event: Any) -> tuple[Verdict, dict[str, Any] | None]:
    """Check a trigger event's payload as a resumed task gets it: ``(verdict, compact job or None)``.

    ``ValueError`` when it is not ``{"status": "success" | "error", "message", "job"}`` or a success
    event does not carry the job.
    """
    if not isinstance(event, dict) or event.get("status") not in ("success", "error"):
        raise ValueError(f"event: expected {{'status': 'success'|'error', ...}} (got {event!r})")
    job = event.get("job")
    if event["status"] == "success" and not (isinstance(job, dict) and job.get("name")):
        raise ValueError(f"event: a success event carries the job (got {event!r})")
    verdict = Verdict(event["status"], str(event.get("message") or ""))
    return verdict, job if isinstance(job, dict) else None
