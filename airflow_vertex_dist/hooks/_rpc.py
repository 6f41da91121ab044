"""The JobService RPCs the hooks make, one typed method per RPC: the generated clients' own signatures.

Each method calls the generated client's method for the job's kind by its name
(``get_custom_job`` or ``get_hyperparameter_tuning_job``, ...), so mypy checks every argument against
``JobServiceClient`` / ``JobServiceAsyncClient``; no RPC is looked up by a string. Every method takes
and returns v1 JSON dicts (``job_to_dict``) and passes the
hook's retry and per-call timeout, except Create, which is never retried here (the hook re-sends it
only after looking up its create token).

Like ``_clients``, it imports ``google.*`` at module level and the hooks
import it lazily; it loads no Google module that ``_clients`` has not loaded already, so the asyncio
hook's first import of the clients stays off the event loop (``off_loop``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from google.cloud.aiplatform_v1 import types as v1

from airflow_vertex_dist.hooks._clients import job_to_dict
from airflow_vertex_dist.jobs.dicts import JobName
from airflow_vertex_dist.jobs.kinds import CUSTOM_JOBS, JobKind
from airflow_vertex_dist.jobs.types import Job, JobList

if TYPE_CHECKING:
    from google.api_core.retry import Retry
    from google.api_core.retry_async import AsyncRetry
    from google.cloud.aiplatform_v1.services.job_service import JobServiceAsyncClient, JobServiceClient

__all__ = ["AsyncJobServiceCalls", "JobServiceCalls"]


def _job(message: v1.CustomJob | v1.HyperparameterTuningJob) -> Job:
    """A job message as the REST API's JSON (``job_to_dict``)."""
    return cast("Job", job_to_dict(message))


class JobServiceCalls:
    """The synchronous RPCs, with ``retry`` and ``timeout`` on every call but Create."""

    def __init__(self, client: JobServiceClient, *, retry: Retry, timeout: float) -> None:
        self.client = client
        self.retry = retry
        self.timeout = timeout

    def create(self, parent: str, job: v1.CustomJob | v1.HyperparameterTuningJob) -> Job:
        """Create ``job`` under ``parent``, once: no retry (a re-send may make a second billed job)."""
        if isinstance(job, v1.CustomJob):
            return _job(
                self.client.create_custom_job(parent=parent, custom_job=job, retry=None, timeout=self.timeout)
            )
        return _job(
            self.client.create_hyperparameter_tuning_job(
                parent=parent, hyperparameter_tuning_job=job, retry=None, timeout=self.timeout
            )
        )

    def get(self, name: JobName) -> Job:
        if name.kind == CUSTOM_JOBS:
            job: v1.CustomJob | v1.HyperparameterTuningJob = self.client.get_custom_job(
                name=str(name), retry=self.retry, timeout=self.timeout
            )
        else:
            job = self.client.get_hyperparameter_tuning_job(
                name=str(name), retry=self.retry, timeout=self.timeout
            )
        return _job(job)

    def list(self, kind: JobKind, request: dict[str, Any]) -> JobList:
        """Every job of every page of a List ``request`` (``parent``, ``filter``, ``page_size``, ...),
        with the number of pages called."""
        out = JobList()
        if kind == CUSTOM_JOBS:
            custom = self.client.list_custom_jobs(request=request, retry=self.retry, timeout=self.timeout)
            for custom_page in custom.pages:
                out.pages += 1
                out.extend(_job(job) for job in custom_page.custom_jobs)
            return out
        tuning = self.client.list_hyperparameter_tuning_jobs(
            request=request, retry=self.retry, timeout=self.timeout
        )
        for tuning_page in tuning.pages:
            out.pages += 1
            out.extend(_job(job) for job in tuning_page.hyperparameter_tuning_jobs)
        return out

    def cancel(self, name: JobName) -> None:
        if name.kind == CUSTOM_JOBS:
            self.client.cancel_custom_job(name=str(name), retry=self.retry, timeout=self.timeout)
        else:
            self.client.cancel_hyperparameter_tuning_job(
                name=str(name), retry=self.retry, timeout=self.timeout
            )

    def delete(self, name: JobName) -> None:
        """Send Delete (a long-running operation; its completion is not awaited)."""
        if name.kind == CUSTOM_JOBS:
            self.client.delete_custom_job(name=str(name), retry=self.retry, timeout=self.timeout)
        else:
            self.client.delete_hyperparameter_tuning_job(
                name=str(name), retry=self.retry, timeout=self.timeout
            )


class AsyncJobServiceCalls:
    """The asyncio RPCs the triggers need (gRPC transport), with ``retry`` and ``timeout`` on every call."""

    def __init__(self, client: JobServiceAsyncClient, *, retry: AsyncRetry, timeout: float) -> None:
        self.client = client
        self.retry = retry
        self.timeout = timeout

    async def get(self, name: JobName) -> Job:
        if name.kind == CUSTOM_JOBS:
            job: v1.CustomJob | v1.HyperparameterTuningJob = await self.client.get_custom_job(
                name=str(name), retry=self.retry, timeout=self.timeout
            )
        else:
            job = await self.client.get_hyperparameter_tuning_job(
                name=str(name), retry=self.retry, timeout=self.timeout
            )
        return _job(job)

    async def list(self, kind: JobKind, request: dict[str, Any]) -> JobList:
        """Every job of every page of a List ``request`` (``parent``, ``filter``, ``page_size``, ...),
        with the number of pages called."""
        out = JobList()
        if kind == CUSTOM_JOBS:
            custom = await self.client.list_custom_jobs(
                request=request, retry=self.retry, timeout=self.timeout
            )
            async for custom_page in custom.pages:
                out.pages += 1
                out.extend(_job(job) for job in custom_page.custom_jobs)
            return out
        tuning = await self.client.list_hyperparameter_tuning_jobs(
            request=request, retry=self.retry, timeout=self.timeout
        )
        async for tuning_page in tuning.pages:
            out.pages += 1
            out.extend(_job(job) for job in tuning_page.hyperparameter_tuning_jobs)
        return out

    async def cancel(self, name: JobName) -> None:
        if name.kind == CUSTOM_JOBS:
            await self.client.cancel_custom_job(name=str(name), retry=self.retry, timeout=self.timeout)
        else:
            await self.client.cancel_hyperparameter_tuning_job(
                name=str(name), retry=self.retry, timeout=self.timeout
            )
