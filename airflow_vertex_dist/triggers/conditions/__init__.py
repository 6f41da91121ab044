"""What the job, replica and trial waits look for: pure (v1 JSON job dicts in, verdicts out).

No Airflow or Google imports, so the sensors' ``poke``, the triggers, the operators' progress log and
their XCom outputs all share them without import cycles. One module per concern, each name importable
from its module only:

- ``events``: ``Verdict`` (the end of a wait) and ``read_event`` (a
  trigger event as a resumed task checks it).
- ``states``: ``job_condition`` (the job reached a target state; fails fast on a
  failure state), ``job_event`` (the job trigger's and the polling operators' verdict on
  a job), ``PausedClock`` and ``cancel_outcome``.
- ``replicas``: ``replica_condition``: named replicas (``workerpool0-0``) or whole
  pools (``workerpool1-*``) are up, read from ``webAccessUris`` (the only per-replica view the API
  gives); an error when the job lacks ``enableWebAccess`` or a name matches no replica of the job;
  fails when the job ends first.
- ``trials``: ``trial_condition``: at least ``min_succeeded`` trials succeeded, or
  the best final metric crossed ``metric_threshold`` in the study's direction; fails when the job ends
  first. ``best_trial`` and ``trial_summary`` are the tuning outputs.
- ``progress``: ``ProgressLog``, the progress lines for the task log (state
  changes, replicas up k/n, trials done k/N with the best so far).

Each condition returns a ``Verdict`` (``None`` while the condition is still pending). The
job-state sets live in ``airflow_vertex_dist.hooks.job_dicts``.
"""

from __future__ import annotations

__all__: list[str] = []
