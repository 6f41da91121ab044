"""The order of the job view's replica sections and which of them it folds: by trial (in trial order,
a trial's own replicas under ``trial <id> / <replica>``), then by pool (primary, workers, parameter
servers or the Reduction Server, evaluators) and replica index; Vertex AI's own lines about a job
(``task_name`` ``service``: "Waiting for job to be provisioned."...) come last in their trial and
folded, as do the replicas expected but with no line. Pure."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from airflow_vertex_dist.ui import model

__all__ = ["SERVICE", "Section", "replica_sections"]

#: the replica key of the service's own lines about a job
SERVICE = "service"
_KEY = re.compile(r"^(?:trial (?P<trial>[^/]+?) / )?(?P<replica>.+)$")
_REPLICA = re.compile(r"^workerpool(?P<pool>\d+)-(?P<index>\d+)$")


class Section(NamedTuple):
    """One replica's section: its key, its lines ``(severity, timestamp, text)``, and whether it is
    folded (``service``: the service's boilerplate; else a replica with no line yet)."""

    key: str
    lines: Sequence[tuple[str, Any, str]]
    folded: bool
    service: bool


def _number(text: str) -> tuple[int, str]:
    return (int(text), "") if text.isdigit() else (1 << 30, text)


def _order(key: str) -> tuple[tuple[int, str], int, int, int, str]:
    found = _KEY.match(key)
    trial = found.group("trial") if found else None
    replica = found.group("replica") if found else key
    in_trial = (-1, "") if trial is None else _number(trial)
    pool = _REPLICA.match(replica)
    if pool is not None:
        return in_trial, 0, int(pool.group("pool")), int(pool.group("index")), ""
    return in_trial, 1 if replica == SERVICE else 2, 0, 0, replica


def _expected(job: Mapping[str, Any]) -> list[str]:
    keys = model.replica_keys(job)
    trials = [str(t.get("id", "")) for t in job.get("trials") or [] if isinstance(t, Mapping)]
    if "trialJobSpec" in job:
        return [f"trial {trial} / {key}" for trial in trials for key in keys]
    return keys


def replica_sections(
    job: Mapping[str, Any], lines: Mapping[str, Sequence[tuple[str, Any, str]]]
) -> list[Section]:
    """Every section of the job: its replicas expected from its pools (each trial's, for a tuning
    job) and every key with lines, in order."""
    keys = sorted(dict.fromkeys([*_expected(job), *lines]), key=_order)
    sections = []
    for key in keys:
        found = _KEY.match(key)
        service = bool(found and found.group("replica") == SERVICE)
        shown = lines.get(key, [])
        sections.append(Section(key, shown, service or not shown, service))
    return sections
