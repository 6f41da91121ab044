"""The progress lines of a wait for the task log: state changes, replicas up k/n, trials done k/N.

Pure: no Airflow or Google imports.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_vertex_dist.jobs.dicts import job_state, short_state
from airflow_vertex_dist.jobs.replicas import (
    expected_replicas,
    replicas_up,
    web_access_enabled,
)
from airflow_vertex_dist.jobs.trials import trial_summary

__all__ = ["ProgressLog"]


class ProgressLog:
    """The progress lines of one job worth logging: what changed since the previous poll.

    State changes (``job ...: QUEUED -> RUNNING``), replicas up k/n (from ``webAccessUris``, when the
    job has ``enableWebAccess``) and, for a study, trials done k/N with the best metric so far. Fed
    every job dict a wait sees (the operators' polls, the triggers' updates), so a long wait does not
    flood the log.

    ``first`` names where the first state came from: ``submitted`` for the operators (their job),
    ``found`` for the sensors (a job they watch but did not submit): ``job ...: found -> SUCCEEDED``.
    """

    def __init__(self, first: str = "submitted") -> None:
        self.first = first
        self.state: str | None = None
        self.replicas: tuple[int, int] | None = None
        self.trials: tuple[int, int, str | None] | None = None

    def update(self, job: Mapping[str, Any]) -> list[str]:
        lines: list[str] = []
        state = job_state(job)
        if state != self.state:
            before = self.first if self.state is None else short_state(self.state)
            lines.append(f"job {job.get('name', '?')}: {before} -> {short_state(state)}")
            self.state = state
        if "jobSpec" in job and web_access_enabled(job):
            lines.extend(self._replica_lines(job))
        if "studySpec" in job:
            try:
                summary = trial_summary(job)
            except ValueError:  # a study without metrics: nothing to count (the wait reports it)
                return lines
            best = summary["best"]
            best_text = f"{best['metric_id']}={best['metric_value']:g} (trial {best['id']})" if best else None
            key = (summary["done"], summary["total"], best_text)
            if key != self.trials:
                line = f"trials done {summary['done']}/{summary['total']}"
                line += f" (succeeded {summary['succeeded']}, infeasible {summary['infeasible']}"
                line += f", active {summary['active']})"
                if best_text:
                    line += f"; best {best_text}"
                lines.append(line)
                self.trials = key
        return lines

    def _replica_lines(self, job: Mapping[str, Any]) -> list[str]:
        try:
            expected = expected_replicas(job)
        except ValueError:  # a replicaCount that is no count: nothing to count (a replica wait says so)
            return []
        up = [key for key in expected if key in replicas_up(job)]
        counts = (len(up), len(expected))
        if counts == self.replicas:
            return []
        self.replicas = counts
        return [f"replicas up {counts[0]}/{counts[1]}" + (f": {', '.join(up)}" if up else "")]
