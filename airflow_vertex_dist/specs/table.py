"""``pools_table``: the pools of a spec as a plain-text table (CLI, demo, task log)."""

from __future__ import annotations

from airflow_vertex_dist.specs.bandwidth import egress_gbps
from airflow_vertex_dist.specs.job import DistributedTrainingJob
from airflow_vertex_dist.specs.job_rules import machine_egress_gbps
from airflow_vertex_dist.specs.tuning import HyperparameterTuningJob

__all__ = ["pools_table"]

_HEADERS = ("pool", "role", "replicas", "machine", "accelerators", "image or module", "egress Gbps")


def _gbps(per: float | None, replicas: int) -> str:
    if per is None:
        return "?"
    return f"{per:g} x{replicas} = {per * replicas:g}"


def pools_table(
    spec: DistributedTrainingJob | HyperparameterTuningJob, *, location: str | None = None
) -> str:
    """One row per used pool (index, role, replicas, machine, accelerators, image or module,
    egress bandwidth), plus a line on Reduction Server sizing when there are reducers."""
    job = spec.trial_job if isinstance(spec, HyperparameterTuningJob) else spec
    loc = location or (spec.location if isinstance(spec, HyperparameterTuningJob) else None) or job.location
    rows: list[tuple[str, ...]] = []
    for index, role in enumerate(("primary", "workers", "parameter_servers", "evaluators")):
        pool = getattr(job, role)
        if pool is None:
            if index == 2 and job.reduction_server is not None:
                rs = job.reduction_server
                count = job.reducer_count or 0
                rows.append(
                    (
                        "2",
                        "reduction_server",
                        str(count) + (" (auto)" if rs.replica_count == "auto" else ""),
                        rs.machine_type,
                        "-",
                        rs.image_for(loc),
                        _gbps(egress_gbps(rs.machine_type), count),
                    )
                )
            continue
        rows.append(
            (
                str(index),
                role,
                str(pool.replica_count),
                pool.machine.machine_type,
                pool.machine.describe_accelerators(),
                pool.task_label,
                _gbps(machine_egress_gbps(pool.machine), pool.replica_count),
            )
        )
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(_HEADERS)]
    lines = [
        "  ".join(h.ljust(w) for h, w in zip(_HEADERS, widths, strict=True)).rstrip(),
        "  ".join("-" * w for w in widths),
    ]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    if job.reduction_server is not None:
        sizing = job.reducer_sizing()
        count = job.reducer_count or 0
        if sizing.training_gbps is not None and sizing.reducer_gbps is not None:
            have = count * sizing.reducer_gbps
            verdict = ">=" if have >= sizing.training_gbps else "< (undersized)"
            lines.append(
                f"reducers: {count} x {sizing.reducer_gbps:g} = {have:g} Gbps {verdict} "
                f"{sizing.training_gbps:g} Gbps of pools 0 and 1 (needed: {sizing.needed})"
            )
        else:
            lines.append("reducers: bandwidth unknown for some machine type; sizing not checked")
    return "\n".join(lines)
