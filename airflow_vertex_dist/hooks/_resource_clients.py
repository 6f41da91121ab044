"""PersistentResourceService clients, made as the JobService's are (``_clients``): the emulator's over
a plain channel or its REST endpoint, Vertex AI's regional endpoint or the connection's
``api_endpoint`` with the connection's credentials.

Like ``_clients``, it imports ``google.*`` at module level; the hooks import it lazily.
"""

from __future__ import annotations

from google.api_core.client_options import ClientOptions
from google.cloud.aiplatform_v1.services.persistent_resource_service import (
    PersistentResourceServiceClient,
)
from google.cloud.aiplatform_v1.services.persistent_resource_service.transports.grpc import (
    PersistentResourceServiceGrpcTransport,
)
from google.cloud.aiplatform_v1.services.persistent_resource_service.transports.rest import (
    PersistentResourceServiceRestTransport,
)

from airflow_vertex_dist.hooks._clients import (
    _CLIENT_INFO,
    _endpoint,
    build_credentials,
    emulator_channel,
)
from airflow_vertex_dist.hooks.connection import VertexConnection

__all__ = ["build_resource_client"]


def build_resource_client(conn: VertexConnection, location: str) -> PersistentResourceServiceClient:
    """A PersistentResourceService client for ``location`` on ``conn``."""
    if conn.is_emulator:
        if conn.transport == "rest":
            rest = PersistentResourceServiceRestTransport(
                host=conn.rest_url, credentials=build_credentials(conn)[0], client_info=_CLIENT_INFO
            )
            return PersistentResourceServiceClient(transport=rest)
        channel = emulator_channel(conn, conn.grpc_target)
        return PersistentResourceServiceClient(
            transport=PersistentResourceServiceGrpcTransport(channel=channel, client_info=_CLIENT_INFO)
        )
    creds, _ = build_credentials(conn)
    return PersistentResourceServiceClient(
        credentials=creds,
        transport=conn.transport,
        client_options=ClientOptions(api_endpoint=_endpoint(conn, location)),
        client_info=_CLIENT_INFO,
    )
