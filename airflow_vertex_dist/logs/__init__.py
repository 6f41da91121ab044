"""Replica log streaming: the lines a job's replicas write to Cloud Logging, in the task log.

- ``poller``: ``LogCursor`` (where a stream stands), the read budget and the shared, quota-aware
  log poller of a triggerer process (one ``entries.list`` per interval for every stream of a project),
  with the settle window that keeps each replica's lines in order.
- ``pages``: how the poller reads its pages -- smaller when a page is too large for the transport,
  skipped with a marker line when one entry is, and a budget per job and cycle -- and its read pacing.
- ``masking``: Airflow's secrets masked in every replica line, in the triggerer as in the worker (the
  trigger learns the values from its job, at the spans the task's masker hid).
- ``cursor``: the stream's cursor saved in its task instance's XCom, so a restarted triggerer or a
  resumed task does not write the same lines again.
- ``lines``: how a replica line reads in the task log (its own time, its replica key, its level) and
  the time order a batch of lines is written in, for both sides below.
- ``trigger_stream``: the trigger's side (lines written to the trigger's log while a deferred task waits).
- ``worker_stream``: the worker's side (a non-deferred wait), the ``stream_logs`` argument, and a failed
  job's cause quoted from its failing replica's last lines, through the secrets masker.

The lines are read through ``airflow_vertex_dist.hooks.logs``; the triggers, operators and sensors use
this package.
"""

from __future__ import annotations

__all__: list[str] = []
