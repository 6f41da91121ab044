"""The jobs a task with a capacity ladder made, found again by label on every rung and in every region.

A ladder's job carries the task's run labels, its retry budget (``airflow-budget``), its rung
(``airflow-rung``: ``r1``, ``r2``...) and the fingerprint of the rung's own request body
(``airflow-spec``). ``ladder_jobs`` lists the run's jobs in each region a rung may use and keeps those
that are this task's: the rung a job names exists, the job is in that rung's region, carries that
rung's fingerprint and runs its body (``spec_match``). So a task that re-attaches after a crash finds
the job of whichever rung it had reached; a job of another deployment, a copy, or one made from
another version of the spec is logged and left alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from airflow_vertex_dist.common.rfc3339 import rfc3339_key
from airflow_vertex_dist.hooks.find_or_create import JobsApi
from airflow_vertex_dist.hooks.labels import BUDGET_LABEL, SPEC_LABEL, rung_of, spec_fingerprint
from airflow_vertex_dist.hooks.spec_match import spec_difference
from airflow_vertex_dist.jobs.dicts import job_labels, job_state, parse_job_name, short_state
from airflow_vertex_dist.jobs.kinds import JobKind
from airflow_vertex_dist.jobs.types import Job

__all__ = ["LadderJobs", "RungJob", "ladder_jobs"]


class RungJob(NamedTuple):
    """A job of the task and the rung (1-based) it was made for."""

    rung: int
    job: Job

    @property
    def created(self) -> tuple[Any, ...]:
        return rfc3339_key(str(self.job.get("createTime", ""))), str(self.job.get("name", ""))


class LadderJobs(NamedTuple):
    """The task's jobs: ``mine`` of this retry budget, ``earlier`` of budgets before a clear; each list
    oldest first."""

    mine: list[RungJob]
    earlier: list[RungJob]


def ladder_jobs(
    hooks: Mapping[str, JobsApi],
    kind: JobKind,
    labels: dict[str, str],
    bodies: Sequence[dict[str, Any]],
    regions: Sequence[str],
    budget: str | None,
) -> LadderJobs:
    """The task's jobs over every rung. ``hooks`` maps each region to a hook on it; ``bodies[i]`` and
    ``regions[i]`` are rung ``i + 1``'s request body and region; ``labels`` the run's labels."""
    fingerprints = [spec_fingerprint(body) for body in bodies]
    mine: list[RungJob] = []
    earlier: list[RungJob] = []
    seen: set[str] = set()
    for region in dict.fromkeys(regions):
        hook = hooks[region]
        for job in hook.find_jobs(kind, labels):
            name = str(job.get("name", ""))
            if name in seen:
                continue
            seen.add(name)
            found_labels = job_labels(job)
            rung = rung_of(found_labels)
            why = _not_the_tasks(job, rung, fingerprints, bodies, regions, kind)
            if why is not None:
                hook.log.warning("Not adopting %s (%s): %s", name, short_state(job_state(job)), why)
                continue
            assert rung is not None
            entry = RungJob(rung, job)
            if budget is None or found_labels.get(BUDGET_LABEL) == budget:
                mine.append(entry)
            else:
                earlier.append(entry)
    return LadderJobs(sorted(mine, key=lambda e: e.created), sorted(earlier, key=lambda e: e.created))


def _not_the_tasks(
    job: Job,
    rung: int | None,
    fingerprints: Sequence[str],
    bodies: Sequence[dict[str, Any]],
    regions: Sequence[str],
    kind: JobKind,
) -> str | None:
    """Why ``job`` (with the run's labels) is not one of this task's ladder jobs, or ``None``."""
    if rung is None or not 1 <= rung <= len(bodies):
        return f"it carries this run's labels but no rung of this ladder (airflow-rung={rung})"
    theirs = job_labels(job).get(SPEC_LABEL)
    if theirs != fingerprints[rung - 1]:
        return (
            f"its spec fingerprint ({SPEC_LABEL}={theirs}) is not rung {rung}'s ({fingerprints[rung - 1]}): "
            "a job of another deployment, a copy, or one made from another version of the spec"
        )
    location = parse_job_name(str(job.get("name", ""))).location
    if location != regions[rung - 1]:
        return f"it is in {location}, not in rung {rung}'s region {regions[rung - 1]}"
    differs = spec_difference(kind, dict(job), bodies[rung - 1])
    if differs is not None:
        return f"its spec differs from rung {rung}'s at {differs}"
    return None
