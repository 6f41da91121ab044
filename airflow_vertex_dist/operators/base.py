"""The base of every operator (and sensor) of this provider: it owns the JobService hook.

As in the Amazon provider's ``base_aws``: the hook class is a class attribute, the hook a
``functools.cached_property`` built on first use, so nothing touches the network (or imports a
``google.cloud`` module) when a DAG file is parsed. The default ``hook_class`` is looked up on first
use too: building a task does not import the hooks module.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.sdk import BaseOperator

from airflow_vertex_dist.hooks import DEFAULT_CONN_ID

if TYPE_CHECKING:
    from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook

__all__ = ["VertexBaseOperator", "VertexHookMixin"]


class _DefaultHookClass:
    """The default ``hook_class``: ``VertexJobsHook``,
    imported when first read. A subclass that sets its own ``hook_class`` simply shadows it."""

    def __get__(self, instance: object, owner: type | None = None) -> type[VertexJobsHook]:
        from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook

        return VertexJobsHook


class VertexHookMixin:
    """``hook_class`` and the cached ``hook``; the class sets ``vertex_dist_conn_id``, ``project_id``
    and ``location`` in its ``__init__`` (shared by ``VertexBaseOperator`` and the sensors)."""

    if TYPE_CHECKING:
        hook_class: ClassVar[type[VertexJobsHook]]
    else:
        hook_class = _DefaultHookClass()
    vertex_dist_conn_id: str
    project_id: str | None
    location: str | None
    impersonation_chain: str | Sequence[str] | None = None

    @functools.cached_property
    def hook(self) -> VertexJobsHook:
        return self.hook_class(
            self.vertex_dist_conn_id,
            project_id=self.project_id,
            location=self.location,
            impersonation_chain=self.impersonation_chain,
        )

    def hook_in(self, location: str) -> VertexJobsHook:
        """A new hook on the same connection, project and credentials, in ``location`` (a capacity
        ladder's rung in another region)."""
        return self.hook_class(
            self.vertex_dist_conn_id,
            project_id=self.project_id,
            location=location,
            impersonation_chain=self.impersonation_chain,
        )


class VertexBaseOperator(VertexHookMixin, BaseOperator):
    """Owns a ``VertexJobsHook``.

    :param vertex_dist_conn_id: the connection: a ``vertex_dist`` one (project, location, credentials,
        an endpoint override, or ``emulator`` with an ``api_endpoint`` pointing at the local emulator)
        or a ``google_cloud_platform`` one, as it is. Templated.
    :param project_id: overrides the connection's project.
    :param location: overrides the connection's location (region).
    :param impersonation_chain: a service account to impersonate, or a chain ending at the target
        (list, or comma separated); replaces the connection's. Templated.
    """

    template_fields: Sequence[str] = ("vertex_dist_conn_id", "project_id", "location", "impersonation_chain")

    def __init__(
        self,
        *,
        vertex_dist_conn_id: str = DEFAULT_CONN_ID,
        project_id: str | None = None,
        location: str | None = None,
        impersonation_chain: str | Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.vertex_dist_conn_id = vertex_dist_conn_id
        self.project_id = project_id
        self.location = location
        self.impersonation_chain = impersonation_chain
