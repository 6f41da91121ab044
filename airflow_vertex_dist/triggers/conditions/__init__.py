"""What the job, replica and trial waits look for: pure (v1 JSON job dicts in, verdicts out).

No Airflow or Google imports, so the sensors' ``poke``, the triggers, the operators' progress log and
their XCom outputs all share them without import cycles. One module per concern, each name importable
from its module only:

- :mod:`.events`: :class:`~.events.Verdict` (the end of a wait) and :func:`~.events.read_event` (a
  trigger event as a resumed task checks it).
- :mod:`.states`: :func:`~.states.job_condition` (the job reached a target state; fails fast on a
  failure state), :func:`~.states.job_event` (the job trigger's and the polling operators' verdict on
  a job), :class:`~.states.PausedClock` and :func:`~.states.cancel_outcome`.
- :mod:`.replicas`: :func:`~.replicas.replica_condition`: named replicas (``workerpool0-0``) or whole
  pools (``workerpool1-*``) are up, read from ``webAccessUris`` (the only per-replica view the API
  gives); an error when the job lacks ``enableWebAccess`` or a name matches no replica of the job;
  fails when the job ends first.
- :mod:`.trials`: :func:`~.trials.trial_condition`: at least ``min_succeeded`` trials succeeded, or
  the best final metric crossed ``metric_threshold`` in the study's direction; fails when the job ends
  first. :func:`~.trials.best_trial` and :func:`~.trials.trial_summary` are the tuning outputs.
- :mod:`.progress`: :class:`~.progress.ProgressLog`, the progress lines for the task log (state
  changes, replicas up k/n, trials done k/N with the best so far).

Each condition returns a :class:`~.events.Verdict` (``None`` while the condition is still pending). The
job-state sets live in :mod:`airflow_vertex_dist.hooks.job_dicts`.
"""

from __future__ import annotations

__all__: list[str] = []
