"""Which replica exits restart the worker, which restart the whole job, and which fail it.

Source: "Understand the Vertex AI serverless training service",
https://docs.cloud.google.com/vertex-ai/docs/training/understanding-training-service ("Restart
workers during the training job"; read 2026-12-06 in its Japanese copy, ``?hl=ja``, and in the older
AI Platform Training page, which has the same rule):

- "Vertex AI can restart your workers from any worker pool with the same hostname": a restarted
  worker keeps its address (its place in ``CLUSTER_SPEC`` and ``TF_CONFIG``).
- "Non-zero exits: If any worker exits with a non-zero exit code, Vertex AI restarts that worker
  immediately in the same VM. If a worker fails due to a common error, it is treated as a permanent
  error, and Vertex AI shuts down the entire job. [...] If a worker fails due to a non-permanent error
  (any error not listed in the common errors), Vertex AI allows the restarted worker to continue
  running, with up to five restarts per worker. After five restarts, if a worker fails again, Vertex AI
  retries the entire job up to three times before failing the entire job."
- v1 ``Scheduling.restart_job_on_worker_restart``: "Restarts the entire CustomJob if a worker gets
  restarted. This feature can be used by distributed training jobs that are not resilient to workers
  leaving and joining a job."

What the page does not say, and what the emulator does there (docs/emulator.md, "Where it differs"):
the full list of "common errors" could not be read offline. The emulator reads as *non-permanent*
only a death by SIGABRT or SIGSEGV (status 134, 139: a crash the code did not choose, which a restart
may not meet again); every other non-zero status -- one the training code chose (``sys.exit(1)``), a
command that cannot start (127), SIGKILL (an out-of-memory kill, 137), SIGTERM -- stays permanent and
fails the job at once, as before. The job stays ``JOB_STATE_RUNNING`` while workers and the job are
restarted (the page names no other state). With ``restartJobOnWorkerRestart``, every restart of a
worker (a transient exit, or the platform restarting it: the emulator's injected crash) restarts the
whole job instead, up to ``EmulatorConfig.restart_limit`` times.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "JOB_RETRIES",
    "TRANSIENT_SIGNALS",
    "WORKER_RESTARTS",
    "RestartBook",
    "is_transient",
]

#: "up to five restarts per worker"
WORKER_RESTARTS = 5
#: "retries the entire job up to three times before failing the entire job"
JOB_RETRIES = 3
#: deaths the emulator reads as non-permanent errors (the module docstring says why these)
TRANSIENT_SIGNALS = frozenset({signal.SIGABRT, signal.SIGSEGV})

Action = Literal["worker", "job", "fail"]


def is_transient(status: int) -> bool:
    """True for an exit status (``128 + n`` for signal ``n``) the service restarts rather than fails on."""
    return status > 128 and (status - 128) in {int(s) for s in TRANSIENT_SIGNALS}


@dataclass
class RestartBook:
    """A running job's restarts: per worker since the job's last (re)start, and of the whole job."""

    worker: dict[str, int] = field(default_factory=dict)
    job_retries: int = 0

    def decide(
        self, key: str, status: int, *, platform: bool, whole_job: bool, job_restarts_left: bool
    ) -> Action:
        """What a replica's non-zero exit does: restart that worker, restart the whole job, or fail it.

        ``platform``: the platform restarted the worker (the injected crash), not the code's own exit;
        ``whole_job``: ``restartJobOnWorkerRestart``; ``job_restarts_left``: that flag's budget remains.
        """
        if whole_job and (platform or is_transient(status)):
            return "job" if job_restarts_left else "fail"
        if not is_transient(status):
            return "fail"
        if self.worker.get(key, 0) < WORKER_RESTARTS:
            self.worker[key] = self.worker.get(key, 0) + 1
            return "worker"
        if self.job_retries < JOB_RETRIES:
            self.job_retries += 1
            self.worker.clear()
            return "job"
        return "fail"

    def note(self) -> str:
        """What the failure message adds once the limits are spent ('' when nothing was restarted)."""
        if not self.job_retries:
            return ""
        return (
            f" Each worker was restarted up to {WORKER_RESTARTS} times and the entire job retried"
            f" {self.job_retries} times (Vertex AI's limits)."
        )
