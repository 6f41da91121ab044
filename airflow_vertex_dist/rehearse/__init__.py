"""Rehearse a night before it happens: a DAG run against a scenario the emulator plays on a compressed
clock (docs/how-to/rehearse.md).

``rehearse(RehearsalPlan(...))`` (and ``airflow-vertex-dist rehearse``) starts an emulator, runs the
DAG's runs for the logical dates given with ``dag.test()`` while the scenario plays, and reports per
run: the rungs tried and why, the jobs created, GPU-hours and dollars by rung, the time to a trained
model, and the most GPUs asked for and in use at once against the quota, as ``report.json``,
``report.txt`` and ``timeline.svg``. Needs the emulator distribution installed beside the provider.
"""

from __future__ import annotations

from airflow_vertex_dist.rehearse.runs import Rehearsal, RehearsalPlan, rehearse
from airflow_vertex_dist.rehearse.service_process import RehearsalError

__all__ = ["Rehearsal", "RehearsalError", "RehearsalPlan", "rehearse"]
