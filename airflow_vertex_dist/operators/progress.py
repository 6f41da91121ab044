"""Progress of a job in the task log: state changes, replicas up k/n, trials done k/N and the best.

:class:`ProgressLog` is fed every job dict a wait sees and returns the lines worth logging: only what
changed since the previous poll, so a long wait does not flood the log.
"""

from __future__ import annotations

from typing import Any

from airflow_vertex_dist.triggers.sensors import (
    expected_replicas,
    replicas_up,
    trial_summary,
    web_access_enabled,
)

__all__ = ["ProgressLog"]


def _short(state: str) -> str:
    return state.removeprefix("JOB_STATE_")


class ProgressLog:
    """Remembers what was last reported for one job."""

    def __init__(self) -> None:
        self.state: str | None = None
        self.replicas: tuple[int, int] | None = None
        self.trials: tuple[int, int, str | None] | None = None

    def update(self, job: dict[str, Any]) -> list[str]:
        lines: list[str] = []
        state = str(job.get("state", "JOB_STATE_UNSPECIFIED"))
        if state != self.state:
            before = "submitted" if self.state is None else _short(self.state)
            lines.append(f"job {job.get('name', '?')}: {before} -> {_short(state)}")
            self.state = state
        if "jobSpec" in job and web_access_enabled(job):
            expected = expected_replicas(job)
            up = [key for key in expected if key in replicas_up(job)]
            counts = (len(up), len(expected))
            if counts != self.replicas:
                lines.append(f"replicas up {counts[0]}/{counts[1]}" + (f": {', '.join(up)}" if up else ""))
                self.replicas = counts
        if "studySpec" in job:
            summary = trial_summary(job)
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
