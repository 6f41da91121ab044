"""The jobs a rehearsal created: every CustomJob and HyperparameterTuningJob of its project, in every
region of the machine catalog (a ladder's rung may move a job to another region), read through the
provider's own hook and the stock JobService client, as a task reads them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_vertex_dist.rehearse.service_process import EmulatorProcess

__all__ = ["collect_jobs", "import_clients"]

_KINDS = ("customJobs", "hyperparameterTuningJobs")


def collect_jobs(em: EmulatorProcess, project: str) -> list[dict[str, Any]]:
    """Every job of ``project`` on the emulator, oldest first."""
    from airflow_vertex_dist._generated import catalog
    from airflow_vertex_dist.hooks.connection import VertexConnection
    from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook

    extra = {
        "project": project,
        "emulator": True,
        "api_endpoint": em.grpc_target,
        "web_endpoint": em.rest_url,
    }
    connection = VertexConnection.from_extra(extra, conn_id="rehearsal")
    jobs: list[dict[str, Any]] = []
    for region in sorted(catalog.REGIONS):
        with VertexJobsHook("rehearsal", location=region, connection=connection) as hook:
            for kind in _KINDS:
                jobs.extend(dict(job) for job in hook.list_jobs(kind))
    return sorted(jobs, key=lambda job: (str(job.get("createTime", "")), str(job.get("name", ""))))


def import_clients() -> None:
    """Import what ``collect_jobs`` uses (the Google clients take seconds to import): a rehearsal does
    it while the runs run, not after them."""
    import importlib

    from airflow_vertex_dist._generated import catalog  # noqa: F401
    from airflow_vertex_dist.hooks.off_loop import CLIENTS_MODULE
    from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook  # noqa: F401

    importlib.import_module(CLIENTS_MODULE)
