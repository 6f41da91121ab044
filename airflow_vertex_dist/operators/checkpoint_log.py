"""The task log's line for each preemption of a job: when it was preempted, the last checkpoint its
trainer wrote before (read from the checkpoint directory in Cloud Storage), and the time lost between
them (``jobs.checkpoint_loss``).

A preempted job leaves no trace in itself: Vertex AI restarts it and it stays RUNNING, so the
preemptions are read from its ``service`` log lines once it ended (``ledger_output.job_preemptions``),
and each is logged then, with the directory's objects read once. The directory is the spec's
checkpoint contract (``specs.checkpoints``): ``checkpoints.directory``, or ``AIP_CHECKPOINT_DIR``, the
job's own ``baseOutputDirectory`` + ``checkpoints/``. A spec without one, a directory that cannot be read,
or one with no checkpoint before a preemption: the time since the job started (or the restart after the
previous preemption) is lost, and the line says so. The times returned feed the cost ledger.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from airflow_vertex_dist.common.rfc3339 import format_rfc3339_nanos, rfc3339_nanos
from airflow_vertex_dist.jobs.dicts import job_spec, parse_job_name

if TYPE_CHECKING:
    from airflow_vertex_dist.hooks.checkpoints import CheckpointObject
    from airflow_vertex_dist.jobs.checkpoint_loss import PreemptionLoss

__all__ = ["job_checkpoint_dir", "log_preemptions"]


def job_checkpoint_dir(spec: Any, job: Mapping[str, Any]) -> str | None:
    """The directory ``job``'s trainer checkpoints to by ``spec``'s contract; ``None`` without one."""
    from airflow_vertex_dist.specs.checkpoints import checkpoint_directory

    trial = getattr(spec, "trial_job", spec)
    contract = getattr(trial, "checkpoints", None)
    base = (job_spec(job).get("baseOutputDirectory") or {}).get("outputUriPrefix")
    return checkpoint_directory(contract, base or getattr(trial, "base_output_directory", None))


def _read(host: Any, spec: Any, job: Mapping[str, Any]) -> tuple[str | None, list[CheckpointObject] | None]:
    """The directory and its objects (``None``: no contract, or not read: a warning says why)."""
    from airflow_vertex_dist.hooks.checkpoints import VertexCheckpointsHook

    directory = job_checkpoint_dir(spec, job)
    if directory is None:
        return None, None
    trial = getattr(spec, "trial_job", spec)
    hook = VertexCheckpointsHook(
        host.vertex_dist_conn_id,
        project_id=parse_job_name(str(job["name"])).project,
        impersonation_chain=host.hook.impersonation_chain_override or None,
    )
    try:
        return directory, hook.objects(directory, trial.checkpoints.match_glob)
    except Exception as exc:  # the time lost is then counted without checkpoints; the task goes on
        host.log.warning("Could not read the checkpoints in %s: %s", directory, exc)
        return directory, None
    finally:
        hook.close()


def _line(job_id: str, loss: PreemptionLoss, directory: str | None, names: dict[int, str] | None) -> str:
    at = format_rfc3339_nanos(loss.preempted_ns)
    head = f"Preemption of {job_id} at {at}: "
    if loss.since == "checkpoint":
        assert loss.checkpoint_ns is not None
        name = (names or {}).get(loss.checkpoint_ns, "?")
        written = format_rfc3339_nanos(loss.checkpoint_ns)
        return (
            f"{head}last checkpoint {directory}{name} written at {written}: {loss.lost_s:.0f} s lost since it"
        )
    since = format_rfc3339_nanos(loss.since_ns)
    what = "the job started" if loss.since == "job start" else "the previous preemption"
    if directory is None:
        why = "the spec names no checkpoint directory"
    elif names is None:
        why = f"the checkpoints in {directory} could not be read"
    elif loss.checkpoint_ns is None:
        why = f"no checkpoint in {directory} yet"
    else:
        last = format_rfc3339_nanos(loss.checkpoint_ns)
        why = f"no checkpoint in {directory} since {what} (the last was written at {last})"
    return f"{head}{why}: {loss.lost_s:.0f} s lost since {what} at {since}"


def log_preemptions(
    host: Any, spec: Any, job: Mapping[str, Any], preemptions: Sequence[str]
) -> list[str] | None:
    """Log one line per preemption of ``job`` (RFC 3339 ``preemptions``, from its service log); the
    ``updated`` times of its checkpoint objects, for the ledger (``None``: not read)."""
    from airflow_vertex_dist.jobs.checkpoint_loss import preemption_losses

    started = job.get("startTime")
    if not preemptions or not started:
        return None
    directory, objects = _read(host, spec, job)
    names = None if objects is None else {rfc3339_nanos(o.updated): o.name for o in objects}
    stamps = [rfc3339_nanos(p) for p in preemptions]
    job_id = parse_job_name(str(job["name"])).job_id
    written = None if names is None else list(names)
    for loss in preemption_losses(rfc3339_nanos(str(started)), stamps, written):
        host.log.warning("%s", _line(job_id, loss, directory, names))
    return None if objects is None else [o.updated for o in objects]
