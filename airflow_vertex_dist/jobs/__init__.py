"""What a returned job dict means: pure (v1 JSON job dicts in, facts and verdicts out; no Airflow, no
``google`` import, no I/O), so the hooks, the triggers, the sensors' ``poke``, the operators' progress
log, their XCom outputs and the UI all read a job the same way. One module per concern, each name
importable from its module only:

- ``kinds``: the job kinds (``customJobs``, ``hyperparameterTuningJobs``), the active and terminal
  states, ``ever_ran``.
- ``types``: the ``Job`` and ``CompactJob`` TypedDicts of a returned job.
- ``dicts``: accessors over a job dict: its state (``job_state``, ``short_state``), its labels
  (``job_labels``), its spec (``job_spec``: ``jobSpec`` or ``trialJobSpec``), its name's parts
  (``parse_job_name``), its error (``error_suffix``), its compact form (``compact_job``), and the
  wait settings a DAG file checks (``check_wait_settings``, ``check_if_exists``).
- ``events``: ``Verdict`` (the end of a wait) and ``read_event`` (a trigger event as a resumed task
  checks it).
- ``states``: ``job_condition`` (the job reached a target state; fails fast on a failure state),
  ``job_event`` (the job trigger's and the polling operators' verdict on a job), ``PausedClock`` and
  ``cancel_outcome``.
- ``replicas``: ``replica_count``, a worker pool's ``replicaCount`` (omitted or null: 0, as proto3
  reads it; an int or the decimal string the JSON form writes an int64 as; anything else an error),
  ``expected_replicas``, and ``replica_condition``: named replicas (``workerpool0-0``) or whole pools
  (``workerpool1-*``) are up, read from ``webAccessUris`` (the only per-replica view the API gives); an
  error when the job lacks ``enableWebAccess`` or a name matches no replica of the job; fails when the
  job ends first.
- ``trials``: ``trial_condition``: at least ``min_succeeded`` trials succeeded, or the best final
  metric crossed ``metric_threshold`` in the study's direction; fails when the job ends first.
  ``best_trial`` and ``trial_summary`` are the tuning outputs.
- ``progress``: ``ProgressLog``, the progress lines for the task log (state changes, replicas up k/n,
  trials done k/N with the best so far).
- ``failures``, ``capacity_messages``: the class of a failed job or a refused Create (capacity, quota,
  user code, ...), from the texts Vertex AI is reported to use.
- ``outputs``, ``output_types``: the XCom values of the operators and sensors, and their TypedDicts.

Each condition returns a ``Verdict`` (``None`` while the condition is still pending).
"""

from __future__ import annotations

__all__: list[str] = []
